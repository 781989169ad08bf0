// The connection and the unary calls: Go types in, Go types out, errors as *Error.

package entropy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
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
	conn     *grpc.ClientConn
	rpc      entropyv1.EntropyServiceClient
	timeout  time.Duration
	endpoint Endpoint
	// acceptKinds is sent as accept_kinds on every entropy call (nil: any kind).
	acceptKinds []entropyv1.SourceKind
	// construction is sent on every entropy call (0: raw).
	construction entropyv1.Construction
}

type config struct {
	tls          *tls.Config
	caFile       string
	insecure     bool
	timeout      time.Duration
	dialOpts     []grpc.DialOption
	kinds        []SourceKind
	construction Construction
}

// Option configures New and NewFromEnv.
type Option func(*config)

// WithInsecure uses plaintext even to a remote host, as writing http:// does: the API key then
// crosses the network in the clear. A loopback host:port (a --dev gateway) is plaintext without
// it. It cannot be combined with https:// or a CA file.
func WithInsecure() Option { return func(c *config) { c.insecure = true } }

// WithTLS uses TLS with the given configuration (custom roots, client certificates), even on a
// loopback host:port. It cannot be combined with http://.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithCAFile trusts the CA certificate(s) in the PEM file at path instead of the system roots,
// as ENTROPY_CA_FILE does for NewFromEnv (this option wins). A host:port is then TLS even on
// loopback, and http:// is refused.
func WithCAFile(path string) Option { return func(c *config) { c.caFile = path } }

// WithTimeout sets the deadline given to unary calls whose context has none (0: no deadline).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithAcceptKinds makes every entropy call of the client (Bytes, Draw, Integers, Floats,
// UUIDs, CheckQuality, and readers) accept only bytes from sources of these kinds: a chunk
// qualifies when every source that contributed to it has one of them, so bytes of a QUANTUM
// source XORed with the OS source need both KindQuantum and KindOS. None (the default) accepts
// any kind. When the pool holds no byte of an accepted class and none arrived lately, a call
// fails at once with ErrFailedPrecondition naming what the pool holds. WithStreamAcceptKinds
// and CheckQuality's kinds override it for one reader or call. The kinds are sent as given; the
// gateway answers ErrInvalidArgument (naming `accept_kinds[i]`) for 0 or a kind it does not
// know.
func WithAcceptKinds(kinds ...SourceKind) Option {
	return func(c *config) { c.kinds = append([]SourceKind(nil), kinds...) }
}

// WithConstruction makes every entropy call of the client (Bytes, Draw, Integers, Floats,
// UUIDs, CheckQuality, and readers) ask for bytes made this way: ConstructionRaw (the default:
// pool bytes, each served once) or a DRBG construction (the output of a DRBG instance of the
// call's or stream's own, seeded from the pool, labelled in the provenance's DRBG). A DRBG
// construction needs the key's `entropy:drbg` scope (ErrPermissionDenied otherwise).
// WithStreamConstruction overrides it for one reader. The value is sent as given; the gateway
// answers ErrInvalidArgument (naming `construction`) for one it does not know.
func WithConstruction(construction Construction) Option {
	return func(c *config) { c.construction = construction }
}

// WithDialOptions passes extra options to grpc.NewClient (interceptors, window sizes, ...).
// They come after this package's own, so they win.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// New returns a client for the gateway at endpoint, in the endpoint syntax of ParseEndpoint
// ("host:port", "http://host:port", "https://host:port", "[::1]:port"; port 50051 by default).
// The API key is checked here (ValidateAPIKey). It connects lazily, on the first call, so an
// unreachable gateway shows up as ErrUnavailable there. A bad endpoint, key or CA file is an
// *Error with codes.InvalidArgument.
func New(endpoint, apiKey string, opts ...Option) (*Client, error) {
	cfg := config{timeout: DefaultTimeout, construction: ConstructionRaw}
	for _, o := range opts {
		o(&cfg)
	}
	if err := ValidateAPIKey(apiKey); err != nil {
		return nil, err
	}
	ep, err := ParseEndpoint(endpoint, cfg.caFile != "")
	if err != nil {
		return nil, err
	}
	conflict := func(why string) (*Client, error) {
		return nil, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("endpoint %q: %s", endpoint, why)}
	}
	useTLS := ep.TLS
	switch {
	case cfg.insecure && (ep.scheme == "https" || cfg.caFile != "" || cfg.tls != nil):
		return conflict("WithInsecure (plaintext) conflicts with https://, WithTLS or a CA file")
	case cfg.insecure:
		useTLS = false
	case cfg.tls != nil && ep.scheme == "http":
		return conflict("http:// is plaintext, but WithTLS was given: use https://")
	case cfg.tls != nil:
		useTLS = true
	}
	transport := insecure.NewCredentials()
	if useTLS {
		tlsCfg := cfg.tls
		if tlsCfg == nil {
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		} else {
			tlsCfg = tlsCfg.Clone()
		}
		if cfg.caFile != "" {
			if tlsCfg.RootCAs, err = loadCAFile(cfg.caFile); err != nil {
				return nil, err
			}
		}
		transport = credentials.NewTLS(tlsCfg)
	}
	dialOpts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(transport),
		grpc.WithPerRPCCredentials(apiKeyCreds{key: apiKey, requireTLS: useTLS}),
		// The channel's own reconnect backoff is capped at 1 s (grpc's default grows to 120 s),
		// so a gateway that comes back is used within about a second; readers also reset it
		// before each reconnect attempt.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second,
		}, MinConnectTimeout: 20 * time.Second}),
	}, cfg.dialOpts...)
	conn, err := grpc.NewClient("dns:///"+ep.Address(), dialOpts...)
	if err != nil {
		return nil, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("endpoint %q: %v", endpoint, err)}
	}
	return &Client{
		conn: conn, rpc: entropyv1.NewEntropyServiceClient(conn), timeout: cfg.timeout, endpoint: ep,
		acceptKinds: kindsToPB(cfg.kinds), construction: entropyv1.Construction(cfg.construction),
	}, nil
}

