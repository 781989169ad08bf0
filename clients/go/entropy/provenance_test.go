package entropy_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// Against a scripted server: what the client sends as accept_kinds, and how it converts
// provenance, quality reports, the status's classes and FAILED_PRECONDITION.

var scriptedProvenance = &entropyv1.DrawProvenance{
	Kinds:           []entropyv1.SourceKind{entropyv1.SourceKind_SOURCE_KIND_QUANTUM, entropyv1.SourceKind_SOURCE_KIND_OS},
	Mixed:           true,
	CollectorIds:    []string{"c-1", "c-2"},
	FirstChunk:      &entropyv1.ChunkRef{CollectorId: "c-1", Epoch: 7, Sequence: 11, SignedAtUnixMs: 1_700_000_000_123},
	LastChunk:       &entropyv1.ChunkRef{CollectorId: "c-2", Epoch: 8, Sequence: 3, SignedAtUnixMs: -5},
	ChunkCount:      4,
	OldestByteAgeMs: 250,
}

var wantProvenance = &entropy.Provenance{
	Kinds:           []entropy.SourceKind{entropy.KindQuantum, entropy.KindOS},
	Mixed:           true,
	CollectorIDs:    []string{"c-1", "c-2"},
	FirstChunk:      entropy.ChunkRef{CollectorID: "c-1", Epoch: 7, Sequence: 11, SignedAtUnixMs: 1_700_000_000_123},
	LastChunk:       entropy.ChunkRef{CollectorID: "c-2", Epoch: 8, Sequence: 3, SignedAtUnixMs: -5},
	ChunkCount:      4,
	OldestByteAgeMs: 250,
}

func TestSourceKindNames(t *testing.T) {
	for k, want := range map[entropy.SourceKind]string{
		entropy.KindQuantum: "quantum", entropy.KindHardware: "hardware", entropy.KindOS: "os",
		0: "unspecified", 42: "42",
	} {
		if k.String() != want {
			t.Fatalf("SourceKind(%d).String() = %q, want %q", int32(k), k.String(), want)
		}
	}
	if entropy.KindQuantum != 1 || entropy.KindHardware != 2 || entropy.KindOS != 3 {
		t.Fatal("the constants must be the proto's values")
	}
}

func TestAcceptKindsAreSentOnEveryEntropyCall(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, quality: &entropyv1.CheckQualityResponse{},
		script: []step{{1, codes.Unavailable, false}}}
	addr := serveFake(t, f)
	c, err := entropy.New(addr, "k", entropy.WithAcceptKinds(entropy.KindQuantum, entropy.KindOS))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.AcceptKinds(); !reflect.DeepEqual(got, []entropy.SourceKind{entropy.KindQuantum, entropy.KindOS}) {
		t.Fatalf("AcceptKinds() = %v", got)
	}
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Bytes(ctx, 8))
	must(c.Draw(ctx, 8))
	must(c.Integers(ctx, 1, 6, 2))
	must(c.Floats(ctx, 2))
	must(c.UUIDs(ctx, 2))
	must(c.CheckQuality(ctx, 2500))
	must(c.CheckQuality(ctx, 2500, entropy.KindHardware)) // the call's kinds win
	// A reader: the first stream fails after one message, the reconnect carries the kinds too.
	r := c.NewReader(ctx, 300, 100)
	must(io.ReadAll(r))
	r.Close()
	if r.StreamsOpened() != 2 {
		t.Fatalf("%d streams, want 2 (one reconnect)", r.StreamsOpened())
	}
	// A reader's own kinds win over the client's; none given means any (nothing sent).
	r = c.NewReader(ctx, 100, 100, entropy.WithStreamAcceptKinds(entropy.KindHardware))
	must(io.ReadAll(r))
	r.Close()
	r = c.NewReader(ctx, 100, 100, entropy.WithStreamAcceptKinds())
	must(io.ReadAll(r))
	r.Close()
	both := "[SOURCE_KIND_QUANTUM SOURCE_KIND_OS]"
	want := []string{
		"GetRandom:" + both, "GetRandom:" + both, "GetIntegers:" + both, "GetFloats:" + both,
		"GetUuids:" + both, "CheckQuality:" + both, "CheckQuality:[SOURCE_KIND_HARDWARE]",
		"StreamRandom:" + both, "StreamRandom:" + both,
		"StreamRandom:[SOURCE_KIND_HARDWARE]", "StreamRandom:[]",
	}
	if got := f.kindsSeen(); !reflect.DeepEqual(got, want) {
		t.Fatalf("accept_kinds sent:\n got %v\nwant %v", got, want)
	}
}

