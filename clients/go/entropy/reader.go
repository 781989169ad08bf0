// An io.Reader over StreamRandom that reconnects without losing or repeating bytes, following
// the time-based reconnect rule every Entropy Diode client shares (clients/README.md).

package entropy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// The reconnect rule's defaults.
const (
	// DefaultReconnectBudget is how long a Reader keeps trying after a failure.
	DefaultReconnectBudget = 30 * time.Second
	// DefaultAttemptTimeout is how long one new stream may take to deliver its first message,
	// connecting included.
	DefaultAttemptTimeout = 2 * time.Second
	// DefaultStallTimeout is how long a flowing stream may go without a message while the
	// reader waits for one, before it counts as broken.
	DefaultStallTimeout = 10 * time.Second
	// DefaultInitialBackoff and DefaultMaxBackoff bound the delay between attempts.
	DefaultInitialBackoff = 50 * time.Millisecond
	DefaultMaxBackoff     = time.Second
)

type streamConfig struct {
	budget, attempt, stall time.Duration
	backoffMin, backoffMax time.Duration
	kinds                  []SourceKind
	kindsSet               bool // kinds given for this reader, overriding the client's
	construction           Construction
	constructionSet        bool // construction given for this reader, overriding the client's
	err                    error
}

// StreamOption configures a Reader (Client.NewReader).
type StreamOption func(*streamConfig)

// WithReconnectBudget sets how long a Reader keeps reconnecting after a failure (default 30 s);
// 0 means forever, for daemons. The budget starts again once bytes flow.
func WithReconnectBudget(d time.Duration) StreamOption {
	return func(c *streamConfig) {
		if d < 0 {
			c.fail("reconnect budget is %v, must be >= 0 (0: forever)", d)
		}
		c.budget = d
	}
}

// WithAttemptTimeout sets how long one new stream may take to deliver its first message,
// connecting included (default 2 s). It must be positive.
func WithAttemptTimeout(d time.Duration) StreamOption {
	return func(c *streamConfig) {
		if d <= 0 {
			c.fail("attempt timeout is %v, must be positive", d)
		}
		c.attempt = d
	}
}

// WithStallTimeout sets how long a flowing stream may go without a message, while the reader
// waits for one, before it counts as broken and is replaced (default 10 s). It must be positive.
func WithStallTimeout(d time.Duration) StreamOption {
	return func(c *streamConfig) {
		if d <= 0 {
			c.fail("stall timeout is %v, must be positive", d)
		}
		c.stall = d
	}
}

// WithBackoff sets the delay between attempts: initial, doubling up to max, each delay drawn
// uniformly from the upper half of its ceiling (default 50 ms to 1 s).
func WithBackoff(initial, max time.Duration) StreamOption {
	return func(c *streamConfig) {
		if initial <= 0 || max < initial {
			c.fail("backoff %v..%v: need 0 < initial <= max", initial, max)
		}
		c.backoffMin, c.backoffMax = initial, max
	}
}

// WithStreamAcceptKinds makes this reader accept only bytes from sources of these kinds, on
// its first stream and every reconnect, instead of the client's WithAcceptKinds; none accepts
// any kind. When the pool holds no byte of an accepted class and none arrived lately, Read
// returns ErrFailedPrecondition at once: the reader does not reconnect for it.
func WithStreamAcceptKinds(kinds ...SourceKind) StreamOption {
	return func(c *streamConfig) {
		c.kinds, c.kindsSet = append([]SourceKind(nil), kinds...), true
	}
}

// WithStreamConstruction makes this reader ask for bytes made this way (ConstructionRaw or a
// DRBG construction), on its first stream and every reconnect, instead of the client's
// WithConstruction. A DRBG stream has an instance of its own, so every message of one stream
// names the same Provenance.DRBG.InstanceID, and a reconnect gets a new one. Without the
// key's `entropy:drbg` scope Read returns ErrPermissionDenied at once.
func WithStreamConstruction(construction Construction) StreamOption {
	return func(c *streamConfig) {
		c.construction, c.constructionSet = construction, true
	}
}

func (c *streamConfig) fail(format string, args ...any) {
	if c.err == nil {
		c.err = &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf(format, args...)}
	}
}

