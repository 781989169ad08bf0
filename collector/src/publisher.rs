//! Delivering signed chunks to a gateway, one way.
//!
//! The outcome of a Publish call can be unknown (the connection dropped after the gateway
//! stored the chunk but before the status arrived). The publisher therefore retries the *same*
//! signed chunk, never a re-signed copy: the gateway's replay check answers ALREADY_EXISTS to a
//! chunk it already stored, which counts as delivered. So a chunk is stored at most once
//! whatever happens on the wire.

use std::sync::Arc;
use std::time::Duration;

use entropy_proto::v1::PublishRequest;
use entropy_proto::v1::ingest_service_client::IngestServiceClient;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::metrics::GatewayMetrics;

/// How one chunk's delivery ended.
#[derive(Debug)]
pub enum Delivery {
    /// The gateway stored it.
    Stored,
    /// The gateway had stored it already (a retry after an unknown outcome).
    AlreadyStored,
    /// The gateway refused it for good (bad MAC, stale, malformed); it is dropped.
    Refused(Status),
    /// Shutdown came before the chunk was delivered.
    Abandoned,
}

/// Back-off bounds for retries.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// First wait after a full pool.
    pub pool_full_initial: Duration,
    /// Longest wait after a full pool.
    pub pool_full_max: Duration,
    /// First wait after a transport error.
    pub unavailable_initial: Duration,
    /// Longest wait after a transport error.
    pub unavailable_max: Duration,
    /// Deadline of one Publish call.
    pub call_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            pool_full_initial: Duration::from_millis(2),
            pool_full_max: Duration::from_millis(200),
            unavailable_initial: Duration::from_millis(100),
            unavailable_max: Duration::from_secs(5),
            call_timeout: Duration::from_secs(10),
        }
    }
}

/// Publishes chunks to one gateway's IngestService.
#[derive(Debug, Clone)]
pub struct Publisher {
    client: IngestServiceClient<Channel>,
    policy: RetryPolicy,
    metrics: Option<Arc<GatewayMetrics>>,
}

impl Publisher {
    /// A publisher for the gateway at `endpoint` (connects lazily, reconnects as needed).
    pub fn new(endpoint: Endpoint, policy: RetryPolicy) -> Self {
        let channel = endpoint
            .tcp_nodelay(true)
            .initial_stream_window_size(Some(4 << 20))
            .initial_connection_window_size(Some(8 << 20))
            .connect_lazy();
        let client = IngestServiceClient::new(channel).max_encoding_message_size(32 << 20);
        Self { client, policy, metrics: None }
    }

    /// Counts every attempt, its outcome and duration into `metrics`.
    pub fn with_metrics(mut self, metrics: GatewayMetrics) -> Self {
        self.metrics = Some(Arc::new(metrics));
        self
    }

    /// Delivers `chunk`, retrying the same chunk while the outcome is unknown or the gateway
    /// is full, until it is stored, refused, or `shutdown` fires.
    pub async fn deliver(
        &mut self,
        chunk: &PublishRequest,
        shutdown: &CancellationToken,
    ) -> Delivery {
        let mut pool_full_wait = self.policy.pool_full_initial;
        let mut unavailable_wait = self.policy.unavailable_initial;
        loop {
            let mut request = tonic::Request::new(chunk.clone());
            request.set_timeout(self.policy.call_timeout);
            let started = std::time::Instant::now();
            let result = tokio::select! {
                () = shutdown.cancelled() => return Delivery::Abandoned,
                r = self.client.publish(request) => r,
            };
            if let Some(m) = &self.metrics {
                let code = match &result {
                    Ok(_) => Some(Code::Ok),
                    Err(s) if from_transport(s) => None,
                    Err(s) => Some(s.code()),
                };
                m.attempt(started.elapsed(), code, chunk.data.len());
            }
            let wait = match result {
                Ok(_) => return Delivery::Stored,
                Err(s) if s.code() == Code::AlreadyExists => return Delivery::AlreadyStored,
                Err(s) if s.code() == Code::ResourceExhausted => {
                    // The gateway is full: slow down, keep the chunk.
                    let w = pool_full_wait;
                    pool_full_wait = (pool_full_wait * 2).min(self.policy.pool_full_max);
                    w
                }
                Err(s) if outcome_unknown(s.code()) => {
                    tracing::debug!(code = ?s.code(), "publish outcome unknown; resending the same chunk");
                    let w = unavailable_wait;
                    unavailable_wait = (unavailable_wait * 2).min(self.policy.unavailable_max);
                    w
                }
                Err(s) => return Delivery::Refused(s),
            };
            tokio::select! {
                () = shutdown.cancelled() => return Delivery::Abandoned,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// True for a status made on this side (no connection, a local timeout): one that came from
/// the gateway carries its response headers as metadata.
fn from_transport(status: &Status) -> bool {
    status.metadata().is_empty()
}

/// Codes after which the chunk may or may not have been stored, or that a retry can fix.
fn outcome_unknown(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::Unknown
            | Code::Internal
            | Code::Aborted
    )
}
