//! The collector's Prometheus series (the contract in docs/metrics.md), and what its
//! `/readyz` means: at least `min_sources` sources healthy, and a gateway that took a chunk
//! within [`PUBLISH_FRESH`] (stored it, had it already, or deferred it because its pool was
//! full: back pressure is a healthy state when nobody draws).
//!
//! Handles per source and per gateway are registered once, from the config, when the
//! collector is built; the pipeline, publishers and runner only bump them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram};

use entropy_health::HealthTest;
use entropy_ops::clock::unix_ms_now;
use entropy_ops::endpoint::Probe;
use entropy_ops::registry::{CODE_NAMES, Family, Kind, Registry};

use crate::counters::SourceCounters;
use crate::provenance::{Mixing, SourceHealth};

/// A gateway answer (stored, already stored, or pool full) older than this makes the
/// collector not ready.
pub const PUBLISH_FRESH: Duration = Duration::from_secs(30);

/// The `test` label values of health failures. A failure while a source is proving itself
/// (its start-up test, or the fresh one after quarantine) is `startup`; later failures name
/// the test.
pub const HEALTH_TESTS: [&str; 5] = ["rct", "apt", "bit_proportion", "block_repetition", "startup"];

/// Every collector series (the docs table is checked against what is exposed).
pub const FAMILIES: &[Family] = &[
    Family::new(
        "entropy_collector_build_info",
        Kind::Gauge,
        &["version"],
        "Always 1; the version label.",
    ),
    Family::new(
        "entropy_collector_source_bytes_total",
        Kind::Counter,
        &["source"],
        "Raw bytes read from each source.",
    ),
    Family::new(
        "entropy_collector_fetch_duration_seconds",
        Kind::Histogram,
        &["source"],
        "Duration of each source read, successful or not.",
    ),
    Family::new(
        "entropy_collector_fetch_errors_total",
        Kind::Counter,
        &["source"],
        "Reads that failed: unreachable, timed out, or an answer failing a sanity check.",
    ),
    Family::new(
        "entropy_collector_health_failures_total",
        Kind::Counter,
        &["source", "test"],
        "Health test failures, by source and test (startup: during a start-up test).",
    ),
    Family::new(
        "entropy_collector_source_up",
        Kind::Gauge,
        &["source"],
        "1 while a source is healthy; 0 while starting, quarantined or unreachable.",
    ),
    Family::new(
        "entropy_collector_mixed_bytes_total",
        Kind::Counter,
        &["mixing"],
        "Bytes out of the mixer, by how they were mixed (none, xor, hkdf).",
    ),
    Family::new(
        "entropy_collector_queue_chunks",
        Kind::Gauge,
        &[],
        "Signed chunks waiting for a gateway.",
    ),
    Family::new(
        "entropy_collector_queue_capacity_chunks",
        Kind::Gauge,
        &[],
        "Most signed chunks that may wait (buffer_chunks).",
    ),
    Family::new(
        "entropy_collector_publish_total",
        Kind::Counter,
        &["gateway", "code"],
        "Publish attempts by gateway and gRPC code (TRANSPORT: no answer from the gateway).",
    ),
    Family::new(
        "entropy_collector_published_bytes_total",
        Kind::Counter,
        &["gateway"],
        "Bytes of chunks a gateway stored (or had stored already).",
    ),
    Family::new(
        "entropy_collector_publish_duration_seconds",
        Kind::Histogram,
        &["gateway"],
        "Duration of each Publish attempt.",
    ),
    Family::new(
        "entropy_collector_last_publish_timestamp_seconds",
        Kind::Gauge,
        &[],
        "Unix time of the last successful publish (0: none yet).",
    ),
];

/// Handles of one source. Its byte, error and health-failure counters are the pipeline's
/// ([`SourceCounters`]), copied in at scrape time; only timings and state are recorded here.
#[derive(Debug)]
pub struct SourceMetrics {
    bytes: Counter,
    fetch: Histogram,
    errors: Counter,
    up: Gauge,
    failures: [Counter; HEALTH_TESTS.len()],
    up_flag: AtomicBool,
    counters: OnceLock<Arc<SourceCounters>>,
}

impl SourceMetrics {
    /// A read (successful or not) that took `elapsed`.
    pub fn fetch_took(&self, elapsed: Duration) {
        self.fetch.record(elapsed.as_secs_f64());
    }

    /// Exposes `counters` (the source's own, kept by the pipeline) from now on.
    pub fn read_from(&self, counters: Arc<SourceCounters>) {
        let _ = self.counters.set(counters);
    }

    /// Copies the source's counters into the series; called before each render.
    fn refresh(&self) {
        let Some(counters) = self.counters.get() else { return };
        let c = counters.snapshot();
        self.bytes.absolute(c.bytes_read);
        self.errors.absolute(c.fetch_errors());
        // HEALTH_TESTS lists the tests in HealthTest::ALL order, then "startup".
        for (counter, n) in self.failures.iter().zip(c.failed_healthy) {
            counter.absolute(n);
        }
        self.failures[HealthTest::ALL.len()].absolute(c.failed_proving.iter().sum());
    }

