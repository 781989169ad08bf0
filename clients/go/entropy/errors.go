// Typed errors: one sentinel per gRPC status the gateway documents, matched with errors.Is.

package entropy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Sentinels for errors.Is, one per status the gateway documents. Every error a call returns is
// an *Error; errors.Is(err, ErrUnavailable) tells what happened without decoding it.
var (
	// ErrInvalidArgument: a field is out of range; the message names the field and its bounds.
	ErrInvalidArgument = errors.New("entropy: invalid argument")
	// ErrUnauthenticated: no API key, or a key the gateway does not know.
	ErrUnauthenticated = errors.New("entropy: unauthenticated")
	// ErrPermissionDenied: the key is valid but lacks the scope this call needs.
	ErrPermissionDenied = errors.New("entropy: permission denied")
	// ErrResourceExhausted: the key's quota is used up; see Error.RetryAfter.
	ErrResourceExhausted = errors.New("entropy: quota exhausted")
	// ErrUnavailable: not enough entropy within the server's maximum wait, the server is shutting
	// down, or it cannot be reached. Nothing was consumed: retrying is safe.
	ErrUnavailable = errors.New("entropy: unavailable")
	// ErrDeadlineExceeded: the context's deadline passed first. Nothing was consumed. Errors
	// with this code also match context.DeadlineExceeded.
	ErrDeadlineExceeded = errors.New("entropy: deadline exceeded")
	// ErrFailedPrecondition: the call accepts only some source kinds (WithAcceptKinds,
	// WithStreamAcceptKinds) and the pool holds none of them and none arrived lately; the
	// message names what the pool holds. Nothing was consumed. Not transient: a Reader returns
	// it at once instead of reconnecting.
	ErrFailedPrecondition = errors.New("entropy: failed precondition")
)

var sentinels = map[codes.Code]error{
	codes.InvalidArgument:    ErrInvalidArgument,
	codes.Unauthenticated:    ErrUnauthenticated,
	codes.PermissionDenied:   ErrPermissionDenied,
	codes.ResourceExhausted:  ErrResourceExhausted,
	codes.Unavailable:        ErrUnavailable,
	codes.DeadlineExceeded:   ErrDeadlineExceeded,
	codes.FailedPrecondition: ErrFailedPrecondition,
}

// Error is a failed call: the gRPC status code and the server's message.
type Error struct {
	Code    codes.Code
	Message string
	// RetryAfter is the server's `retry-after-ms` trailer (sent with ResourceExhausted), or 0.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("entropy: %s: %s", e.Code, e.Message)
}

// Is matches the sentinel for e.Code, and context.DeadlineExceeded / context.Canceled for the
// codes grpc uses when a context ends.
func (e *Error) Is(target error) bool {
	switch {
	case target == sentinels[e.Code] && target != nil:
		return true
	case e.Code == codes.DeadlineExceeded:
		return target == context.DeadlineExceeded
	case e.Code == codes.Canceled:
		return target == context.Canceled
	}
	return false
}

// GRPCStatus lets status.Code(err) and status.FromError(err) see through an *Error.
func (e *Error) GRPCStatus() *status.Status {
	return status.New(e.Code, e.Message)
}

// fromRPC converts an error from a generated stub into an *Error. trailer is the call's
// trailing metadata, if captured (nil otherwise).
func fromRPC(err error, trailer metadata.MD) error {
	if err == nil {
		return nil
	}
	s, _ := status.FromError(err) // a non-status error becomes codes.Unknown with its text
	e := &Error{Code: s.Code(), Message: s.Message()}
	if e.Code == codes.ResourceExhausted {
		if v := trailer.Get("retry-after-ms"); len(v) > 0 {
			if ms, perr := strconv.ParseInt(v[0], 10, 64); perr == nil && ms >= 0 {
				e.RetryAfter = time.Duration(ms) * time.Millisecond
			}
		}
	}
	return e
}

// invalid is the error for an argument that cannot even be put in a request (a negative count),
// shaped like the server's own range errors.
func invalid(format string, args ...any) error {
	return &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf(format, args...)}
}
