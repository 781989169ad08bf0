//! The gateway's Prometheus series: their names (the contract in docs/metrics.md), and handles
//! registered once so the hot path only bumps atomics.
//!
//! Handles that a call needs are found without allocating: per method in arrays, per method
//! and status code in lazily filled arrays, per API key name in a map filled on the key's first
//! call. Gauges that mirror state (pool level, waiters, readiness) are set at scrape time by
//! [`GatewayMetrics::refresh`], not on every put and take; so are the ingest counters, which
//! the ingest path keeps ([`GatewayMetrics::refresh_ingest`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use entropy_ops::registry::Registry;
use metrics::{Counter, Gauge, Histogram};

use crate::domain::allowance::Budget;
use crate::domain::ingest::counters::IngestCounters;
use crate::domain::pool::{ClassLevels, Kinds, PoolStats};
use crate::domain::served::Totals;

mod families;
mod labels;

pub use entropy_ops::registry::CODE_NAMES;
pub(crate) use families::FAMILIES;
pub(crate) use labels::{AuthFailure, QuotaLimit};
pub use labels::{KeyLabel, Method};

/// The `reason` label of a chunk that was not stored: every `IngestError::reason`.
pub(crate) use crate::domain::ingest::counters::REJECT_REASONS as INGEST_REJECT_REASONS;

/// Handles of one API key.
#[derive(Debug)]
pub struct KeyHandles {
    requests: [Counter; Method::ALL.len()],
    served: Counter,
    quota: [Counter; 3],
}

/// The open-connection gauge, refusal and eviction counters of one listener.
#[derive(Debug, Clone)]
pub struct ConnectionMetrics {
    active: Gauge,
    refused: Counter,
    evicted: Counter,
    stalled: Counter,
}

impl ConnectionMetrics {
    /// A connection was admitted: it counts as active until the returned guard is dropped
    /// (keep it beside the connection's permit).
    pub fn open(&self) -> OpenConnection {
        self.active.increment(1.0);
        OpenConnection(self.active.clone())
    }

    /// A connection was refused at the cap.
    pub fn refused(&self) {
        self.refused.increment(1);
    }

    /// A connection that never authenticated was closed to admit a new one, or a connection
    /// was closed to relieve a full request allowance.
    pub fn evicted(&self) {
        self.evicted.increment(1);
    }

    /// The counter of connections closed for owing entropy they did not read.
    pub fn stalled(&self) -> Counter {
        self.stalled.clone()
    }
}

/// Holds one connection in `entropy_gateway_connections_active`.
#[derive(Debug)]
pub struct OpenConnection(Gauge);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// Every handle of one gateway.
#[derive(Debug)]
pub struct GatewayMetrics {
    registry: Registry,
    pool_bytes: Gauge,
    pool_class_bytes: [Gauge; Kinds::CLASSES],
    pool_expired: Counter,
    pool_evicted: Counter,
    pool_capacity_bytes: Gauge,
    pool_low_watermark_bytes: Gauge,
    pool_waiters: Gauge,
    ready: Gauge,
    streams_active: Gauge,
    streams_opened: Counter,
    served: [Counter; Method::ALL.len()],
    drbg_served: [Counter; Method::ALL.len()],
    rpc: [[OnceLock<Histogram>; CODE_NAMES.len()]; Method::ALL.len()],
    rejected: Vec<(Counter, Counter)>,
    auth_failures: [Counter; 3],
    collectors: Mutex<HashMap<String, (Counter, Counter)>>,
    keys: RwLock<HashMap<String, Arc<KeyHandles>>>,
    key_label: KeyLabel,
    public_connections: ConnectionMetrics,
    ingest_connections: ConnectionMetrics,
    public_events: ListenerEvents,
    ingest_events: ListenerEvents,
    buffered: [(Gauge, Gauge); 3],
    discarded: Counter,
    quality_tested: Counter,
    drbg_seeds: Counter,
    receipts_issued: Counter,
    receipt_failures: Counter,
    receipt_log: Gauge,
    receipt_head: Gauge,
}

