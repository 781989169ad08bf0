//! Delivering chunks to a gateway, one way.
//!
//! The publisher seals each chunk for its gateway (gateway id, timestamp, MAC) just before the
//! first attempt. Then:
//!
//! - **Unknown outcome** (the connection dropped after the gateway may have stored the chunk):
//!   resend the *same* sealed chunk from then on, never a re-dated copy. The gateway's replay
//!   check answers ALREADY_EXISTS to a chunk it stored, which counts as delivered; and should
//!   the gateway restart, the old timestamp is at or before its ingest lease (which covers
//!   every chunk it stored), so it answers FAILED_PRECONDITION and the chunk is dropped: it
//!   cannot be stored twice across the restart either.
//! - **Definitely not stored** (RESOURCE_EXHAUSTED: the pool is full; FAILED_PRECONDITION: a
//!   timestamp the gateway cannot accept now), and no unknown outcome before: the chunk is
//!   sealed again, same sequence, fresh timestamp, before the retry once it is older than
//!   [`RetryPolicy::reseal_after`] (pool full) or at once (a refused timestamp, at most
//!   [`RetryPolicy::max_reseals`] times in a row). So a chunk waiting behind a full pool is not
//!   lost to staleness: back-pressure, then delivery.
//!
//! So a chunk is stored at most once whatever happens on the wire, and nothing sealed is
//! dropped without a counted reason.

use std::sync::Arc;
use std::time::Duration;

use entropy_proto::v1::PublishRequest;
use entropy_proto::v1::ingest_service_client::IngestServiceClient;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::metrics::PublishMetrics;
use crate::signer::Sealer;

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
    /// A chunk kept back by a full pool is sealed again once its timestamp is this old.
    pub reseal_after: Duration,
    /// Timestamp refusals in a row after which a chunk is dropped (clock skew that re-sealing
    /// cannot fix).
    pub max_reseals: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            pool_full_initial: Duration::from_millis(2),
            pool_full_max: Duration::from_millis(200),
            unavailable_initial: Duration::from_millis(100),
            unavailable_max: Duration::from_secs(5),
            call_timeout: Duration::from_secs(10),
            reseal_after: Duration::from_secs(10),
            max_reseals: 20,
        }
    }
}

/// Publishes chunks to one gateway's IngestService.
#[derive(Debug, Clone)]
pub struct Publisher {
    client: IngestServiceClient<Channel>,
    policy: RetryPolicy,
    metrics: Option<Arc<PublishMetrics>>,
    sealer: Sealer,
    gateway_id: String,
}

impl Publisher {
    /// A publisher for the gateway `gateway_id` at `endpoint` (connects lazily, reconnects as
    /// needed), sealing chunks with `sealer`.
    pub fn new(endpoint: Endpoint, policy: RetryPolicy, sealer: Sealer, gateway_id: &str) -> Self {
        let channel = endpoint
            .tcp_nodelay(true)
            .initial_stream_window_size(Some(4 << 20))
            .initial_connection_window_size(Some(8 << 20))
            .connect_lazy();
        let client = IngestServiceClient::new(channel).max_encoding_message_size(32 << 20);
        Self { client, policy, metrics: None, sealer, gateway_id: gateway_id.to_owned() }
    }

    /// Retries by `policy` instead of the one it was made with.
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Counts every attempt, its outcome and duration into `metrics`.
    pub fn with_metrics(mut self, metrics: PublishMetrics) -> Self {
        self.metrics = Some(Arc::new(metrics));
        self
    }

    /// Seals `chunk` for this gateway and delivers it, retrying while the outcome is unknown,
    /// the gateway is full, or its timestamp cannot be accepted yet, until it is stored,
    /// refused, or `shutdown` fires.
    pub async fn deliver(
        &mut self,
        chunk: &mut PublishRequest,
        shutdown: &CancellationToken,
    ) -> Delivery {
        self.sealer.seal(chunk, &self.gateway_id);
        let mut sealed_at = std::time::Instant::now();
        let mut pool_full_wait = self.policy.pool_full_initial;
        let mut unavailable_wait = self.policy.unavailable_initial;
        // Once an attempt may have stored the chunk, it is never re-dated.
        let mut maybe_stored = false;
        let mut timestamp_refusals = 0;
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
            let (wait, reseal) = match result {
                Ok(_) => return Delivery::Stored,
                Err(s) if s.code() == Code::AlreadyExists => return Delivery::AlreadyStored,
                Err(s) if s.code() == Code::ResourceExhausted => {
                    // The gateway is full: slow down, keep the chunk (fresh, if it may be).
                    let w = pool_full_wait;
                    pool_full_wait = (pool_full_wait * 2).min(self.policy.pool_full_max);
                    (w, !maybe_stored && sealed_at.elapsed() >= self.policy.reseal_after)
                }
                Err(s)
                    if s.code() == Code::FailedPrecondition
                        && !maybe_stored
                        && timestamp_refusals < self.policy.max_reseals =>
                {
                    // Not stored: a timestamp the gateway cannot accept now (just after its
                    // start, or a clock off by more than it allows). Date it again.
                    timestamp_refusals += 1;
                    tracing::debug!(sequence = chunk.sequence, "{}; sealing again", s.message());
                    let w = pool_full_wait;
                    pool_full_wait = (pool_full_wait * 2).min(self.policy.pool_full_max);
                    (w, true)
                }
                Err(s) if outcome_unknown(s.code()) => {
                    tracing::debug!(code = ?s.code(), "publish outcome unknown; resending the same chunk");
                    maybe_stored = true;
                    let w = unavailable_wait;
                    unavailable_wait = (unavailable_wait * 2).min(self.policy.unavailable_max);
                    (w, false)
                }
                Err(s) => return Delivery::Refused(s),
            };
            tokio::select! {
                () = shutdown.cancelled() => return Delivery::Abandoned,
                () = tokio::time::sleep(wait) => {}
            }
            if reseal {
                self.sealer.seal(chunk, &self.gateway_id);
                sealed_at = std::time::Instant::now();
                if let Some(m) = &self.metrics {
                    m.resealed();
                }
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
