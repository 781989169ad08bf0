//! Readiness: SERVING while the pool is at or above its low watermark, a chunk has arrived
//! from a collector recently (`ingest_stale_after_ms`), and the server is not shutting down;
//! published on `grpc.health.v1` for load balancers ([`crate::grpc::health`]) and on `/readyz`
//! with the reason.
//!
//! A chunk refused only because the pool was full counts as arrived: a full pool that nobody
//! drains is healthy, and its collector is alive. A chunk refused for any other reason (a
//! collector's clock minutes off, a bad MAC) is named in the not-ready reason for
//! [`REFUSAL_SHOWN_FOR`], unless a chunk was stored since: so `/readyz` says why the pool ran dry.
//!
//! A watcher samples the pool level every [`POLL_INTERVAL`] rather than hooking every put and
//! take: the hot path stays free of it, and a health check needs no finer resolution.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use entropy_ops::clock::unix_ms_now;

use crate::domain::ingest::{Ingest, Refusal};
use crate::domain::pool::Pool;

/// How long the last refused chunk is named in the not-ready reason.
pub(crate) const REFUSAL_SHOWN_FOR: Duration = Duration::from_secs(60);

/// How often the pool level is sampled.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Whether the gateway should receive traffic.
#[derive(Debug)]
pub struct Readiness {
    pool: Arc<Pool>,
    low_watermark: usize,
    /// The ingest path (its last arrival and last refusal).
    ingest: Option<Arc<Ingest>>,
    /// How long ingest may go without a chunk; `None`: no such check.
    stale_after: Option<Duration>,
    serving: AtomicBool,
    draining: AtomicBool,
    stopping: AtomicBool,
}

/// Why the gateway is not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// It is draining before shutdown: still serving, but asking to be taken out of rotation.
    Draining,
    /// It is shutting down.
    Stopping,
    /// The pool is below its low watermark.
    PoolLow {
        /// Bytes in the pool.
        level: usize,
        /// The low watermark.
        low_watermark: usize,
    },
    /// No chunk arrived from any collector for longer than allowed.
    IngestStale {
        /// Milliseconds since the last chunk (or since start, when none came yet).
        silent_ms: i64,
        /// The limit, `ingest_stale_after_ms`.
        limit_ms: u128,
    },
}

/// Why the gateway is not ready, with the chunk refused last when that was recent.
#[derive(Debug, Clone)]
pub(crate) struct Unready {
    /// Why it is not ready.
    pub reason: NotReady,
    /// The last chunk refused (how many ms ago, and why), when within [`REFUSAL_SHOWN_FOR`].
    pub refusal: Option<(i64, Refusal)>,
}

impl std::fmt::Display for Unready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.reason)?;
        if let Some((ago_ms, r)) = &self.refusal {
            write!(
                f,
                "; the last chunk was refused {ago_ms} ms ago ({}): {}",
                r.reason, r.message
            )?;
        }
        Ok(())
    }
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Draining => {
                f.write_str("not ready: draining before shutdown (shutdown_drain_ms)")
            }
            Self::Stopping => f.write_str("not ready: shutting down"),
            Self::PoolLow { level, low_watermark } => write!(
                f,
                "not ready: pool holds {level} bytes, below pool_low_watermark_bytes \
                 ({low_watermark})"
            ),
            Self::IngestStale { silent_ms, limit_ms } => write!(
                f,
                "not ready: no chunk from any collector for {silent_ms} ms \
                 (ingest_stale_after_ms = {limit_ms})"
            ),
        }
    }
}

impl Readiness {
    /// Readiness of `pool` against `low_watermark` bytes.
    pub fn new(pool: Arc<Pool>, low_watermark: usize) -> Self {
        Self {
            pool,
            low_watermark,
            ingest: None,
            stale_after: None,
            serving: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
        }
    }

    /// Also not ready when `ingest` has seen no chunk (stored, or deferred for a full pool)
    /// for longer than `stale_after`; `Duration::ZERO` turns the check off.
    /// The not-ready reason also names the last chunk `ingest` refused, when recent.
    pub(crate) fn with_ingest_staleness(
        mut self,
        ingest: Arc<Ingest>,
        stale_after: Duration,
    ) -> Self {
        self.ingest = Some(ingest);
        self.stale_after = (!stale_after.is_zero()).then_some(stale_after);
        self
    }

    /// Checks readiness now, without publishing it.
    pub fn check(&self) -> Result<(), NotReady> {
        if self.stopping.load(Ordering::Relaxed) {
            return Err(NotReady::Stopping);
        }
        if self.draining.load(Ordering::Relaxed) {
            return Err(NotReady::Draining);
        }
        let level = self.pool.level();
        if level < self.low_watermark {
            return Err(NotReady::PoolLow { level, low_watermark: self.low_watermark });
        }
        if let (Some(ingest), Some(stale_after)) = (&self.ingest, self.stale_after) {
            let silent_ms = unix_ms_now().saturating_sub(ingest.last_arrival_unix_ms());
            if u128::try_from(silent_ms).unwrap_or(0) > stale_after.as_millis() {
                return Err(NotReady::IngestStale { silent_ms, limit_ms: stale_after.as_millis() });
            }
        }
        Ok(())
    }

