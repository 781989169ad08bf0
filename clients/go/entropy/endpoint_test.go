package entropy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func TestEndpointForms(t *testing.T) {
	cases := []struct {
		text   string
		caFile bool
		want   string // Endpoint.String()
	}{
		{"127.0.0.1:50051", false, "http://127.0.0.1:50051"},
		{"127.0.0.1", false, "http://127.0.0.1:50051"},
		{"127.1.2.3:9", false, "http://127.1.2.3:9"},
		{"localhost:7000", false, "http://localhost:7000"},
		{"LOCALHOST:7000", false, "http://LOCALHOST:7000"},
		{"[::1]:7000", false, "http://[::1]:7000"},
		{"[::1]", false, "http://[::1]:50051"},
		{"127.0.0.1:50051", true, "https://127.0.0.1:50051"},
		{"localhost", true, "https://localhost:50051"},
		{"gw.example.com:443", false, "https://gw.example.com:443"},
		{"gw.example.com", false, "https://gw.example.com:50051"},
		{"10.0.0.5:50051", false, "https://10.0.0.5:50051"},
		{"128.0.0.1:50051", false, "https://128.0.0.1:50051"},
		{"localhost.example.com", false, "https://localhost.example.com:50051"},
		{"[2001:db8::1]:8443", false, "https://[2001:db8::1]:8443"},
		{"[::ffff:127.0.0.1]:1", false, "https://[::ffff:127.0.0.1]:1"},
		{"http://gw.example.com:8080", false, "http://gw.example.com:8080"},
		{"http://gw.example.com", false, "http://gw.example.com:50051"},
		{"http://127.0.0.1:1/", false, "http://127.0.0.1:1"},
		{"https://127.0.0.1:1", false, "https://127.0.0.1:1"},
		{"https://gw.example.com/", true, "https://gw.example.com:50051"},
		{"https://[::1]:65535", false, "https://[::1]:65535"},
		{"gw_1.internal:1", false, "https://gw_1.internal:1"},
	}
	for _, c := range cases {
		ep, err := entropy.ParseEndpoint(c.text, c.caFile)
		if err != nil || ep.String() != c.want {
			t.Errorf("ParseEndpoint(%q, ca=%v) = %v, %v; want %s", c.text, c.caFile, ep, err, c.want)
		}
	}
	ep, _ := entropy.ParseEndpoint("[::1]:7000", false)
	if ep.Host != "::1" || ep.Port != 7000 || ep.TLS || ep.Address() != "[::1]:7000" {
		t.Errorf("parts of [::1]:7000: %+v %s", ep, ep.Address())
	}
}

func TestEndpointErrors(t *testing.T) {
	cases := []struct {
		text   string
		caFile bool
		why    string
	}{
		{"", false, "empty"},
		{"h:x", false, "the port must be a number 1..=65535"},
		{"h:0", false, "the port must be a number 1..=65535"},
		{"h:65536", false, "the port must be a number 1..=65535"},
		{"h:", false, "the port must be a number 1..=65535"},
		{"h:+80", false, "the port must be a number 1..=65535"},
		{"h:000080", false, "the port must be a number 1..=65535"},
		{":50051", false, "no host"},
		{"http://", false, "no host"},
		{"grpc://h:1", false, "the scheme must be http:// or https://"},
		{"HTTPS://h:1", false, "the scheme must be http:// or https://"},
		{"http://h:1", true, "http:// is plaintext, but a CA file was given"},
		{"h:1/path", false, "nothing may follow host:port but one /"},
		{"h:1//", false, "nothing may follow host:port but one /"},
		{"::1", false, "an IPv6 address goes in brackets"},
		{"::1:50051", false, "an IPv6 address goes in brackets"},
		{"[::1", false, "an IPv6 address needs its closing ]"},
		{"[::1]x", false, "only :port may follow the host"},
		{"[nothex]:1", false, "not an IPv6 address in brackets"},
		{"[127.0.0.1]:1", false, "not an IPv6 address in brackets"},
		{"[]:1", false, "not an IPv6 address in brackets"},
		{"h h:1", false, "the host may hold only"},
		{"user@h:1", false, "the host may hold only"},
		{"hé:1", false, "the host may hold only"},
	}
	for _, c := range cases {
		_, err := entropy.ParseEndpoint(c.text, c.caFile)
		quoted := `endpoint "` + c.text + `": `
		if !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), quoted+c.why) {
			t.Errorf("ParseEndpoint(%q, ca=%v): want an error %q, got %v", c.text, c.caFile, quoted+c.why, err)
		}
		if _, err := entropy.New(c.text, "k"); c.text != "http://h:1" && !errors.Is(err, entropy.ErrInvalidArgument) {
			t.Errorf("New(%q): want ErrInvalidArgument, got %v", c.text, err)
		}
	}
}

