//! The DNS-rebinding and cross-site checks the MCP specification asks of an HTTP server: the
//! `Origin` a browser sends must be one we allow, and the `Host` must name this server.
//!
//! Both run in the gate before the token, so a refused request never reaches rmcp (whose own
//! Host check logs every refusal unthrottled; it still runs, and passes what passed here).

/// `(scheme, host, port)` of an origin such as `https://app.example:8443`; the port defaults by
/// scheme, and `*` stands for any port (allowed entries only).
fn origin_parts(origin: &str) -> Option<(&str, String, Option<u16>)> {
    let (scheme, rest) = origin.split_once("://")?;
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    // An IPv6 host is bracketed; its port follows the bracket.
    let (host, port) = match rest.rfind(':') {
        Some(at) if !rest[at..].contains(']') => (&rest[..at], &rest[at + 1..]),
        _ => (rest, ""),
    };
    let port = match port {
        "" => Some(default_port),
        "*" => None,
        digits => Some(digits.parse().ok()?),
    };
    Some((scheme, host.to_ascii_lowercase(), port))
}

/// True when the `Origin` header value `origin` matches an entry of `allowed` (exactly, with
/// default ports filled in, or with `*` as the port), or is `null` and `null` is allowed.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if origin == "null" {
        return allowed.iter().any(|a| a == "null");
    }
    let Some((scheme, host, Some(port))) = origin_parts(origin) else { return false };
    allowed
        .iter()
        .filter_map(|a| origin_parts(a))
        .any(|(s, h, p)| s == scheme && h == host && p.is_none_or(|p| p == port))
}

/// True when the request's host (the `Host` header, else the URI's authority as HTTP/2 carries
/// it) is one of `allowed`: a name, matching any port, or `name:port`. Names compare without
/// case and without IPv6 brackets, as rmcp compares them; an empty list allows every host.
pub fn host_allowed(host: Option<&[u8]>, uri: &http::Uri, allowed: &[String]) -> bool {
    let authority = match host {
        Some(bytes) => match std::str::from_utf8(bytes).ok().map(http::uri::Authority::try_from) {
            Some(Ok(authority)) => authority,
            _ => return false,
        },
        None => match uri.authority() {
            Some(authority) => authority.clone(),
            None => return false,
        },
    };
    if allowed.is_empty() {
        return true;
    }
    let name = normalize(authority.host());
    let port = authority.port_u16();
    allowed.iter().any(|entry| {
        let entry = entry.trim();
        let (entry_name, entry_port) = match http::uri::Authority::try_from(entry) {
            Ok(a) => (normalize(a.host()), a.port_u16()),
            Err(_) => (normalize(entry), None),
        };
        !entry.is_empty() && entry_name == name && entry_port.is_none_or(|p| Some(p) == port)
    })
}

fn normalize(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let allowed = list(&["https://app.example", "http://localhost:*", "http://[::1]:3000"]);
        assert!(origin_allowed("https://app.example", &allowed));
        assert!(origin_allowed("https://APP.example:443", &allowed));
        assert!(!origin_allowed("https://app.example:8443", &allowed));
        assert!(!origin_allowed("http://app.example", &allowed));
        assert!(origin_allowed("http://localhost:5173", &allowed));
        assert!(origin_allowed("http://[::1]:3000", &allowed));
        assert!(!origin_allowed("http://[::1]:3001", &allowed));
        assert!(!origin_allowed("https://evil.example", &allowed));
        assert!(!origin_allowed("https://app.example.evil.example", &allowed));
        assert!(!origin_allowed("null", &allowed));
        assert!(origin_allowed("null", &list(&["null"])));
        assert!(!origin_allowed("https://app.example", &[]));
        assert!(!origin_allowed("http://localhost:*", &allowed), "a wildcard is not an origin");
        assert!(!origin_allowed("ftp://app.example", &list(&["ftp://app.example"])));
    }

    #[test]
    fn hosts_match_name_and_optional_port() {
        let allowed = list(&["localhost", "127.0.0.1", "::1", "mcp.example:8443"]);
        let uri = http::Uri::from_static("/mcp");
        let ok = |host: &str| host_allowed(Some(host.as_bytes()), &uri, &allowed);
        assert!(ok("localhost") && ok("LOCALHOST:8787") && ok("127.0.0.1:1") && ok("[::1]:8787"));
        assert!(ok("mcp.example:8443"));
        assert!(!ok("mcp.example") && !ok("mcp.example:443"), "the port is part of the entry");
        assert!(!ok("rebound.example") && !ok("localhost.evil.example") && !ok(""));
        assert!(!ok("local\u{202E}host") && !ok("a b"));
        assert!(!host_allowed(None, &uri, &allowed), "no Host and no authority");
        let h2 = http::Uri::from_static("https://localhost:8787/mcp");
        assert!(host_allowed(None, &h2, &allowed), "HTTP/2's :authority");
        assert!(!host_allowed(Some(&[0xff]), &uri, &allowed), "not UTF-8");
    }
}
