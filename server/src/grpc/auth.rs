//! The API-key interceptor: `authorization: Bearer KEY` (or `x-api-key: KEY`) metadata only.
//!
//! Keys are never read from a request field or a URL. The authenticated key's grant (name,
//! scopes, quota) goes into the request extensions; handlers check scope and quota with
//! [`authorize`]. The secret is never logged. Keys live in a [`KeyStore`] that SIGHUP can swap
//! without dropping connections.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::auth::{ApiKeys, KeyGrant, Scope};

/// The current key set, replaceable while serving.
pub type KeyStore = Arc<ArcSwap<ApiKeys>>;

/// A key store holding `keys`.
pub fn key_store(keys: ApiKeys) -> KeyStore {
    Arc::new(ArcSwap::from_pointee(keys))
}

/// Checks every EntropyService call's key.
#[derive(Debug, Clone)]
pub struct ApiKeyAuth {
    keys: KeyStore,
}

impl ApiKeyAuth {
    /// An interceptor accepting the keys in `keys`.
    pub fn new(keys: KeyStore) -> Self {
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
        let grant = self
            .keys
            .load()
            .authenticate(presented.trim_ascii())
            .cloned()
            .ok_or_else(|| Status::unauthenticated("invalid API key"))?;
        request.extensions_mut().insert(grant);
        Ok(request)
    }
}

/// The grant of an authenticated request, if it holds `scope` and its request quota admits
/// one more call.
pub fn authorize(extensions: &tonic::Extensions, scope: Scope) -> Result<Arc<KeyGrant>, Status> {
    // The interceptor runs before every EntropyService handler and always inserts a grant.
    let grant = extensions
        .get::<Arc<KeyGrant>>()
        .cloned()
        .ok_or_else(|| Status::unauthenticated("missing API key"))?;
    if !grant.allows(scope) {
        return Err(Status::permission_denied(format!(
            "key {:?} lacks the {} scope",
            grant.name,
            scope.as_str()
        )));
    }
    grant.quota.admit_request().map_err(|e| {
        tracing::info!(key = %grant.name, "quota: {e}");
        super::errors::quota_exceeded(e)
    })?;
    Ok(grant)
}
