// Package entropy is the Go client for Entropy Diode, a gRPC service that hands out quantum
// random bytes, each byte to one caller, once.
//
//	c, err := entropy.NewFromEnv() // ENTROPY_ENDPOINT, ENTROPY_API_KEY, ENTROPY_CA_FILE
//	if err != nil { ... }
//	defer c.Close()
//	rolls, err := c.Integers(ctx, 1, 6, 10)
//
// # Connecting
//
// New(endpoint, apiKey, opts...) takes the endpoint syntax every Entropy Diode client shares
// (ParseEndpoint): "https://host[:port]" is TLS, "http://host[:port]" plaintext, and a bare
// "host[:port]" is TLS unless the host is loopback (localhost, 127.0.0.0/8, [::1]) and no CA
// file is given; the port defaults to 50051. NewFromEnv reads ENTROPY_ENDPOINT (default
// 127.0.0.1:50051), ENTROPY_API_KEY and ENTROPY_CA_FILE; options passed to it win. The key is
// checked at construction (ValidateAPIKey: 1 to 512 characters 0x21..0x7e); errors name the
// rule and the position, never the key. Options: WithCAFile, WithTLS, WithInsecure,
// WithTimeout (the default deadline of unary calls, 30 s), WithDialOptions.
//
// # Calls and errors
//
// Every call takes a context: its deadline bounds the call (the client's default applies when
// it has none) and cancelling it stops the call. Failures are *Error values carrying the gRPC
// status; match them with errors.Is against ErrInvalidArgument, ErrUnauthenticated, ... ,
// ErrFailedPrecondition, and context.Canceled / context.DeadlineExceeded when a context ended
// the call.
//
// # Streams and the reconnect rule
//
// Client.NewReader(ctx, total, chunk, opts...) is an io.ReadCloser over StreamRandom. After a
// transport failure (Unavailable, or an attempt or a stall timing out) it opens a new stream
// for exactly the bytes still owed, so nothing received is lost or repeated. StreamOptions:
//
//	WithReconnectBudget(d)   30 s   how long after a failure it keeps trying; 0 = forever.
//	                                Starts again once bytes flow.
//	WithAttemptTimeout(d)    2 s    how long one new stream may take to deliver its first
//	                                message, connecting included (each attempt waits for the
//	                                connection to be ready rather than failing fast)
//	WithStallTimeout(d)      10 s   how long a flowing stream may go without a message
//	WithBackoff(min, max)    50 ms..1 s  delay between attempts, doubling, each drawn from the
//	                                upper half of its ceiling
//
// The connection's own reconnect backoff is capped at 1 s and reset before each attempt, so a
// gateway that is back is used within about a second. Every Read is bounded by these timeouts
// and the reader's context; ReadContext bounds one read by another context as well. When the
// budget runs out, Read returns the last error, saying how long it tried and how many bytes it
// had received. Any other status (a bad key, a quota, FailedPrecondition) is returned at once.
//
// # Source kinds, provenance and quality
//
// WithAcceptKinds(KindQuantum, ...) makes every entropy call of a client accept only bytes
// from sources of those kinds (WithStreamAcceptKinds for one reader, CheckQuality's kinds for
// one check); none accepts any. A pool that holds none of them answers ErrFailedPrecondition
// at once, naming what it holds; readers do not retry it. Draw returns bytes with their
// *Provenance (kinds, collectors, first and last chunk, age), and Reader.Provenance is that of
// the last message read. CheckQuality has the gateway draw and test a sample (it needs the
// quality:check scope) and returns a *QualityReport; Status reports the pool by class.
//
// # DRBG output
//
// WithConstruction(ConstructionDRBG) makes every entropy call of a client get the output of a
// DRBG instance of its own (one per unary call, one per stream), seeded only with pool bytes
// drawn for it, instead of pool bytes (WithStreamConstruction for one reader; readers ask for
// it again on every reconnect). It needs the key's entropy:drbg scope (ErrPermissionDenied
// otherwise). Provenance.Construction says how a response's bytes were made, and
// Provenance.DRBG names the instance (mechanism, strength, instance id, reseeds, seed bytes);
// the rest of the provenance describes the seeds' sources.
//
// Files: client.go (connection and unary calls), endpoint.go (the endpoint syntax), apikey.go
// (key checks), reader.go (the stream reader and its reconnect rule), errors.go (typed errors),
// status.go (GetStatus as Go types), usage.go (GetUsage as Go types), provenance.go (source
// kinds and provenance), drbg.go (constructions and DRBG labels), quality.go (CheckQuality). The
// generated code is in ../gen/entropy/v1 (clients/generate.sh).
package entropy