    /// [`Readiness::check`] with the last chunk refused within [`REFUSAL_SHOWN_FOR`] when none
    /// was stored since: what `/readyz` and `GetStatus` say.
    pub(crate) fn explain(&self) -> Result<(), Unready> {
        self.check().map_err(|reason| {
            let now = unix_ms_now();
            let refusal =
                self.ingest.as_ref().and_then(|ingest| ingest.last_refusal()).and_then(|refusal| {
                    let ago_ms = now.saturating_sub(refusal.at_unix_ms);
                    (u128::try_from(ago_ms).unwrap_or(0) <= REFUSAL_SHOWN_FOR.as_millis())
                        .then_some((ago_ms, refusal))
                });
            Unready { reason, refusal }
        })
    }

    /// The configured low watermark.
    pub(crate) fn low_watermark(&self) -> usize {
        self.low_watermark
    }

    /// True when the last evaluation found the gateway ready.
    pub(crate) fn is_serving(&self) -> bool {
        self.serving.load(Ordering::Relaxed)
    }

    /// Marks the gateway as draining: NOT_SERVING from the next evaluation on (within
    /// [`POLL_INTERVAL`] for the health service), while calls are still served.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
        self.serving.store(false, Ordering::Relaxed);
    }

    /// Marks the gateway as stopping: NOT_SERVING from now on.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        self.serving.store(false, Ordering::Relaxed);
    }

    /// Re-evaluates readiness now, publishes it ([`Readiness::is_serving`]) and returns it.
    pub(crate) fn evaluate(&self) -> Result<(), NotReady> {
        let ready = self.check();
        self.serving.store(ready.is_ok(), Ordering::Relaxed);
        ready
    }

    /// The pool's level now (for the log line of a change).
    pub(crate) fn pool_level(&self) -> usize {
        self.pool.level()
    }
}

/// The shutdown sequence after a termination signal: when `terminate` fires, report
/// NOT_SERVING at once but keep serving for `drain` (so a load balancer checking health or
/// `/readyz` takes this gateway out of rotation before anything is refused), then cancel
/// `shutdown`, which starts the grace period. A zero `drain` stops at once. Returns when
/// `shutdown` is cancelled, by this or by anyone else.
pub(crate) async fn drain_then_stop(
    readiness: Arc<Readiness>,
    terminate: CancellationToken,
    drain: Duration,
    shutdown: CancellationToken,
) {
    tokio::select! {
        () = shutdown.cancelled() => return,
        () = terminate.cancelled() => {}
    }
    if !drain.is_zero() {
        readiness.drain();
        tracing::info!(
            drain_ms = drain.as_millis(),
            "draining: NOT_SERVING, still serving calls until the drain period ends"
        );
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(drain) => {}
        }
    }
    shutdown.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready_gateway() -> Arc<Readiness> {
        let pool = Arc::new(Pool::new(1024));
        pool.put_test_bytes(&[7u8; 512]).expect("room in the pool");
        Arc::new(Readiness::new(pool, 256))
    }

    #[test]
    fn not_ready_names_the_last_refused_chunk() {
        use crate::domain::ingest::verify::tests::{keys, policy, signed};
        let pool = Arc::new(Pool::new(1024));
        let ingest = Arc::new(Ingest::new(pool.clone(), keys(), policy(), 4));
        let readiness =
            Readiness::new(pool, 256).with_ingest_staleness(ingest.clone(), Duration::ZERO);
        let low = readiness.explain().expect_err("empty pool").to_string();
        assert!(!low.contains("refused"), "nothing refused yet: {low}");
        let ahead = signed(|r| r.timestamp_unix_ms = unix_ms_now() + 300_000);
        let err = ingest.publish(ahead).expect_err("five minutes ahead");
        let reason = readiness.explain().expect_err("still empty").to_string();
        assert!(reason.starts_with("not ready: pool holds 0 bytes"), "{reason}");
        assert!(reason.contains("; the last chunk was refused "), "{reason}");
        assert!(reason.ends_with(&format!(" ms ago ({}): {err}", err.reason())), "{reason}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_reports_not_serving_at_once_and_stops_only_after_its_period() {
        let readiness = ready_gateway();
        assert_eq!(readiness.check(), Ok(()));
        let (terminate, shutdown) = (CancellationToken::new(), CancellationToken::new());
        let sequence = tokio::spawn(drain_then_stop(
            readiness.clone(),
            terminate.clone(),
            Duration::from_secs(5),
            shutdown.clone(),
        ));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(readiness.check(), Ok(()), "nothing happens before the signal");
        terminate.cancel();
        tokio::time::sleep(Duration::from_millis(4_900)).await;
        assert_eq!(readiness.check(), Err(NotReady::Draining));
        assert!(!readiness.is_serving());
        assert!(!shutdown.is_cancelled(), "still serving during the drain");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(shutdown.is_cancelled(), "the grace period starts when the drain ends");
        sequence.await.expect("sequence");
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_drain_stops_at_once_and_leaves_readiness_to_the_shutdown() {
        let readiness = ready_gateway();
        let (terminate, shutdown) = (CancellationToken::new(), CancellationToken::new());
        terminate.cancel();
        drain_then_stop(readiness.clone(), terminate, Duration::ZERO, shutdown.clone()).await;
        assert!(shutdown.is_cancelled());
        assert_eq!(readiness.check(), Ok(()), "not draining: the shutdown itself stops it");
    }

    #[test]
    fn stopping_outranks_draining() {
        let readiness = ready_gateway();
        readiness.drain();
        assert_eq!(readiness.check(), Err(NotReady::Draining));
        readiness.stop();
        assert_eq!(readiness.check(), Err(NotReady::Stopping));
    }
}