// Reader is an io.ReadCloser over StreamRandom, made by Client.NewReader.
//
// After a transport failure (Unavailable: a dropped connection, a restarting gateway; a stream
// cut short without a status by a proxy in between; or an attempt or stall timing out) it opens a new stream for exactly the bytes still owed. Bytes
// already received are kept, so the caller never loses a byte or sees one twice. Each attempt
// waits for the connection to be ready, within the attempt timeout; attempts are spaced by a
// jittered backoff and go on for at most the reconnect budget from the failure (the budget
// starts again once bytes flow). Any other status (a bad key, a quota, FailedPrecondition
// for source kinds the pool does not hold) is returned at once.
// A Reader is not safe for concurrent use.
type Reader struct {
	client *Client
	ctx    context.Context
	total  uint64 // 0: endless
	chunk  uint32
	cfg    streamConfig
	kinds  []entropyv1.SourceKind // accept_kinds of every stream
	// construction of every stream
	construction entropyv1.Construction

	lastProvenance *entropyv1.DrawProvenance // of the last message received

	received uint64
	buf      []byte
	cur      *attempt
	opens    int
	closed   bool

	broken      bool      // bytes stopped flowing ...
	brokenSince time.Time // ... at this time
	failures    int       // failed attempts since then
	lastErr     *Error    // what to report if the outage outlasts the budget
	reconnects  int
}

// attempt is one StreamRandom call.
type attempt struct {
	stream   entropyv1.EntropyService_StreamRandomClient
	cancel   context.CancelFunc
	deadline time.Time     // for the first message
	limit    time.Duration // the attempt timeout it was given
	flowing  bool          // a message has arrived
	dead     atomic.Bool
	timedOut atomic.Bool
}

func (a *attempt) kill(timeout bool) {
	if timeout {
		a.timedOut.Store(true)
	}
	a.dead.Store(true)
	a.cancel()
}

