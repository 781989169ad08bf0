package entropy_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

// The live dev gateway every test talks to: started once by TestMain from $GATEWAY_BIN (default
// the repo's target/release/entropy-gateway), or the one in ENTROPY_TEST_ENDPOINT and
// ENTROPY_TEST_API_KEY.
var (
	target       string
	apiKey       string
	poolCapacity uint64 // 0 for an external gateway
)

const testPoolCapacity = 16 << 20

func TestMain(m *testing.M) {
	stop, err := startGateway()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func startGateway() (stop func(), err error) {
	if ep := os.Getenv("ENTROPY_TEST_ENDPOINT"); ep != "" {
		target, apiKey = ep, os.Getenv("ENTROPY_TEST_API_KEY")
		return func() {}, waitServing()
	}
	bin := os.Getenv("GATEWAY_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../../../target/release/entropy-gateway")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	target = l.Addr().String()
	l.Close()
	key := make([]byte, 8)
	_, _ = rand.Read(key)
	apiKey = "go-test-" + hex.EncodeToString(key)
	poolCapacity = testPoolCapacity
	cmd := exec.Command(bin, "--dev", "--listen-addr", target,
		"--pool-capacity-bytes", fmt.Sprint(testPoolCapacity), "--metrics-listen-addr", "")
	cmd.Env = append(os.Environ(), "ENTROPY_DEV_API_KEY="+apiKey)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (set GATEWAY_BIN): %w", bin, err)
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	if err := waitServing(); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

func waitServing() error {
	c, err := entropy.New(target, apiKey, entropy.WithInsecure(), entropy.WithTimeout(time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s, err := c.Status(context.Background()); err == nil && s.Serving {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("gateway at %s not serving after 20s", target)
}

func newClient(t *testing.T, addr, key string) *entropy.Client {
	t.Helper()
	c, err := entropy.New(addr, key, entropy.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func liveClient(t *testing.T) *entropy.Client { return newClient(t, target, apiKey) }

// noRepeatedBlocks fails if a 16-byte block of data appears twice: for random data a repeat has
// probability ~2^-128 per pair, so one means bytes were served or returned twice.
func noRepeatedBlocks(t *testing.T, data []byte) {
	t.Helper()
	seen := make(map[[16]byte]bool, len(data)/16)
	for i := 0; i+16 <= len(data); i += 16 {
		b := [16]byte(data[i : i+16])
		if seen[b] {
			t.Fatalf("16-byte block at offset %d appeared before", i)
		}
		seen[b] = true
	}
}
