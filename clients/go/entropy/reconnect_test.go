package entropy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

// The reconnect rule, checked byte for byte against a scripted server: after Unavailable or a
// timeout the reader asks for exactly what is still owed and returns exactly what the server
// sent, for as long as the reconnect budget allows.

func readAllFake(t *testing.T, f *fakeEntropy, total uint64) ([]byte, *entropy.Reader, error) {
	t.Helper()
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), total, uint32(f.chunkSize))
	t.Cleanup(func() { r.Close() })
	data, err := io.ReadAll(r)
	return data, r, err
}

func TestResumesForExactlyTheRemainingBytes(t *testing.T) {
	f := &fakeEntropy{chunkSize: 1000, script: []step{{3, codes.Unavailable, false}, {2, codes.Unavailable, false}}}
	data, _, err := readAllFake(t, f, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	requests, sent := f.snapshot()
	want := [][2]uint64{{1000, 10_000}, {1000, 7000}, {1000, 5000}}
	if !reflect.DeepEqual(requests, want) {
		t.Fatalf("requests %v, want %v", requests, want)
	}
	if !bytes.Equal(data, sent) || len(data) != 10_000 {
		t.Fatalf("got %d bytes, server sent %d (or they differ)", len(data), len(sent))
	}
}

func TestAFailureWithNothingSentIsRetriedToo(t *testing.T) {
	f := &fakeEntropy{chunkSize: 500, script: []step{{0, codes.Unavailable, false}, {0, codes.Unavailable, false}}}
	data, r, err := readAllFake(t, f, 2000)
	_, sent := f.snapshot()
	if err != nil || !bytes.Equal(data, sent) || len(data) != 2000 || r.StreamsOpened() != 3 {
		t.Fatalf("%d bytes, %v, %d streams", len(data), err, r.StreamsOpened())
	}
}

func TestEndlessStreamsReopenEndless(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, script: []step{{2, codes.Unavailable, false}}}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 0, 100)
	data := make([]byte, 600)
	if _, err := io.ReadFull(r, data); err != nil {
		t.Fatal(err)
	}
	r.Close()
	requests, sent := f.snapshot()
	if len(requests) < 2 || requests[0] != [2]uint64{100, 0} || requests[1] != [2]uint64{100, 0} {
		t.Fatalf("requests %v", requests)
	}
	if !bytes.HasPrefix(sent, data) { // later chunks may be in flight, unread
		t.Fatal("returned bytes are not what the server sent, in order")
	}
}

func TestGivesUpWhenTheBudgetRunsOut(t *testing.T) {
	script := make([]step, 1000)
	for i := range script {
		script[i] = step{0, codes.Unavailable, false}
	}
	f := &fakeEntropy{chunkSize: 100, script: script}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 1000, 100,
		entropy.WithReconnectBudget(400*time.Millisecond))
	defer r.Close()
	start := time.Now()
	_, err := io.ReadAll(r)
	elapsed := time.Since(start)
	if !errors.Is(err, entropy.ErrUnavailable) || !strings.Contains(err.Error(), "gave up reconnecting after") {
		t.Fatalf("want ErrUnavailable saying it gave up, got %v", err)
	}
	if elapsed < 400*time.Millisecond || elapsed > 1500*time.Millisecond {
		t.Fatalf("gave up after %v with a 400ms budget", elapsed)
	}
	// 50 ms doubling to 1 s, upper half of each ceiling: at least 4 attempts fit in 400 ms.
	if r.StreamsOpened() < 4 || r.Reconnects() != r.StreamsOpened()-1 {
		t.Fatalf("%d streams opened, %d reconnects", r.StreamsOpened(), r.Reconnects())
	}
}

func TestGivingUpReportsTheGatewaysAnswerNotATimeoutTheBudgetCutShort(t *testing.T) {
	// The gateway answers Unavailable; the backoff (100..200 ms) runs to the end of the 100 ms
	// budget, so the next attempt gets only the shortest wait the reader allows (100 ms, far
	// below its 5 s attempt timeout), and the scripted server lets it time out. That timeout says
	// nothing about the gateway, so giving up reports the Unavailable (CI saw DeadlineExceeded
	// in the Python reader on a busy machine).
	f := &fakeEntropy{chunkSize: 100, script: []step{{0, codes.Unavailable, false}, {0, codes.OK, true}}}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 1000, 100,
		entropy.WithReconnectBudget(100*time.Millisecond), entropy.WithAttemptTimeout(5*time.Second),
		entropy.WithBackoff(200*time.Millisecond, 200*time.Millisecond))
	defer r.Close()
	_, err := r.Read(make([]byte, 10))
	if !errors.Is(err, entropy.ErrUnavailable) || !strings.Contains(err.Error(), "gave up reconnecting after") ||
		!strings.HasSuffix(err.Error(), "bytes received: injected by the test") {
		t.Fatalf("want the gateway's Unavailable in the give-up, got %v", err)
	}
	if r.StreamsOpened() != 2 {
		t.Fatalf("%d streams opened, want 2 (the second one cut short)", r.StreamsOpened())
	}
}

func TestProgressRestartsTheBudget(t *testing.T) {
	const failures = 20
	script := make([]step, failures)
	for i := range script {
		script[i] = step{1, codes.Unavailable, false}
	}
	f := &fakeEntropy{chunkSize: 100, script: script}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 100*(failures+1), 100,
		entropy.WithReconnectBudget(100*time.Millisecond))
	defer r.Close()
	start := time.Now()
	data, err := io.ReadAll(r)
	elapsed := time.Since(start)
	_, sent := f.snapshot()
	if err != nil || !bytes.Equal(data, sent) || r.StreamsOpened() != failures+1 {
		t.Fatalf("%d bytes, %v, %d streams", len(data), err, r.StreamsOpened())
	}
	// Twenty outages of one backoff each (>= 25 ms) outlast one 100 ms budget: only a budget
	// that restarts with each delivered chunk lets this finish.
	if elapsed < 400*time.Millisecond {
		t.Fatalf("finished in %v: the outages were too short to test the restart", elapsed)
	}
}

