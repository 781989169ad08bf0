package entropy_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

// Issue #15 against the live dev gateway: one OS source, collector "dev-collector", a key with
// the quality:check scope.

const devCollector = "dev-collector"

func liveClientWith(t *testing.T, opts ...entropy.Option) *entropy.Client {
	t.Helper()
	c, err := entropy.New(target, apiKey, append([]entropy.Option{entropy.WithInsecure()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var onlyOS = []entropy.SourceKind{entropy.KindOS}

// kindsOf is p's kinds, or nil for no provenance (so a missing one fails an assertion rather
// than the test binary).
func kindsOf(p *entropy.Provenance) []entropy.SourceKind {
	if p == nil {
		return nil
	}
	return p.Kinds
}

func TestCheckQualityPassesOnTheDevGateway(t *testing.T) {
	r, err := liveClient(t).CheckQuality(context.Background(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed || r.SampleBytes != 4096 || len(r.Failures) != 0 || len(r.Thresholds) == 0 {
		t.Fatalf("passed %v, %d bytes, failures %q, thresholds %q", r.Passed, r.SampleBytes, r.Failures, r.Thresholds)
	}
	if r.Provenance == nil || !reflect.DeepEqual(r.Provenance.Kinds, onlyOS) {
		t.Fatalf("provenance %+v, want kinds [os]", r.Provenance)
	}
	if r.FIPS140_2.Blocks != 1 || r.FIPS140_2.BlocksFailed != 0 {
		t.Fatalf("FIPS 140-2 %+v, want 1 block (32768 bits hold one 20000-bit block), none failed", r.FIPS140_2)
	}
	if r.Pi.Points == 0 || r.PiOSReference.Points != r.Pi.Points {
		t.Fatalf("pi %+v, OS reference %+v: want points > 0 and equal", r.Pi, r.PiOSReference)
	}
	// Statistics of 4096 random bytes, with bounds far outside chance.
	if r.ShannonEntropyBitsPerByte < 7.5 || r.ShannonEntropyBitsPerByte > 8 ||
		r.MinEntropyBitsPerByte <= 0 || r.MinEntropyBitsPerByte > r.ShannonEntropyBitsPerByte ||
		r.ChiSquarePValue < 0 || r.ChiSquarePValue > 1 || math.Abs(r.Mean-127.5) > 15 ||
		r.SerialCorrelation == nil || math.Abs(*r.SerialCorrelation) > 0.2 ||
		math.Abs(r.Pi.Estimate-math.Pi) > 0.5 || math.Abs(r.Pi.Error-(r.Pi.Estimate-math.Pi)) > 1e-9 {
		t.Fatalf("implausible statistics for random bytes: %+v", r)
	}
}

func TestCheckQualitySizeBoundsAreInvalidArgument(t *testing.T) {
	c := liveClient(t)
	for _, tc := range []struct {
		n     int
		bound string
	}{{100, "2500"}, {2499, "2500"}, {4194305, "4194304"}} {
		_, err := c.CheckQuality(context.Background(), tc.n)
		if !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), "sample_bytes") ||
			!strings.Contains(err.Error(), tc.bound) {
			t.Fatalf("CheckQuality(%d): want InvalidArgument naming sample_bytes and %s, got %v", tc.n, tc.bound, err)
		}
	}
	// The smallest sample is one FIPS 140-2 block exactly.
	r, err := c.CheckQuality(context.Background(), 2500)
	if err != nil || r.SampleBytes != 2500 || r.FIPS140_2.Blocks != 1 {
		t.Fatalf("CheckQuality(2500): %v, %+v", err, r)
	}
}

func TestDrawReturnsBytesWithTheirProvenance(t *testing.T) {
	d, err := liveClient(t).Draw(context.Background(), 32)
	if err != nil {
		t.Fatal(err)
	}
	p := d.Provenance
	if len(d.Data) != 32 || p == nil {
		t.Fatalf("%d bytes, provenance %+v", len(d.Data), p)
	}
	if !reflect.DeepEqual(p.Kinds, onlyOS) || p.Mixed || !reflect.DeepEqual(p.CollectorIDs, []string{devCollector}) ||
		p.ChunkCount < 1 || p.FirstChunk.CollectorID != devCollector || p.LastChunk.CollectorID != devCollector ||
		p.FirstChunk.Sequence > p.LastChunk.Sequence {
		t.Fatalf("provenance %+v", p)
	}
}

// timed runs call and fails the test if it takes longer than limit: "at once" is well under the
// gateway's 2 s maximum wait, which a call that waited for entropy would take.
func timed(t *testing.T, what string, limit time.Duration, call func() error) error {
	t.Helper()
	start := time.Now()
	err := call()
	if took := time.Since(start); took > limit {
		t.Fatalf("%s took %v (limit %v): %v", what, took, limit, err)
	}
	return err
}

func TestQuantumOnlyIsFailedPreconditionAtOnce(t *testing.T) {
	watcher := liveClient(t)
	ctx := context.Background()
	before, err := watcher.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := liveClientWith(t, entropy.WithAcceptKinds(entropy.KindQuantum))
	calls := map[string]func() error{
		"Bytes":        func() error { _, err := c.Bytes(ctx, 32); return err },
		"Draw":         func() error { _, err := c.Draw(ctx, 32); return err },
		"Integers":     func() error { _, err := c.Integers(ctx, 1, 6, 10); return err },
		"Floats":       func() error { _, err := c.Floats(ctx, 10); return err },
		"UUIDs":        func() error { _, err := c.UUIDs(ctx, 10); return err },
		"CheckQuality": func() error { _, err := c.CheckQuality(ctx, 4096); return err },
		"CheckQuality(quantum) on an any-kind client": func() error {
			_, err := watcher.CheckQuality(ctx, 4096, entropy.KindQuantum)
			return err
		},
	}
	for name, call := range calls {
		err := timed(t, name, 1500*time.Millisecond, call)
		var e *entropy.Error
		if !errors.Is(err, entropy.ErrFailedPrecondition) || !errors.As(err, &e) {
			t.Fatalf("%s: want ErrFailedPrecondition, got %v", name, err)
		}
		if !strings.Contains(e.Message, "QUANTUM") || !strings.Contains(e.Message, "OS") {
			t.Fatalf("%s: the message should name what was asked (QUANTUM) and what the pool holds (OS): %q", name, e.Message)
		}
	}
	after, err := watcher.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.ServedBytesTotal != before.ServedBytesTotal {
		t.Fatalf("refused calls consumed bytes: served %d -> %d", before.ServedBytesTotal, after.ServedBytesTotal)
	}
}

func TestAcceptedKindsThatThePoolHoldsAreServed(t *testing.T) {
	ctx := context.Background()
	for _, kinds := range [][]entropy.SourceKind{onlyOS, {entropy.KindQuantum, entropy.KindOS}} {
		c := liveClientWith(t, entropy.WithAcceptKinds(kinds...))
		d, err := c.Draw(ctx, 64)
		if err != nil || len(d.Data) != 64 || !reflect.DeepEqual(kindsOf(d.Provenance), onlyOS) {
			t.Fatalf("%v: Draw: %v, %+v", kinds, err, d)
		}
		if b, err := c.Bytes(ctx, 16); err != nil || len(b) != 16 {
			t.Fatalf("%v: Bytes: %v", kinds, err)
		}
		if v, err := c.Integers(ctx, 1, 6, 5); err != nil || len(v) != 5 {
			t.Fatalf("%v: Integers: %v", kinds, err)
		}
		if v, err := c.Floats(ctx, 5); err != nil || len(v) != 5 {
			t.Fatalf("%v: Floats: %v", kinds, err)
		}
		if v, err := c.UUIDs(ctx, 5); err != nil || len(v) != 5 {
			t.Fatalf("%v: UUIDs: %v", kinds, err)
		}
		if r, err := c.CheckQuality(ctx, 2500); err != nil || !reflect.DeepEqual(kindsOf(r.Provenance), onlyOS) {
			t.Fatalf("%v: CheckQuality: %v", kinds, err)
		}
		r := c.NewReader(ctx, 100_000, 16384)
		data, err := io.ReadAll(r)
		if err != nil || len(data) != 100_000 || !reflect.DeepEqual(kindsOf(r.Provenance()), onlyOS) {
			t.Fatalf("%v: reader: %d bytes, %v", kinds, len(data), err)
		}
		r.Close()
	}
}

func TestAQuantumOnlyReaderEndsWithFailedPreconditionWithoutRetrying(t *testing.T) {
	ctx := context.Background()
	readers := map[string]*entropy.Reader{
		// A budget of 0 would retry forever: the error must not count as transient at all.
		"stream option": liveClient(t).NewReader(ctx, 100_000, 16384,
			entropy.WithStreamAcceptKinds(entropy.KindQuantum), entropy.WithReconnectBudget(0)),
		"client option": liveClientWith(t, entropy.WithAcceptKinds(entropy.KindQuantum)).NewReader(ctx, 0, 16384),
	}
	for name, r := range readers {
		var n int
		err := timed(t, name, 1500*time.Millisecond, func() error {
			var err error
			n, err = r.Read(make([]byte, 1000))
			return err
		})
		if !errors.Is(err, entropy.ErrFailedPrecondition) || !strings.Contains(err.Error(), "QUANTUM") {
			t.Fatalf("%s: want ErrFailedPrecondition naming QUANTUM, got %v", name, err)
		}
		if n != 0 || r.StreamsOpened() != 1 || r.Reconnects() != 0 {
			t.Fatalf("%s: %d bytes, %d streams, %d reconnects: want 0, 1, 0", name, n, r.StreamsOpened(), r.Reconnects())
		}
		r.Close()
	}
	// A reader's own kinds win over the client's: OS on a quantum-only client is served.
	r := liveClientWith(t, entropy.WithAcceptKinds(entropy.KindQuantum)).NewReader(ctx, 50_000, 16384,
		entropy.WithStreamAcceptKinds(entropy.KindOS))
	defer r.Close()
	if data, err := io.ReadAll(r); err != nil || len(data) != 50_000 {
		t.Fatalf("OS reader on a quantum-only client: %d bytes, %v", len(data), err)
	}
}

func TestReaderReportsTheProvenanceOfWhatItRead(t *testing.T) {
	r := liveClient(t).NewReader(context.Background(), 64<<10, 16384)
	defer r.Close()
	if _, err := io.ReadFull(r, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	p := r.Provenance()
	if p == nil || !reflect.DeepEqual(p.Kinds, onlyOS) || !reflect.DeepEqual(p.CollectorIDs, []string{devCollector}) ||
		p.ChunkCount < 1 || p.FirstChunk.Sequence > p.LastChunk.Sequence {
		t.Fatalf("provenance %+v", p)
	}
}

func TestUnspecifiedKindIsInvalidArgumentNamingIt(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		kinds []entropy.SourceKind
		field string
	}{{[]entropy.SourceKind{0}, "accept_kinds[0]"}, {[]entropy.SourceKind{entropy.KindOS, 0}, "accept_kinds[1]"}} {
		c := liveClientWith(t, entropy.WithAcceptKinds(tc.kinds...))
		_, err1 := c.Bytes(ctx, 8)
		_, err2 := c.CheckQuality(ctx, 2500)
		_, err3 := c.NewReader(ctx, 100, 0).Read(make([]byte, 100))
		for i, err := range []error{err1, err2, err3} {
			if !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("kinds %v, call %d: want InvalidArgument naming %s, got %v", tc.kinds, i, tc.field, err)
			}
		}
	}
}

func TestStatusReportsThePoolByClass(t *testing.T) {
	s, err := liveClient(t).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PoolByClass) != 1 || !reflect.DeepEqual(s.PoolByClass[0].Kinds, onlyOS) || s.PoolByClass[0].Bytes == 0 {
		t.Fatalf("pool by class %+v, want one class [os] holding bytes", s.PoolByClass)
	}
	if s.ExpiredBytesTotal != 0 || s.MaxByteAgeMs != 0 {
		t.Fatalf("expired %d, max byte age %d: want 0 and 0 on a dev gateway", s.ExpiredBytesTotal, s.MaxByteAgeMs)
	}
}

// TestCheckQualityNeedsItsScope runs a gateway from a keys file (not --dev: nothing feeds it,
// which the scope check does not need) with one key of the default scopes and one that lists
// quality:check.
func TestCheckQualityNeedsItsScope(t *testing.T) {
	if gatewayBin == "" {
		t.Skip("needs GATEWAY_BIN (the tests use an external gateway)")
	}
	addr, keys := startKeyedGateway(t, map[string]string{
		"plain":   "",
		"checker": `scopes = ["entropy:read", "status:read", "quality:check"]`,
	})
	ctx := context.Background()
	_, err := newClient(t, addr, keys["plain"]).CheckQuality(ctx, 4096)
	if !errors.Is(err, entropy.ErrPermissionDenied) || !strings.Contains(err.Error(), "quality:check") {
		t.Fatalf("default scopes: want PermissionDenied naming quality:check, got %v", err)
	}
	// The scoped key gets past the scope check: an empty pool then answers with something else.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = newClient(t, addr, keys["checker"]).CheckQuality(short, 4096)
	if err == nil || errors.Is(err, entropy.ErrPermissionDenied) {
		t.Fatalf("key with quality:check on an empty pool: want an error other than PermissionDenied, got %v", err)
	}
}

// startKeyedGateway starts a gateway (not --dev) whose keys file has one key per entry of
// scopes (name -> extra TOML lines, "" for the default scopes) and returns its address and the
// secrets by name. It stops with the test.
func startKeyedGateway(t *testing.T, scopes map[string]string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	secrets := map[string]string{}
	var file strings.Builder
	for name, extra := range scopes {
		raw := make([]byte, 16)
		_, _ = rand.Read(raw)
		secret := "go-" + name + "-" + hex.EncodeToString(raw)
		sum := sha256.Sum256([]byte(secret))
		secrets[name] = secret
		fmt.Fprintf(&file, "[[key]]\nname = %q\nsha256 = %q\n%s\n", name, hex.EncodeToString(sum[:]), extra)
	}
	keysFile := filepath.Join(dir, "keys.toml")
	ingestDir := filepath.Join(dir, "ingest")
	macKey := make([]byte, 32)
	_, _ = rand.Read(macKey)
	if err := os.WriteFile(keysFile, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ingestDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ingestDir, "test.key"), []byte(hex.EncodeToString(macKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ingest, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gatewayBin, "--api-keys-file", keysFile, "--ingest-keys-dir", ingestDir,
		"--state-dir", filepath.Join(dir, "gateway-state"),
		"--gateway-id", "go-test", "--listen-addr", addr, "--ingest-listen-addr", ingest,
		"--metrics-listen-addr", "")
	logFile, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	// It never serves (nothing feeds it), but it answers GetStatus once it listens.
	c := newClient(t, addr, secrets["plain"])
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Status(ctx)
		cancel()
		if err == nil {
			return addr, secrets
		}
		gone := false
		select {
		case <-exited:
			gone, err = true, fmt.Errorf("it exited (%v)", cmd.ProcessState)
		default:
		}
		if gone || time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("keyed gateway at %s does not answer: %v\n%s", addr, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
