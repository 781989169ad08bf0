// API keys are checked before they are sent, and never appear in an error.

package entropy

import (
	"fmt"

	"google.golang.org/grpc/codes"
)

// MaxAPIKeyLength is the longest key the gateway accepts, in characters.
const MaxAPIKeyLength = 512

// ValidateAPIKey checks that key is 1..=512 visible ASCII characters (0x21..0x7e), the gateway's
// bound. The error (an *Error with codes.InvalidArgument) says which rule failed and at what
// position, never the key itself.
func ValidateAPIKey(key string) error {
	bad := func(format string, args ...any) error {
		return &Error{Code: codes.InvalidArgument, Message: "API key " + fmt.Sprintf(format, args...)}
	}
	if key == "" {
		return bad("is missing: pass one, or set ENTROPY_API_KEY")
	}
	if len(key) > MaxAPIKeyLength {
		return bad("is %d bytes long, at most %d", len(key), MaxAPIKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			what := "a character outside 0x21..0x7e"
			switch {
			case c == '\n' || c == '\r':
				what = "a line break (a trailing newline?)"
			case c == ' ':
				what = "a space"
			case c == '\t':
				what = "a tab"
			case c >= 0x80:
				what = "a non-ASCII character"
			}
			return bad("holds %s at position %d (counting from 0): keys are 1 to %d visible ASCII "+
				"characters (0x21..0x7e)", what, i, MaxAPIKeyLength)
		}
	}
	return nil
}