// NewReader streams totalBytes random bytes (0: endlessly, until Close) in messages of
// chunkBytes (0: the server's default, 16 KiB), reconnecting as the options say (defaults:
// 30 s budget, 2 s per attempt, 10 s stall, 50 ms..1 s backoff). ctx bounds the whole stream,
// reconnects included; ReadContext bounds one read. Use io.ReadFull for an exact count. An
// invalid option is returned by the first Read.
func (c *Client) NewReader(ctx context.Context, totalBytes uint64, chunkBytes uint32, opts ...StreamOption) *Reader {
	cfg := streamConfig{
		budget: DefaultReconnectBudget, attempt: DefaultAttemptTimeout, stall: DefaultStallTimeout,
		backoffMin: DefaultInitialBackoff, backoffMax: DefaultMaxBackoff,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	kinds := c.acceptKinds
	if cfg.kindsSet {
		kinds = kindsToPB(cfg.kinds)
	}
	construction := c.construction
	if cfg.constructionSet {
		construction = entropyv1.Construction(cfg.construction)
	}
	return &Reader{
		client: c, ctx: ctx, total: totalBytes, chunk: chunkBytes, cfg: cfg,
		kinds: kinds, construction: construction,
	}
}

// Provenance is where the bytes of the last message received came from: the message the bytes
// of the last Read belong to, as the reader takes a new message only when the previous one is
// used up. Nil before the first message, or from a gateway that sends none.
func (r *Reader) Provenance() *Provenance { return provenanceFromPB(r.lastProvenance) }

// StreamsOpened is how many StreamRandom calls the reader has made.
func (r *Reader) StreamsOpened() int { return r.opens }

// Reconnects is how many streams the reader opened after a failure.
func (r *Reader) Reconnects() int { return r.reconnects }

// Received is how many bytes arrived from the gateway (returned by Read, or buffered).
func (r *Reader) Received() uint64 { return r.received }

// Read reads up to len(p) bytes: what is buffered, or the next message. At the end of a
// bounded stream it returns io.EOF. It is bounded by the reader's context and by the reconnect
// rule: it never blocks forever unless the reconnect budget is 0.
func (r *Reader) Read(p []byte) (int, error) { return r.read(nil, p) }

// ReadContext is Read bounded also by ctx. If ctx ends first it returns an *Error matching
// context.Canceled or context.DeadlineExceeded (errors.Is); the reader stays usable, and the
// next read opens a new stream for the bytes still owed (the message in flight is given up,
// never repeated).
func (r *Reader) ReadContext(ctx context.Context, p []byte) (int, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return r.read(ctx, p)
}

// read is Read (ctx nil: only the reader's context) or ReadContext. The internals below take
// the same nil-able ctx: contexts are never compared, as some context types cannot be.
func (r *Reader) read(ctx context.Context, p []byte) (int, error) {
	if r.closed {
		return 0, errors.New("entropy: read from a closed Reader")
	}
	if r.cfg.err != nil {
		return 0, r.cfg.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.buf) == 0 {
		if err := r.fill(ctx); err != nil {
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
	r.buf = nil
	return nil
}

func (r *Reader) exhausted() bool { return r.total > 0 && r.received >= r.total }

// fill receives one more message into the buffer, reconnecting as the rule allows.
func (r *Reader) fill(ctx context.Context) error {
	for !r.exhausted() {
		if err := r.contextError(ctx); err != nil {
			return err
		}
		if r.cur == nil {
			if err := r.open(ctx); err != nil {
				if err = r.retryOrFail(ctx, err); err != nil {
					return err
				}
				continue
			}
		}
		msg, err := r.recv(ctx)
		if errors.Is(err, io.EOF) {
			r.endStream()
			// The server closed the stream with OK before sending everything: a server bug,
			// reported rather than papered over by reconnecting.
			return &Error{Code: codes.Internal, Message: fmt.Sprintf(
				"stream ended with OK after %d of %s bytes", r.received, describeTotal(r.total))}
		}
		if err != nil {
			if err = r.retryOrFail(ctx, err); err != nil {
				return err
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
		if p := msg.GetProvenance(); p != nil {
			r.lastProvenance = p
		}
		if len(data) > 0 {
			r.broken, r.failures, r.lastErr = false, 0, nil
		}
		if r.exhausted() {
			r.endStream() // everything owed has arrived; the server is closing with OK anyway
		}
		if len(data) > 0 {
			return nil
		}
	}
	return io.EOF
}

// open starts a stream for the bytes still owed. The attempt's deadline (for connecting and
// the first message) is the attempt timeout, cut to what is left of the budget.
func (r *Reader) open(ctx context.Context) error {
	timeout := r.cfg.attempt
	if r.broken {
		r.reconnects++
		// grpc backs off on its own after failed connects; this rule decides when to try, so
		// the channel tries now.
		r.client.conn.ResetConnectBackoff()
		if r.cfg.budget > 0 {
			// Cut to what is left of the budget, but never below a useful minimum (100 ms, or
			// the attempt timeout if shorter): a last attempt of a millisecond could not even
			// connect. So the rule may end up to 100 ms late. (If such an attempt times out,
			// retryOrFail still reports the error before it.)
			floor := min(timeout, 100*time.Millisecond)
			timeout = max(floor, min(timeout, r.cfg.budget-time.Since(r.brokenSince)))
		}
	}
	var remaining uint64 // 0 asks for an endless stream
	if r.total > 0 {
		remaining = r.total - r.received
	}
	sctx, cancel := context.WithCancel(r.ctx)
	a := &attempt{cancel: cancel, deadline: time.Now().Add(timeout), limit: timeout}
	r.cur = a
	r.opens++
	stop := a.watch(ctx, timeout)
	stream, err := r.client.rpc.StreamRandom(sctx, &entropyv1.StreamRandomRequest{
		ChunkBytes: r.chunk, TotalBytes: remaining, AcceptKinds: r.kinds, Construction: r.construction,
	}, grpc.WaitForReady(true))
	stop()
	if err == nil && a.dead.Load() {
		err = status.Error(codes.Canceled, "attempt ended")
	}
	if err != nil {
		return err
	}
	a.stream = stream
	return nil
}

// recv waits for the next message of the current stream, within the attempt's deadline (first
// message) or the stall timeout (later ones).
func (r *Reader) recv(ctx context.Context) (*entropyv1.StreamRandomResponse, error) {
	a := r.cur
	wait := r.cfg.stall
	if !a.flowing {
		wait = time.Until(a.deadline)
	}
	stop := a.watch(ctx, wait)
	msg, err := a.stream.Recv()
	stop()
	if err != nil {
		return nil, err
	}
	a.flowing = true
	if a.dead.Load() {
		// A timer or ctx ended the attempt just as this message arrived: keep the message and
		// start a new stream for the rest on the next read.
		r.endStream()
	}
	return msg, nil
}

// watch ends the attempt when wait passes (a timeout) or when readCtx ends (nil: no read
// context; the attempt's context derives from the reader's already). stop disarms both.
func (a *attempt) watch(readCtx context.Context, wait time.Duration) (stop func()) {
	if wait <= 0 {
		a.kill(true)
		return func() {}
	}
	t := time.AfterFunc(wait, func() { a.kill(true) })
	if readCtx == nil || readCtx.Done() == nil {
		return func() { t.Stop() }
	}
	undo := context.AfterFunc(readCtx, func() { a.kill(false) })
	return func() { t.Stop(); undo() }
}

// retryOrFail ends the current attempt after err. It returns nil once the backoff has passed
// and the rule allows another attempt, or the error to return.
func (r *Reader) retryOrFail(ctx context.Context, err error) error {
	a := r.cur
	r.endStream()
	if cerr := r.contextError(ctx); cerr != nil {
		return cerr
	}
	var e *Error
	switch {
	case a != nil && a.timedOut.Load():
		what := fmt.Sprintf("no message within the stall timeout (%v)", r.cfg.stall)
		if !a.flowing {
			what = fmt.Sprintf("no first message within the attempt timeout (%v, connecting included; connection %s)",
				a.limit.Round(time.Millisecond), strings.ToLower(r.client.conn.GetState().String()))
		}
		e = &Error{Code: codes.DeadlineExceeded, Message: what}
	case status.Code(err) == codes.Unavailable:
		e = fromRPC(err, nil).(*Error)
	case cutShort(err):
		e = &Error{Code: codes.Unavailable, Message: "stream cut short on the way: " + status.Convert(err).Message()}
	default:
		return fromRPC(err, nil)
	}
	now := time.Now()
	if !r.broken {
		r.broken, r.brokenSince, r.lastErr = true, now, nil
	}
	// An attempt that only the budget's end made shorter than the attempt timeout, timing out
	// before its first message, says nothing about the gateway: the error before it (the
	// gateway's answer) stays the one to report. Without one before it, the timeout is reported.
	clamped := a != nil && a.timedOut.Load() && !a.flowing && a.limit < r.cfg.attempt
	if !clamped || r.lastErr == nil {
		r.lastErr = e
	}
	spent := now.Sub(r.brokenSince)
	if r.cfg.budget > 0 && spent >= r.cfg.budget {
		return &Error{Code: r.lastErr.Code, Message: fmt.Sprintf(
			"gave up reconnecting after %v (%d failed attempts, reconnect budget %v), %d bytes received: %s",
			spent.Round(time.Millisecond), r.failures+1, r.cfg.budget, r.received, r.lastErr.Message)}
	}
	ceiling := r.cfg.backoffMax
	if r.failures < 30 {
		ceiling = min(ceiling, r.cfg.backoffMin<<r.failures)
	}
	r.failures++
	delay := ceiling/2 + rand.N(ceiling/2+1)
	if r.cfg.budget > 0 {
		delay = min(delay, r.cfg.budget-spent)
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	var readDone <-chan struct{} // nil: never
	if ctx != nil {
		readDone = ctx.Done()
	}
	select {
	case <-t.C:
		return nil
	case <-r.ctx.Done():
	case <-readDone:
	}
	return r.contextError(ctx)
}

// contextError is the error for the reader's context or the read's (nil: none) having ended,
// or nil.
func (r *Reader) contextError(ctx context.Context) error {
	for _, c := range []context.Context{r.ctx, ctx} {
		if c == nil {
			continue
		}
		if err := c.Err(); err != nil {
			code := codes.Canceled
			if errors.Is(err, context.DeadlineExceeded) {
				code = codes.DeadlineExceeded
			}
			return &Error{Code: code, Message: fmt.Sprintf("read stopped by its context (%v) after %d bytes received", err, r.received)}
		}
	}
	return nil
}

func (r *Reader) endStream() {
	if r.cur != nil {
		r.cur.cancel()
	}
	r.cur = nil
}

func describeTotal(total uint64) string {
	if total == 0 {
		return "unlimited"
	}
	return fmt.Sprint(total)
}
