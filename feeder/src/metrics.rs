//! The feeder's Prometheus series (the names of feeder-contract.md) and what `/readyz` means:
//! health-tested bytes are buffered, or the current stream has passed its start-up test.
//!
//! One recorder per process, installed as the `metrics` crate's global recorder by `main`:
//! the EGD server (egd.rs) counts through the `metrics` macros, and a feeder is one instance
//! per process (unlike the gateway, whose tests run many in one process). The core's handles
//! are registered once on a recorder given to [`Metrics::new`], so a test can give each
//! supply a recorder of its own and read what it counted.

use std::sync::Arc;

use metrics::{Counter, Gauge, Key, KeyName, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

use entropy_health::HealthTest;
use entropy_ops::endpoint::Probe;
use entropy_ops::registry::{Family, Kind};

use crate::supply::Supply;

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// Why bytes received were never handed out (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discard {
    /// A stream's start-up test (its first bytes, tested and thrown away).
    Startup,
    /// A health-test failure: the failing batch and the stream's bytes still buffered.
    Health,
    /// Buffered when the feeder stopped.
    Shutdown,
}

/// Every feeder series, the core's and the EGD server's.
pub const FAMILIES: &[Family] = &[
    Family::new(
        "entropy_feeder_received_bytes_total",
        Kind::Counter,
        &[],
        "Bytes received from the gateway, before health tests.",
    ),
    Family::new(
        "entropy_feeder_discarded_bytes_total",
        Kind::Counter,
        &["reason"],
        "Bytes received but never handed out: startup (start-up tests), health (a failed \
         test: the batch and the stream's buffered bytes), shutdown (buffered at exit).",
    ),
    Family::new(
        "entropy_feeder_health_failures_total",
        Kind::Counter,
        &["test"],
        "Health-test failures, by test; each drops the stream.",
    ),
    Family::new(
        "entropy_feeder_stream_reconnects_total",
        Kind::Counter,
        &[],
        "StreamRandom streams opened after the first (outages, health failures).",
    ),
    Family::new(
        "entropy_feeder_buffered_bytes",
        Kind::Gauge,
        &[],
        "Health-tested bytes ready to hand out.",
    ),
    Family::new(
        "entropy_feeder_kernel_asks_total",
        Kind::Counter,
        &[],
        "Times the kernel asked for entropy (/dev/random writable-ready).",
    ),
    Family::new(
        "entropy_feeder_kernel_fed_bytes_total",
        Kind::Counter,
        &[],
        "Bytes given to the kernel with RNDADDENTROPY.",
    ),
    Family::new(
        "entropy_feeder_kernel_credited_bits_total",
        Kind::Counter,
        &[],
        "Entropy credited to the kernel, bits.",
    ),
    Family::new("entropy_feeder_up", Kind::Gauge, &[], "Always 1 while the feeder runs."),
    Family::new(
        "entropy_feeder_egd_served_bytes_total",
        Kind::Counter,
        &[],
        "Bytes served to EGD clients.",
    ),
    Family::new("entropy_feeder_egd_clients", Kind::Gauge, &[], "EGD clients connected."),
    Family::new(
        "entropy_feeder_egd_refused_total",
        Kind::Counter,
        &["reason"],
        "EGD connections or commands refused, by reason.",
    ),
];

/// The core's metric handles, registered once.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// `entropy_feeder_received_bytes_total`.
    pub received: Counter,
    discarded: [Counter; 3],
    health_failures: [Counter; 4],
    /// `entropy_feeder_stream_reconnects_total`.
    pub reconnects: Counter,
    /// `entropy_feeder_buffered_bytes`.
    pub buffered: Gauge,
    /// `entropy_feeder_kernel_asks_total`.
    pub kernel_asks: Counter,
    /// `entropy_feeder_kernel_fed_bytes_total`.
    pub kernel_fed: Counter,
    /// `entropy_feeder_kernel_credited_bits_total`.
    pub kernel_credited: Counter,
    /// `entropy_feeder_up`.
    pub up: Gauge,
}

