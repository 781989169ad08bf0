//! One EntropyService call as seen by operators: its metrics and its log line.
//!
//! A unary handler runs inside [`Call::run`]: the call is timed, its key authorized (so refusals
//! are counted by method and reason), and the handler's [`Reply`] or [`Failure`] finishes it.
//! Finishing records the duration by method and status code, hands what the call drew to the
//! transport (counted as served only once its bytes leave, [`super::delivery`]), and writes
//! one line: debug for ordinary outcomes, info for a refusal (auth, quota, invalid argument)
//! with its reason. Key names appear, never secrets. A stream starts a [`Call`] of its own,
//! which its task ends.

use std::sync::Arc;
use std::time::Instant;

use tonic::{Code, Request, Response, Status};

use super::delivery::{ServedMeter, Undelivered};
use super::errors::{self, quota_exceeded};
use crate::domain::auth::{KeyGrant, Scope};
use crate::domain::log_safety::{self, escape};
use crate::domain::quota::QuotaError;
use crate::metrics::{AuthFailure, CODE_NAMES, GatewayMetrics, KeyHandles, Method, QuotaLimit};
use crate::transport::Dues;

/// Who a unary handler serves: the authorized key, and the meter that counts what the call
/// serves for its method and key once delivered.
#[derive(Debug)]
pub struct Caller {
    /// The key's grant (name, scopes, quota).
    pub(crate) grant: Arc<KeyGrant>,
    /// Counts served bytes for the call's method and key.
    pub(crate) meter: ServedMeter,
}

/// What a unary handler answers: its response, and what it drew for it (held until the
/// response's bytes leave the process).
#[derive(Debug)]
pub struct Reply<T> {
    response: T,
    drawn: Option<Undelivered>,
    /// Bytes drawn and not sent (a CheckQuality sample), for the log line.
    tested: usize,
}

impl<T> Reply<T> {
    /// A response that drew nothing.
    pub fn new(response: T) -> Self {
        Self { response, drawn: None, tested: 0 }
    }

    /// A response carrying the bytes `drawn`.
    pub(crate) fn drawn(response: T, drawn: Undelivered) -> Self {
        Self { response, drawn: Some(drawn), tested: 0 }
    }

    /// A response about `n` drawn bytes that were tested and never sent.
    pub(crate) fn tested(response: T, n: usize) -> Self {
        Self { response, drawn: None, tested: n }
    }
}

/// Why a unary handler answered no: a status, or the key's quota (counted for the key).
#[derive(Debug)]
pub enum Failure {
    /// Any refusal or failure, as its status.
    Status(Status),
    /// The key's quota refused the call.
    Quota(QuotaError),
    /// The key lacks a scope the request needs beyond the method's own (`entropy:drbg` for a
    /// DRBG construction); counted as a scope refusal.
    Denied(Scope),
}

impl From<Status> for Failure {
    fn from(status: Status) -> Self {
        Self::Status(status)
    }
}

/// A call in progress.
#[derive(Debug)]
pub struct Call {
    metrics: Arc<GatewayMetrics>,
    method: Method,
    started: Instant,
    key: Option<(Arc<KeyGrant>, Arc<KeyHandles>)>,
    /// Bytes drawn for the caller (for the log line).
    bytes: u64,
    /// A short label for a refusal, for the log line.
    refusal: Option<&'static str>,
}

impl Call {
    /// Starts timing a call of `method`.
    pub fn start(metrics: &Arc<GatewayMetrics>, method: Method) -> Self {
        Self {
            metrics: metrics.clone(),
            method,
            started: Instant::now(),
            key: None,
            bytes: 0,
            refusal: None,
        }
    }

    /// Runs a unary `handler` of `method` for a key holding `scope`: authorizes the request,
    /// runs the handler, and finishes the call with its answer ([`Call::finish`]).
    pub async fn run<Req, Res: prost::Message>(
        metrics: &Arc<GatewayMetrics>,
        (method, scope): (Method, Scope),
        request: Request<Req>,
        handler: impl AsyncFnOnce(Caller, Request<Req>) -> Result<Reply<Res>, Failure>,
    ) -> Result<Response<Res>, Status> {
        let admit = |call: &mut Self, extensions: &_| call.authorize(extensions, &[scope]);
        Self::run_admitted(metrics, method, request, admit, handler).await
    }

