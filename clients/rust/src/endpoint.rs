//! The endpoint syntax every Entropy Diode client accepts (clients/README.md, "Endpoint syntax").
//!
//! | written | TLS |
//! |---|---|
//! | `https://host[:port][/]` | yes |
//! | `http://host[:port][/]` | no (refused with a CA file) |
//! | `host[:port]` | yes, unless the host is loopback and no CA file is given |
//!
//! The port defaults to [`DEFAULT_PORT`]; an IPv6 address goes in brackets. A bare remote
//! `host:port` is TLS so a key never crosses the network in the clear by default; loopback is
//! plaintext so `entropy-gateway --dev` works with no scheme.

use std::fmt;
use std::net::Ipv4Addr;

use crate::error::Error;

/// The gateway's default public port.
pub const DEFAULT_PORT: u16 = 50051;

/// Where a gateway listens and whether the connection uses TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or IP address (an IPv6 address without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Whether the connection uses TLS.
    pub tls: bool,
}

impl Endpoint {
    /// Parses `text`; `have_ca_file` makes a scheme-less endpoint TLS even on loopback. The
    /// error quotes `text` and says what is wrong.
    pub fn parse(text: &str, have_ca_file: bool) -> Result<Self, Error> {
        let bad = |why: &str| Error::Config(format!("endpoint {text:?}: {why}"));
        let (scheme_tls, rest) = match text.split_once("://") {
            Some(("https", rest)) => (Some(true), rest),
            Some(("http", _)) if have_ca_file => {
                return Err(bad("http:// is plaintext, but a CA file was given: use https://"));
            }
            Some(("http", rest)) => (Some(false), rest),
            Some(_) => return Err(bad("the scheme must be http:// or https:// (or none)")),
            None => (None, text),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains('/') {
            return Err(bad("no path may follow host:port"));
        }
        let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 address needs its closing ]"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after.strip_prefix(':').ok_or_else(|| bad("only :port may follow the host"))?,
                ),
            };
            if host.is_empty()
                || !host.chars().all(|c| c == ':' || c == '.' || c.is_ascii_hexdigit())
            {
                return Err(bad("not an IPv6 address in brackets"));
            }
            (host, port)
        } else {
            let (host, port) = match rest.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            };
            if host.is_empty() {
                return Err(bad(
                    "no host (expected host:port, http://host:port or https://host:port)",
                ));
            }
            if !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
                return Err(bad(
                    "the host may hold only letters, digits, '.', '-' and '_' (no path, no spaces)",
                ));
            }
            (host, port)
        };
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => Some(p)
                .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|p| p.parse::<u16>().ok())
                .filter(|&p| p != 0)
                .ok_or_else(|| bad("the port must be a number 1..=65535"))?,
        };
        let tls = scheme_tls.unwrap_or(have_ca_file || !is_loopback(host));
        Ok(Self { host: host.to_owned(), port, tls })
    }

    /// The URI tonic dials: `http://host:port` or `https://host:port`.
    pub fn uri(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// `localhost`, an IPv4 address in 127.0.0.0/8, or `::1`.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(host: &str, port: u16, tls: bool) -> Endpoint {
        Endpoint { host: host.into(), port, tls }
    }

    #[test]
    fn every_form_parses_with_the_same_default_port_and_tls_rule() {
        let cases = [
            ("127.0.0.1:50051", false, ep("127.0.0.1", 50051, false)),
            ("localhost:8080", false, ep("localhost", 8080, false)),
            ("127.9.8.7", false, ep("127.9.8.7", 50051, false)),
            ("[::1]:50051", false, ep("::1", 50051, false)),
            // A bare remote host is TLS; look-alikes of loopback are remote.
            ("gw.example", false, ep("gw.example", 50051, true)),
            ("gw.example:7000", false, ep("gw.example", 7000, true)),
            ("127.0.0.1.example", false, ep("127.0.0.1.example", 50051, true)),
            ("128.0.0.1", false, ep("128.0.0.1", 50051, true)),
            ("http://gw.example:7000", false, ep("gw.example", 7000, false)),
            ("https://gw.example", false, ep("gw.example", 50051, true)),
            ("https://gw.example:50051/", false, ep("gw.example", 50051, true)),
            ("https://[::1]:443", false, ep("::1", 443, true)),
            // A CA file means TLS without a scheme, loopback too.
            ("gw.example:9", true, ep("gw.example", 9, true)),
            ("127.0.0.1:9", true, ep("127.0.0.1", 9, true)),
        ];
        for (text, ca, want) in cases {
            assert_eq!(Endpoint::parse(text, ca).expect(text), want, "{text}");
        }
        assert_eq!(Endpoint::parse("https://[::1]:443", false).unwrap().uri(), "https://[::1]:443");
        assert_eq!(Endpoint::parse("localhost", false).unwrap().uri(), "http://localhost:50051");
    }

    #[test]
    fn bad_endpoints_are_refused_naming_the_endpoint_and_the_reason() {
        let cases = [
            ("grpc://gw:1", "scheme"),
            ("gw:0", "1..=65535"),
            ("gw:65536", "1..=65535"),
            ("gw:port", "1..=65535"),
            ("gw:+80", "1..=65535"),
            ("gw:", "1..=65535"),
            ("http://gw:1/path", "no path"),
            ("gw:1/x/", "no path"),
            (":50051", "no host"),
            ("[::1", "closing"),
            ("[::1]x", ":port"),
            ("[]:1", "IPv6"),
            ("gw example:1", "no path, no spaces"),
            ("::1", "letters, digits"),
        ];
        for (text, why) in cases {
            let err = Endpoint::parse(text, false).expect_err(text).to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains(&format!("{text:?}")), "names the endpoint: {err}");
        }
        let err = Endpoint::parse("http://gw:1", true).unwrap_err().to_string();
        assert!(err.contains("CA file"), "{err}");
    }
}