impl Default for GatewayMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl GatewayMetrics {
    /// A fresh registry with every label-free series (and every bounded label set known up
    /// front) registered at zero, so dashboards see them before the first event.
    pub fn new() -> Self {
        let r = Registry::new(FAMILIES);
        r.gauge("entropy_gateway_build_info", &[("version", env!("CARGO_PKG_VERSION"))]).set(1.0);
        let connections = |listener| ConnectionMetrics {
            active: r.gauge("entropy_gateway_connections_active", &[("listener", listener)]),
            refused: r
                .counter("entropy_gateway_connections_refused_total", &[("listener", listener)]),
            evicted: r
                .counter("entropy_gateway_connections_evicted_total", &[("listener", listener)]),
            stalled: r.counter(
                "entropy_gateway_send_timeouts_total",
                &[("listener", listener), ("scope", "connection")],
            ),
        };
        let events = |listener| ListenerEvents {
            shed: r.counter("entropy_gateway_requests_shed_total", &[("listener", listener)]),
            stream_stalled: r.counter(
                "entropy_gateway_send_timeouts_total",
                &[("listener", listener), ("scope", "stream")],
            ),
        };
        Self {
            pool_bytes: r.gauge("entropy_gateway_pool_bytes", &[]),
            pool_class_bytes: std::array::from_fn(|lane| {
                let class = Kinds::of_lane(lane).to_string();
                r.gauge("entropy_gateway_pool_class_bytes", &[("class", &class)])
            }),
            pool_expired: r.counter("entropy_gateway_pool_expired_bytes_total", &[]),
            pool_evicted: r.counter("entropy_gateway_pool_evicted_bytes_total", &[]),
            pool_capacity_bytes: r.gauge("entropy_gateway_pool_capacity_bytes", &[]),
            pool_low_watermark_bytes: r.gauge("entropy_gateway_pool_low_watermark_bytes", &[]),
            pool_waiters: r.gauge("entropy_gateway_pool_waiters", &[]),
            ready: r.gauge("entropy_gateway_ready", &[]),
            streams_active: r.gauge("entropy_gateway_streams_active", &[]),
            streams_opened: r.counter("entropy_gateway_streams_opened_total", &[]),
            served: Method::ALL.map(|m| {
                r.counter("entropy_gateway_served_bytes_total", &[("method", m.as_str())])
            }),
            drbg_served: Method::ALL.map(|m| {
                r.counter("entropy_gateway_drbg_served_bytes_total", &[("method", m.as_str())])
            }),
            rpc: std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new())),
            rejected: INGEST_REJECT_REASONS
                .iter()
                .map(|reason| {
                    (
                        r.counter("entropy_gateway_chunks_rejected_total", &[("reason", reason)]),
                        r.counter("entropy_gateway_rejected_bytes_total", &[("reason", reason)]),
                    )
                })
                .collect(),
            auth_failures: [AuthFailure::Missing, AuthFailure::Invalid, AuthFailure::Scope].map(
                |f| r.counter("entropy_gateway_auth_failures_total", &[("reason", f.as_str())]),
            ),
            collectors: Mutex::default(),
            keys: RwLock::default(),
            key_label: KeyLabel::Name,
            public_connections: connections("public"),
            ingest_connections: connections("ingest"),
            public_events: events("public"),
            ingest_events: events("ingest"),
            buffered: ["responses", "requests", "ingest"].map(|account| {
                (
                    r.gauge("entropy_gateway_buffered_bytes", &[("account", account)]),
                    r.gauge("entropy_gateway_buffered_limit_bytes", &[("account", account)]),
                )
            }),
            discarded: r.counter("entropy_gateway_discarded_bytes_total", &[]),
            quality_tested: r.counter("entropy_gateway_quality_tested_bytes_total", &[]),
            drbg_seeds: r.counter("entropy_gateway_drbg_seed_bytes_total", &[]),
            receipts_issued: r.counter("entropy_gateway_receipts_issued_total", &[]),
            receipt_failures: r.counter("entropy_gateway_receipt_failures_total", &[]),
            receipt_log: r.gauge("entropy_gateway_receipt_log_receipts", &[]),
            receipt_head: r.gauge("entropy_gateway_receipt_head_size", &[]),
            registry: r,
        }
    }

    /// The registry (to render, or to run upkeep).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Sets the gauges that mirror the pool and readiness; called before each render.
    pub(crate) fn refresh(
        &self,
        (pool, classes): (&PoolStats, &ClassLevels),
        low_watermark: usize,
        ready: bool,
    ) {
        self.pool_bytes.set(pool.level as f64);
        for (gauge, bytes) in self.pool_class_bytes.iter().zip(classes.0) {
            gauge.set(bytes as f64);
        }
        self.pool_expired.absolute(pool.expired_total);
        self.pool_evicted.absolute(pool.evicted_total);
        self.pool_capacity_bytes.set(pool.capacity as f64);
        self.pool_low_watermark_bytes.set(low_watermark as f64);
        self.pool_waiters.set(pool.waiters as f64);
        self.ready.set(if ready { 1.0 } else { 0.0 });
    }

    /// Records one finished call: its duration by method and code.
    pub(crate) fn rpc_finished(&self, method: Method, code: tonic::Code, elapsed: Duration) {
        let code = (code as usize).min(CODE_NAMES.len() - 1);
        self.rpc[method as usize][code]
            .get_or_init(|| {
                self.registry.histogram(
                    "entropy_gateway_rpc_duration_seconds",
                    &[("method", method.as_str()), ("code", CODE_NAMES[code])],
                )
            })
            .record(elapsed.as_secs_f64());
    }

    /// Counts `bytes` sent by `method`.
    pub fn served(&self, method: Method, bytes: u64) {
        self.served[method as usize].increment(bytes);
    }

    /// Counts `bytes` of DRBG output sent by `method`.
    pub fn drbg_served(&self, method: Method, bytes: u64) {
        self.drbg_served[method as usize].increment(bytes);
    }

    /// The handles of the key named `name`, registered on its first call.
    pub fn key(&self, name: &str) -> Arc<KeyHandles> {
        if let Some(k) = read(&self.keys).get(name) {
            return k.clone();
        }
        let (key, label) = (name, self.key_label.value(name));
        let name = label.as_str();
        let r = &self.registry;
        let handles = Arc::new(KeyHandles {
            requests: Method::ALL.map(|m| {
                r.counter(
                    "entropy_gateway_key_requests_total",
                    &[("key", name), ("method", m.as_str())],
                )
            }),
            served: r.counter("entropy_gateway_key_served_bytes_total", &[("key", name)]),
            quota: [QuotaLimit::Requests, QuotaLimit::Bytes, QuotaLimit::Streams].map(|l| {
                r.counter(
                    "entropy_gateway_quota_rejections_total",
                    &[("key", name), ("limit", l.as_str())],
                )
            }),
        });
        write(&self.keys).entry(key.to_owned()).or_insert(handles).clone()
    }

    /// Labels per-key series with `label` (default: the key's name).
    pub(crate) fn with_key_label(mut self, label: KeyLabel) -> Self {
        self.key_label = label;
        self
    }

    /// Counts an authentication or scope failure.
    pub(crate) fn auth_failed(&self, failure: AuthFailure) {
        self.auth_failures[failure as usize].increment(1);
    }

    /// Counts a stream opened; the returned guard keeps it in `streams_active` until dropped.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> StreamGuard {
        self.streams_opened.increment(1);
        self.streams_active.increment(1.0);
        StreamGuard(self.clone())
    }

    /// Sets the ingest counters from the ingest path's own ([`IngestCounters`]); called
    /// before each render, so chunks are counted in one place.
    pub(crate) fn refresh_ingest(&self, counters: &IngestCounters) {
        for (refused, (chunks, bytes)) in counters.refused_for().iter().zip(&self.rejected) {
            chunks.absolute(refused.chunks);
            bytes.absolute(refused.bytes);
        }
        let mut map = lock(&self.collectors);
        for stored in counters.stored_by() {
            let (chunks, bytes) = map.entry(stored.collector.clone()).or_insert_with(|| {
                let r = &self.registry;
                let collector = stored.collector.as_str();
                (
                    r.counter("entropy_gateway_chunks_accepted_total", &[("collector", collector)]),
                    r.counter("entropy_gateway_ingested_bytes_total", &[("collector", collector)]),
                )
            });
            chunks.absolute(stored.chunks);
            bytes.absolute(stored.bytes);
        }
    }

    /// The connection handles of `listener` ("public" or "ingest").
    pub fn connections(&self, listener: &str) -> ConnectionMetrics {
        if listener == "ingest" {
            self.ingest_connections.clone()
        } else {
            self.public_connections.clone()
        }
    }

    /// The transport's refusal and send-timeout counters of `listener` ("public" or "ingest").
    pub(crate) fn transport_events(&self, listener: &str) -> ListenerEvents {
        if listener == "ingest" { self.ingest_events.clone() } else { self.public_events.clone() }
    }

    /// Sets what the byte allowances hold, and the served-elsewhere totals; before each render.
    pub(crate) fn refresh_buffers(&self, budget: &Budget, totals: &Totals) {
        for ((held, limit), (_, account)) in self.buffered.iter().zip(budget.accounts()) {
            held.set(account.held() as f64);
            limit.set(account.cap() as f64);
        }
        self.discarded.absolute(totals.discarded());
        self.quality_tested.absolute(totals.quality_tested());
        self.drbg_seeds.absolute(totals.drbg_seeds());
    }

    /// Sets the receipt log's series from `notary` (none: they stay 0); before each render.
    pub(crate) fn refresh_receipts(&self, notary: Option<&crate::domain::receipts::Notary>) {
        if let Some(notary) = notary {
            let (issued, failed) = notary.counts();
            self.receipts_issued.absolute(issued);
            self.receipt_failures.absolute(failed);
            self.receipt_log.set(notary.log().size() as f64);
            self.receipt_head.set(notary.latest_head().head.size as f64);
        }
    }
}

