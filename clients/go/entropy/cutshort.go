package entropy

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// cutShortMarkers are how grpc-go words a stream that ended without a gRPC status: something
// between the client and the gateway (a load balancer that lost its upstream) ended it with an
// empty DATA frame, or reset it. Nothing ended the call on purpose, so a reader resumes.
var cutShortMarkers = []string{
	"unexpected EOF",
	"server closed the stream without sending trailers",
	"stream terminated by RST_STREAM",
}

// cutShort reports whether err is a stream cut short on the way (no status from the gateway):
// a transport failure like Unavailable. The gateway itself never ends a stream that way.
func cutShort(err error) bool {
	s, ok := status.FromError(err)
	if !ok || (s.Code() != codes.Internal && s.Code() != codes.Unknown) {
		return false
	}
	for _, m := range cutShortMarkers {
		if strings.Contains(s.Message(), m) {
			return true
		}
	}
	return false
}
