//! One EntropyService call as seen by operators: its metrics and its log line.
//!
//! A handler starts a [`Call`], lets it authorize the request (so refusals are counted by
//! method and reason), tells it what it drew, and finishes it with the result. Finishing
//! records the duration by method and status code, hands what a unary call drew to the
//! transport (counted as served only once its bytes leave, [`super::delivery`]), and writes one
//! line: debug for ordinary outcomes, info for a refusal (auth, quota, invalid argument) with
//! its reason. Key names appear, never secrets.

use std::sync::Arc;
use std::time::Instant;

use tonic::{Code, Status};

use super::delivery::{ServedMeter, Undelivered};
use super::errors::{self, quota_exceeded};
use crate::domain::auth::{KeyGrant, Scope};
use crate::domain::log_safety::{self, escape};
use crate::domain::quota::QuotaError;
use crate::metrics::{AuthFailure, CODE_NAMES, GatewayMetrics, KeyHandles, Method, QuotaLimit};
use crate::transport::Dues;

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
    /// What a unary call drew, held until its response is delivered.
    undelivered: Option<Undelivered>,
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
            undelivered: None,
        }
    }

    /// The request's key grant, if it authenticated, holds `scope`, and its request quota
    /// admits one more call.
    pub fn authorize(
        &mut self,
        extensions: &tonic::Extensions,
        scope: Scope,
    ) -> Result<Arc<KeyGrant>, Status> {
        let Some(grant) = extensions.get::<Arc<KeyGrant>>().cloned() else {
            // The interceptor refuses every request without a valid key, so this is reached
            // only if it were not installed.
            let status = errors::unauthenticated("missing API key");
            return Err(self.auth_failed(AuthFailure::Missing, status));
        };
        let handles = self.metrics.key(&grant.name);
        handles.request(self.method);
        self.key = Some((grant.clone(), handles));
        if !grant.allows(scope) {
            let status = errors::missing_scope(&grant.name, scope.as_str());
            return Err(self.auth_failed(AuthFailure::Scope, status));
        }
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
    pub fn quota(&mut self, e: QuotaError) -> Status {
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

    /// Notes what a unary call drew, delivered with its response ([`Call::finish`]).
    pub(crate) fn drew_held(&mut self, undelivered: Undelivered) {
        self.bytes += undelivered.len() as u64;
        match &mut self.undelivered {
            Some(drawn) => drawn.absorb(undelivered),
            None => self.undelivered = Some(undelivered),
        }
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

    /// Ends a unary call with its result. A successful response carries what the call drew
    /// to the transport ([`Dues`]), which counts it as served once its bytes have left.
    pub fn finish<T: prost::Message>(
        mut self,
        result: Result<tonic::Response<T>, Status>,
    ) -> Result<tonic::Response<T>, Status> {
        let undelivered = self.undelivered.take();
        match result {
            Ok(mut response) => {
                if let Some(mut undelivered) = undelivered {
                    // The gRPC prefix, then the message.
                    undelivered.fit(5 + response.get_ref().encoded_len());
                    let dues = Dues::default();
                    dues.push(Box::new(undelivered));
                    response.extensions_mut().insert(dues);
                }
                self.end(Code::Ok, "");
                Ok(response)
            }
            Err(status) => {
                // Drawn bytes of a failed call went back to the pool or were never drawn: the
                // holds go, nothing is counted.
                if let Some(undelivered) = undelivered {
                    undelivered.abandon();
                }
                self.bytes = 0;
                self.end(status.code(), status.message());
                Err(status)
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
