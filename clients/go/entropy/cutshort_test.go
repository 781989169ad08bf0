package entropy

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCutShort(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		// What grpc-go says when a load balancer that lost its upstream ends the stream with an
		// empty DATA frame (HAProxy does; seen in scripts/lab/scaleout.py), or resets it.
		{status.Error(codes.Internal, "unexpected EOF"), true},
		{status.Error(codes.Internal, "server closed the stream without sending trailers"), true},
		{status.Error(codes.Internal, "stream terminated by RST_STREAM with error code: INTERNAL_ERROR"), true},
		{status.Error(codes.Internal, "something broke inside"), false},
		{status.Error(codes.PermissionDenied, "unexpected EOF"), false},
		{status.Error(codes.Unavailable, "connection refused"), false}, // retried as Unavailable anyway
	}
	for _, c := range cases {
		if got := cutShort(c.err); got != c.want {
			t.Errorf("cutShort(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
