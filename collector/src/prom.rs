//! Prometheus plumbing shared by the collector and the gateway: a per-instance registry, the
//! HTTP endpoint (`/metrics`, `/healthz`, `/readyz`), and a parser of the text exposition for
//! tests and tools.
//!
//! Why a registry per instance instead of the `metrics` crate's global recorder: tests run
//! many gateways and collectors in one process, and each must count only its own traffic. So
//! each instance owns a [`Registry`], registers its handles once at start, and the hot path
//! only touches atomics (`Counter::increment`, `Histogram::record`). Nothing here is installed
//! globally.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use tokio::net::TcpListener;
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

/// What the HTTP endpoint asks of the program it serves.
pub trait Probe: Send + Sync + 'static {
    /// The `/metrics` body (refresh state-mirroring gauges first).
    fn render(&self) -> String;
    /// `Ok` when ready to serve; otherwise a one-line reason for `/readyz`.
    fn ready(&self) -> Result<(), String>;
}

/// Binds the metrics address, naming the config key in the error so a second process on the
/// same machine fails clearly.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr).await.map_err(|e| {
        format!(
            "cannot bind metrics_listen_addr {addr}: {e} (set metrics_listen_addr to a free \
             address, or \"\" to turn the metrics endpoint off)"
        )
    })
}

/// Most connections the metrics and health endpoint holds open; past it new ones are closed.
/// Scrapers and probes open one or two at a time.
pub const MAX_HTTP_CONNECTIONS: usize = 64;
/// How long a connection may take to send a request's headers (slow-loris).
pub const HTTP_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest life of one connection: scrapes take milliseconds; keep-alive may reuse it until
/// then.
pub const HTTP_CONNECTION_MAX_AGE: Duration = Duration::from_secs(60);

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until `shutdown`.
///
/// Bounded for peers that never finish: at most [`MAX_HTTP_CONNECTIONS`] at once (more are
/// closed at accept), each with [`HTTP_HEADER_TIMEOUT`] to send its headers and
/// [`HTTP_CONNECTION_MAX_AGE`] to live; accept errors (out of descriptors) back off and are
/// logged once a second with a count, instead of spinning.
pub async fn serve(
    listener: TcpListener,
    probe: Arc<dyn Probe>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;

    let app = Router::new()
        .route("/metrics", get(metrics_page))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(probe);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_HTTP_CONNECTIONS));
    let connections = tokio_util::task::TaskTracker::new();
    let mut accept_errors = RateLimitedLog::new("metrics endpoint: accept failed; backing off");
    let mut refused = RateLimitedLog::new("metrics endpoint: connection limit reached; closing");
    loop {
        let tcp = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    accept_errors.note(&e.to_string());
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    }
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refused.note("");
            continue; // dropping `tcp` closes it
        };
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let _slot = slot;
            let mut builder = Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(HTTP_HEADER_TIMEOUT);
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::select! {
                _ = connection => {}
                () = tokio::time::sleep(HTTP_CONNECTION_MAX_AGE) => {}
                () = shutdown.cancelled() => {}
            }
        });
    }
    connections.close();
    connections.wait().await;
    Ok(())
}

/// A warning logged at most once a second, with how many like it were not logged.
#[derive(Debug)]
pub struct RateLimitedLog {
    what: &'static str,
    last: Option<std::time::Instant>,
    suppressed: u64,
}

impl RateLimitedLog {
    /// A limiter for warnings saying `what`.
    pub fn new(what: &'static str) -> Self {
        Self { what, last: None, suppressed: 0 }
    }

    /// One more occurrence, with `detail`.
    pub fn note(&mut self, detail: &str) {
        if self.last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
            self.suppressed += 1;
            return;
        }
        tracing::warn!(suppressed = self.suppressed, "{}: {detail}", self.what);
        self.suppressed = 0;
        self.last = Some(std::time::Instant::now());
    }
}

async fn metrics_page(State(probe): State<Arc<dyn Probe>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], probe.render())
}

async fn readyz(State(probe): State<Arc<dyn Probe>>) -> impl IntoResponse {
    match probe.ready() {
        Ok(()) => (StatusCode::OK, "ready\n".to_owned()),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("{reason}\n")),
    }
}

/// One sample line of an exposition.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its name as written (`x_bucket`, `x_sum`, `x_count` for histograms).
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

