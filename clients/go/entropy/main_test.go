package entropy_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
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
	gatewayBin = os.Getenv("GATEWAY_BIN")
	if gatewayBin == "" {
		gatewayBin, _ = filepath.Abs("../../../target/release/entropy-gateway")
	}
	var err2 error
	if target, err2 = freeAddr(); err2 != nil {
		return nil, err2
	}
	key := make([]byte, 8)
	_, _ = rand.Read(key)
	apiKey = "go-test-" + hex.EncodeToString(key)
	poolCapacity = testPoolCapacity
	cmd, err := spawnGateway(target, apiKey)
	if err != nil {
		return nil, err
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
	if err := waitServingAt(target, apiKey); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// gatewayBin is the dev gateway binary; "" when the tests use an external gateway.
var gatewayBin string

// spawnGateway starts a dev gateway on addr with the given key (it is serving once
// waitServingAt returns).
func spawnGateway(addr, key string) (*exec.Cmd, error) {
	// Connect on, for connect_test.go (the Go Connect client against the same gateway).
	cmd := exec.Command(gatewayBin, "--dev", "--listen-addr", addr,
		"--pool-capacity-bytes", fmt.Sprint(testPoolCapacity), "--metrics-listen-addr", "",
		"--connect-enabled", "true")
	cmd.Env = append(os.Environ(), "ENTROPY_DEV_API_KEY="+key)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (set GATEWAY_BIN): %w", gatewayBin, err)
	}
	return cmd, nil
}

// handedOut holds the ports freeAddr has returned.
var handedOut = map[int]bool{}

// freeAddr is a 127.0.0.1 address with a port nothing listens on right now, below the
// ephemeral range (so no outgoing connection takes it before the gateway binds it) and never
// returned twice by this process (bind-0-then-close may hand out the same port again). The
// repo's other test harnesses pick ports by the same rule (scripts/lib/ports.py), and read
// TEST_PORT_RANGE=LOW-HIGH (inclusive) the same way.
func freeAddr() (string, error) {
	low, high := portRange()
	for tries := 0; tries < 1000; tries++ {
		port := low + mrand.IntN(high-low+1)
		if handedOut[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		handedOut[port] = true
		return l.Addr().String(), nil
	}
	return "", fmt.Errorf("no free loopback port found in 1000 tries")
}

// portRange is where freeAddr draws ports: TEST_PORT_RANGE, else 10000..32767.
func portRange() (int, int) {
	var low, high int
	if given := os.Getenv("TEST_PORT_RANGE"); given != "" {
		if _, err := fmt.Sscanf(given, "%d-%d", &low, &high); err == nil && high >= low {
			return low, high
		}
		panic("TEST_PORT_RANGE must be LOW-HIGH, not " + given)
	}
	return 10000, 32767
}

func waitServing() error { return waitServingAt(target, apiKey) }

func waitServingAt(addr, key string) error {
	c, err := entropy.New(addr, key, entropy.WithTimeout(time.Second))
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
	return fmt.Errorf("gateway at %s not serving after 20s", addr)
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
