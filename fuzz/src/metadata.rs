//! Request metadata from the network: the API-key interceptor (`authorization`, `x-api-key`)
//! and the `grpc-timeout` parser.
//!
//! Invariants: no panic; the interceptor admits a call exactly when the presented key is the
//! secret (after `Bearer ` and surrounding whitespace), `authorization` taking precedence, and
//! otherwise answers UNAUTHENTICATED; a parsed timeout is 1 to 8 digits and a unit, and the
//! deadline is never before now.

use std::sync::Arc;
use std::time::Duration;

use entropy_gateway::domain::auth::{ApiKeys, KeyGrant};
use entropy_gateway::grpc::auth::{ApiKeyAuth, key_store};
use entropy_gateway::grpc::deadline::{client_deadline, parse_grpc_timeout};
use tokio::time::Instant;
use tonic::metadata::AsciiMetadataValue;
use tonic::service::Interceptor;
use tonic::{Code, Request};

/// The one valid key.
pub const SECRET: &str = "fuzz-secret-0123456789";

/// Header values as a client may send them (`None`: header absent).
#[derive(Debug, Default)]
pub struct Headers {
    /// `authorization`.
    pub authorization: Option<Vec<u8>>,
    /// `x-api-key`.
    pub api_key: Option<Vec<u8>>,
    /// `grpc-timeout`.
    pub timeout: Option<Vec<u8>>,
}

impl Headers {
    /// Reads the fuzzer's bytes: up to three NUL-separated parts (no header value may hold a
    /// NUL) for `authorization`, `x-api-key` and `grpc-timeout`; a part is present when it
    /// starts with 0x01, and its value is the rest.
    pub fn from_bytes(data: &[u8]) -> Self {
        let mut parts = data.split(|b| *b == 0).map(|p| match p.split_first() {
            Some((1, value)) => Some(value.to_vec()),
            _ => None,
        });
        Self {
            authorization: parts.next().flatten(),
            api_key: parts.next().flatten(),
            timeout: parts.next().flatten(),
        }
    }

    /// The inverse of [`Self::from_bytes`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, part) in [&self.authorization, &self.api_key, &self.timeout].into_iter().enumerate()
        {
            if i > 0 {
                out.push(0);
            }
            if let Some(v) = part {
                out.push(1);
                out.extend_from_slice(v);
            }
        }
        out
    }
}

/// What the contract says the interceptor must decide.
fn expected(h: &Headers) -> bool {
    let presented = match (&h.authorization, &h.api_key) {
        (Some(v), _) => match v.get(..7) {
            Some(s) if s.eq_ignore_ascii_case(b"bearer ") => &v[7..],
            _ => return false,
        },
        (None, Some(v)) => v.as_slice(),
        (None, None) => return false,
    };
    presented.trim_ascii() == SECRET.as_bytes()
}

/// Runs one input.
pub fn run(h: &Headers) {
    let mut req = Request::new(());
    for (name, value) in [
        ("authorization", &h.authorization),
        ("x-api-key", &h.api_key),
        ("grpc-timeout", &h.timeout),
    ] {
        if let Some(v) = value {
            // Values HTTP/2 itself would refuse never reach the interceptor.
            let Ok(v) = AsciiMetadataValue::try_from(v.as_slice()) else { return };
            req.metadata_mut().insert(name, v);
        }
    }

    let now = Instant::now();
    match client_deadline(req.metadata(), now) {
        Some(deadline) => {
            assert!(deadline >= now);
            let t = h.timeout.as_deref().unwrap_or_default();
            let (digits, unit) = t.split_at(t.len().saturating_sub(1));
            assert!((1..=8).contains(&digits.len()), "{t:?}");
            assert!(digits.iter().all(u8::is_ascii_digit) && b"HMSmun".contains(&unit[0]));
        }
        None => {
            if let Some(t) = h.timeout.as_deref().and_then(|t| std::str::from_utf8(t).ok()) {
                // Only a value that does not parse gives no deadline.
                assert_eq!(parse_grpc_timeout(t), None::<Duration>, "{t:?}");
            }
        }
    }

    let mut auth = ApiKeyAuth::new(key_store(ApiKeys::single("fuzz", SECRET)));
    let want = expected(h);
    match auth.call(req) {
        Ok(req) => {
            assert!(want, "admitted a wrong key: {h:?}");
            let grant = req.extensions().get::<Arc<KeyGrant>>().expect("grant in extensions");
            assert_eq!(grant.name, "fuzz");
        }
        Err(status) => {
            assert!(!want, "refused the right key: {h:?} -> {status:?}");
            assert_eq!(status.code(), Code::Unauthenticated);
            assert!(!status.message().contains(SECRET));
        }
    }
}
