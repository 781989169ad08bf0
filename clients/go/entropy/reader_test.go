package entropy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

const mib = 1 << 20

func TestReaderDeliversExactlyTotalInOddReads(t *testing.T) {
	r := liveClient(t).NewReader(context.Background(), mib, 64<<10)
	defer r.Close()
	var all []byte
	buf := make([]byte, 1000) // deliberately not a divisor of the chunk size
	for {
		n, err := io.ReadFull(r, buf)
		all = append(all, buf[:n]...)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(all) != mib {
		t.Fatalf("read %d bytes, want %d", len(all), mib)
	}
	if n, err := r.Read(buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %d, %v", n, err)
	}
	if r.StreamsOpened() != 1 {
		t.Fatalf("%d streams for an undisturbed read", r.StreamsOpened())
	}
	noRepeatedBlocks(t, all)
}

func TestReaderReadAll(t *testing.T) {
	r := liveClient(t).NewReader(context.Background(), 12345, 0)
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil || len(data) != 12345 {
		t.Fatalf("ReadAll: %d bytes, %v", len(data), err)
	}
}

func TestReaderCopiesToAWriter(t *testing.T) {
	var out bytes.Buffer
	r := liveClient(t).NewReader(context.Background(), 300_000, 16384)
	defer r.Close()
	if n, err := io.Copy(&out, r); err != nil || n != 300_000 || out.Len() != 300_000 {
		t.Fatalf("Copy: %d, %v", n, err)
	}
}

func TestEndlessReaderReadsUntilClosed(t *testing.T) {
	r := liveClient(t).NewReader(context.Background(), 0, 8192)
	data := make([]byte, 300_000)
	if _, err := io.ReadFull(r, data); err != nil {
		t.Fatal(err)
	}
	noRepeatedBlocks(t, data)
	r.Close()
	if _, err := r.Read(data); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

func TestReaderStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := liveClient(t).NewReader(ctx, 0, 8192)
	defer r.Close()
	if _, err := io.ReadFull(r, make([]byte, 10000)); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err := io.ReadAll(r)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestReaderReconnectsAfterTheConnectionIsCut(t *testing.T) {
	const total = 4 * mib
	// The first connection carries at most 2 MiB, so the stream cannot finish before the cut.
	proxy := newCutProxy(t, target, 2*mib)
	r := newClient(t, proxy.addr, apiKey).NewReader(context.Background(), total, 64<<10)
	defer r.Close()
	first := make([]byte, mib)
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatal(err)
	}
	proxy.cut()
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("after the cut: %v (streams opened %d)", err, r.StreamsOpened())
	}
	if r.StreamsOpened() < 2 || proxy.connectionCount() < 2 {
		t.Fatalf("the cut should have forced a new stream: %d streams, %d connections",
			r.StreamsOpened(), proxy.connectionCount())
	}
	all := append(first, rest...)
	if len(all) != total {
		t.Fatalf("read %d bytes, want %d", len(all), total)
	}
	noRepeatedBlocks(t, all)
}