    /// Runs a unary `handler` of `method` for any valid key, taking one of its request tokens
    /// (the receipt log's calls open to every key). Finished like [`Call::run`].
    pub async fn run_any_key<Req, Res: prost::Message>(
        metrics: &Arc<GatewayMetrics>,
        method: Method,
        request: Request<Req>,
        handler: impl AsyncFnOnce(Caller, Request<Req>) -> Result<Reply<Res>, Failure>,
    ) -> Result<Response<Res>, Status> {
        let admit = |call: &mut Self, extensions: &_| call.authorize(extensions, &[]);
        Self::run_admitted(metrics, method, request, admit, handler).await
    }

    /// Runs a unary `handler` of `method` about the calling key itself (GetUsage): any valid
    /// key, no scope, and no request token taken, so the call costs nothing of the quota it
    /// may report on. Finished like [`Call::run`].
    pub async fn run_for_key<Req, Res: prost::Message>(
        metrics: &Arc<GatewayMetrics>,
        method: Method,
        request: Request<Req>,
        handler: impl AsyncFnOnce(Caller, Request<Req>) -> Result<Reply<Res>, Failure>,
    ) -> Result<Response<Res>, Status> {
        Self::run_admitted(metrics, method, request, Self::identify, handler).await
    }

    /// Runs a unary `handler` for the key `admit` lets in, and finishes the call.
    async fn run_admitted<Req, Res: prost::Message>(
        metrics: &Arc<GatewayMetrics>,
        method: Method,
        request: Request<Req>,
        admit: impl FnOnce(&mut Self, &tonic::Extensions) -> Result<Arc<KeyGrant>, Status>,
        handler: impl AsyncFnOnce(Caller, Request<Req>) -> Result<Reply<Res>, Failure>,
    ) -> Result<Response<Res>, Status> {
        let mut call = Self::start(metrics, method);
        let result = match admit(&mut call, request.extensions()) {
            Ok(grant) => handler(Caller { grant, meter: call.meter() }, request).await,
            Err(status) => Err(Failure::Status(status)),
        };
        call.finish(result)
    }

    /// The request's key grant, if it authenticated (counted for the key and method).
    fn identify(&mut self, extensions: &tonic::Extensions) -> Result<Arc<KeyGrant>, Status> {
        let Some(grant) = extensions.get::<Arc<KeyGrant>>().cloned() else {
            // The interceptor refuses every request without a valid key, so this is reached
            // only if it were not installed.
            let status = errors::unauthenticated("missing API key");
            return Err(self.auth_failed(AuthFailure::Missing, status));
        };
        let handles = self.metrics.key(&grant.name);
        handles.request(self.method);
        self.key = Some((grant.clone(), handles));
        Ok(grant)
    }

    /// The request's key grant, if it authenticated, holds one of `scopes` (any key when
    /// `scopes` is empty), and its request quota admits one more call.
    pub(crate) fn authorize(
        &mut self,
        extensions: &tonic::Extensions,
        scopes: &[Scope],
    ) -> Result<Arc<KeyGrant>, Status> {
        let grant = self.identify(extensions)?;
        // No scope named: any valid key.
        if !scopes.is_empty() && !scopes.iter().any(|&scope| grant.allows(scope)) {
            let names: Vec<_> = scopes.iter().map(|scope| scope.as_str()).collect();
            let status = errors::missing_scope(&grant.name, &names.join(" or "));
            return Err(self.auth_failed(AuthFailure::Scope, status));
        }
        // The request token goes before the request is read: a malformed call is rate-limited
        // like any other.
        grant.quota.admit_request().map_err(|e| self.quota(e))?;
        Ok(grant)
    }

    fn auth_failed(&mut self, failure: AuthFailure, status: Status) -> Status {
        self.metrics.auth_failed(failure);
        self.refusal = Some(match failure {
            AuthFailure::Missing => "auth_missing",
            AuthFailure::Invalid => "auth_invalid",
            AuthFailure::Scope => "auth_scope",
        });
        status
    }

