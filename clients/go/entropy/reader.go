// An io.Reader over StreamRandom that reconnects without losing or repeating bytes.

package entropy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// MaxReconnects is how many failed attempts in a row a Reader makes before it gives up. Any
// delivered chunk resets the count, so a long stream survives any number of separate hiccups.
const MaxReconnects = 5

// Reader is an io.ReadCloser over StreamRandom, made by Client.NewReader.
//
// After a transport failure (Unavailable: a dropped connection, a restarting gateway) it opens
// a new stream for exactly the bytes still owed, after a short backoff. Bytes already received
// are kept, so the caller never loses a byte or sees one twice. Other errors are returned as
// they are. A Reader is not safe for concurrent use.
type Reader struct {
	rpc      entropyv1.EntropyServiceClient
	ctx      context.Context
	total    uint64 // 0: endless
	chunk    uint32
	received uint64
	buf      []byte
	stream   entropyv1.EntropyService_StreamRandomClient
	cancel   context.CancelFunc // ends the current stream
	failures int
	opens    int
	closed   bool
}

// NewReader streams totalBytes random bytes (0: endlessly, until Close) in messages of
// chunkBytes (0: the server's default, 16 KiB). ctx bounds the whole stream, reconnects
// included. Use io.ReadFull for an exact count.
func (c *Client) NewReader(ctx context.Context, totalBytes uint64, chunkBytes uint32) *Reader {
	return &Reader{rpc: c.rpc, ctx: ctx, total: totalBytes, chunk: chunkBytes}
}

// StreamsOpened is how many StreamRandom calls the reader has made (1 + reconnects).
func (r *Reader) StreamsOpened() int { return r.opens }

// Read reads up to len(p) bytes: what is buffered, or the next message. At the end of a
// bounded stream it returns io.EOF.
func (r *Reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errors.New("entropy: read from a closed Reader")
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.buf) == 0 {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Close ends the stream. It always returns nil.
func (r *Reader) Close() error {
	r.endStream()
	r.closed = true
	return nil
}

func (r *Reader) exhausted() bool { return r.total > 0 && r.received >= r.total }

// fill receives one more message into the buffer, reconnecting as needed.
func (r *Reader) fill() error {
	for !r.exhausted() {
		if r.stream == nil {
			if err := r.open(); err != nil {
				if retryErr := r.backoff(err); retryErr != nil {
					return retryErr
				}
				continue
			}
		}
		msg, err := r.stream.Recv()
		if errors.Is(err, io.EOF) {
			r.endStream()
			// The server closed the stream with OK before sending everything: a server bug,
			// reported rather than papered over by reconnecting.
			return &Error{Code: codes.Internal, Message: fmt.Sprintf(
				"stream ended with OK after %d of %s bytes", r.received, describeTotal(r.total))}
		}
		if err != nil {
			r.endStream()
			if retryErr := r.backoff(err); retryErr != nil {
				return retryErr
			}
			continue
		}
		data := msg.GetData()
		if r.total > 0 && r.received+uint64(len(data)) > r.total {
			r.endStream()
			return &Error{Code: codes.Internal, Message: fmt.Sprintf(
				"server sent %d bytes on a stream of %d", r.received+uint64(len(data)), r.total)}
		}
		r.received += uint64(len(data))
		r.buf = append(r.buf, data...)
		r.failures = 0
		if r.exhausted() {
			r.endStream() // everything owed has arrived; the server is closing with OK anyway
		}
		return nil
	}
	return io.EOF
}

func (r *Reader) open() error {
	ctx, cancel := context.WithCancel(r.ctx)
	r.opens++
	var remaining uint64 // 0 asks for an endless stream
	if r.total > 0 {
		remaining = r.total - r.received
	}
	stream, err := r.rpc.StreamRandom(ctx, &entropyv1.StreamRandomRequest{
		ChunkBytes: r.chunk, TotalBytes: remaining,
	})
	if err != nil {
		cancel()
		return err
	}
	r.stream, r.cancel = stream, cancel
	return nil
}

// backoff decides after err: nil means wait done, try again; otherwise the error to return.
func (r *Reader) backoff(err error) error {
	if status.Code(err) != codes.Unavailable || r.failures >= MaxReconnects {
		return fromRPC(err, nil)
	}
	r.failures++
	delay := min(50*time.Millisecond<<r.failures, time.Second)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-r.ctx.Done():
		return fromRPC(status.FromContextError(r.ctx.Err()).Err(), nil)
	}
}

func (r *Reader) endStream() {
	if r.cancel != nil {
		r.cancel()
	}
	r.stream, r.cancel = nil, nil
}

func describeTotal(total uint64) string {
	if total == 0 {
		return "unlimited"
	}
	return fmt.Sprint(total)
}