func TestAStalledStreamIsReplaced(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, script: []step{{2, codes.OK, true}}}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 1000, 100,
		entropy.WithStallTimeout(300*time.Millisecond))
	defer r.Close()
	start := time.Now()
	data, err := io.ReadAll(r)
	elapsed := time.Since(start)
	requests, sent := f.snapshot()
	want := [][2]uint64{{100, 1000}, {100, 800}}
	if err != nil || !bytes.Equal(data, sent) || !reflect.DeepEqual(requests, want) {
		t.Fatalf("%d bytes, %v, requests %v", len(data), err, requests)
	}
	if elapsed < 300*time.Millisecond || elapsed > 2*time.Second {
		t.Fatalf("replaced the stalled stream after %v, stall timeout 300ms", elapsed)
	}
}

func TestAnAttemptThatNeverAnswersTimesOut(t *testing.T) {
	r := newClient(t, blackHole(t), "k").NewReader(context.Background(), 1000, 100,
		entropy.WithAttemptTimeout(200*time.Millisecond), entropy.WithReconnectBudget(900*time.Millisecond))
	defer r.Close()
	start := time.Now()
	_, err := r.Read(make([]byte, 10))
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "gave up reconnecting") {
		t.Fatalf("want a DeadlineExceeded give-up, got %v", err)
	}
	// The first attempt (200 ms) fails before the budget starts; then 900 ms of attempts.
	if elapsed < 1100*time.Millisecond || elapsed > 3*time.Second || r.StreamsOpened() < 4 {
		t.Fatalf("gave up after %v and %d streams", elapsed, r.StreamsOpened())
	}
}

func TestWaitsForAGatewayThatIsNotUpYet(t *testing.T) {
	// Nothing listens on addr for the first 800 ms: the first attempt waits for the channel
	// to be ready (it does not fail fast on "connection refused") and the channel's backoff is
	// capped, so it connects within the 2 s attempt timeout.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := &fakeEntropy{chunkSize: 100}
	go func() {
		time.Sleep(800 * time.Millisecond)
		serveFakeOn(t, f, addr)
	}()
	r := newClient(t, addr, "k").NewReader(context.Background(), 1000, 100)
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil || len(data) != 1000 {
		t.Fatalf("%d bytes, %v", len(data), err)
	}
}

func TestReadContextBoundsOneRead(t *testing.T) {
	r := newClient(t, blackHole(t), "k").NewReader(context.Background(), 1000, 100,
		entropy.WithReconnectBudget(0))
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.ReadContext(ctx, make([]byte, 10))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("want context.DeadlineExceeded after ~300ms, got %v after %v", err, time.Since(start))
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := r.ReadContext(ctx, make([]byte, 10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestReadContextLeavesTheReaderUsable(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, script: []step{{1, codes.OK, true}}}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 1000, 100)
	defer r.Close()
	first := make([]byte, 100)
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := r.ReadContext(ctx, make([]byte, 10)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want context.DeadlineExceeded, got %v", err)
	}
	rest, err := io.ReadAll(r)
	requests, sent := f.snapshot()
	if err != nil || !bytes.Equal(append(first, rest...), sent) || len(sent) != 1000 {
		t.Fatalf("%d+%d bytes, %v; server sent %d", len(first), len(rest), err, len(sent))
	}
	if !reflect.DeepEqual(requests, [][2]uint64{{100, 1000}, {100, 900}}) {
		t.Fatalf("requests %v", requests)
	}
}

func TestInvalidStreamOptionsFailTheFirstRead(t *testing.T) {
	c := newClient(t, "127.0.0.1:1", "k")
	for _, o := range []entropy.StreamOption{
		entropy.WithReconnectBudget(-time.Second), entropy.WithAttemptTimeout(0),
		entropy.WithStallTimeout(-1), entropy.WithBackoff(time.Second, time.Millisecond),
	} {
		r := c.NewReader(context.Background(), 10, 0, o)
		if _, err := r.Read(make([]byte, 10)); !errors.Is(err, entropy.ErrInvalidArgument) {
			t.Fatalf("want ErrInvalidArgument, got %v", err)
		}
	}
}

func TestOtherErrorsAreReturnedWithoutReconnecting(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, script: []step{{2, codes.PermissionDenied, false}}}
	data, r, err := readAllFake(t, f, 1000)
	_, sent := f.snapshot()
	if !errors.Is(err, entropy.ErrPermissionDenied) || r.StreamsOpened() != 1 {
		t.Fatalf("want PermissionDenied on the first stream, got %v after %d", err, r.StreamsOpened())
	}
	if !bytes.Equal(data, sent) { // what arrived before the error is still delivered
		t.Fatalf("got %d bytes, server sent %d", len(data), len(sent))
	}
}

func TestAStreamThatEndsEarlyWithOKIsAnError(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, script: []step{{2, codes.OK, false}}}
	_, _, err := readAllFake(t, f, 1000)
	var e *entropy.Error
	if !errors.As(err, &e) || e.Code != codes.Internal {
		t.Fatalf("want an Internal *Error, got %v", err)
	}
}
