package entropy_test

// The gateway's Connect protocol through the official Go client (connectrpc.com/connect): its
// generic client over the protoc-gen-go messages of gen/, with no Connect code generated, in
// binary and JSON, over HTTP/1.1 and cleartext HTTP/2. The test gateway runs with Connect on.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

func connectURL(method string) string {
	return "http://" + target + "/entropy.v1.EntropyService/" + method
}

// withKey is req carrying key the way every client sends it: a header, never the URL.
func withKey[T any](req *connect.Request[T], key string) *connect.Request[T] {
	req.Header().Set("authorization", "Bearer "+key)
	return req
}

func TestConnectClientDrawsStreamsAndGetsTheGatewaysErrors(t *testing.T) {
	if gatewayBin == "" {
		t.Skip("an external gateway (ENTROPY_TEST_ENDPOINT): Connect may be off there")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	transports := map[string]*http.Client{
		"HTTP/1.1": {Transport: &http.Transport{}},
		"HTTP/2":   {Transport: h2c},
	}
	codecs := map[string][]connect.ClientOption{"binary": nil, "JSON": {connect.WithProtoJSON()}}
	for version, httpClient := range transports {
		for codec, opts := range codecs {
			name := version + " " + codec
			getRandom := connect.NewClient[entropyv1.GetRandomRequest, entropyv1.GetRandomResponse](
				httpClient, connectURL("GetRandom"), opts...)
			res, err := getRandom.CallUnary(ctx,
				withKey(connect.NewRequest(&entropyv1.GetRandomRequest{NumBytes: 32}), apiKey))
			if err != nil {
				t.Fatalf("%s: GetRandom: %v", name, err)
			}
			if len(res.Msg.Data) != 32 || res.Msg.Provenance == nil {
				t.Fatalf("%s: GetRandom: %d bytes, provenance %v", name, len(res.Msg.Data), res.Msg.Provenance)
			}

			streamRandom := connect.NewClient[entropyv1.StreamRandomRequest, entropyv1.StreamRandomResponse](
				httpClient, connectURL("StreamRandom"), opts...)
			stream, err := streamRandom.CallServerStream(ctx, withKey(connect.NewRequest(
				&entropyv1.StreamRandomRequest{ChunkBytes: 16384, TotalBytes: 100_000}), apiKey))
			if err != nil {
				t.Fatalf("%s: StreamRandom: %v", name, err)
			}
			total := 0
			for stream.Receive() {
				total += len(stream.Msg().Data)
			}
			if err := stream.Err(); err != nil || total != 100_000 {
				t.Fatalf("%s: StreamRandom: %d bytes, %v", name, total, err)
			}
			_ = stream.Close()

			// The gateway's errors arrive as Connect errors with its codes and messages.
			_, err = getRandom.CallUnary(ctx,
				withKey(connect.NewRequest(&entropyv1.GetRandomRequest{NumBytes: 0}), apiKey))
			expectConnectError(t, name+": num_bytes 0", err, connect.CodeInvalidArgument, "num_bytes")
			_, err = getRandom.CallUnary(ctx,
				withKey(connect.NewRequest(&entropyv1.GetRandomRequest{NumBytes: 8}), "wrong"))
			expectConnectError(t, name+": wrong key", err, connect.CodeUnauthenticated, "invalid API key")
			_, err = getRandom.CallUnary(ctx, connect.NewRequest(&entropyv1.GetRandomRequest{NumBytes: 8}))
			expectConnectError(t, name+": no key", err, connect.CodeUnauthenticated, "missing API key")
			stream, err = streamRandom.CallServerStream(ctx, withKey(connect.NewRequest(
				&entropyv1.StreamRandomRequest{ChunkBytes: 1<<20 + 1, TotalBytes: 1}), apiKey))
			if err == nil {
				for stream.Receive() {
				}
				err = stream.Err()
			}
			expectConnectError(t, name+": chunk_bytes past 1 MiB", err, connect.CodeInvalidArgument, "chunk_bytes")
		}
	}
}

func expectConnectError(t *testing.T, what string, err error, code connect.Code, word string) {
	t.Helper()
	var connectErr *connect.Error
	if !errors.As(err, &connectErr) {
		t.Fatalf("%s: want a Connect error, got %v", what, err)
	}
	if connectErr.Code() != code || !strings.Contains(connectErr.Message(), word) {
		t.Fatalf("%s: want %v naming %q, got %v: %q", what, code, word, connectErr.Code(), connectErr.Message())
	}
}
