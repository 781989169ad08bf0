package entropy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

// The reconnect rule, checked byte for byte against a scripted server: after Unavailable the
// reader asks for exactly what is still owed and returns exactly what the server sent.

func readAllFake(t *testing.T, f *fakeEntropy, total uint64) ([]byte, *entropy.Reader, error) {
	t.Helper()
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), total, uint32(f.chunkSize))
	t.Cleanup(func() { r.Close() })
	data, err := io.ReadAll(r)
	return data, r, err
}

func TestResumesForExactlyTheRemainingBytes(t *testing.T) {
	f := &fakeEntropy{chunkSize: 1000, script: []step{{3, codes.Unavailable}, {2, codes.Unavailable}}}
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
	f := &fakeEntropy{chunkSize: 500, script: []step{{0, codes.Unavailable}, {0, codes.Unavailable}}}
	data, r, err := readAllFake(t, f, 2000)
	_, sent := f.snapshot()
	if err != nil || !bytes.Equal(data, sent) || len(data) != 2000 || r.StreamsOpened() != 3 {
		t.Fatalf("%d bytes, %v, %d streams", len(data), err, r.StreamsOpened())
	}
}

func TestEndlessStreamsReopenEndless(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, script: []step{{2, codes.Unavailable}}}
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

func TestGivesUpAfterMaxReconnectsInARow(t *testing.T) {
	script := make([]step, entropy.MaxReconnects+1)
	for i := range script {
		script[i] = step{0, codes.Unavailable}
	}
	_, _, err := readAllFake(t, &fakeEntropy{chunkSize: 100, script: script}, 1000)
	if !errors.Is(err, entropy.ErrUnavailable) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
}

func TestProgressResetsTheAttemptBudget(t *testing.T) {
	script := make([]step, 2*entropy.MaxReconnects)
	for i := range script {
		script[i] = step{1, codes.Unavailable}
	}
	f := &fakeEntropy{chunkSize: 100, script: script}
	data, r, err := readAllFake(t, f, uint64(100*(2*entropy.MaxReconnects+1)))
	_, sent := f.snapshot()
	if err != nil || !bytes.Equal(data, sent) || r.StreamsOpened() != 2*entropy.MaxReconnects+1 {
		t.Fatalf("%d bytes, %v, %d streams", len(data), err, r.StreamsOpened())
	}
}

func TestOtherErrorsAreReturnedWithoutReconnecting(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, script: []step{{2, codes.PermissionDenied}}}
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
	f := &fakeEntropy{chunkSize: 100, script: []step{{2, codes.OK}}}
	_, _, err := readAllFake(t, f, 1000)
	var e *entropy.Error
	if !errors.As(err, &e) || e.Code != codes.Internal {
		t.Fatalf("want an Internal *Error, got %v", err)
	}
}
