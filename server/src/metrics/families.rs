//! Every gateway series: name, type, labels and help. `docs/metrics.md` is checked against
//! what a real gateway exposes from this table (`it::metrics`).

use entropy_ops::registry::{Family, Kind};

/// Every gateway series (the docs table is checked against what is exposed).
pub(crate) const FAMILIES: &[Family] = &[
    Family::new(
        "entropy_gateway_build_info",
        Kind::Gauge,
        &["version"],
        "Always 1; the version label.",
    ),
    Family::new(
        "entropy_gateway_pool_bytes",
        Kind::Gauge,
        &[],
        "Bytes in the pool ready to serve.",
    ),
    Family::new(
        "entropy_gateway_pool_class_bytes",
        Kind::Gauge,
        &["class"],
        "Bytes in the pool ready to serve, by class (the source kinds behind them, as QUANTUM+OS).",
    ),
    Family::new(
        "entropy_gateway_pool_expired_bytes_total",
        Kind::Counter,
        &[],
        "Bytes wiped unserved for being older than max_byte_age_ms.",
    ),
    Family::new(
        "entropy_gateway_pool_evicted_bytes_total",
        Kind::Counter,
        &[],
        "Bytes wiped unserved to make room for a class of sources below its share of the pool.",
    ),
    Family::new(
        "entropy_gateway_pool_capacity_bytes",
        Kind::Gauge,
        &[],
        "Most bytes the pool holds.",
    ),
    Family::new(
        "entropy_gateway_pool_low_watermark_bytes",
        Kind::Gauge,
        &[],
        "Below this pool level the gateway is not ready.",
    ),
    Family::new(
        "entropy_gateway_pool_waiters",
        Kind::Gauge,
        &[],
        "Callers queued waiting for entropy.",
    ),
    Family::new(
        "entropy_gateway_ready",
        Kind::Gauge,
        &[],
        "1 when ready to serve (as /readyz), else 0.",
    ),
    Family::new(
        "entropy_gateway_ingested_bytes_total",
        Kind::Counter,
        &["collector"],
        "Bytes of accepted chunks, by collector id.",
    ),
    Family::new(
        "entropy_gateway_chunks_accepted_total",
        Kind::Counter,
        &["collector"],
        "Chunks verified and stored, by collector id.",
    ),
    Family::new(
        "entropy_gateway_chunks_rejected_total",
        Kind::Counter,
        &["reason"],
        "Chunks not stored, by reason (pool_full: deferred, the collector resends).",
    ),
    Family::new(
        "entropy_gateway_rejected_bytes_total",
        Kind::Counter,
        &["reason"],
        "Data bytes of chunks not stored, by reason.",
    ),
    Family::new(
        "entropy_gateway_served_bytes_total",
        Kind::Counter,
        &["method"],
        "Bytes drawn from the pool and sent to callers, by method.",
    ),
    Family::new(
        "entropy_gateway_rpc_duration_seconds",
        Kind::Histogram,
        &["method", "code"],
        "EntropyService call duration (streams: until they end), by method and status code.",
    ),
    Family::new(
        "entropy_gateway_streams_active",
        Kind::Gauge,
        &[],
        "StreamRandom streams open now.",
    ),
    Family::new(
        "entropy_gateway_streams_opened_total",
        Kind::Counter,
        &[],
        "StreamRandom streams opened.",
    ),
    Family::new(
        "entropy_gateway_key_requests_total",
        Kind::Counter,
        &["key", "method"],
        "Authenticated calls by API key name and method.",
    ),
    Family::new(
        "entropy_gateway_key_served_bytes_total",
        Kind::Counter,
        &["key"],
        "Bytes served by API key name.",
    ),
    Family::new(
        "entropy_gateway_auth_failures_total",
        Kind::Counter,
        &["reason"],
        "Calls refused: no key (missing), unknown key (invalid), key without the scope (scope).",
    ),
    Family::new(
        "entropy_gateway_quota_rejections_total",
        Kind::Counter,
        &["key", "limit"],
        "Calls refused by a key's quota, by key name and limit.",
    ),
    Family::new(
        "entropy_gateway_connections_active",
        Kind::Gauge,
        &["listener"],
        "Open connections per listener (public, ingest).",
    ),
    Family::new(
        "entropy_gateway_connections_refused_total",
        Kind::Counter,
        &["listener"],
        "Connections closed at accept because the listener was at max_connections.",
    ),
    Family::new(
        "entropy_gateway_connections_evicted_total",
        Kind::Counter,
        &["listener"],
        "Connections closed to admit a new one when the listener was full (never-authenticated ones only), or to relieve a full request allowance (the largest holder, never-authenticated ones first).",
    ),
    Family::new(
        "entropy_gateway_send_timeouts_total",
        Kind::Counter,
        &["listener", "scope"],
        "Responses reset (scope stream) and connections closed (scope connection) because entropy drawn for them waited send_timeout_ms unwritten.",
    ),
    Family::new(
        "entropy_gateway_requests_shed_total",
        Kind::Counter,
        &["listener"],
        "Calls refused at once (RESOURCE_EXHAUSTED) because a request allowance was full.",
    ),
    Family::new(
        "entropy_gateway_buffered_bytes",
        Kind::Gauge,
        &["account"],
        "Bytes held in buffers, by part of max_buffered_bytes: responses, requests, ingest.",
    ),
    Family::new(
        "entropy_gateway_buffered_limit_bytes",
        Kind::Gauge,
        &["account"],
        "The size of each part of max_buffered_bytes: responses, requests, ingest.",
    ),
    Family::new(
        "entropy_gateway_discarded_bytes_total",
        Kind::Counter,
        &[],
        "Bytes drawn for callers that never received them (reset, closed, stalled), wiped.",
    ),
    Family::new(
        "entropy_gateway_quality_tested_bytes_total",
        Kind::Counter,
        &[],
        "Bytes drawn as CheckQuality samples, tested and wiped, never served.",
    ),
    Family::new(
        "entropy_gateway_drbg_served_bytes_total",
        Kind::Counter,
        &["method"],
        "DRBG output sent to callers (a DRBG construction), by method; not in served_bytes.",
    ),
    Family::new(
        "entropy_gateway_drbg_seed_bytes_total",
        Kind::Counter,
        &[],
        "Pool bytes drawn to seed and reseed DRBG instances, wiped once used, never served.",
    ),
    Family::new(
        "entropy_gateway_receipts_issued_total",
        Kind::Counter,
        &[],
        "Receipts signed and made durable in the receipt log (each before its draw was answered).",
    ),
    Family::new(
        "entropy_gateway_receipt_failures_total",
        Kind::Counter,
        &[],
        "Receipts the log could not take after the draw: the draw not served, its bytes wiped.",
    ),
    Family::new(
        "entropy_gateway_receipt_log_receipts",
        Kind::Gauge,
        &[],
        "Receipts in the receipt log, acknowledged (0 without a log).",
    ),
    Family::new(
        "entropy_gateway_receipt_head_size",
        Kind::Gauge,
        &[],
        "Receipts the latest signed tree head covers (0 without a log).",
    ),
];
