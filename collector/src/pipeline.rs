//! One round of collection: read every source, health-test, mix, sign.
//!
//! Every round reads `chunk_bytes` from each source in parallel (each read bounded by a
//! timeout), runs the source's health tests on what it returned, and mixes the outputs of the
//! sources that are healthy. If fewer than `min_sources` are, the round publishes nothing and
//! says why: there is no silent single-source fallback. Rounds are paced by the slowest source
//! (XOR needs equal lengths from each).
//!
//! A source that cannot be reached is left alone for a growing pause (1 s doubling to 30 s) so
//! it does not stall every round, and must pass a fresh start-up test when it comes back.

use std::sync::Arc;
use std::time::Duration;

use entropy_health::{HealthMonitor, HealthTest, State, Verdict};
use entropy_proto::v1::PublishRequest;
use tokio::time::Instant;

use crate::counters::SourceCounters;
use crate::metrics::{CollectorMetrics, SourceMetrics};
use crate::mixing::{self, Input, Scheme};
use crate::provenance::{SourceHealth, SourceReport};
use crate::signer::ChunkSigner;
use crate::source::{SanityCheck, Source, SourceError};

/// Longest pause before an unreachable source is tried again.
pub const MAX_UNREACHABLE_PAUSE: Duration = Duration::from_secs(30);

/// A source with its health state and counters.
pub struct SourceSlot {
    source: Box<dyn Source>,
    monitor: HealthMonitor,
    min_entropy: f64,
    unreachable_since: Option<Instant>,
    next_try: Instant,
    pause: Duration,
    /// Its last output was withheld by a start-up or recovery test that it passed so far.
    proving: bool,
    counters: Arc<SourceCounters>,
    metrics: Option<Arc<SourceMetrics>>,
}

/// Counters of one source since start, by test and check label (a view of its
/// [`SourceCounters`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Bytes read from it.
    pub bytes_read: u64,
    /// Bytes of it that went into published chunks.
    pub bytes_used: u64,
    /// Health test failures, by test label.
    pub health_failures: Vec<(&'static str, u64)>,
    /// Sanity check failures (HTML, wrong length, constant...).
    pub sanity_failures: u64,
    /// Reads that found it unreachable.
    pub unreachable: u64,
    /// Returns to healthy after quarantine.
    pub recoveries: u64,
}

impl SourceSlot {
    /// Wraps `source`, claiming `min_entropy` bits per byte, with tests at `α = 2^-alpha_log2`.
    pub fn new(source: Box<dyn Source>, min_entropy: f64, alpha_log2: u32) -> Self {
        Self {
            source,
            monitor: HealthMonitor::new(min_entropy, alpha_log2),
            min_entropy,
            unreachable_since: None,
            next_try: Instant::now(),
            pause: Duration::from_secs(1),
            proving: false,
            counters: Arc::default(),
            metrics: None,
        }
    }

    /// The source's name.
    pub fn name(&self) -> &str {
        self.source.name()
    }

    /// Its health as reported in chunks.
    pub fn health(&self) -> SourceHealth {
        if self.unreachable_since.is_some() {
            SourceHealth::Unreachable
        } else {
            self.monitor.state().into()
        }
    }

    /// Its counters.
    pub fn stats(&self) -> SourceStats {
        let c = self.counters.snapshot();
        let tests = HealthTest::ALL
            .iter()
            .map(|t| (t.label(), c.failed_healthy[*t as usize] + c.failed_proving[*t as usize]));
        let checks = SanityCheck::LABELS.iter().zip(c.insane).map(|(l, n)| (*l, n));
        SourceStats {
            bytes_read: c.bytes_read,
            bytes_used: c.bytes_used,
            health_failures: tests.chain(checks).filter(|(_, n)| *n > 0).collect(),
            sanity_failures: c.insane.iter().sum(),
            unreachable: c.unreachable,
            recoveries: self.monitor.recoveries(),
        }
    }

    fn report(&self, contributed: bool) -> SourceReport {
        SourceReport {
            name: self.source.name().to_owned(),
            kind: self.source.kind(),
            health: self.health(),
            contributed,
        }
    }

    /// Reads and tests one batch; returns it when it may be mixed.
    async fn read_tested(&mut self, n: usize, timeout: Duration) -> Option<Vec<u8>> {
        let out = self.read_tested_inner(n, timeout).await;
        if let Some(m) = &self.metrics {
            m.state(self.health());
        }
        out
    }