func TestAPIKeyRules(t *testing.T) {
	secret := "s3cr3t-K3y"
	cases := []struct {
		key, why string
	}{
		{"", "API key is missing"},
		{strings.Repeat("k", 513), "is 513 bytes long, at most 512"},
		{secret + "\n", "a line break (a trailing newline?) at position 10"},
		{secret + "\r\n", "a line break (a trailing newline?) at position 10"},
		{"ab " + secret, "a space at position 2"},
		{secret + "\t", "a tab at position 10"},
		{secret + "\x7f", "a character outside 0x21..0x7e at position 10"},
		{secret + "\x00", "a character outside 0x21..0x7e at position 10"},
		{secret + "é", "a non-ASCII character at position 10"},
	}
	for _, c := range cases {
		err := entropy.ValidateAPIKey(c.key)
		if !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("key %q: want %q, got %v", c.key, c.why, err)
			continue
		}
		if _, nerr := entropy.New("127.0.0.1:1", c.key); nerr == nil || nerr.Error() != err.Error() {
			t.Errorf("key %q: New should refuse it as ValidateAPIKey does, got %v", c.key, nerr)
		}
		if strings.Contains(err.Error(), secret) || (len(c.key) > 100 && strings.Contains(err.Error(), "kkkk")) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	for _, ok := range []string{"k", "!", "~", strings.Repeat("k", 512), "ed_" + secret + "!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"} {
		if err := entropy.ValidateAPIKey(ok); err != nil {
			t.Errorf("key of %d chars refused: %v", len(ok), err)
		}
	}
}

func TestNewFromEnv(t *testing.T) {
	t.Setenv("ENTROPY_ENDPOINT", "")
	t.Setenv("ENTROPY_API_KEY", "abc")
	t.Setenv("ENTROPY_CA_FILE", "")
	c, err := entropy.NewFromEnv()
	if err != nil || c.Endpoint().String() != "http://127.0.0.1:50051" {
		t.Fatalf("defaults: %v, %v", c, err)
	}
	c.Close()

	t.Setenv("ENTROPY_ENDPOINT", "gw.example.com:7")
	if c, err = entropy.NewFromEnv(); err != nil || c.Endpoint().String() != "https://gw.example.com:7" {
		t.Fatalf("ENTROPY_ENDPOINT: %v, %v", c, err)
	}
	c.Close()

	t.Setenv("ENTROPY_API_KEY", "abc\n")
	if _, err = entropy.NewFromEnv(); !errors.Is(err, entropy.ErrInvalidArgument) || strings.Contains(err.Error(), "abc") {
		t.Fatalf("a key with a newline: %v", err)
	}
	t.Setenv("ENTROPY_API_KEY", "")
	if _, err = entropy.NewFromEnv(); err == nil || !strings.Contains(err.Error(), "ENTROPY_API_KEY") {
		t.Fatalf("no key: %v", err)
	}

	// A CA file makes loopback TLS, refuses http://, and must hold a certificate.
	t.Setenv("ENTROPY_API_KEY", "abc")
	t.Setenv("ENTROPY_ENDPOINT", "127.0.0.1:50051")
	t.Setenv("ENTROPY_CA_FILE", writeCA(t))
	if c, err = entropy.NewFromEnv(); err != nil || !c.Endpoint().TLS {
		t.Fatalf("CA file on loopback: %v, %v", c, err)
	}
	c.Close()
	t.Setenv("ENTROPY_ENDPOINT", "http://127.0.0.1:50051")
	if _, err = entropy.NewFromEnv(); !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), "CA file") {
		t.Fatalf("http:// with a CA file: %v", err)
	}
	// An option wins over the environment.
	if c, err = entropy.NewFromEnv(entropy.WithInsecure()); err != nil || c.Endpoint().TLS {
		t.Fatalf("WithInsecure over ENTROPY_CA_FILE: %v, %v", c, err)
	}
	c.Close()
	bad := filepath.Join(t.TempDir(), "bad.pem")
	_ = os.WriteFile(bad, []byte("not a certificate"), 0o600)
	t.Setenv("ENTROPY_ENDPOINT", "")
	t.Setenv("ENTROPY_CA_FILE", bad)
	if _, err = entropy.NewFromEnv(); !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a CA file with no certificate: %v", err)
	}
	t.Setenv("ENTROPY_CA_FILE", bad+".missing")
	if _, err = entropy.NewFromEnv(); !errors.Is(err, entropy.ErrInvalidArgument) {
		t.Fatalf("a missing CA file: %v", err)
	}
}

func TestOptionsThatContradictTheEndpoint(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		opts     []entropy.Option
	}{
		{"https://127.0.0.1:1", []entropy.Option{entropy.WithInsecure()}},
		{"127.0.0.1:1", []entropy.Option{entropy.WithInsecure(), entropy.WithCAFile("x.pem")}},
		{"http://127.0.0.1:1", []entropy.Option{entropy.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12})}},
	} {
		if _, err := entropy.New(c.endpoint, "k", c.opts...); !errors.Is(err, entropy.ErrInvalidArgument) {
			t.Errorf("New(%q, ...): want ErrInvalidArgument, got %v", c.endpoint, err)
		}
	}
	c, err := entropy.New("127.0.0.1:1", "k", entropy.WithInsecure())
	if err != nil || c.Endpoint().String() != "http://127.0.0.1:1" {
		t.Fatalf("WithInsecure: %v", err)
	}
	c.Close()
}

// writeCA writes a throwaway self-signed CA certificate and returns its path.
func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
