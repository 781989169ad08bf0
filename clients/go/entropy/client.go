// The connection and the unary calls: Go types in, Go types out, errors as *Error.

package entropy

import (
	"context"
	"crypto/tls"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// DefaultTimeout bounds a unary call whose context has no deadline. The gateway itself answers
// Unavailable after its max_wait_ms (2 s by default) when the pool runs dry, so this only
// bounds network trouble.
const DefaultTimeout = 30 * time.Second

// Client is a connection to an Entropy Diode gateway. It is safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	rpc     entropyv1.EntropyServiceClient
	timeout time.Duration
}

type config struct {
	tls      *tls.Config
	insecure bool
	timeout  time.Duration
	dialOpts []grpc.DialOption
}

// Option configures New.
type Option func(*config)

// WithInsecure uses plaintext, as a --dev gateway does. The default is TLS with the system roots.
func WithInsecure() Option { return func(c *config) { c.insecure = true } }

// WithTLS uses TLS with the given configuration (custom roots, client certificates).
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithTimeout sets the deadline given to unary calls whose context has none (0: no deadline).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithDialOptions passes extra options to grpc.NewClient (interceptors, window sizes, ...).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// New returns a client for the gateway at target ("host:port"). It connects lazily, on the
// first call, so an unreachable gateway shows up as ErrUnavailable there.
func New(target, apiKey string, opts ...Option) (*Client, error) {
	cfg := config{tls: &tls.Config{MinVersion: tls.VersionTLS12}, timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	transport := credentials.NewTLS(cfg.tls)
	if cfg.insecure {
		transport = insecure.NewCredentials()
	}
	dialOpts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(transport),
		grpc.WithPerRPCCredentials(apiKeyCreds{key: apiKey, requireTLS: !cfg.insecure}),
	}, cfg.dialOpts...)
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, rpc: entropyv1.NewEntropyServiceClient(conn), timeout: cfg.timeout}, nil
}

// Close closes the connection; calls in flight fail with codes.Canceled.
func (c *Client) Close() error { return c.conn.Close() }

// Bytes returns exactly n random bytes (1..=1048576).
func (c *Client) Bytes(ctx context.Context, n int) ([]byte, error) {
	num, err := toUint32("num_bytes", n)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetRandom, &entropyv1.GetRandomRequest{NumBytes: num})
	return resp.GetData(), err
}

// Integers returns count (1..=10000) uniform integers in [low, high], both inclusive; the full
// int64 range is allowed.
func (c *Client) Integers(ctx context.Context, low, high int64, count int) ([]int64, error) {
	n, err := toUint32("count", count)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetIntegers, &entropyv1.GetIntegersRequest{Min: low, Max: high, Count: n})
	return resp.GetValues(), err
}

// Floats returns count (1..=10000) uniform float64s in [0, 1) with 53 random bits each.
func (c *Client) Floats(ctx context.Context, count int) ([]float64, error) {
	n, err := toUint32("count", count)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetFloats, &entropyv1.GetFloatsRequest{Count: n})
	return resp.GetValues(), err
}

// UUIDs returns count (1..=10000) random version 4 UUIDs in canonical lowercase form.
func (c *Client) UUIDs(ctx context.Context, count int) ([]string, error) {
	n, err := toUint32("count", count)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetUuids, &entropyv1.GetUuidsRequest{Count: n})
	return resp.GetUuids(), err
}

// Status returns the gateway's pool, counters and sources.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	resp, err := unary(c, ctx, c.rpc.GetStatus, &entropyv1.GetStatusRequest{})
	if err != nil {
		return nil, err
	}
	return statusFromPB(resp), nil
}

// unary runs one generated unary method with the client's default deadline, capturing the
// trailer (for retry-after-ms) and converting the error.
func unary[Req, Resp any](
	c *Client, ctx context.Context,
	method func(context.Context, *Req, ...grpc.CallOption) (*Resp, error), req *Req,
) (*Resp, error) {
	if _, ok := ctx.Deadline(); !ok && c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var trailer metadata.MD
	resp, err := method(ctx, req, grpc.Trailer(&trailer))
	if err != nil {
		return nil, fromRPC(err, trailer)
	}
	return resp, nil
}

func toUint32(field string, n int) (uint32, error) {
	if n < 0 || uint64(n) > math.MaxUint32 {
		return 0, invalid("%s is %d, must fit in a uint32", field, n)
	}
	return uint32(n), nil
}

// apiKeyCreds sends the key as `authorization: Bearer KEY` metadata on every call (the gateway
// never takes keys from fields or URLs). On a TLS channel grpc refuses to send it in plaintext.
type apiKeyCreds struct {
	key        string
	requireTLS bool
}

func (a apiKeyCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + a.key}, nil
}

func (a apiKeyCreds) RequireTransportSecurity() bool { return a.requireTLS }
