//! Every refusal of the HTTP transport, in one place: its status, its message to the client,
//! and its log line, which goes through one throttle.
//!
//! A peer must not be able to turn refusals into a log flood (3,000 lines in 0.1 s of refused
//! Origins before), so each reason logs at most one line per second, carrying `held_back`, the
//! count of lines held back since the last one ([`entropy_ops::Throttle`]). Text the peer chose
//! (Origin, Host) is escaped before it reaches a line ([`entropy_ops::peer_text::escape`]).
//! Tokens are never logged; a token's name is.

use axum::response::{IntoResponse, Response};
use entropy_ops::Throttle;
use entropy_ops::peer_text::escape;
use http::{HeaderValue, StatusCode, header};

/// Why a connection or request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal<'a> {
    /// `http_max_connections` are open: the new connection is closed (no HTTP answer).
    Connections {
        /// The cap.
        max: usize,
    },
    /// An `Origin` not in `http_allowed_origins` (403).
    Origin(&'a [u8]),
    /// A `Host` not in `http_allowed_hosts`, or none (403).
    Host(&'a [u8]),
    /// No bearer token, or not one of ours (401).
    Token,
    /// A body over `http_max_body_bytes` (413).
    BodyTooLarge {
        /// The limit.
        max: usize,
    },
    /// `http_max_concurrent_requests` are in progress (503).
    RequestsInProgress {
        /// The cap.
        max: usize,
    },
    /// `http_max_sessions` are open (503).
    Sessions {
        /// The cap.
        max: usize,
    },
    /// The token holds `http_max_sessions_per_token` sessions (429).
    TokenShare {
        /// The token's name.
        token: &'a str,
        /// The share.
        max: usize,
    },
    /// A session id created with another token (answered as an unknown session, 404).
    SessionOfAnotherToken {
        /// The name of the token presented.
        token: &'a str,
    },
}

impl Refusal<'_> {
    /// The throttle's key: one line per reason per second.
    fn reason(&self) -> &'static str {
        match self {
            Self::Connections { .. } => "connections",
            Self::Origin(_) => "origin",
            Self::Host(_) => "host",
            Self::Token => "token",
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::RequestsInProgress { .. } => "requests_in_progress",
            Self::Sessions { .. } => "sessions",
            Self::TokenShare { .. } => "token_share",
            Self::SessionOfAnotherToken { .. } => "session_of_another_token",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Origin(_) | Self::Host(_) => StatusCode::FORBIDDEN,
            Self::Token => StatusCode::UNAUTHORIZED,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Connections { .. } | Self::RequestsInProgress { .. } | Self::Sessions { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            // The token's own use, not the server's load: retrying will not help until one of
            // its sessions closes.
            Self::TokenShare { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::SessionOfAnotherToken { .. } => StatusCode::NOT_FOUND,
        }
    }

    /// What the client is told.
    fn message(&self) -> String {
        match self {
            Self::Connections { max } => format!("{max} connections are open"),
            Self::Origin(_) => "Origin not allowed".into(),
            Self::Host(_) => "Host not allowed".into(),
            Self::Token => "a valid bearer token is required".into(),
            Self::BodyTooLarge { max } => format!("request body larger than {max} bytes"),
            Self::RequestsInProgress { .. } => "too many requests in progress; retry".into(),
            Self::Sessions { .. } => {
                "the most MCP sessions this server allows are open; retry later".into()
            }
            Self::TokenShare { max, .. } => format!(
                "this token holds {max} MCP sessions, the most one token may \
                 (http_max_sessions_per_token); close one (DELETE) or let one idle out"
            ),
            Self::SessionOfAnotherToken { .. } => "Not Found: Session not found".into(),
        }
    }
}

/// The refusal log: one throttle for every reason, shared by the accept loop and the gate.
#[derive(Debug, Default)]
pub struct Refusals {
    throttle: Throttle,
}

impl Refusals {
    /// Logs `refusal`, unless a line for its reason went out less than a second ago.
    pub fn log(&self, refusal: &Refusal<'_>) {
        let Some(held_back) = self.throttle.allow(refusal.reason()) else { return };
        let reason = refusal.reason();
        match refusal {
            Refusal::Connections { max } => {
                tracing::warn!(reason, held_back, max, "http_max_connections reached; closing");
            }
            Refusal::Origin(origin) => tracing::warn!(
                reason,
                held_back,
                origin = escape(&String::from_utf8_lossy(origin)),
                "refused a request from an origin not in http_allowed_origins"
            ),
            Refusal::Host(host) => tracing::warn!(
                reason,
                held_back,
                host = escape(&String::from_utf8_lossy(host)),
                "refused a request for a Host not in http_allowed_hosts"
            ),
            Refusal::Token => {
                tracing::info!(reason, held_back, "refused a request without a valid token");
            }
            Refusal::BodyTooLarge { max } => {
                tracing::info!(reason, held_back, max, "refused a body over http_max_body_bytes");
            }
            Refusal::RequestsInProgress { max } => tracing::warn!(
                reason,
                held_back,
                max,
                "http_max_concurrent_requests in progress; refused a request"
            ),
            Refusal::Sessions { max } => {
                tracing::warn!(reason, held_back, max, "http_max_sessions open; refused a session");
            }
            Refusal::TokenShare { token, max } => tracing::warn!(
                reason,
                held_back,
                token,
                max,
                "a token at http_max_sessions_per_token; refused a session"
            ),
            Refusal::SessionOfAnotherToken { token } => tracing::warn!(
                reason,
                held_back,
                token,
                "refused a session id created with another token"
            ),
        }
    }

    /// An error about accepting connections (out of descriptors, most often), throttled like
    /// the refusals.
    pub fn accept_failed(&self, error: &std::io::Error) {
        if let Some(held_back) = self.throttle.allow("accept") {
            tracing::warn!(held_back, "accept failed; backing off: {error}");
        }
    }

    /// Logs `refusal` and builds its response.
    pub fn respond(&self, refusal: Refusal<'_>) -> Response {
        self.log(&refusal);
        let mut response = (refusal.status(), format!("{}\n", refusal.message())).into_response();
        let headers = response.headers_mut();
        match refusal.status() {
            StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            StatusCode::UNAUTHORIZED => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"entropy-mcp\""),
                );
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_headers() {
        let refusals = Refusals::default();
        let share = refusals.respond(Refusal::TokenShare { token: "a", max: 2 });
        assert_eq!(share.status(), StatusCode::TOO_MANY_REQUESTS);
        let token = refusals.respond(Refusal::Token);
        assert_eq!(token.status(), StatusCode::UNAUTHORIZED);
        assert!(token.headers().contains_key(header::WWW_AUTHENTICATE));
        let busy = refusals.respond(Refusal::Sessions { max: 1 });
        assert_eq!(busy.headers().get(header::RETRY_AFTER).map(|v| v.as_bytes()), Some(&b"1"[..]));
        let other = refusals.respond(Refusal::SessionOfAnotherToken { token: "b" });
        assert_eq!(other.status(), StatusCode::NOT_FOUND, "as an unknown session");
    }

    #[test]
    fn the_share_message_names_the_limit() {
        let message = Refusal::TokenShare { token: "a", max: 16 }.message();
        assert!(message.contains("16") && message.contains("http_max_sessions_per_token"));
    }
}