/// A parsed text exposition: the declared types and every sample.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// Family name to type, from `# TYPE` lines.
    pub types: BTreeMap<String, Kind>,
    /// Every sample, in order.
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// Parses the Prometheus text format (as rendered by the exporter: one sample per line,
    /// label values without escaped quotes). Unknown `# TYPE`s and malformed lines are errors.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or_else(|| format!("bad: {line}"))?;
                let kind = match kind {
                    "counter" => Kind::Counter,
                    "gauge" => Kind::Gauge,
                    "histogram" => Kind::Histogram,
                    other => return Err(format!("unexpected type {other:?} in {line}")),
                };
                out.types.insert(name.to_owned(), kind);
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').ok_or_else(|| format!("bad: {line}"))?;
            let value = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().map_err(|_| format!("bad value in {line}"))?,
            };
            let (name, labels) = match series.split_once('{') {
                None => (series.to_owned(), BTreeMap::new()),
                Some((name, rest)) => {
                    let body = rest.strip_suffix('}').ok_or_else(|| format!("bad: {line}"))?;
                    let mut labels = BTreeMap::new();
                    for pair in body.split("\",").filter(|p| !p.is_empty()) {
                        let (k, v) =
                            pair.split_once("=\"").ok_or_else(|| format!("bad label in {line}"))?;
                        labels.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
                    }
                    (name.to_owned(), labels)
                }
            };
            out.samples.push(Sample { name, labels, value });
        }
        Ok(out)
    }

    /// The family a sample belongs to (`x_bucket` of histogram `x` belongs to `x`).
    pub fn family_of<'a>(&'a self, sample: &'a str) -> &'a str {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = sample.strip_suffix(suffix)
                && self.types.get(base) == Some(&Kind::Histogram)
            {
                return base;
            }
        }
        sample
    }

    /// Label names seen on a family's samples (without a histogram's `le`).
    pub fn label_names(&self, family: &str) -> std::collections::BTreeSet<String> {
        self.samples
            .iter()
            .filter(|s| self.family_of(&s.name) == family)
            .flat_map(|s| s.labels.keys().filter(|k| *k != "le").cloned())
            .collect()
    }

    /// The sum of `name`'s samples whose labels include every pair of `labels`.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v)))
            .map(|s| s.value)
            .sum()
    }
}

/// A docs table row: `| name | type | labels | meaning |`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRow {
    /// Series name.
    pub name: String,
    /// Its type.
    pub kind: String,
    /// Its label names.
    pub labels: std::collections::BTreeSet<String>,
}

/// Checks the table under `heading` in `markdown` against `exposed`, both ways: every row is
/// exposed with its type and label names, and every exposed family whose name starts with
/// `prefix` has a row. The first mismatch, if any.
pub fn check_documented(
    exposed: &Exposition,
    markdown: &str,
    heading: &str,
    prefix: &str,
) -> Result<(), String> {
    let rows = doc_rows(markdown, heading);
    if rows.is_empty() {
        return Err(format!("no table under {heading:?}"));
    }
    for row in &rows {
        let kind = exposed.types.get(&row.name).map(|k| k.as_str());
        if kind != Some(row.kind.as_str()) {
            return Err(format!(
                "{} is documented as {} but exposed as {kind:?}",
                row.name,
                row.kind.as_str()
            ));
        }
        let labels = exposed.label_names(&row.name);
        if labels != row.labels {
            return Err(format!(
                "labels of {}: documented {:?}, exposed {labels:?}",
                row.name, row.labels
            ));
        }
    }
    let documented: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.name.as_str()).collect();
    for sample in &exposed.samples {
        let family = exposed.family_of(&sample.name);
        if family.starts_with(prefix) && !documented.contains(family) {
            return Err(format!("{family} is exposed but not documented"));
        }
    }
    Ok(())
}

/// The rows of the first Markdown table after the heading line `heading` in `markdown`, whose
/// first cell is a back-quoted series name.
pub fn doc_rows(markdown: &str, heading: &str) -> Vec<DocRow> {
    let mut lines = markdown.lines().skip_while(|l| l.trim() != heading).skip(1);
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in lines.by_ref() {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Some(name) = cells.first().and_then(|c| c.strip_prefix('`')?.strip_suffix('`')) else {
            continue;
        };
        let labels = cells
            .get(2)
            .map(|c| {
                c.split(',')
                    .map(|l| l.trim().trim_matches('`'))
                    .filter(|l| !l.is_empty() && *l != "-")
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        rows.push(DocRow {
            name: name.to_owned(),
            kind: cells.get(1).map(|c| c.trim_matches('`').to_owned()).unwrap_or_default(),
            labels,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_check_catches_drift_both_ways() {
        let text = "# TYPE t_total counter\nt_total{a=\"x\"} 1\n";
        let exposed = Exposition::parse(text).expect("parses");
        let docs = |rows: &str| {
            format!("## T\n\n| series | type | labels | meaning |\n|---|---|---|---|\n{rows}")
        };
        let good = docs("| `t_total` | counter | `a` | things |\n");
        assert_eq!(check_documented(&exposed, &good, "## T", "t_"), Ok(()));
        let missing =
            docs("| `t_total` | counter | `a` | things |\n| `t_other` | gauge | - | gone |\n");
        assert!(
            check_documented(&exposed, &missing, "## T", "t_").is_err(),
            "documented, not exposed"
        );
        let wrong_labels = docs("| `t_total` | counter | `b` | things |\n");
        assert!(check_documented(&exposed, &wrong_labels, "## T", "t_").is_err(), "labels differ");
        let wrong_kind = docs("| `t_total` | gauge | `a` | things |\n");
        assert!(check_documented(&exposed, &wrong_kind, "## T", "t_").is_err(), "type differs");
        let more =
            Exposition::parse(&format!("{text}# TYPE t_new gauge\nt_new 1\n")).expect("parses");
        assert!(check_documented(&more, &good, "## T", "t_").is_err(), "exposed, not documented");
    }

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
        assert_eq!(e.types.get("t_seconds"), Some(&Kind::Histogram));
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

    #[test]
    fn doc_rows_read_the_table_under_a_heading() {
        let md = "## A\n\n| name | type | labels | meaning |\n|---|---|---|---|\n\
                  | `x_total` | counter | `k`, `m` | y |\n| `g` | gauge | - | z |\n\n## B\n";
        let rows = doc_rows(md, "## A");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].labels.iter().cloned().collect::<Vec<_>>(), ["k", "m"]);
        assert!(rows[1].labels.is_empty());
    }
}
