//! IngestService: the collector's one-way door. The reply is empty; only the status returns.

use std::sync::Arc;

use entropy_proto::v1::ingest_service_server::IngestService;
use entropy_proto::v1::{PublishRequest, PublishResponse};
use tonic::{Request, Response, Status};

use super::errors;
use crate::domain::ingest::{Ingest, IngestError};
use crate::domain::log_safety::{self, escape};
use crate::transport::CallSlot;

/// The IngestService implementation.
#[derive(Debug, Clone)]
pub(crate) struct IngestApi {
    ingest: Arc<Ingest>,
}

impl IngestApi {
    /// A service storing verified chunks through `ingest` (which counts them: see
    /// `ingest::counters`).
    pub(crate) fn new(ingest: Arc<Ingest>) -> Self {
        Self { ingest }
    }
}

#[tonic::async_trait]
impl IngestService for IngestApi {
    async fn publish(
        &self,
        request: Request<PublishRequest>,
    ) -> Result<Response<PublishResponse>, Status> {
        let call = request.extensions().get::<Arc<CallSlot>>().cloned();
        let req = request.into_inner();
        // Unverified until `publish` returns: log it only in a bounded, printable form.
        let collector = loggable(&req.collector_id);
        let (epoch, sequence) = (req.epoch, req.sequence);
        // CRC and HMAC over up to a MiB: off the async worker so other calls keep moving.
        let ingest = self.ingest.clone();
        let result = tokio::task::spawn_blocking(move || ingest.publish(req))
            .await
            .map_err(|e| errors::internal("Publish", &e))?;
        // A chunk whose MAC verified keeps its connection from idling and proves it (the
        // connection is not the first to give way when the listener is full).
        if result.as_ref().map_or_else(IngestError::authenticated, |_| true)
            && let Some(call) = call
        {
            call.authenticated();
        }
        match result {
            Ok(len) => {
                // Verified now: the collector id is signed, so the label set stays bounded by
                // the collectors holding a MAC key.
                tracing::debug!(%collector, epoch, sequence, len, "chunk accepted");
                Ok(Response::new(PublishResponse {}))
            }
            // A full pool is the steady state when nobody draws: not worth a line per retry.
            Err(e @ IngestError::PoolFull(_)) => {
                tracing::debug!(%collector, sequence, reason = e.reason(), "chunk rejected: {e}");
                Err(e.into())
            }
            Err(e) => {
                if let Some(held_back) = log_safety::refusals().allow(e.reason()) {
                    let why = escape(&e.to_string());
                    tracing::info!(%collector, sequence, reason = e.reason(), held_back, "chunk rejected: {why}");
                }
                Err(e.into())
            }
        }
    }
}

/// A sender-chosen string made safe for one log line (see [`crate::domain::log_safety`]).
fn loggable(s: &str) -> String {
    escape(s)
}