impl KeyHandles {
    /// Counts an authenticated call.
    pub fn request(&self, method: Method) {
        self.requests[method as usize].increment(1);
    }

    /// Counts bytes served to this key.
    pub fn served(&self, bytes: u64) {
        self.served.increment(bytes);
    }

    /// Counts a quota refusal.
    pub(crate) fn quota_rejected(&self, limit: QuotaLimit) {
        self.quota[limit as usize].increment(1);
    }
}

/// Holds one stream in `entropy_gateway_streams_active`.
#[derive(Debug)]
pub(crate) struct StreamGuard(Arc<GatewayMetrics>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.streams_active.decrement(1.0);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn read<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(m: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Counters of what a listener's transport refuses or cuts.
#[derive(Debug, Clone)]
pub struct ListenerEvents {
    /// Calls refused because a request allowance was full.
    pub shed: Counter,
    /// Responses reset because their bytes waited longer than the send timeout.
    pub stream_stalled: Counter,
}

impl ListenerEvents {
    /// Counts a call shed for a full request allowance.
    pub fn shed(&self) {
        self.shed.increment(1);
    }

    /// Counts a response reset for a stalled send.
    pub(crate) fn stream_stalled(&self) {
        self.stream_stalled.increment(1);
    }
}

#[cfg(test)]
mod tests {
    use entropy_testkit::exposition::Exposition;

    use super::*;

    #[test]
    fn bounded_series_exist_at_zero_and_calls_land_in_their_cells() {
        let m = GatewayMetrics::new();
        m.rpc_finished(Method::GetFloats, tonic::Code::InvalidArgument, Duration::from_millis(2));
        m.key("alice").request(Method::GetRandom);
        let ingest = IngestCounters::default();
        ingest.refused("bad_mac", 10);
        ingest.refused("not-a-reason", 10);
        m.refresh_ingest(&ingest);
        let e = Exposition::parse(&m.registry().render()).expect("parses");
        assert_eq!(e.sum("entropy_gateway_chunks_rejected_total", &[("reason", "stale")]), 0.0);
        assert_eq!(e.sum("entropy_gateway_rejected_bytes_total", &[]), 10.0);
        assert_eq!(
            e.sum(
                "entropy_gateway_rpc_duration_seconds_count",
                &[("method", "GetFloats"), ("code", "INVALID_ARGUMENT")]
            ),
            1.0
        );
        assert_eq!(
            e.sum(
                "entropy_gateway_key_requests_total",
                &[("key", "alice"), ("method", "GetRandom")]
            ),
            1.0
        );
        assert_eq!(CODE_NAMES[tonic::Code::Unauthenticated as usize], "UNAUTHENTICATED");
        let public = m.connections("public");
        let open = public.open();
        public.refused();
        let e = Exposition::parse(&m.registry().render()).expect("parses");
        let active = [("listener", "public")];
        assert_eq!(e.sum("entropy_gateway_connections_active", &active), 1.0);
        assert_eq!(e.sum("entropy_gateway_connections_refused_total", &active), 1.0);
        drop(open);
        let e = Exposition::parse(&m.registry().render()).expect("parses");
        assert_eq!(e.sum("entropy_gateway_connections_active", &active), 0.0);
    }
}
