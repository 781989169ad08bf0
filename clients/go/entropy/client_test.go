package entropy_test

import (
	"context"
	"errors"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func TestBytesReturnsExactlyN(t *testing.T) {
	c := liveClient(t)
	for _, n := range []int{1, 32, 1000, 1 << 20} {
		data, err := c.Bytes(context.Background(), n)
		if err != nil {
			t.Fatalf("Bytes(%d): %v", n, err)
		}
		if len(data) != n {
			t.Fatalf("Bytes(%d) returned %d bytes", n, len(data))
		}
	}
}

func TestBytesNeverRepeatAcrossCalls(t *testing.T) {
	c := liveClient(t)
	var all []byte
	for range 64 {
		data, err := c.Bytes(context.Background(), 1024)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, data...)
	}
	noRepeatedBlocks(t, all)
}

func TestBytesOutOfRangeIsInvalidArgument(t *testing.T) {
	c := liveClient(t)
	for _, n := range []int{0, 1048577, -1} {
		_, err := c.Bytes(context.Background(), n)
		if !errors.Is(err, entropy.ErrInvalidArgument) {
			t.Fatalf("Bytes(%d): want ErrInvalidArgument, got %v", n, err)
		}
		if n >= 0 && !strings.Contains(err.Error(), "num_bytes") {
			t.Fatalf("Bytes(%d): message should name num_bytes: %v", n, err)
		}
	}
}

func TestDiceInRangeAndEveryFaceShows(t *testing.T) {
	rolls, err := liveClient(t).Integers(context.Background(), 1, 6, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rolls) != 1000 {
		t.Fatalf("%d rolls", len(rolls))
	}
	faces := map[int64]int{}
	for _, r := range rolls {
		if r < 1 || r > 6 {
			t.Fatalf("roll %d out of 1..6", r)
		}
		faces[r]++
	}
	if len(faces) != 6 { // a face missing from 1000 rolls: p < 1e-78
		t.Fatalf("faces seen: %v", faces)
	}
}

func TestFullInt64Range(t *testing.T) {
	values, err := liveClient(t).Integers(context.Background(), math.MinInt64, math.MaxInt64, 200)
	if err != nil {
		t.Fatal(err)
	}
	var neg, pos bool
	for _, v := range values {
		neg, pos = neg || v < 0, pos || v > 0
	}
	if len(values) != 200 || !neg || !pos { // all of one sign: p ~ 2^-199
		t.Fatalf("%d values, negative seen %v, positive seen %v", len(values), neg, pos)
	}
}

func TestSingleValueRange(t *testing.T) {
	values, err := liveClient(t).Integers(context.Background(), -7, -7, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if v != -7 {
			t.Fatalf("got %v", values)
		}
	}
}

func TestMinAboveMaxIsInvalidArgument(t *testing.T) {
	_, err := liveClient(t).Integers(context.Background(), 5, 1, 1)
	var e *entropy.Error
	if !errors.As(err, &e) || !errors.Is(err, entropy.ErrInvalidArgument) {
		t.Fatalf("want *Error with InvalidArgument, got %v", err)
	}
	if !strings.Contains(e.Message, "min") || !strings.Contains(e.Message, "max") {
		t.Fatalf("message should name min and max: %q", e.Message)
	}
}

func TestCountOutOfRangeIsInvalidArgument(t *testing.T) {
	c := liveClient(t)
	ctx := context.Background()
	for _, count := range []int{0, 10001} {
		_, err1 := c.Integers(ctx, 1, 6, count)
		_, err2 := c.Floats(ctx, count)
		_, err3 := c.UUIDs(ctx, count)
		for _, err := range []error{err1, err2, err3} {
			if !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), "count") {
				t.Fatalf("count %d: want InvalidArgument naming count, got %v", count, err)
			}
		}
	}
}

func TestFloatsAre53BitMultiplesInUnitInterval(t *testing.T) {
	values, err := liveClient(t).Floats(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[float64]bool{}
	for _, v := range values {
		k := v * (1 << 53)
		if v < 0 || v >= 1 || k != math.Trunc(k) {
			t.Fatalf("%v is not k*2^-53 in [0,1)", v)
		}
		seen[v] = true
	}
	if len(values) != 1000 || len(seen) != 1000 {
		t.Fatalf("%d values, %d distinct", len(values), len(seen))
	}
}

var uuid4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestUUIDsAreDistinctVersion4(t *testing.T) {
	ids, err := liveClient(t).UUIDs(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !uuid4.MatchString(id) {
			t.Fatalf("%q is not a canonical lowercase v4 UUID", id)
		}
		seen[id] = true
	}
	if len(ids) != 100 || len(seen) != 100 {
		t.Fatalf("%d UUIDs, %d distinct", len(ids), len(seen))
	}
}

func TestStatusReportsPoolAndLabelledSources(t *testing.T) {
	s, err := liveClient(t).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if poolCapacity != 0 && s.PoolCapacityBytes != poolCapacity {
		t.Fatalf("pool capacity %d, gateway started with %d", s.PoolCapacityBytes, poolCapacity)
	}
	if s.PoolBytes > s.PoolCapacityBytes || !s.Serving || len(s.Sources) == 0 {
		t.Fatalf("unexpected status %+v", s)
	}
	for _, src := range s.Sources {
		if src.Kind != "os" { // dev mode: labelled, never "quantum"
			t.Fatalf("dev source labelled %q", src.Kind)
		}
	}
}

func TestServedCounterCountsWhatWeTake(t *testing.T) {
	c := liveClient(t)
	ctx := context.Background()
	before, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bytes(ctx, 4096); err != nil {
		t.Fatal(err)
	}
	after, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.ServedBytesTotal < before.ServedBytesTotal+4096 {
		t.Fatalf("served %d -> %d after taking 4096", before.ServedBytesTotal, after.ServedBytesTotal)
	}
}

func TestUsageReadsTheKeysOwnLimitsAndCountsItsOpenStream(t *testing.T) {
	c := liveClient(t)
	ctx := context.Background()
	u, err := c.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.KeyName != "dev" {
		t.Fatalf("key name %q", u.KeyName)
	}
	// The dev key has no rate or stream limit; the undelivered allowance always has one.
	if u.Requests != nil || u.Bytes != nil || u.DRBGBytes != nil || u.Streams.Limit != nil {
		t.Fatalf("the dev key has no limits: %+v", u)
	}
	if u.UndeliveredBytes.Limit == nil || *u.UndeliveredBytes.Limit != 32<<20 {
		t.Fatalf("undelivered: %+v", u.UndeliveredBytes)
	}
	before := u.Streams.InUse
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := c.NewReader(streamCtx, 0, 4096)
	defer r.Close()
	if _, err := io.ReadFull(r, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	during, err := c.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if during.Streams.InUse < before+1 {
		t.Fatalf("streams in use %d, was %d before one was opened", during.Streams.InUse, before)
	}
	if _, err := newClient(t, target, "not-a-key").Usage(ctx); !errors.Is(err, entropy.ErrUnauthenticated) {
		t.Fatalf("want ErrUnauthenticated, got %v", err)
	}
}
