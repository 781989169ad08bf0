//! The Streamable HTTP transport's gate: rmcp's service behind our checks.
//!
//! Every request passes, in order: the `Origin` check against the allowed browser origins
//! (403) and the `Host` check against `http_allowed_hosts` (403), the DNS-rebinding and
//! cross-site protection the MCP specification asks for ([`crate::dns_rebinding`]); the bearer
//! token (401); then, authenticated, a cap on requests in progress (503); for a request naming
//! a session, that the session was created with the same token (else 404, as an unknown
//! session); for a new session, the session caps (503 past `http_max_sessions`, 429 past the
//! token's `http_max_sessions_per_token`). rmcp then checks the body size (413).
//!
//! Unauthenticated requests take no request slot and are never activity of their connection
//! ([`crate::activity`]). Every refusal is answered and logged by [`crate::refusal`]. Tokens
//! are never logged; a token's name is.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{Method, StatusCode, header};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::activity::{self, Activity};
use crate::config::McpConfig;
use crate::dns_rebinding::{host_allowed, origin_allowed};
use crate::listener::ConnectionLimits;
use crate::refusal::{Refusal, Refusals};
use crate::sessions::{CappedSessions, Refused, as_token};
use crate::tokens::Tokens;
use crate::tools::EntropyServer;

/// The path agents connect to.
pub const MCP_PATH: &str = "/mcp";

/// The header naming a request's session.
const SESSION_ID: &str = "mcp-session-id";

/// What the HTTP transport enforces.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Accepted bearer tokens.
    pub tokens: Tokens,
    /// Accepted `Host` values.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values (see [`origin_allowed`]).
    pub allowed_origins: Vec<String>,
    /// Connections: how many, and how long they may go without a request.
    pub connections: ConnectionLimits,
    /// Most sessions open at once.
    pub max_sessions: usize,
    /// Most sessions one token may hold.
    pub max_sessions_per_token: usize,
    /// Most requests in progress at once.
    pub max_concurrent_requests: usize,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Longest a POST holds its request slot: the longest a tool call can work.
    pub max_request_time: Duration,
    /// Idle time after which a session is closed.
    pub session_idle_timeout: Duration,
}

impl HttpLimits {
    /// The limits `config` sets, accepting `tokens` (loaded from its `http_tokens_file`).
    pub fn from_config(config: &McpConfig, tokens: Tokens) -> Self {
        Self {
            tokens,
            allowed_hosts: config.http_allowed_hosts.clone(),
            allowed_origins: config.http_allowed_origins.clone(),
            connections: ConnectionLimits {
                max_connections: config.http_max_connections,
                header_timeout: config.header_timeout(),
                idle_timeout: config.idle_timeout(),
            },
            max_sessions: config.http_max_sessions,
            max_sessions_per_token: config.sessions_per_token(),
            max_concurrent_requests: config.http_max_concurrent_requests,
            max_body_bytes: config.http_max_body_bytes,
            // A tool call makes one gateway call, bounded by its deadline; then a little time
            // to write the result.
            max_request_time: config.gateway_timeout() + Duration::from_secs(1),
            session_idle_timeout: config.session_idle_timeout(),
        }
    }
}

#[derive(Clone)]
struct Gate {
    tokens: Tokens,
    allowed_hosts: Arc<Vec<String>>,
    allowed_origins: Arc<Vec<String>>,
    in_progress: Arc<Semaphore>,
    max_concurrent_requests: usize,
    sessions: Arc<CappedSessions>,
    max_body_bytes: usize,
    max_request_time: Duration,
    refusals: Arc<Refusals>,
}

/// The router serving MCP at [`MCP_PATH`]; refusals go to `refusals`; `shutdown` ends every
/// session.
pub fn router(
    server: EntropyServer,
    limits: &HttpLimits,
    refusals: Arc<Refusals>,
    shutdown: CancellationToken,
) -> axum::Router {
    let sessions = Arc::new(CappedSessions::new(
        limits.max_sessions,
        limits.max_sessions_per_token,
        limits.session_idle_timeout,
    ));
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(limits.allowed_hosts.clone())
        .with_max_request_body_bytes(limits.max_body_bytes)
        .with_cancellation_token(shutdown);
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let gate = Gate {
        tokens: limits.tokens.clone(),
        allowed_hosts: Arc::new(limits.allowed_hosts.clone()),
        allowed_origins: Arc::new(limits.allowed_origins.clone()),
        in_progress: Arc::new(Semaphore::new(limits.max_concurrent_requests)),
        max_concurrent_requests: limits.max_concurrent_requests,
        sessions,
        max_body_bytes: limits.max_body_bytes,
        max_request_time: limits.max_request_time,
        refusals,
    };
    axum::Router::new()
        .route_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(gate, check))
}