    /// The source's state after a read.
    pub fn state(&self, health: SourceHealth) {
        let up = health == SourceHealth::Healthy;
        self.up.set(if up { 1.0 } else { 0.0 });
        self.up_flag.store(up, Ordering::Relaxed);
    }
}

/// Handles of the publishes to one gateway (named apart from the gateway's own `GatewayMetrics`).
#[derive(Debug)]
pub struct PublishMetrics {
    registry: Arc<CollectorMetrics>,
    label: String,
    codes: [Counter; CODE_NAMES.len()],
    transport: Counter,
    bytes: Counter,
    duration: Histogram,
    resealed: Counter,
}

impl PublishMetrics {
    /// One chunk sealed again with a fresh timestamp before a retry (see `publisher`).
    pub fn resealed(&self) {
        self.resealed.increment(1);
    }

    /// One Publish attempt of `bytes` that took `elapsed` and ended with `code`
    /// (`None`: a transport failure, no answer from the gateway).
    pub fn attempt(&self, elapsed: Duration, code: Option<tonic::Code>, bytes: usize) {
        self.duration.record(elapsed.as_secs_f64());
        match code {
            None => self.transport.increment(1),
            Some(code) => {
                self.codes[(code as usize).min(CODE_NAMES.len() - 1)].increment(1);
                if matches!(code, tonic::Code::Ok | tonic::Code::AlreadyExists) {
                    self.bytes.increment(bytes as u64);
                    self.registry.published_now();
                }
                if matches!(
                    code,
                    tonic::Code::Ok | tonic::Code::AlreadyExists | tonic::Code::ResourceExhausted
                ) {
                    self.registry.taken_now();
                }
            }
        }
    }

    /// The gateway label (its endpoint as configured).
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// Every handle of one collector.
#[derive(Debug)]
pub struct CollectorMetrics {
    registry: Registry,
    min_sources: usize,
    sources: HashMap<String, Arc<SourceMetrics>>,
    mixed: [Counter; Mixing::ALL.len()],
    queue: Gauge,
    last_publish: Gauge,
    last_publish_unix_ms: AtomicI64,
    /// Unix ms of the last answer that took or deferred a chunk (readiness).
    last_taken_unix_ms: AtomicI64,
}

impl CollectorMetrics {
    /// Registers the series of `sources` (names as configured), ready when `min_sources` of
    /// them are healthy, with a queue of `queue_capacity` chunks.
    pub fn new(sources: &[&str], min_sources: usize, queue_capacity: usize) -> Arc<Self> {
        let r = Registry::new(FAMILIES);
        r.gauge("entropy_collector_build_info", &[("version", env!("CARGO_PKG_VERSION"))]).set(1.0);
        r.gauge("entropy_collector_queue_capacity_chunks", &[]).set(queue_capacity as f64);
        let sources = sources
            .iter()
            .map(|name| {
                let l = [("source", *name)];
                let m = SourceMetrics {
                    bytes: r.counter("entropy_collector_source_bytes_total", &l),
                    fetch: r.histogram("entropy_collector_fetch_duration_seconds", &l),
                    errors: r.counter("entropy_collector_fetch_errors_total", &l),
                    up: r.gauge("entropy_collector_source_up", &l),
                    failures: HEALTH_TESTS.map(|t| {
                        r.counter(
                            "entropy_collector_health_failures_total",
                            &[("source", name), ("test", t)],
                        )
                    }),
                    up_flag: AtomicBool::new(false),
                    counters: OnceLock::new(),
                };
                ((*name).to_owned(), Arc::new(m))
            })
            .collect();
        Arc::new(Self {
            min_sources,
            sources,
            mixed: Mixing::ALL.map(|m| {
                r.counter("entropy_collector_mixed_bytes_total", &[("mixing", m.label())])
            }),
            queue: r.gauge("entropy_collector_queue_chunks", &[]),
            last_publish: r.gauge("entropy_collector_last_publish_timestamp_seconds", &[]),
            last_publish_unix_ms: AtomicI64::new(0),
            last_taken_unix_ms: AtomicI64::new(0),
            registry: r,
        })
    }

    /// The registry (to render, or to run upkeep).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The handles of the source named `name`, if it was configured.
    pub fn source(&self, name: &str) -> Option<Arc<SourceMetrics>> {
        self.sources.get(name).cloned()
    }

    /// The handles of the gateway labelled `endpoint`.
    pub fn gateway(self: &Arc<Self>, endpoint: &str) -> PublishMetrics {
        let r = &self.registry;
        PublishMetrics {
            registry: self.clone(),
            label: endpoint.to_owned(),
            codes: CODE_NAMES.map(|c| {
                r.counter("entropy_collector_publish_total", &[("gateway", endpoint), ("code", c)])
            }),
            transport: r.counter(
                "entropy_collector_publish_total",
                &[("gateway", endpoint), ("code", "TRANSPORT")],
            ),
            bytes: r.counter("entropy_collector_published_bytes_total", &[("gateway", endpoint)]),
            duration: r
                .histogram("entropy_collector_publish_duration_seconds", &[("gateway", endpoint)]),
            resealed: r
                .counter("entropy_collector_chunks_resealed_total", &[("gateway", endpoint)]),
        }
    }

