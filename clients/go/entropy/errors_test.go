package entropy_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func TestBadKeyIsUnauthenticated(t *testing.T) {
	// (A missing key no longer reaches the gateway: New refuses it, see TestAPIKeyRules.)
	for _, key := range []string{"wrong-key"} {
		c := newClient(t, target, key)
		ctx := context.Background()
		_, err1 := c.Bytes(ctx, 32)
		_, err2 := c.Integers(ctx, 1, 6, 1)
		_, err3 := c.Floats(ctx, 1)
		_, err4 := c.UUIDs(ctx, 1)
		_, err5 := c.Status(ctx)
		_, err6 := c.NewReader(ctx, 100, 0).Read(make([]byte, 100))
		for i, err := range []error{err1, err2, err3, err4, err5, err6} {
			if !errors.Is(err, entropy.ErrUnauthenticated) || status.Code(err) != codes.Unauthenticated {
				t.Fatalf("key %q, call %d: want Unauthenticated, got %v", key, i, err)
			}
		}
	}
}

func TestDeadlineThatPassesFirstIsDeadlineExceeded(t *testing.T) {
	// A server that never answers: the context's deadline must end the call. (A tiny deadline
	// against the live gateway would race it.)
	c := newClient(t, blackHole(t), "k")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Bytes(ctx, 32)
	if !errors.Is(err, entropy.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

func TestClientDefaultTimeoutApplies(t *testing.T) {
	c, err := entropy.New(blackHole(t), "k", entropy.WithInsecure(), entropy.WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Status(context.Background()); !errors.Is(err, entropy.ErrDeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
}

func TestCancelledContextIsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := liveClient(t).Bytes(ctx, 32)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestNothingListeningIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := newClient(t, addr, "k").Bytes(ctx, 1); !errors.Is(err, entropy.ErrUnavailable) {
		t.Fatalf("want Unavailable, got %v", err)
	}
}

func TestEveryDocumentedCodeMapsToItsSentinel(t *testing.T) {
	// PERMISSION_DENIED and RESOURCE_EXHAUSTED (scopes, quotas) are in the contract but the dev
	// gateway cannot produce them yet, so a scripted server sends each code for real.
	cases := map[codes.Code]error{
		codes.InvalidArgument:    entropy.ErrInvalidArgument,
		codes.Unauthenticated:    entropy.ErrUnauthenticated,
		codes.PermissionDenied:   entropy.ErrPermissionDenied,
		codes.ResourceExhausted:  entropy.ErrResourceExhausted,
		codes.Unavailable:        entropy.ErrUnavailable,
		codes.DeadlineExceeded:   entropy.ErrDeadlineExceeded,
		codes.FailedPrecondition: entropy.ErrFailedPrecondition,
	}
	for code, sentinel := range cases {
		f := &fakeEntropy{
			unaryErr: status.Error(code, "scripted"),
			trailer:  metadata.Pairs("retry-after-ms", "1500"),
		}
		_, err := newClient(t, serveFake(t, f), "k").Bytes(context.Background(), 8)
		var e *entropy.Error
		if !errors.As(err, &e) || e.Code != code || e.Message != "scripted" {
			t.Fatalf("%v: got %#v", code, err)
		}
		for other, s := range cases {
			if errors.Is(err, s) != (other == code) {
				t.Fatalf("%v: errors.Is(err, %v) = %v", code, s, !(other == code))
			}
		}
		if !errors.Is(err, sentinel) {
			t.Fatalf("%v: does not match its sentinel", code)
		}
		wantRetry := time.Duration(0)
		if code == codes.ResourceExhausted {
			wantRetry = 1500 * time.Millisecond
		}
		if e.RetryAfter != wantRetry {
			t.Fatalf("%v: RetryAfter %v, want %v", code, e.RetryAfter, wantRetry)
		}
	}
}
