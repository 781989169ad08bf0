// The endpoint syntax every Entropy Diode client accepts, parsed in one place.

package entropy

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
)

// DefaultPort is the gateway's public port, used when an endpoint names none.
const DefaultPort = 50051

// DefaultEndpoint is where NewFromEnv connects when ENTROPY_ENDPOINT is unset.
const DefaultEndpoint = "127.0.0.1:50051"

// Endpoint is a parsed gateway address: where to connect and whether to use TLS.
type Endpoint struct {
	Host string // a host name or an IP address (IPv6 without brackets)
	Port int    // 1..=65535
	TLS  bool
	// scheme is "http", "https" or "" (none written): an explicit scheme cannot be overridden
	// by an option that says otherwise.
	scheme string
}

// Address is "host:port", with an IPv6 host in brackets.
func (e Endpoint) Address() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// String is the endpoint with its scheme made explicit: "https://host:port" or "http://host:port".
func (e Endpoint) String() string {
	if e.TLS {
		return "https://" + e.Address()
	}
	return "http://" + e.Address()
}

// ParseEndpoint parses text in the endpoint syntax:
//
//	https://host[:port][/]   TLS
//	http://host[:port][/]    plaintext (an error if caFile is true)
//	host[:port]              TLS, unless host is loopback (localhost, 127.0.0.0/8, ::1) and caFile is false
//
// The port defaults to 50051; an IPv6 address goes in brackets ([::1]:50051); nothing may follow
// the port but one "/". caFile says whether a CA file was given (ENTROPY_CA_FILE or WithCAFile).
// A bad endpoint is an *Error with codes.InvalidArgument whose message quotes it and says what
// is wrong.
func ParseEndpoint(text string, caFile bool) (Endpoint, error) {
	bad := func(why string) (Endpoint, error) {
		return Endpoint{}, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("endpoint %q: %s", text, why)}
	}
	if text == "" {
		return bad("empty (expected host:port, http://host:port or https://host:port)")
	}
	ep := Endpoint{Port: DefaultPort}
	rest := text
	if i := strings.Index(text, "://"); i >= 0 {
		ep.scheme, rest = text[:i], text[i+3:]
		switch ep.scheme {
		case "https":
			ep.TLS = true
		case "http":
			if caFile {
				return bad("http:// is plaintext, but a CA file was given: use https://")
			}
		default:
			return bad("the scheme must be http:// or https:// (or none)")
		}
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.Contains(rest, "/") {
		return bad("nothing may follow host:port but one /")
	}
	var port string
	hasPort := false
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return bad("an IPv6 address needs its closing ]")
		}
		ep.Host = rest[1:end]
		after := rest[end+1:]
		if after != "" {
			if after[0] != ':' {
				return bad("only :port may follow the host")
			}
			port, hasPort = after[1:], true
		}
		if net.ParseIP(ep.Host) == nil || !strings.Contains(ep.Host, ":") {
			return bad("not an IPv6 address in brackets")
		}
	} else {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			ep.Host, port, hasPort = rest[:i], rest[i+1:], true
		} else {
			ep.Host = rest
		}
		if ep.Host == "" {
			return bad("no host (expected host:port, http://host:port or https://host:port)")
		}
		if strings.Contains(ep.Host, ":") {
			return bad("an IPv6 address goes in brackets: [::1]:50051")
		}
		for _, c := range ep.Host {
			if !(c < 128 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
				c == '.' || c == '-' || c == '_')) {
				return bad("the host may hold only letters, digits, '.', '-' and '_'")
			}
		}
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || len(port) > 5 || strings.TrimLeft(port, "0123456789") != "" || n < 1 || n > 65535 {
			return bad("the port must be a number 1..=65535")
		}
		ep.Port = n
	}
	if ep.scheme == "" {
		ep.TLS = caFile || !isLoopback(ep.Host)
	}
	return ep, nil
}

// isLoopback: localhost, an IPv4 address in 127.0.0.0/8, or ::1.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if v4 := ip.To4(); v4 != nil {
		return v4[0] == 127 && !strings.Contains(host, ":") // not ::ffff:127.0.0.1
	}
	return ip.Equal(net.IPv6loopback)
}