// NewFromEnv returns a client configured from the environment: ENTROPY_ENDPOINT (default
// 127.0.0.1:50051), ENTROPY_API_KEY (required) and ENTROPY_CA_FILE (optional; WithCAFile,
// WithTLS or WithInsecure in opts win over it).
func NewFromEnv(opts ...Option) (*Client, error) {
	endpoint := os.Getenv("ENTROPY_ENDPOINT")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	var probe config
	for _, o := range opts {
		o(&probe)
	}
	if ca := os.Getenv("ENTROPY_CA_FILE"); ca != "" && probe.caFile == "" && probe.tls == nil && !probe.insecure {
		opts = append([]Option{WithCAFile(ca)}, opts...)
	}
	return New(endpoint, os.Getenv("ENTROPY_API_KEY"), opts...)
}

// Endpoint is the parsed endpoint this client connects to.
func (c *Client) Endpoint() Endpoint { return c.endpoint }

// AcceptKinds is the client's source filter (WithAcceptKinds); nil accepts any kind.
func (c *Client) AcceptKinds() []SourceKind { return kindsFromPB(c.acceptKinds) }

// Construction is how the client's calls ask their bytes to be made (WithConstruction).
func (c *Client) Construction() Construction { return Construction(c.construction) }

func loadCAFile(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("CA file: %v", err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("CA file %q: no PEM certificate in it", path)}
	}
	return pool, nil
}

// Close closes the connection; calls in flight fail with codes.Canceled.
func (c *Client) Close() error { return c.conn.Close() }

// Bytes returns exactly n random bytes (1..=1048576).
func (c *Client) Bytes(ctx context.Context, n int) ([]byte, error) {
	num, err := toUint32("num_bytes", n)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetRandom, &entropyv1.GetRandomRequest{
		NumBytes: num, AcceptKinds: c.acceptKinds, Construction: c.construction,
	})
	return resp.GetData(), err
}

// Draw returns exactly n random bytes (1..=1048576) together with their provenance: the kinds
// of the sources behind them, the collectors and chunks they came from, and how long they had
// waited in the pool; for a DRBG construction, the instance that made them (Provenance.DRBG).
func (c *Client) Draw(ctx context.Context, n int) (*Draw, error) {
	num, err := toUint32("num_bytes", n)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetRandom, &entropyv1.GetRandomRequest{
		NumBytes: num, AcceptKinds: c.acceptKinds, Construction: c.construction,
	})
	if err != nil {
		return nil, err
	}
	return &Draw{Data: resp.GetData(), Provenance: provenanceFromPB(resp.GetProvenance())}, nil
}

// Integers returns count (1..=10000) uniform integers in [low, high], both inclusive; the full
// int64 range is allowed.
func (c *Client) Integers(ctx context.Context, low, high int64, count int) ([]int64, error) {
	n, err := toUint32("count", count)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetIntegers, &entropyv1.GetIntegersRequest{
		Min: low, Max: high, Count: n, AcceptKinds: c.acceptKinds, Construction: c.construction,
	})
	return resp.GetValues(), err
}

// Floats returns count (1..=10000) uniform float64s in [0, 1) with 53 random bits each.
func (c *Client) Floats(ctx context.Context, count int) ([]float64, error) {
	n, err := toUint32("count", count)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetFloats, &entropyv1.GetFloatsRequest{
		Count: n, AcceptKinds: c.acceptKinds, Construction: c.construction,
	})
	return resp.GetValues(), err
}

// UUIDs returns count (1..=10000) random version 4 UUIDs in canonical lowercase form.
func (c *Client) UUIDs(ctx context.Context, count int) ([]string, error) {
	n, err := toUint32("count", count)
	if err != nil {
		return nil, err
	}
	resp, err := unary(c, ctx, c.rpc.GetUuids, &entropyv1.GetUuidsRequest{
		Count: n, AcceptKinds: c.acceptKinds, Construction: c.construction,
	})
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