    /// Counts `bytes` out of the mixer under `mixing`.
    pub fn mixed(&self, mixing: Mixing, bytes: usize) {
        self.mixed[mixing.index()].increment(bytes as u64);
    }

    /// Sets the number of chunks waiting.
    pub fn queued(&self, chunks: usize) {
        self.queue.set(chunks as f64);
    }

    fn published_now(&self) {
        let ms = unix_ms_now();
        self.last_publish_unix_ms.fetch_max(ms, Ordering::Relaxed);
        self.last_publish.set(self.last_publish_unix_ms.load(Ordering::Relaxed) as f64 / 1000.0);
    }

    fn taken_now(&self) {
        self.last_taken_unix_ms.fetch_max(unix_ms_now(), Ordering::Relaxed);
    }

    /// `Ok` when at least `min_sources` sources are healthy and a gateway took (or deferred)
    /// a chunk within [`PUBLISH_FRESH`]; otherwise why not.
    pub fn ready(&self) -> Result<(), NotReady> {
        let healthy = self.sources.values().filter(|s| s.up_flag.load(Ordering::Relaxed)).count();
        if healthy < self.min_sources {
            return Err(NotReady::TooFewSources { healthy, min_sources: self.min_sources });
        }
        let last = self.last_taken_unix_ms.load(Ordering::Relaxed);
        if last == 0 {
            return Err(NotReady::NothingPublished);
        }
        let age_ms = unix_ms_now().saturating_sub(last);
        if u128::try_from(age_ms).unwrap_or(0) > PUBLISH_FRESH.as_millis() {
            return Err(NotReady::PublishStale { age_ms });
        }
        Ok(())
    }
}

/// Why the collector is not ready; `/readyz` answers 503 with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    /// Fewer sources are healthy than the config's `min_sources`.
    #[error("not ready: {healthy} healthy sources, min_sources is {min_sources}")]
    TooFewSources {
        /// Sources healthy after their last read.
        healthy: usize,
        /// The config's `min_sources`.
        min_sources: usize,
    },
    /// No gateway has taken or deferred a chunk since start.
    #[error("not ready: no chunk published yet")]
    NothingPublished,
    /// The last chunk a gateway took or deferred is older than [`PUBLISH_FRESH`].
    #[error(
        "not ready: no gateway took or deferred a chunk for {age_ms} ms (limit {} ms)",
        PUBLISH_FRESH.as_millis()
    )]
    PublishStale {
        /// Milliseconds since that chunk.
        age_ms: i64,
    },
}

impl Probe for CollectorMetrics {
    fn render(&self) -> String {
        for source in self.sources.values() {
            source.refresh();
        }
        self.registry.render()
    }

    fn not_ready(&self) -> Option<String> {
        CollectorMetrics::ready(self).err().map(|reason| reason.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use entropy_testkit::exposition::Exposition;

    #[test]
    fn readiness_needs_healthy_sources_and_a_recent_publish() {
        let m = CollectorMetrics::new(&["a", "b"], 2, 4);
        assert_eq!(m.ready(), Err(NotReady::TooFewSources { healthy: 0, min_sources: 2 }));
        m.source("a").expect("a").state(SourceHealth::Healthy);
        m.source("b").expect("b").state(SourceHealth::Healthy);
        assert_eq!(m.ready(), Err(NotReady::NothingPublished));
        let g = m.gateway("http://gw:50052");
        g.attempt(Duration::from_millis(3), None, 10);
        assert!(m.ready().is_err(), "a transport failure is not a publish");
        g.attempt(Duration::from_millis(3), Some(tonic::Code::Unauthenticated), 10);
        assert!(m.ready().is_err(), "a refused chunk is not a publish");
        g.attempt(Duration::from_millis(3), Some(tonic::Code::ResourceExhausted), 10);
        assert_eq!(m.ready(), Ok(()), "a full gateway pool is back pressure, not a fault");
        let e = Exposition::parse(&m.registry().render()).expect("parses");
        assert_eq!(e.sum("entropy_collector_last_publish_timestamp_seconds", &[]), 0.0);
        g.attempt(Duration::from_millis(3), Some(tonic::Code::Ok), 10);
        assert_eq!(m.ready(), Ok(()));
        m.source("b").expect("b").state(SourceHealth::Quarantined);
        assert_eq!(m.ready(), Err(NotReady::TooFewSources { healthy: 1, min_sources: 2 }));

        let e = Exposition::parse(&m.registry().render()).expect("parses");
        let gw = ("gateway", "http://gw:50052");
        assert_eq!(e.sum("entropy_collector_publish_total", &[gw, ("code", "TRANSPORT")]), 1.0);
        assert_eq!(e.sum("entropy_collector_publish_total", &[gw, ("code", "OK")]), 1.0);
        assert_eq!(e.sum("entropy_collector_published_bytes_total", &[gw]), 10.0);
        assert_eq!(e.sum("entropy_collector_source_up", &[("source", "b")]), 0.0);
    }
}