impl Metrics {
    /// Handles on `recorder`, every labelled series created at zero so they show from the start.
    pub fn new(recorder: &dyn Recorder) -> Self {
        let counter = |name: &'static str, labels: &[(&'static str, &'static str)]| {
            recorder.register_counter(&key(name, labels), &METADATA)
        };
        let gauge = |name: &'static str| recorder.register_gauge(&key(name, &[]), &METADATA);
        let discarded =
            |reason| counter("entropy_feeder_discarded_bytes_total", &[("reason", reason)]);
        let failures = HealthTest::ALL
            .map(|t| counter("entropy_feeder_health_failures_total", &[("test", t.label())]));
        let metrics = Self {
            received: counter("entropy_feeder_received_bytes_total", &[]),
            discarded: [discarded("startup"), discarded("health"), discarded("shutdown")],
            health_failures: failures,
            reconnects: counter("entropy_feeder_stream_reconnects_total", &[]),
            buffered: gauge("entropy_feeder_buffered_bytes"),
            kernel_asks: counter("entropy_feeder_kernel_asks_total", &[]),
            kernel_fed: counter("entropy_feeder_kernel_fed_bytes_total", &[]),
            kernel_credited: counter("entropy_feeder_kernel_credited_bits_total", &[]),
            up: gauge("entropy_feeder_up"),
        };
        for c in metrics.discarded.iter().chain(&metrics.health_failures) {
            c.absolute(0);
        }
        metrics
    }

    /// Handles that count nowhere (tests that do not read them).
    pub fn detached() -> Self {
        Self::new(&metrics::NoopRecorder)
    }

    /// Counts `bytes` discarded for `reason`.
    pub fn discarded(&self, reason: Discard, bytes: usize) {
        self.discarded[reason as usize].increment(bytes as u64);
    }

    /// Counts a failure of `test`.
    pub fn health_failure(&self, test: HealthTest) {
        self.health_failures[test as usize].increment(1);
    }
}

fn key(name: &'static str, labels: &[(&'static str, &'static str)]) -> Key {
    let labels: Vec<Label> = labels.iter().map(|&(k, v)| Label::new(k, v)).collect();
    Key::from_parts(name, labels)
}

/// A Prometheus recorder describing [`FAMILIES`], and the handle that renders it.
pub fn recorder() -> (PrometheusRecorder, PrometheusHandle) {
    let recorder = PrometheusBuilder::new().build_recorder();
    for f in FAMILIES {
        let name = KeyName::from_const_str(f.name);
        match f.kind {
            Kind::Counter => recorder.describe_counter(name, None, f.help.into()),
            Kind::Gauge => recorder.describe_gauge(name, None, f.help.into()),
            Kind::Histogram => recorder.describe_histogram(name, None, f.help.into()),
        }
    }
    let handle = recorder.handle();
    (recorder, handle)
}

/// Installs `recorder` as the process's global recorder (once; `main` only).
pub fn install(recorder: PrometheusRecorder) -> Result<(), String> {
    metrics::set_global_recorder(recorder).map_err(|e| e.to_string())
}

/// What `/metrics` and `/readyz` show.
pub struct FeederProbe {
    handle: PrometheusHandle,
    supply: Arc<Supply>,
}

impl FeederProbe {
    /// A probe rendering `handle` and asking `supply` whether it is ready.
    pub fn new(handle: PrometheusHandle, supply: Arc<Supply>) -> Self {
        Self { handle, supply }
    }
}

impl Probe for FeederProbe {
    fn render(&self) -> String {
        self.handle.render()
    }

    fn not_ready(&self) -> Option<String> {
        use crate::entropy::Entropy;
        if self.supply.available() > 0 || self.supply.stream_healthy() {
            return None;
        }
        Some("no health-tested bytes: the gateway stream is starting, down or failing".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_metrics_md_lists_exactly_the_feeder_series() {
        let docs = include_str!("../../docs/metrics.md");
        let documented: std::collections::BTreeSet<&str> =
            docs.split('`').filter(|word| word.starts_with("entropy_feeder_")).collect();
        let exposed: std::collections::BTreeSet<&str> = FAMILIES.iter().map(|f| f.name).collect();
        assert_eq!(documented, exposed);
    }

    #[test]
    fn every_contract_name_renders_and_counts() {
        let (recorder, handle) = recorder();
        let m = Metrics::new(&recorder);
        m.up.set(1.0);
        m.discarded(Discard::Health, 10);
        m.health_failure(HealthTest::BlockRepetition);
        let text = handle.render();
        for f in &FAMILIES[..9] {
            assert!(text.contains(f.name), "{} missing from\n{text}", f.name);
        }
        assert!(text.contains("entropy_feeder_discarded_bytes_total{reason=\"health\"} 10"));
        assert!(text.contains("entropy_feeder_discarded_bytes_total{reason=\"startup\"} 0"));
        assert!(text.contains("entropy_feeder_health_failures_total{test=\"block_repetition\"} 1"));
    }
}
