//! Readiness: SERVING while the pool is at or above its low watermark and the server is not
//! shutting down, published on `grpc.health.v1` for load balancers.
//!
//! A watcher samples the pool level every [`POLL_INTERVAL`] rather than hooking every put and
//! take: the hot path stays free of it, and a health check needs no finer resolution.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::pool::Pool;

/// How often the pool level is sampled.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Health service names the gateway reports (besides "", the server as a whole).
pub const PUBLIC_SERVICE: &str = "entropy.v1.EntropyService";
/// The ingest listener's service name.
pub const INGEST_SERVICE: &str = "entropy.v1.IngestService";

/// Whether the gateway should receive traffic.
#[derive(Debug)]
pub struct Readiness {
    pool: Arc<Pool>,
    low_watermark: usize,
    serving: AtomicBool,
    stopping: AtomicBool,
}

impl Readiness {
    /// Readiness of `pool` against `low_watermark` bytes.
    pub fn new(pool: Arc<Pool>, low_watermark: usize) -> Self {
        Self {
            pool,
            low_watermark,
            serving: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
        }
    }

    /// The configured low watermark.
    pub fn low_watermark(&self) -> usize {
        self.low_watermark
    }

    /// True when the last evaluation found the gateway ready.
    pub fn is_serving(&self) -> bool {
        self.serving.load(Ordering::Relaxed)
    }

    /// Marks the gateway as stopping: NOT_SERVING from now on.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        self.serving.store(false, Ordering::Relaxed);
    }

    /// Re-evaluates readiness now and returns it.
    pub fn evaluate(&self) -> bool {
        let ready =
            !self.stopping.load(Ordering::Relaxed) && self.pool.level() >= self.low_watermark;
        self.serving.store(ready, Ordering::Relaxed);
        ready
    }

    /// Keeps the health reporters in step with readiness until `shutdown`, then reports
    /// NOT_SERVING for good.
    pub async fn watch(
        self: Arc<Self>,
        reporters: Vec<HealthReporter>,
        shutdown: CancellationToken,
    ) {
        let mut last = None;
        let mut tick = tokio::time::interval(POLL_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            let ready = self.evaluate();
            if last != Some(ready) {
                tracing::info!(ready, level = self.pool.level(), "readiness changed");
                let status = if ready { ServingStatus::Serving } else { ServingStatus::NotServing };
                for r in &reporters {
                    r.set_service_status("", status).await;
                    r.set_service_status(PUBLIC_SERVICE, status).await;
                }
                last = Some(ready);
            }
        }
        self.stop();
        for r in &reporters {
            r.set_service_status("", ServingStatus::NotServing).await;
            r.set_service_status(PUBLIC_SERVICE, ServingStatus::NotServing).await;
        }
    }
}
