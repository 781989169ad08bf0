package entropy_test

import (
	"context"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

// A real gateway restarting under a reader: kill -9 (no goodbye) back after 0.2 s, and SIGTERM
// (the stream ends with "shutting down") back after 2 s, on the same port. The reader must end
// with exactly the total and no 16-byte block twice. (clients/conformance/restart.py runs the
// longer outages for every language.)
func TestReaderSurvivesGatewayRestarts(t *testing.T) {
	if gatewayBin == "" {
		t.Skip("needs GATEWAY_BIN (the tests use an external gateway)")
	}
	cases := []struct {
		name   string
		signal syscall.Signal
		down   time.Duration
	}{
		{"kill-9-back-after-200ms", syscall.SIGKILL, 200 * time.Millisecond},
		{"sigterm-back-after-2s", syscall.SIGTERM, 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const total = 8 * mib
			addr, err := freeAddr()
			if err != nil {
				t.Fatal(err)
			}
			key := apiKey + "-restart"
			gw := startServing(t, addr, key)
			// Small flow-control windows (no BDP growth), so the gateway cannot run far ahead of
			// the reader: the stream is mid-flight when the gateway goes.
			client, err := entropy.New(addr, key, entropy.WithDialOptions(
				grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			r := client.NewReader(context.Background(), total, 64<<10)
			defer r.Close()
			first := make([]byte, mib)
			if _, err := io.ReadFull(r, first); err != nil {
				t.Fatal(err)
			}
			// The reader keeps reading while the gateway goes and comes back, as an application
			// would (a reader that stopped reading would hold a SIGTERMed gateway for its whole
			// shutdown grace, its stream blocked on flow control).
			restarted := make(chan *exec.Cmd, 1)
			go func() {
				_ = gw.Process.Signal(c.signal)
				_ = gw.Wait()
				time.Sleep(c.down)
				cmd, err := spawnGateway(addr, key)
				if err != nil {
					t.Error(err)
				}
				restarted <- cmd
			}()
			start := time.Now()
			rest, err := io.ReadAll(r)
			took := time.Since(start)
			if cmd := <-restarted; cmd != nil {
				defer stopProcess(cmd)
			}
			if err != nil {
				t.Fatalf("after the restart: %v (%d reconnects)", err, r.Reconnects())
			}
			all := append(first, rest...)
			if len(all) != total || r.Received() != total {
				t.Fatalf("read %d bytes, want %d", len(all), total)
			}
			if r.Reconnects() < 1 {
				t.Fatal("the stream finished without reconnecting: the restart tested nothing")
			}
			noRepeatedBlocks(t, all)
			t.Logf("finished %v after the gateway went, %d reconnects", took.Round(time.Millisecond), r.Reconnects())
		})
	}
}

func startServing(t *testing.T, addr, key string) *exec.Cmd {
	t.Helper()
	cmd, err := spawnGateway(addr, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitServingAt(addr, key); err != nil {
		stopProcess(cmd)
		t.Fatal(err)
	}
	return cmd
}

func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}