async fn check(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let activity = request.extensions().get::<Arc<Activity>>().cloned();
    if let Some(activity) = &activity {
        activity.head_arrived();
    }
    let headers = request.headers();
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|o| origin_allowed(o, &gate.allowed_origins));
        if !allowed {
            return gate.refusals.respond(Refusal::Origin(origin.as_bytes()));
        }
    }
    let host = headers.get(header::HOST).map(|h| h.as_bytes());
    if !host_allowed(host, request.uri(), &gate.allowed_hosts) {
        return gate.refusals.respond(Refusal::Host(host.unwrap_or_default()));
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .and_then(|token| gate.tokens.authenticate(token));
    let Some(token) = presented else {
        return gate.refusals.respond(Refusal::Token);
    };
    tracing::debug!(token, method = %request.method(), "authenticated request");
    // Authenticated: from here the request is activity of its connection.
    let (parts, body) = request.into_parts();
    let (body, in_progress) = match &activity {
        Some(activity) => {
            let (body, in_progress) = activity.request(body);
            (body, Some(in_progress))
        }
        None => (body, None),
    };
    let request = Request::from_parts(parts, body);
    let Ok(slot) = gate.in_progress.clone().try_acquire_owned() else {
        let max = gate.max_concurrent_requests;
        return gate.refusals.respond(Refusal::RequestsInProgress { max });
    };
    let is_post = request.method() == Method::POST;
    let response = as_token(token, authenticated(&gate, token, request, next)).await;
    // A POST holds its slot until its response ends (a tool call until its result, its
    // arguments parsed meanwhile), or at most `max_request_time`, the longest a tool call can
    // work: a stream that never ends (a request id used twice in a session) holds no slot for
    // ever. A GET's SSE stream, which lives as long as its session, only until its head.
    let ended = is_post.then(|| {
        let (ended, done) = tokio::sync::oneshot::channel::<()>();
        let most = gate.max_request_time;
        tokio::spawn(async move {
            let _slot = slot;
            let _ = tokio::time::timeout(most, done).await;
        });
        ended
    });
    response.map(|body| activity::hold(body, (in_progress, ended)))
}

/// The checks and the service for a request with a valid `token`.
async fn authenticated(gate: &Gate, token: &str, request: Request, next: Next) -> Response {
    if let Some(id) = request.headers().get(SESSION_ID).and_then(|v| v.to_str().ok())
        && gate.sessions.owner(id).is_some_and(|owner| *owner != *token)
    {
        return gate.refusals.respond(Refusal::SessionOfAnotherToken { token });
    }
    let is_delete = request.method() == Method::DELETE;
    let request = match new_session_check(gate, token, request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let mut response = next.run(request).await;
    match response.status() {
        // rmcp's own body limit, on requests of a session.
        StatusCode::PAYLOAD_TOO_LARGE => {
            gate.refusals.log(&Refusal::BodyTooLarge { max: gate.max_body_bytes });
        }
        // rmcp answers a session DELETE with 202; the MCP Python SDK expects 200 or 204 and
        // logs a warning otherwise. The session is closed either way: say so with 204.
        StatusCode::ACCEPTED if is_delete => *response.status_mut() = StatusCode::NO_CONTENT,
        _ => {}
    }
    response
}

/// For a POST that would open a session (an `initialize` without a session id), refuses with
/// 503 when the sessions are all taken and 429 when `token` holds its share. Reads the body to
/// tell (bounded by the body limit).
async fn new_session_check(
    gate: &Gate,
    token: &str,
    request: Request,
) -> Result<Request, Response> {
    if request.method() != Method::POST || request.headers().contains_key(SESSION_ID) {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    let max = gate.max_body_bytes;
    let bytes = axum::body::to_bytes(body, max)
        .await
        .map_err(|_| gate.refusals.respond(Refusal::BodyTooLarge { max }))?;
    #[derive(serde::Deserialize)]
    struct JsonRpc<'a> {
        method: Option<&'a str>,
    }
    let initialize =
        serde_json::from_slice::<JsonRpc<'_>>(&bytes).is_ok_and(|m| m.method == Some("initialize"));
    if initialize {
        let refusal = match gate.sessions.admits(token).await {
            Ok(()) => None,
            Err(Refused::Full(max)) => Some(Refusal::Sessions { max }),
            Err(Refused::TokenShare(max)) => Some(Refusal::TokenShare { token, max }),
        };
        if let Some(refusal) = refusal {
            return Err(gate.refusals.respond(refusal));
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}
