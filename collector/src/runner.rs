//! The collector's main loop: rounds in, prepared chunks queued, publishers sealing and
//! delivering them.
//!
//! Buffer policy: signed chunks wait in a bounded queue (`buffer_chunks`). When it is full, the
//! loop stops running rounds, so sources are read only as fast as gateways take chunks:
//! nothing signed is ever dropped for lack of room, and a slow gateway slows the appliances
//! down rather than the other way round.
//!
//! Several gateways: one publisher task per gateway takes chunks from the shared queue. A chunk
//! taken by a task belongs to that gateway for good: after an unknown outcome it is resent to
//! the same gateway only, so it can never be stored by two gateways.
//!
//! Shutdown: rounds stop at once; the publishers keep delivering what is already signed until
//! the queue is empty or the grace period ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use entropy_proto::v1::PublishRequest;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use crate::collector::Collector;
use crate::metrics::CollectorMetrics;
use crate::pipeline::Round;
use crate::publisher::{Delivery, Publisher};

/// Counters of a collector run, readable while it runs.
#[derive(Debug, Default)]
pub struct RunStats {
    /// Chunks signed.
    pub signed: AtomicU64,
    /// Chunks a gateway stored.
    pub stored: AtomicU64,
    /// Chunks a gateway had already stored (a resend after an unknown outcome).
    pub already_stored: AtomicU64,
    /// Chunks a gateway refused for good.
    pub refused: AtomicU64,
    /// Signed chunks not delivered when the grace period ended (set when the run ends).
    pub abandoned: AtomicU64,
    /// Rounds that published nothing for lack of healthy sources.
    pub rounds_skipped: AtomicU64,
}

impl RunStats {
    /// Chunks delivered (stored now or before).
    pub fn delivered(&self) -> u64 {
        self.stored.load(Ordering::Relaxed) + self.already_stored.load(Ordering::Relaxed)
    }
}

/// Runs `collector`'s rounds and publishes until `shutdown`, then flushes for at most its
/// grace period. Returns its counters.
pub(crate) async fn run(collector: Collector, shutdown: CancellationToken) -> Arc<RunStats> {
    let Collector { mut pipeline, publishers, metrics, stats, buffer_chunks, grace, .. } =
        collector;
    let capacity = buffer_chunks.max(1);
    let (tx, rx) = mpsc::channel::<PublishRequest>(capacity);
    let rx = Arc::new(Mutex::new(rx));
    // Cancelled when the grace period after shutdown is over: publishers give up then.
    let abandon = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    for publisher in publishers {
        tasks.spawn(publish_loop(
            publisher,
            rx.clone(),
            stats.clone(),
            metrics.clone(),
            abandon.clone(),
        ));
    }

    let mut last_skip_log: Option<tokio::time::Instant> = None;
    // A chunk signed but not yet queued when shutdown came: it is delivered in the flush.
    let mut pending: Option<PublishRequest> = None;
    loop {
        let round = tokio::select! {
            () = shutdown.cancelled() => break,
            r = pipeline.round() => r,
        };
        match round {
            Round::Chunk(chunk) => {
                stats.signed.fetch_add(1, Ordering::Relaxed);
                // Waits while the buffer is full (backpressure), but not past shutdown: a full
                // queue behind a full or absent gateway must not keep the process alive.
                tokio::select! {
                    slot = tx.reserve() => match slot {
                        Ok(slot) => {
                            slot.send(chunk);
                            metrics.queued(capacity - tx.capacity());
                        }
                        Err(_) => break,
                    },
                    () = shutdown.cancelled() => {
                        pending = Some(chunk);
                        break;
                    }
                }
            }
            Round::TooFewSources { healthy, needed, starting } => {
                stats.rounds_skipped.fetch_add(1, Ordering::Relaxed);
                let now = tokio::time::Instant::now();
                if last_skip_log.is_none_or(|t| now.duration_since(t) > Duration::from_secs(10)) {
                    if healthy + starting >= needed {
                        tracing::info!(healthy, starting, "waiting for sources' start-up tests");
                    } else {
                        tracing::warn!(
                            healthy,
                            needed,
                            "publishing nothing: fewer healthy sources than min_sources"
                        );
                    }
                    last_skip_log = Some(now);
                }
                // Do not spin while every source is paused.
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
        }
    }
    tracing::info!("collector stopping: delivering chunks already signed");
    let flush = async {
        if let Some(chunk) = pending
            && let Ok(slot) = tx.reserve().await
        {
            slot.send(chunk);
        }
        drop(tx);
        while tasks.join_next().await.is_some() {}
    };
    if tokio::time::timeout(grace, flush).await.is_err() {
        abandon.cancel();
        while tasks.join_next().await.is_some() {}
    }
    // Whatever was signed and neither delivered nor refused was abandoned: still queued,
    // pending, or being retried when the grace period ended.
    let settled = stats.delivered() + stats.refused.load(Ordering::Relaxed);
    stats
        .abandoned
        .store(stats.signed.load(Ordering::Relaxed).saturating_sub(settled), Ordering::Relaxed);
    stats
}

async fn publish_loop(
    mut publisher: Publisher,
    rx: Arc<Mutex<mpsc::Receiver<PublishRequest>>>,
    stats: Arc<RunStats>,
    metrics: Arc<CollectorMetrics>,
    abandon: CancellationToken,
) {
    loop {
        let chunk = {
            let mut rx = rx.lock().await;
            let chunk = tokio::select! {
                () = abandon.cancelled() => return,
                c = rx.recv() => c,
            };
            metrics.queued(rx.len());
            chunk
        };
        let Some(mut chunk) = chunk else { return };
        match publisher.deliver(&mut chunk, &abandon).await {
            Delivery::Stored => {
                stats.stored.fetch_add(1, Ordering::Relaxed);
            }
            Delivery::AlreadyStored => {
                stats.already_stored.fetch_add(1, Ordering::Relaxed);
            }
            Delivery::Refused(status) => {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    sequence = chunk.sequence,
                    code = ?status.code(),
                    "gateway refused chunk: {}",
                    status.message()
                );
            }
            Delivery::Abandoned => return,
        }
    }
}
