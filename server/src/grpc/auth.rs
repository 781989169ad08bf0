//! The API-key interceptor: `authorization: Bearer KEY` (or `x-api-key: KEY`) metadata only.
//!
//! Keys are never read from a request field or a URL. The authenticated key's name is put in
//! the request extensions for logs; the secret is never logged.

use std::sync::Arc;

use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::auth::ApiKeys;

/// The name of the key a request was authenticated with.
#[derive(Debug, Clone)]
pub struct KeyName(pub Arc<str>);

/// Checks every EntropyService call's key.
#[derive(Debug, Clone)]
pub struct ApiKeyAuth {
    keys: Arc<ApiKeys>,
}

impl ApiKeyAuth {
    /// An interceptor accepting `keys`.
    pub fn new(keys: Arc<ApiKeys>) -> Self {
        Self { keys }
    }
}

impl Interceptor for ApiKeyAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let md = request.metadata();
        let presented = match (md.get("authorization"), md.get("x-api-key")) {
            (Some(v), _) => {
                let v = v.as_bytes();
                // The scheme is case-insensitive (RFC 9110 11.1).
                match v.get(..7) {
                    Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => &v[7..],
                    _ => {
                        return Err(Status::unauthenticated(
                            "authorization metadata must be \"Bearer <key>\"",
                        ));
                    }
                }
            }
            (None, Some(v)) => v.as_bytes(),
            (None, None) => {
                return Err(Status::unauthenticated(
                    "missing API key: send metadata \"authorization: Bearer <key>\"",
                ));
            }
        };
        let name = self
            .keys
            .authenticate(presented.trim_ascii())
            .ok_or_else(|| Status::unauthenticated("invalid API key"))?;
        let name = KeyName(Arc::from(name));
        request.extensions_mut().insert(name);
        Ok(request)
    }
}
