//! The Streamable HTTP transport: rmcp's service behind our gate, plain or over TLS.
//!
//! Every request passes, in order: a cap on requests in progress (503), the `Origin` check
//! against the allowed browser origins (403: DNS-rebinding and cross-site protection, as the
//! MCP specification asks), the bearer token (401), and, for a new session, the session cap
//! (503). rmcp then checks the `Host` header against `http_allowed_hosts` (403) and the body
//! size (413). Tokens are never logged; a token's name is.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::sessions::CappedSessions;
use crate::tokens::Tokens;
use crate::tools::EntropyServer;

/// The path agents connect to.
pub const MCP_PATH: &str = "/mcp";

/// What the HTTP transport enforces.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Accepted bearer tokens.
    pub tokens: Tokens,
    /// Accepted `Host` values.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values (see [`origin_allowed`]).
    pub allowed_origins: Vec<String>,
    /// Most sessions open at once.
    pub max_sessions: usize,
    /// Most requests in progress at once.
    pub max_concurrent_requests: usize,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Idle time after which a session is closed.
    pub session_idle_timeout: Duration,
}

#[derive(Clone)]
struct Gate {
    tokens: Tokens,
    allowed_origins: Arc<Vec<String>>,
    in_progress: Arc<Semaphore>,
    sessions: Arc<CappedSessions>,
    max_body_bytes: usize,
}

/// The router serving MCP at [`MCP_PATH`]; `shutdown` ends every session.
pub fn router(
    server: EntropyServer,
    limits: &HttpLimits,
    shutdown: CancellationToken,
) -> axum::Router {
    let sessions = Arc::new(CappedSessions::new(limits.max_sessions, limits.session_idle_timeout));
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(limits.allowed_hosts.clone())
        .with_max_request_body_bytes(limits.max_body_bytes)
        .with_cancellation_token(shutdown);
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let gate = Gate {
        tokens: limits.tokens.clone(),
        allowed_origins: Arc::new(limits.allowed_origins.clone()),
        in_progress: Arc::new(Semaphore::new(limits.max_concurrent_requests)),
        sessions,
        max_body_bytes: limits.max_body_bytes,
    };
    axum::Router::new()
        .route_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(gate, check))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let mut response = (status, format!("{message}\n")).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

async fn check(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    // Held until the response head is produced; a long SSE body no longer counts.
    let Ok(_slot) = gate.in_progress.clone().try_acquire_owned() else {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "too many requests in progress; retry");
    };
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|o| origin_allowed(o, &gate.allowed_origins));
        if !allowed {
            tracing::warn!(?origin, "refused a request from an origin not in http_allowed_origins");
            return refuse(StatusCode::FORBIDDEN, "Origin not allowed");
        }
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .and_then(|token| gate.tokens.authenticate(token));
    let Some(name) = presented else {
        let mut response = refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"entropy-mcp\""),
        );
        return response;
    };
    tracing::debug!(token = name, method = %request.method(), "authenticated request");
    let is_delete = request.method() == http::Method::DELETE;
    let request = match new_session_check(&gate, request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let mut response = next.run(request).await;
    // rmcp answers a session DELETE with 202; the MCP Python SDK expects 200 or 204 and logs a
    // warning otherwise. The session is closed either way: say so with 204.
    if is_delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// For a POST that would open a session (an `initialize` without a session id), refuses with
/// 503 when the sessions are all taken. Reads the body to tell (bounded by the body limit).
async fn new_session_check(gate: &Gate, request: Request) -> Result<Request, Response> {
    if request.method() != http::Method::POST || request.headers().contains_key("mcp-session-id") {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, gate.max_body_bytes).await.map_err(|_| {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("request body larger than {} bytes", gate.max_body_bytes),
        )
    })?;
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        method: Option<&'a str>,
    }
    let initialize =
        serde_json::from_slice::<Method<'_>>(&bytes).is_ok_and(|m| m.method == Some("initialize"));
    if initialize && gate.sessions.is_full().await {
        return Err(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "the most MCP sessions this server allows are open; retry later",
        ));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

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
}