    async fn read_tested_inner(&mut self, n: usize, timeout: Duration) -> Option<Vec<u8>> {
        let now = Instant::now();
        self.proving = false;
        if now < self.next_try {
            return None;
        }
        let started = std::time::Instant::now();
        let result = match tokio::time::timeout(timeout, self.source.read(n)).await {
            Ok(r) => r,
            Err(_) => Err(SourceError::Unreachable {
                name: self.name().to_owned(),
                message: format!("no answer within {timeout:?}"),
            }),
        };
        if let Some(m) = &self.metrics {
            m.fetch_took(started.elapsed());
        }
        // A failure before the source has proven itself is a start-up test failure.
        let proving = self.monitor.state() != State::Healthy;
        match result {
            Ok(bytes) => {
                if self.unreachable_since.take().is_some() {
                    tracing::info!(
                        source = self.name(),
                        "source answers again; re-running its start-up test"
                    );
                }
                self.pause = Duration::from_secs(1);
                self.counters.read(bytes.len());
                match self.monitor.check(&bytes) {
                    Verdict::Usable => Some(bytes),
                    Verdict::Starting | Verdict::Recovering => {
                        self.proving = true;
                        None
                    }
                    Verdict::Failed(test) => {
                        self.counters.health_failed(test, proving);
                        tracing::warn!(
                            source = self.name(),
                            test = test.label(),
                            "health test failed; source quarantined"
                        );
                        None
                    }
                }
            }
            Err(SourceError::Insane { check, .. }) => {
                self.counters.insane(&check);
                self.monitor.quarantine();
                tracing::warn!(
                    source = self.name(),
                    check = check.label(),
                    "sanity check failed ({check}); source quarantined"
                );
                None
            }
            Err(e @ SourceError::Unreachable { .. }) => {
                self.counters.unreachable();
                if self.unreachable_since.is_none() {
                    tracing::warn!(source = self.name(), "source unreachable: {e}");
                    self.unreachable_since = Some(now);
                    // Whatever comes back must prove itself again.
                    self.monitor.quarantine();
                }
                self.next_try = Instant::now() + self.pause;
                self.pause = (self.pause * 2).min(MAX_UNREACHABLE_PAUSE);
                None
            }
        }
    }
}

/// What a round produced.
#[derive(Debug)]
pub enum Round {
    /// A signed chunk, ready to publish.
    Chunk(PublishRequest),
    /// Too few healthy sources: nothing was published.
    TooFewSources {
        /// Sources whose output passed this round.
        healthy: usize,
        /// The `min_sources` policy.
        needed: usize,
        /// Sources whose output was withheld by a start-up (or recovery) test they are
        /// passing: a normal wait, not a fault.
        starting: usize,
    },
}

/// How a round reads and combines its sources (the config's `mixing`, `min_sources`,
/// `chunk_bytes` and `read_timeout_ms`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundPolicy {
    /// How healthy sources are combined.
    pub scheme: Scheme,
    /// Fewest healthy sources a chunk needs.
    pub min_sources: usize,
    /// Bytes read from each source per round (and so per chunk).
    pub chunk_bytes: usize,
    /// Longest one source read may take.
    pub read_timeout: Duration,
}

/// Sources, policy and signer: everything one round needs.
pub struct Pipeline {
    slots: Vec<SourceSlot>,
    policy: RoundPolicy,
    signer: ChunkSigner,
    metrics: Option<Arc<CollectorMetrics>>,
}

impl Pipeline {
    /// A pipeline over `slots` (at least one), run by `policy`, signing with `signer`.
    pub fn new(slots: Vec<SourceSlot>, policy: RoundPolicy, signer: ChunkSigner) -> Self {
        Self { slots, policy, signer, metrics: None }
    }

    /// Counts reads, health failures, source states and mixer output into `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<CollectorMetrics>) -> Self {
        for slot in &mut self.slots {
            slot.metrics = metrics.source(slot.name());
            if let Some(m) = &slot.metrics {
                m.read_from(slot.counters.clone());
            }
        }
        self.metrics = Some(metrics);
        self
    }

    /// Runs one round.
    pub async fn round(&mut self) -> Round {
        let (n, timeout) = (self.policy.chunk_bytes, self.policy.read_timeout);
        let outputs: Vec<Option<Vec<u8>>> = futures_util::future::join_all(
            self.slots.iter_mut().map(|s| s.read_tested(n, timeout)),
        )
        .await;
        let healthy = outputs.iter().filter(|o| o.is_some()).count();
        let min_sources = self.policy.min_sources;
        if healthy < min_sources || healthy == 0 {
            let starting = self.slots.iter().filter(|s| s.proving).count();
            return Round::TooFewSources { healthy, needed: min_sources.max(1), starting };
        }
        let inputs: Vec<Input<'_>> = outputs
            .iter()
            .zip(&self.slots)
            .filter_map(|(o, s)| {
                o.as_deref().map(|bytes| Input { bytes, min_entropy: s.min_entropy })
            })
            .collect();
        let (data, mixing) = mixing::mix(self.policy.scheme, &inputs);
        if let Some(m) = &self.metrics {
            m.mixed(mixing, data.len());
        }
        let reports = outputs.iter().zip(&self.slots).map(|(o, s)| s.report(o.is_some())).collect();
        for (o, s) in outputs.iter().zip(self.slots.iter_mut()) {
            if let Some(bytes) = o {
                s.counters.used(bytes.len());
            }
        }
        Round::Chunk(self.signer.prepare(data, mixing, reports))
    }

    /// Each source's name, health and counters.
    pub fn sources(&self) -> Vec<(String, SourceHealth, SourceStats)> {
        self.slots.iter().map(|s| (s.name().to_owned(), s.health(), s.stats())).collect()
    }
}
