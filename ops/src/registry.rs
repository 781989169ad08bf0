//! A Prometheus registry per instance, and the conventions every exported series shares
//! (latency buckets, gRPC code names).
//!
//! Why a registry per instance instead of the `metrics` crate's global recorder: tests run
//! many gateways and collectors in one process, and each must count only its own traffic. So
//! each instance owns a [`Registry`], registers its handles once at start, and the hot path
//! only touches atomics (`Counter::increment`, `Histogram::record`). Nothing here is installed
//! globally.

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use tokio_util::sync::CancellationToken;

/// Latency buckets in seconds, 100 µs to 30 s, for every histogram we export.
pub const LATENCY_BUCKETS_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// gRPC status code names (the `code` labels), indexed by the code's number.
pub const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// How often histogram samples are folded into their buckets when nobody scrapes.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A metric type, as in the exposition's `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Bucketed observations.
    Histogram,
}

impl Kind {
    /// The name used in `# TYPE` lines and the docs table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// One series family: its name, type, label names and help text.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// Full name, with unit and `_total` suffix where they apply.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Its label names.
    pub labels: &'static [&'static str],
    /// The `# HELP` text.
    pub help: &'static str,
}

impl Family {
    /// A family (for `const` tables of series).
    pub const fn new(
        name: &'static str,
        kind: Kind,
        labels: &'static [&'static str],
        help: &'static str,
    ) -> Self {
        Self { name, kind, labels, help }
    }
}

/// A recorder of its own, with every family described up front.
#[derive(Debug)]
pub struct Registry {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

impl Registry {
    /// A registry describing `families`; histograms use [`LATENCY_BUCKETS_SECONDS`].
    pub fn new(families: &[Family]) -> Self {
        let builder = PrometheusBuilder::new();
        // set_buckets fails only for an empty list.
        let builder = match builder.set_buckets(LATENCY_BUCKETS_SECONDS) {
            Ok(b) => b,
            Err(_) => PrometheusBuilder::new(),
        };
        let recorder = builder.build_recorder();
        for f in families {
            let name = KeyName::from_const_str(f.name);
            match f.kind {
                Kind::Counter => recorder.describe_counter(name, None, f.help.into()),
                Kind::Gauge => recorder.describe_gauge(name, None, f.help.into()),
                Kind::Histogram => recorder.describe_histogram(name, None, f.help.into()),
            }
        }
        let handle = recorder.handle();
        Self { recorder, handle }
    }

    /// The counter `name{labels}`, created on first use.
    pub fn counter(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Counter {
        self.recorder.register_counter(&key(name, labels), &METADATA)
    }

    /// The gauge `name{labels}`, created on first use.
    pub fn gauge(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Gauge {
        self.recorder.register_gauge(&key(name, labels), &METADATA)
    }

    /// The histogram `name{labels}`, created on first use.
    pub fn histogram(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Histogram {
        self.recorder.register_histogram(&key(name, labels), &METADATA)
    }

    /// The text exposition of every series.
    pub fn render(&self) -> String {
        self.handle.render()
    }

    /// Folds pending histogram samples into buckets every [`UPKEEP_INTERVAL`] until
    /// `shutdown`, so memory stays bounded when nobody scrapes.
    pub fn spawn_upkeep(&self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        let handle = self.handle.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = tick.tick() => handle.run_upkeep(),
                }
            }
        })
    }
}

fn key(name: &'static str, labels: &[(&'static str, &str)]) -> Key {
    let labels: Vec<Label> = labels.iter().map(|(k, v)| Label::new(*k, v.to_string())).collect();
    Key::from_parts(name, labels)
}

#[cfg(test)]
mod tests {
    use entropy_testkit::exposition::Exposition;

    use super::*;

    #[test]
    fn a_registry_renders_real_histograms_and_parses_back() {
        let families = [
            Family { name: "t_total", kind: Kind::Counter, labels: &["a"], help: "c" },
            Family { name: "t_seconds", kind: Kind::Histogram, labels: &[], help: "h" },
        ];
        let r = Registry::new(&families);
        r.counter("t_total", &[("a", "x")]).increment(3);
        r.histogram("t_seconds", &[]).record(0.002);
        let e = Exposition::parse(&r.render()).expect("parses");
        assert_eq!(e.types.get("t_seconds").map(String::as_str), Some("histogram"));
        assert_eq!(e.sum("t_total", &[("a", "x")]), 3.0);
        assert_eq!(e.sum("t_seconds_count", &[]), 1.0);
        assert_eq!(e.sum("t_seconds_bucket", &[("le", "0.0025")]), 1.0);
        assert_eq!(e.sum("t_seconds_bucket", &[("le", "0.001")]), 0.0);
        assert_eq!(e.family_of("t_seconds_bucket"), "t_seconds");
        assert_eq!(e.label_names("t_total").into_iter().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn two_registries_count_apart() {
        let fam = [Family { name: "u_total", kind: Kind::Counter, labels: &[], help: "c" }];
        let (a, b) = (Registry::new(&fam), Registry::new(&fam));
        a.counter("u_total", &[]).increment(1);
        let parsed = Exposition::parse(&b.render()).expect("parses");
        assert_eq!(parsed.sum("u_total", &[]), 0.0);
    }
}