    /// Counts a quota refusal for the call's key and returns its status.
    fn quota(&mut self, e: QuotaError) -> Status {
        let limit = match e {
            QuotaError::Requests { .. } => QuotaLimit::Requests,
            QuotaError::Bytes { .. } | QuotaError::Burst { .. } => QuotaLimit::Bytes,
            QuotaError::Streams { .. } => QuotaLimit::Streams,
        };
        if let Some((_, handles)) = &self.key {
            handles.quota_rejected(limit);
        }
        self.refusal = Some(match limit {
            QuotaLimit::Requests => "quota_requests",
            QuotaLimit::Bytes => "quota_bytes",
            QuotaLimit::Streams => "quota_streams",
        });
        quota_exceeded(e)
    }

    /// Notes `n` bytes drawn for the caller (a stream's message: its queue delivers them).
    pub fn drew(&mut self, n: usize) {
        self.bytes += n as u64;
    }

    /// A meter that counts bytes as served for this call's method and key, for bytes that
    /// leave from elsewhere (a stream's outbox, as the transport takes each message).
    pub(crate) fn meter(&self) -> ServedMeter {
        ServedMeter::new(
            &self.metrics,
            self.method,
            self.key.as_ref().map(|(_, handles)| handles.clone()),
        )
    }

    /// Ends a unary call with its handler's answer. A reply carries what the call drew to
    /// the transport ([`Dues`]), which counts it as served once its bytes have left; a failed
    /// call drew nothing (its bytes went back to the pool), so nothing is counted.
    fn finish<T: prost::Message>(
        mut self,
        result: Result<Reply<T>, Failure>,
    ) -> Result<Response<T>, Status> {
        match result {
            Ok(Reply { response, drawn, tested }) => {
                let mut response = Response::new(response);
                self.bytes = tested as u64;
                if let Some(mut drawn) = drawn {
                    self.bytes += drawn.len() as u64;
                    // The gRPC prefix, then the message.
                    drawn.fit(5 + response.get_ref().encoded_len());
                    let dues = Dues::default();
                    dues.push(Box::new(drawn));
                    response.extensions_mut().insert(dues);
                }
                self.end(Code::Ok, "");
                Ok(response)
            }
            Err(failure) => {
                let status = self.refuse(failure);
                self.end(status.code(), status.message());
                Err(status)
            }
        }
    }

    /// The status of `failure`; a quota refusal is counted for the call's key.
    pub(crate) fn refuse(&mut self, failure: Failure) -> Status {
        match failure {
            Failure::Status(status) => status,
            Failure::Quota(e) => self.quota(e),
            Failure::Denied(scope) => {
                let key = self.key.as_ref().map_or("-", |(grant, _)| grant.name.as_str());
                let status = errors::missing_scope(key, scope.as_str());
                self.auth_failed(AuthFailure::Scope, status)
            }
        }
    }

    /// Ends a call (a stream, when it closes) with `code`.
    pub fn end(self, code: Code, message: &str) {
        let elapsed = self.started.elapsed();
        self.metrics.rpc_finished(self.method, code, elapsed);
        let method = self.method.as_str();
        let key = self.key.as_ref().map_or("-", |(g, _)| g.name.as_str());
        let code_name = CODE_NAMES.get(code as usize).copied().unwrap_or("UNKNOWN");
        let duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let refusal = self.refusal.or(match code {
            Code::InvalidArgument => Some("invalid_argument"),
            _ => None,
        });
        match refusal {
            Some(reason) => {
                if let Some(held_back) = log_safety::refusals().allow(reason) {
                    tracing::info!(
                        method,
                        key,
                        code = code_name,
                        reason,
                        duration_us,
                        held_back,
                        "request refused: {}",
                        escape(message)
                    );
                }
            }
            None => tracing::debug!(
                method,
                key,
                bytes = self.bytes,
                code = code_name,
                duration_us,
                "request"
            ),
        }
    }
}
