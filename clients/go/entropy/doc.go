// Package entropy is the Go client for Entropy Diode, a gRPC service that hands out quantum
// random bytes, each byte to one caller, once.
//
//	c, err := entropy.New("127.0.0.1:50051", apiKey, entropy.WithInsecure())
//	if err != nil { ... }
//	defer c.Close()
//	rolls, err := c.Integers(ctx, 1, 6, 10)
//
// Every call takes a context: its deadline bounds the call (a client default applies when it
// has none) and cancelling it stops the call. Failures are *Error values carrying the gRPC
// status; match them with errors.Is against ErrInvalidArgument, ErrUnauthenticated, ... .
//
// Files: client.go (connection and unary calls), reader.go (io.Reader over StreamRandom that
// reconnects), errors.go (typed errors), status.go (GetStatus as Go types). The generated code
// is in ../gen/entropy/v1 (clients/generate.sh).
package entropy
