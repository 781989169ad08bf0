//! The API-key interceptor: `authorization: Bearer KEY` (or `x-api-key: KEY`) metadata only.
//!
//! Keys are never read from a request field or a URL. The authenticated key's grant (name,
//! scopes, quota) goes into the request extensions; handlers check scope and quota with
//! [`Call::authorize`](super::observe::Call::authorize). A request without a valid key is
//! refused here, before its body is decoded, and counted and logged by method: [`TagMethod`]
//! puts the method into the request's extensions, since an interceptor sees no path. The
//! secret is never logged. Keys live in a [`KeyStore`] that SIGHUP can swap without dropping
//! connections.

use std::sync::Arc;

use std::task::{Context, Poll};
use std::time::Duration;

use arc_swap::ArcSwap;
use tonic::server::NamedService;
use tonic::service::Interceptor;
use tonic::{Code, Request, Status};

use super::errors;
use crate::domain::auth::ApiKeys;
use crate::domain::log_safety;
use crate::metrics::{AuthFailure, GatewayMetrics, Method};
use crate::transport::CallSlot;

/// The current key set, replaceable while serving.
pub(crate) type KeyStore = Arc<ArcSwap<ApiKeys>>;

/// A key store holding `keys`.
pub fn key_store(keys: ApiKeys) -> KeyStore {
    Arc::new(ArcSwap::from_pointee(keys))
}

/// Checks every EntropyService call's key.
#[derive(Debug, Clone)]
pub struct ApiKeyAuth {
    keys: KeyStore,
    metrics: Arc<GatewayMetrics>,
}

impl ApiKeyAuth {
    /// An interceptor accepting the keys in `keys`.
    pub fn new(keys: KeyStore) -> Self {
        Self { keys, metrics: Arc::default() }
    }

    /// Counts refusals into `metrics`.
    pub(crate) fn with_metrics(mut self, metrics: Arc<GatewayMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    fn refuse(&self, request: &Request<()>, failure: AuthFailure, message: &'static str) -> Status {
        self.metrics.auth_failed(failure);
        let method = request.extensions().get::<Method>().copied();
        if let Some(method) = method {
            self.metrics.rpc_finished(method, Code::Unauthenticated, Duration::ZERO);
        }
        let reason = match failure {
            AuthFailure::Missing => "auth_missing",
            AuthFailure::Invalid => "auth_invalid",
            AuthFailure::Scope => "auth_scope",
        };
        if let Some(held_back) = log_safety::refusals().allow(reason) {
            tracing::info!(
                method = method.map_or("-", Method::as_str),
                key = "-",
                code = "UNAUTHENTICATED",
                reason,
                held_back,
                "request refused: {message}"
            );
        }
        errors::unauthenticated(message)
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
                        return Err(self.refuse(
                            &request,
                            AuthFailure::Missing,
                            "authorization metadata must be \"Bearer <key>\"",
                        ));
                    }
                }
            }
            (None, Some(v)) => v.as_bytes(),
            (None, None) => {
                return Err(self.refuse(
                    &request,
                    AuthFailure::Missing,
                    "missing API key: send metadata \"authorization: Bearer <key>\"",
                ));
            }
        };
        let Some(grant) = self.keys.load().authenticate(presented.trim_ascii()).cloned() else {
            return Err(self.refuse(&request, AuthFailure::Invalid, "invalid API key"));
        };
        // The call keeps its connection from idling, and the connection is proven.
        if let Some(slot) = request.extensions().get::<Arc<CallSlot>>() {
            slot.authenticated_as(&grant.name);
        }
        request.extensions_mut().insert(grant);
        Ok(request)
    }
}

/// Puts the called [`Method`] into each request's extensions, for the interceptor it wraps.
#[derive(Debug, Clone)]
pub(crate) struct TagMethod<S>(pub S);

impl<S: NamedService> NamedService for TagMethod<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> tower::Service<http::Request<B>> for TagMethod<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let name = request.uri().path().rsplit('/').next().unwrap_or_default();
        if let Some(method) = Method::ALL.into_iter().find(|m| m.as_str() == name) {
            request.extensions_mut().insert(method);
        }
        self.0.call(request)
    }
}