func TestWithoutAcceptKindsNothingIsSent(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, quality: &entropyv1.CheckQualityResponse{}}
	c := newClient(t, serveFake(t, f), "k")
	ctx := context.Background()
	if _, err := c.Bytes(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckQuality(ctx, 2500); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c.NewReader(ctx, 100, 100)); err != nil {
		t.Fatal(err)
	}
	want := []string{"GetRandom:[]", "CheckQuality:[]", "StreamRandom:[]"}
	if got := f.kindsSeen(); !reflect.DeepEqual(got, want) || c.AcceptKinds() != nil {
		t.Fatalf("accept_kinds sent %v (want %v), AcceptKinds() %v", got, want, c.AcceptKinds())
	}
}

func TestDrawCarriesEveryProvenanceField(t *testing.T) {
	f := &fakeEntropy{provenance: scriptedProvenance}
	d, err := newClient(t, serveFake(t, f), "k").Draw(context.Background(), 48)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Data) != 48 || !reflect.DeepEqual(d.Provenance, wantProvenance) {
		t.Fatalf("%d bytes, provenance %+v, want %+v", len(d.Data), d.Provenance, wantProvenance)
	}
	// A gateway that sends no provenance: nil, not a zero value that would look like one.
	d, err = newClient(t, serveFake(t, &fakeEntropy{}), "k").Draw(context.Background(), 8)
	if err != nil || d.Provenance != nil || len(d.Data) != 8 {
		t.Fatalf("%v, %+v", err, d)
	}
}

func TestQualityReportCarriesEveryField(t *testing.T) {
	sc := -0.0125
	f := &fakeEntropy{quality: &entropyv1.CheckQualityResponse{
		SampleBytes:               5000,
		Provenance:                scriptedProvenance,
		ShannonEntropyBitsPerByte: 7.96,
		MinEntropyBitsPerByte:     7.5,
		ChiSquare:                 250.5,
		ChiSquarePValue:           0.56,
		Mean:                      127.25,
		SerialCorrelation:         &sc,
		Pi:                        &entropyv1.MonteCarloPi{Estimate: 3.1, Error: -0.0416, StandardError: 0.05, Points: 833},
		PiOsReference:             &entropyv1.MonteCarloPi{Estimate: 3.2, Error: 0.0584, StandardError: 0.051, Points: 833},
		Fips140_2: &entropyv1.Fips1402{Blocks: 2, MonobitFailures: 1, PokerFailures: 2, RunsFailures: 3,
			LongRunFailures: 4, BlocksFailed: 5},
		Passed:     false,
		Failures:   []string{"monobit: 1 of 2 blocks"},
		Thresholds: []string{"a", "b"},
	}}
	got, err := newClient(t, serveFake(t, f), "k").CheckQuality(context.Background(), 5000)
	if err != nil {
		t.Fatal(err)
	}
	want := &entropy.QualityReport{
		SampleBytes:               5000,
		Provenance:                wantProvenance,
		ShannonEntropyBitsPerByte: 7.96,
		MinEntropyBitsPerByte:     7.5,
		ChiSquare:                 250.5,
		ChiSquarePValue:           0.56,
		Mean:                      127.25,
		SerialCorrelation:         &sc,
		Pi:                        entropy.MonteCarloPi{Estimate: 3.1, Error: -0.0416, StandardError: 0.05, Points: 833},
		PiOSReference:             entropy.MonteCarloPi{Estimate: 3.2, Error: 0.0584, StandardError: 0.051, Points: 833},
		FIPS140_2: entropy.FIPS140_2{Blocks: 2, MonobitFailures: 1, PokerFailures: 2, RunsFailures: 3,
			LongRunFailures: 4, BlocksFailed: 5},
		Passed:     false,
		Failures:   []string{"monobit: 1 of 2 blocks"},
		Thresholds: []string{"a", "b"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("report\n got %+v\nwant %+v", got, want)
	}
	// Serial correlation undefined (every byte equal): absent on the wire, nil here, not 0.
	f.quality = &entropyv1.CheckQualityResponse{SampleBytes: 2500}
	got, err = newClient(t, serveFake(t, f), "k").CheckQuality(context.Background(), 2500)
	if err != nil || got.SerialCorrelation != nil {
		t.Fatalf("%v, serial correlation %v", err, got.SerialCorrelation)
	}
}

func TestCheckQualityRefusesANegativeSizeBeforeSending(t *testing.T) {
	f := &fakeEntropy{quality: &entropyv1.CheckQualityResponse{}}
	_, err := newClient(t, serveFake(t, f), "k").CheckQuality(context.Background(), -1)
	if !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), "sample_bytes") {
		t.Fatalf("want ErrInvalidArgument naming sample_bytes, got %v", err)
	}
	if len(f.kindsSeen()) != 0 {
		t.Fatal("the call reached the server")
	}
}

