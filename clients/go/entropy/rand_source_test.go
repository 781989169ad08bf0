package entropy_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

// A RandSource is a math/rand/v2 Source on the gateway: every value from its bytes, in range,
// nothing repeated, and it fails loudly (panics, as rand.Source cannot return an error).
func TestRandSourceBacksMathRandV2(t *testing.T) {
	var _ rand.Source = (*entropy.RandSource)(nil)
	client := liveClient(t)
	src := client.NewRandSource(context.Background())
	r := rand.New(src)
	seen := map[uint64]bool{}
	for range 2000 {
		v := r.Uint64()
		if seen[v] {
			t.Fatalf("a 64-bit value repeated: %x", v)
		}
		seen[v] = true
	}
	counts := make([]int, 6)
	for range 6000 {
		counts[r.IntN(6)]++
	}
	for face, c := range counts {
		if c < 800 || c > 1200 { // about 1000 each; 6 sigma is ~170
			t.Fatalf("face %d came %d times of 6000: %v", face, c, counts)
		}
	}
	if f := r.Float64(); f < 0 || f >= 1 {
		t.Fatalf("Float64 %v", f)
	}
	perm := r.Perm(50)
	if len(perm) != 50 {
		t.Fatalf("Perm %v", perm)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "entropy.RandSource") {
			t.Fatalf("Uint64 after Close: want a panic naming entropy.RandSource, got %q", msg)
		}
	}()
	src.Uint64()
	t.Fatal("Uint64 after Close returned")
}

// A RandSource on a key the gateway does not know fails at its first value, naming why.
func TestRandSourcePanicsWithTheStreamsError(t *testing.T) {
	bad := newClient(t, target, "not-a-key")
	src := bad.NewRandSource(context.Background(), entropy.WithReconnectBudget(2*time.Second))
	defer src.Close()
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(strings.ToLower(msg), "unauthenticated") {
			t.Fatalf("want a panic saying unauthenticated, got %q", msg)
		}
	}()
	src.Uint64()
	t.Fatal("Uint64 with a bad key returned")
}
