package entropy

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// RandSource is a math/rand/v2 Source whose bits all come from the gateway, through an endless
// stream (a Reader, so it reconnects by the same rule): every rand.Rand method (IntN, Float64,
// Shuffle, Perm, NormFloat64, ...) then draws on it, each gateway byte used once, here.
//
//	src := client.NewRandSource(ctx)
//	defer src.Close()
//	r := rand.New(src)
//	roll := r.IntN(6) + 1
//
// rand.Source's Uint64 cannot return an error: when the stream fails for good (a status that
// is not a transport failure, such as a revoked key, or its reconnect budget spent) or the
// RandSource is closed, Uint64 panics with the error. Give the stream WithReconnectBudget(0) for a
// RandSource that waits out any outage instead. Safe for concurrent use.
type RandSource struct {
	mu     sync.Mutex
	reader *Reader
	buf    [8]byte
}

// NewRandSource opens an endless stream (4 KiB messages) for a RandSource (the stream
// options as for NewReader). The stream ends with ctx or Close.
func (c *Client) NewRandSource(ctx context.Context, opts ...StreamOption) *RandSource {
	return &RandSource{reader: c.NewReader(ctx, 0, 4096, opts...)}
}

// Uint64 is 8 gateway bytes, big-endian. It panics when the stream has failed for good.
func (s *RandSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.ReadFull(s.reader, s.buf[:]); err != nil {
		panic(fmt.Sprintf("entropy.RandSource: the gateway stream failed: %v", err))
	}
	return binary.BigEndian.Uint64(s.buf[:])
}

// Close ends the stream; a later Uint64 panics.
func (s *RandSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reader.Close()
}