func TestReaderProvenanceIsThatOfTheLastMessage(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, provenance: scriptedProvenance}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 500, 100)
	defer r.Close()
	if r.Provenance() != nil {
		t.Fatal("provenance before any message")
	}
	buf := make([]byte, 60) // less than a message: the second read finishes the same message
	for msg := range uint64(5) {
		for range 2 {
			n, err := r.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			p := r.Provenance()
			if p == nil || p.FirstChunk.Sequence != msg || p.LastChunk.Sequence != msg || p.ChunkCount != 4 ||
				!reflect.DeepEqual(p.Kinds, wantProvenance.Kinds) {
				t.Fatalf("message %d (read of %d): provenance %+v", msg, n, p)
			}
		}
	}
}

func TestFailedPreconditionIsTypedAndNeverRetried(t *testing.T) {
	// Unary: the sentinel, the status code and the message.
	f := &fakeEntropy{unaryErr: status.Error(codes.FailedPrecondition, "the pool holds OS only")}
	_, err := newClient(t, serveFake(t, f), "k").Bytes(context.Background(), 8)
	var e *entropy.Error
	if !errors.As(err, &e) || !errors.Is(err, entropy.ErrFailedPrecondition) ||
		status.Code(err) != codes.FailedPrecondition || e.Message != "the pool holds OS only" {
		t.Fatalf("want ErrFailedPrecondition with the server's message, got %v", err)
	}
	for _, other := range []error{entropy.ErrUnavailable, entropy.ErrInvalidArgument, entropy.ErrPermissionDenied} {
		if errors.Is(err, other) {
			t.Fatalf("FailedPrecondition also matches %v", other)
		}
	}
	// A reader: the bytes that came before are delivered, then the error, with no second
	// stream (a reconnect would get the same answer: it is not transient), and at once rather
	// than after the reconnect budget.
	script := []step{{2, codes.FailedPrecondition, false}}
	for range 100 {
		script = append(script, step{-1, codes.OK, false}) // what a wrongful retry would get
	}
	f = &fakeEntropy{chunkSize: 100, script: script}
	r := newClient(t, serveFake(t, f), "k").NewReader(context.Background(), 1000, 100,
		entropy.WithReconnectBudget(0))
	defer r.Close()
	start := time.Now()
	data, err := io.ReadAll(r)
	if !errors.Is(err, entropy.ErrFailedPrecondition) || !strings.Contains(err.Error(), "injected by the test") {
		t.Fatalf("want ErrFailedPrecondition, got %v", err)
	}
	if len(data) != 200 || r.StreamsOpened() != 1 || r.Reconnects() != 0 {
		t.Fatalf("%d bytes, %d streams, %d reconnects: want 200, 1, 0", len(data), r.StreamsOpened(), r.Reconnects())
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %v", took)
	}
}

func TestStatusCarriesThePoolByClass(t *testing.T) {
	f := &fakeEntropy{status: &entropyv1.GetStatusResponse{
		PoolBytes: 300,
		PoolByClass: []*entropyv1.ClassLevel{
			{Kinds: []entropyv1.SourceKind{entropyv1.SourceKind_SOURCE_KIND_QUANTUM, entropyv1.SourceKind_SOURCE_KIND_OS}, Bytes: 200},
			{Kinds: []entropyv1.SourceKind{entropyv1.SourceKind_SOURCE_KIND_HARDWARE}, Bytes: 100},
		},
		ExpiredBytesTotal: 4096,
		MaxByteAgeMs:      60_000,
	}}
	s, err := newClient(t, serveFake(t, f), "k").Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []entropy.ClassLevel{
		{Kinds: []entropy.SourceKind{entropy.KindQuantum, entropy.KindOS}, Bytes: 200},
		{Kinds: []entropy.SourceKind{entropy.KindHardware}, Bytes: 100},
	}
	if !reflect.DeepEqual(s.PoolByClass, want) || s.ExpiredBytesTotal != 4096 || s.MaxByteAgeMs != 60_000 {
		t.Fatalf("status %+v", s)
	}
}
