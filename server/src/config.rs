//! The gateway's configuration: one typed struct, layered, validated before anything binds.
//!
//! Layers, later ones winning: built-in defaults (or dev-mode defaults), the TOML file given
//! with `--config`, `ENTROPY_<KEY>` environment variables, then `--<key>` flags. A bad value in
//! any layer is reported with the key that holds it; `main` exits 64 (EX_USAGE) on it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::metrics::KeyLabel;

/// Largest GetRandom request, and so the least pool capacity that can serve every request.
pub const MAX_GET_RANDOM_BYTES: usize = 1 << 20;

/// Every setting of the gateway. Field names are the config keys; see README "Configuration".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Public gRPC address: EntropyService, health and reflection.
    pub listen_addr: SocketAddr,
    /// Internal gRPC address for IngestService (collectors). Keep it off the public network.
    pub ingest_listen_addr: SocketAddr,
    /// TOML file of client API keys (name + SHA-256 of the secret). Required outside dev mode.
    pub api_keys_file: Option<PathBuf>,
    /// Directory of `<key_id>.key` files holding chunk MAC keys as hex. Required outside dev
    /// mode.
    pub ingest_keys_dir: Option<PathBuf>,
    /// PEM certificate chain for TLS on the public listener (with `tls_key_file`); plaintext
    /// when unset.
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key for TLS on the public listener.
    pub tls_key_file: Option<PathBuf>,
    /// Accept TLS 1.2 as well as TLS 1.3 (both listeners).
    pub tls_allow_tls12: bool,
    /// PEM certificate chain for TLS on the ingest listener (with `ingest_tls_key_file`).
    pub ingest_tls_cert_file: Option<PathBuf>,
    /// PEM private key for TLS on the ingest listener.
    pub ingest_tls_key_file: Option<PathBuf>,
    /// PEM CA certificates: when set, collectors must present a client certificate chaining
    /// to one (mTLS). Needs ingest TLS.
    pub ingest_client_ca_file: Option<PathBuf>,
    /// Most bytes the pool holds. The memory is committed at start (touched page by page), so
    /// the gateway's resident size is about this from the first second.
    pub pool_capacity_bytes: usize,
    /// Below this many pool bytes, grpc.health.v1 reports NOT_SERVING.
    pub pool_low_watermark_bytes: usize,
    /// Longest a unary call waits for entropy before UNAVAILABLE (a shorter client deadline
    /// wins).
    pub max_wait_ms: u64,
    /// Longest a stream waits for entropy for its next message before it ends with
    /// UNAVAILABLE (nothing consumed; the client reopens it).
    pub stream_max_wait_ms: u64,
    /// This gateway's name: collectors seal chunks for it (their `[[gateway]] id`) and it
    /// refuses chunks sealed for another, so a chunk cannot be stored by two gateways.
    /// 1..=64 characters of [A-Za-z0-9._-]; required (dev mode sets "dev").
    pub gateway_id: String,
    /// How old a chunk's timestamp may be.
    pub freshness_window_ms: u64,
    /// How far ahead of the gateway's clock a chunk's timestamp may be. The gateway accepts
    /// chunks dated from its start plus this on, so nothing stored before a restart can be
    /// stored again: keep it small (collectors re-seal refused chunks).
    pub max_future_skew_ms: u64,
    /// Largest chunk accepted by Publish.
    pub max_chunk_bytes: usize,
    /// Most (collector, epoch) pairs tracked for replay protection at once.
    pub replay_max_streams: usize,
    /// Bytes of Publish request bodies the ingest listener holds at once, all connections
    /// together (a body is authenticated only once whole); past it, bodies wait and HTTP/2
    /// flow control stops their senders. At least max_chunk_bytes + 65536.
    pub ingest_max_buffered_bytes: usize,
    /// Most open connections on the ingest listener (collectors are few).
    pub ingest_max_connections: usize,
    /// On SIGTERM/SIGINT, how long in-flight calls get to finish before the process exits.
    pub shutdown_grace_ms: u64,
    /// Most open connections per listener; past it new connections are closed at once. Both
    /// listeners at this many must fit the file-descriptor limit (checked at start, after
    /// raising the soft limit to the hard one); 0 picks the most that fit, at most 10000.
    pub max_connections: usize,
    /// Most concurrent calls (HTTP/2 streams) per connection, announced in SETTINGS: compliant
    /// clients queue further calls, and a stream opened past it is refused (REFUSED_STREAM).
    pub max_streams_per_connection: u32,
    /// A connection with no call in progress for this long is closed (0: never). PINGs and
    /// partial requests do not count as activity.
    pub idle_timeout_ms: u64,
    /// A connection whose responses (entropy drawn for its client) wait this long with nothing
    /// written to the socket is closed, and what it held is wiped and counted as discarded
    /// (0: never). A client that stopped reading cannot pin memory longer.
    pub send_timeout_ms: u64,
    /// Bytes drawn for one connection's calls and not yet taken by the transport; further
    /// draws on it wait for room (then RESOURCE_EXHAUSTED). Each key has its own cap too
    /// (`max_undelivered_bytes` in the keys file, default 32 MiB).
    pub max_undelivered_bytes_per_connection: usize,
    /// HTTP address of `/metrics`, `/healthz` and `/readyz`; "" turns the endpoint off. Loopback
    /// by default: the series name keys and count their use, so expose it deliberately.
    pub metrics_listen_addr: String,
    /// What the `key` label of per-key series shows: "name" (the keys file's names), "digest"
    /// (a hash of each name: per-key series without names) or "none" (one series for all).
    pub metrics_key_label: KeyLabel,
    /// Not ready (gRPC health NOT_SERVING, /readyz 503) when no chunk has arrived from any
    /// collector (stored, or deferred because the pool was full) for this long; 0 disables.
    pub ingest_stale_after_ms: u64,
    /// Log line format: "text" or "json".
    pub log_format: LogFormat,
    /// Log filter in `tracing` EnvFilter syntax (e.g. "info", "entropy_gateway=debug").
    pub log_filter: String,
}

/// Log line format (shared with the collector).
pub use entropy_ops::LogFormat;

/// Every config key, for environment variable lookup (`ENTROPY_` + upper case).
pub const KEYS: &[&str] = &[
    "listen_addr",
    "ingest_listen_addr",
    "api_keys_file",
    "ingest_keys_dir",
    "tls_cert_file",
    "tls_key_file",
    "tls_allow_tls12",
    "ingest_tls_cert_file",
    "ingest_tls_key_file",
    "ingest_client_ca_file",
    "pool_capacity_bytes",
    "pool_low_watermark_bytes",
    "max_wait_ms",
    "stream_max_wait_ms",
    "gateway_id",
    "freshness_window_ms",
    "max_future_skew_ms",
    "max_chunk_bytes",
    "replay_max_streams",
    "ingest_max_buffered_bytes",
    "ingest_max_connections",
    "shutdown_grace_ms",
    "max_connections",
    "max_streams_per_connection",
    "idle_timeout_ms",
    "send_timeout_ms",
    "max_undelivered_bytes_per_connection",
    "metrics_listen_addr",
    "metrics_key_label",
    "ingest_stale_after_ms",
    "log_format",
    "log_filter",
];

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            listen_addr: SocketAddr::from(([0, 0, 0, 0], 50051)),
            ingest_listen_addr: SocketAddr::from(([127, 0, 0, 1], 50052)),
            api_keys_file: None,
            ingest_keys_dir: None,
            tls_cert_file: None,
            tls_key_file: None,
            tls_allow_tls12: false,
            ingest_tls_cert_file: None,
            ingest_tls_key_file: None,
            ingest_client_ca_file: None,
            pool_capacity_bytes: 16 << 20,
            pool_low_watermark_bytes: 64 << 10,
            max_wait_ms: 2_000,
            stream_max_wait_ms: 30_000,
            gateway_id: String::new(),
            freshness_window_ms: 60_000,
            max_future_skew_ms: 2_000,
            max_chunk_bytes: 1 << 20,
            replay_max_streams: 4_096,
            ingest_max_buffered_bytes: 64 << 20,
            ingest_max_connections: 64,
            shutdown_grace_ms: 10_000,
            max_connections: 0,
            max_streams_per_connection: 256,
            idle_timeout_ms: 120_000,
            send_timeout_ms: 30_000,
            max_undelivered_bytes_per_connection: 16 << 20,
            metrics_listen_addr: "127.0.0.1:9464".into(),
            metrics_key_label: KeyLabel::Name,
            ingest_stale_after_ms: 60_000,
            log_format: LogFormat::Text,
            log_filter: "info".into(),
        }
    }
}

impl GatewayConfig {
    /// Defaults for `--dev`: public and metrics ports on loopback only, ingest on an ephemeral
    /// loopback port that only the in-process publisher uses.
    pub fn dev_defaults() -> Self {
        Self {
            listen_addr: SocketAddr::from(([127, 0, 0, 1], 50051)),
            ingest_listen_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_listen_addr: "127.0.0.1:9464".into(),
            gateway_id: "dev".into(),
            ..Self::default()
        }
    }

    /// Longest unary wait for entropy.
    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.max_wait_ms)
    }

    /// `send_timeout_ms` as a duration, `None` for never.
    pub fn send_timeout(&self) -> Option<Duration> {
        (self.send_timeout_ms > 0).then(|| Duration::from_millis(self.send_timeout_ms))
    }

    /// `max_future_skew_ms` as a duration.
    pub fn max_future_skew(&self) -> Duration {
        Duration::from_millis(self.max_future_skew_ms)
    }

    /// `stream_max_wait_ms` as a duration.
    pub fn stream_max_wait(&self) -> Duration {
        Duration::from_millis(self.stream_max_wait_ms)
    }

    /// Freshness window for chunk timestamps.
    pub fn freshness_window(&self) -> Duration {
        Duration::from_millis(self.freshness_window_ms)
    }

    /// The metrics endpoint's address, or `None` when it is off. `validate` has checked it
    /// parses.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listen_addr.parse().ok()
    }

    /// How long ingest may be silent before the gateway is not ready (zero: no limit).
    pub fn ingest_stale_after(&self) -> Duration {
        Duration::from_millis(self.ingest_stale_after_ms)
    }

    /// Grace period on shutdown.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }

    /// How long a connection may sit without a call before it is closed (`None`: forever).
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.idle_timeout_ms > 0).then(|| Duration::from_millis(self.idle_timeout_ms))
    }

    /// Checks relations between keys that types alone cannot express.
    pub fn validate(&self, dev: bool) -> Result<(), ConfigError> {
        let bad =
            |key: &'static str, problem: String| Err(ConfigError { key: key.into(), problem });
        if self.pool_capacity_bytes < MAX_GET_RANDOM_BYTES {
            return bad(
                "pool_capacity_bytes",
                format!(
                    "{} is below {MAX_GET_RANDOM_BYTES}, the largest GetRandom request",
                    self.pool_capacity_bytes
                ),
            );
        }
        if self.pool_capacity_bytes > 1 << 34 {
            return bad("pool_capacity_bytes", "must be at most 17179869184 (16 GiB)".into());
        }
        if self.max_chunk_bytes == 0 || self.max_chunk_bytes > self.pool_capacity_bytes {
            return bad(
                "max_chunk_bytes",
                format!("{} must be 1..=pool_capacity_bytes", self.max_chunk_bytes),
            );
        }
        if self.max_chunk_bytes > 16 << 20 {
            return bad("max_chunk_bytes", "must be at most 16777216 (16 MiB)".into());
        }
        if self.pool_low_watermark_bytes > self.pool_capacity_bytes {
            return bad(
                "pool_low_watermark_bytes",
                format!("{} exceeds pool_capacity_bytes", self.pool_low_watermark_bytes),
            );
        }
        if !(1..=600_000).contains(&self.max_wait_ms) {
            return bad("max_wait_ms", format!("{} must be 1..=600000", self.max_wait_ms));
        }
        if !(1..=3_600_000).contains(&self.stream_max_wait_ms) {
            return bad(
                "stream_max_wait_ms",
                format!("{} must be 1..=3600000", self.stream_max_wait_ms),
            );
        }
        if self.send_timeout_ms > 3_600_000 {
            return bad("send_timeout_ms", format!("{} must be 0..=3600000", self.send_timeout_ms));
        }
        if !(1 << 20..=1 << 32).contains(&self.max_undelivered_bytes_per_connection) {
            return bad(
                "max_undelivered_bytes_per_connection",
                format!(
                    "{} must be 1048576..=4294967296 (the largest draw must fit)",
                    self.max_undelivered_bytes_per_connection
                ),
            );
        }
        let id_ok = (1..=64).contains(&self.gateway_id.len())
            && self.gateway_id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !id_ok {
            return bad(
                "gateway_id",
                format!(
                    "{:?} must be 1..=64 characters of [A-Za-z0-9._-]: the name collectors seal \
                     chunks for (their [[gateway]] id)",
                    self.gateway_id
                ),
            );
        }
        if !(100..=60_000).contains(&self.max_future_skew_ms) {
            return bad(
                "max_future_skew_ms",
                format!("{} must be 100..=60000", self.max_future_skew_ms),
            );
        }
        if !(1_000..=3_600_000).contains(&self.freshness_window_ms) {
            return bad(
                "freshness_window_ms",
                format!("{} must be 1000..=3600000", self.freshness_window_ms),
            );
        }
        if !(1..=1_000_000).contains(&self.replay_max_streams) {
            return bad(
                "replay_max_streams",
                format!("{} must be 1..=1000000", self.replay_max_streams),
            );
        }
        let one_publish = self.max_chunk_bytes + (64 << 10);
        if !(one_publish..=1 << 34).contains(&self.ingest_max_buffered_bytes) {
            return bad(
                "ingest_max_buffered_bytes",
                format!(
                    "{} must be {one_publish}..=17179869184 (one publish of max_chunk_bytes must fit)",
                    self.ingest_max_buffered_bytes
                ),
            );
        }
        if !(1..=100_000).contains(&self.ingest_max_connections) {
            return bad(
                "ingest_max_connections",
                format!("{} must be 1..=100000", self.ingest_max_connections),
            );
        }
        if self.max_connections > 1_000_000 {
            return bad("max_connections", format!("{} must be 0..=1000000", self.max_connections));
        }
        if !(1..=100_000).contains(&self.max_streams_per_connection) {
            return bad(
                "max_streams_per_connection",
                format!("{} must be 1..=100000", self.max_streams_per_connection),
            );
        }
        if self.shutdown_grace_ms > 600_000 {
            return bad("shutdown_grace_ms", "must be at most 600000".into());
        }
        if self.listen_addr == self.ingest_listen_addr && self.listen_addr.port() != 0 {
            return bad("ingest_listen_addr", "must differ from listen_addr".into());
        }
        if !self.metrics_listen_addr.is_empty()
            && self.metrics_listen_addr.parse::<SocketAddr>().is_err()
        {
            return bad(
                "metrics_listen_addr",
                format!(
                    "{:?} is not an address like 0.0.0.0:9464 (\"\" turns the endpoint off)",
                    self.metrics_listen_addr
                ),
            );
        }
        if self.ingest_stale_after_ms > 86_400_000 {
            return bad(
                "ingest_stale_after_ms",
                "must be at most 86400000 (a day); 0 disables the check".into(),
            );
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log_filter).is_err() {
            return bad("log_filter", format!("{:?} is not a valid filter", self.log_filter));
        }
        if self.tls_cert_file.is_some() != self.tls_key_file.is_some() {
            return bad("tls_key_file", "tls_cert_file and tls_key_file go together".into());
        }
        if self.ingest_tls_cert_file.is_some() != self.ingest_tls_key_file.is_some() {
            return bad(
                "ingest_tls_key_file",
                "ingest_tls_cert_file and ingest_tls_key_file go together".into(),
            );
        }
        if self.ingest_client_ca_file.is_some() && self.ingest_tls_cert_file.is_none() {
            return bad(
                "ingest_client_ca_file",
                "mTLS needs TLS on the ingest listener: set ingest_tls_cert_file and \
                 ingest_tls_key_file"
                    .into(),
            );
        }
        if dev && (self.ingest_tls_cert_file.is_some() || self.ingest_client_ca_file.is_some()) {
            return bad(
                "ingest_tls_cert_file",
                "dev mode's ingest listener is in-process only; TLS applies to listen_addr".into(),
            );
        }
        if !dev {
            if self.api_keys_file.is_none() {
                return bad("api_keys_file", "required (or run with --dev)".into());
            }
            if self.ingest_keys_dir.is_none() {
                return bad("ingest_keys_dir", "required (or run with --dev)".into());
            }
        }
        Ok(())
    }
}

/// A config value that is missing, malformed, or inconsistent with another.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config key {key}: {problem}")]
pub struct ConfigError {
    /// The config key at fault.
    pub key: String,
    /// What is wrong, with the bound.
    pub problem: String,
}

/// `--<key>` flags, one per config key; only those given override the other layers.
#[derive(Debug, Default, Clone, Args, Serialize)]
pub struct ConfigFlags {
    /// Public gRPC address [default: 0.0.0.0:50051; dev: 127.0.0.1:50051]
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_addr: Option<SocketAddr>,
    /// Internal ingest gRPC address [default: 127.0.0.1:50052]
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_listen_addr: Option<SocketAddr>,
    /// Client API keys file (TOML)
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_keys_file: Option<PathBuf>,
    /// Directory of <key_id>.key chunk MAC keys
    #[arg(long, value_name = "DIR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_keys_dir: Option<PathBuf>,
    /// TLS certificate chain (PEM) for the public listener
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert_file: Option<PathBuf>,
    /// TLS private key (PEM) for the public listener
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key_file: Option<PathBuf>,
    /// Accept TLS 1.2 as well as 1.3 [default: false]
    #[arg(long, value_name = "BOOL")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_allow_tls12: Option<bool>,
    /// TLS certificate chain (PEM) for the ingest listener
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_tls_cert_file: Option<PathBuf>,
    /// TLS private key (PEM) for the ingest listener
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_tls_key_file: Option<PathBuf>,
    /// CA (PEM) that collector client certificates must chain to (mTLS)
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_client_ca_file: Option<PathBuf>,
    /// Pool capacity in bytes, committed at start [default: 16777216]
    #[arg(long, value_name = "BYTES")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_capacity_bytes: Option<usize>,
    /// NOT_SERVING below this many pool bytes [default: 65536]
    #[arg(long, value_name = "BYTES")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_low_watermark_bytes: Option<usize>,
    /// Longest unary wait for entropy, ms [default: 2000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<u64>,
    /// Longest a stream waits for entropy per message, ms [default: 30000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_max_wait_ms: Option<u64>,
    /// Chunk timestamp tolerance either way, ms [default: 60000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness_window_ms: Option<u64>,
    /// This gateway's id, as collectors address it (required outside --dev)
    #[arg(long, value_name = "ID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_id: Option<String>,
    /// Largest chunk timestamp ahead of the clock, ms [default: 2000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_future_skew_ms: Option<u64>,
    /// Largest chunk accepted, bytes [default: 1048576]
    #[arg(long, value_name = "BYTES")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_chunk_bytes: Option<usize>,
    /// Most collector epochs tracked for replay protection [default: 4096]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_max_streams: Option<usize>,
    /// Publish bodies held at once, bytes [default: 67108864]
    #[arg(long, value_name = "BYTES")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_max_buffered_bytes: Option<usize>,
    /// Most open ingest connections [default: 64]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_max_connections: Option<usize>,
    /// Shutdown grace period, ms [default: 10000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_ms: Option<u64>,
    /// Most open connections per listener, 0 = what the fd limit allows [default: 0]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<usize>,
    /// Most concurrent calls per connection [default: 256]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_streams_per_connection: Option<u32>,
    /// Close connections without a call for this long, ms; 0 never [default: 120000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Metrics/health HTTP address, "" for none [default: 127.0.0.1:9464]
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_listen_addr: Option<String>,
    /// Per-key series label: name, digest or none [default: name]
    #[arg(long, value_name = "LABEL")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_key_label: Option<KeyLabel>,
    /// Close a connection whose responses wait this long unsent, ms; 0 = never [default: 30000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_timeout_ms: Option<u64>,
    /// Drawn-but-undelivered bytes per connection [default: 16777216]
    #[arg(long, value_name = "BYTES")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_undelivered_bytes_per_connection: Option<usize>,
    /// Not ready after this long without a chunk from any collector, ms; 0 disables
    /// [default: 60000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest_stale_after_ms: Option<u64>,
    /// Log format [default: text]
    #[arg(long, value_name = "FORMAT")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,
    /// Log filter (tracing EnvFilter syntax) [default: info]
    #[arg(long, value_name = "FILTER")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_filter: Option<String>,
}

/// Builds the effective config from the layers and validates it.
pub fn load(
    file: Option<&std::path::Path>,
    dev: bool,
    flags: &ConfigFlags,
) -> Result<GatewayConfig, ConfigError> {
    load_with_env(file, dev, flags, Env::prefixed("ENTROPY_").only(KEYS))
}

/// [`load`] with the environment given (tests use `Env` over a fixed map).
pub fn load_with_env(
    file: Option<&std::path::Path>,
    dev: bool,
    flags: &ConfigFlags,
    env: Env,
) -> Result<GatewayConfig, ConfigError> {
    let defaults = if dev { GatewayConfig::dev_defaults() } else { GatewayConfig::default() };
    let mut figment = Figment::from(Serialized::defaults(defaults));
    if let Some(path) = file {
        if !path.is_file() {
            return Err(ConfigError {
                key: "--config".into(),
                problem: format!("{} is not a readable file", path.display()),
            });
        }
        figment = figment.merge(Toml::file_exact(path));
    }
    let config: GatewayConfig =
        figment.merge(env).merge(Serialized::defaults(flags)).extract().map_err(|e| {
            let key = e.path.join(".");
            let key = if key.is_empty() { "(config)".to_owned() } else { key };
            let from = match e.metadata.as_ref() {
                Some(m) if m.name.contains("environment") => {
                    format!(" (from environment variable ENTROPY_{})", key.to_uppercase())
                }
                Some(m) => format!(
                    " (from {})",
                    m.source.as_ref().map_or(m.name.to_string(), |s| s.to_string())
                ),
                None => String::new(),
            };
            ConfigError { key, problem: format!("{}{from}", e.kind) }
        })?;
    config.validate(dev)?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_of<T: Serialize>(value: &T) -> Vec<String> {
        let toml = toml::Value::try_from(value).expect("serializes");
        let mut keys: Vec<_> = toml.as_table().expect("table").keys().cloned().collect();
        keys.sort();
        keys
    }

    #[test]
    fn keys_flags_and_struct_agree() {
        // Options that are None do not serialize, so fill them for the comparison.
        let full = GatewayConfig {
            api_keys_file: Some("k".into()),
            ingest_keys_dir: Some("d".into()),
            tls_cert_file: Some("c".into()),
            tls_key_file: Some("k".into()),
            ingest_tls_cert_file: Some("c".into()),
            ingest_tls_key_file: Some("k".into()),
            ingest_client_ca_file: Some("ca".into()),
            ..GatewayConfig::default()
        };
        let mut listed: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
        listed.sort();
        assert_eq!(keys_of(&full), listed, "KEYS lists every config field");

        let flags = ConfigFlags {
            listen_addr: Some(full.listen_addr),
            ingest_listen_addr: Some(full.ingest_listen_addr),
            api_keys_file: full.api_keys_file.clone(),
            ingest_keys_dir: full.ingest_keys_dir.clone(),
            tls_cert_file: full.tls_cert_file.clone(),
            tls_key_file: full.tls_key_file.clone(),
            tls_allow_tls12: Some(true),
            ingest_tls_cert_file: full.ingest_tls_cert_file.clone(),
            ingest_tls_key_file: full.ingest_tls_key_file.clone(),
            ingest_client_ca_file: full.ingest_client_ca_file.clone(),
            pool_capacity_bytes: Some(1),
            pool_low_watermark_bytes: Some(1),
            max_wait_ms: Some(1),
            stream_max_wait_ms: Some(1),
            freshness_window_ms: Some(1),
            gateway_id: Some("g".into()),
            max_future_skew_ms: Some(1),
            max_chunk_bytes: Some(1),
            replay_max_streams: Some(1),
            ingest_max_buffered_bytes: Some(1),
            ingest_max_connections: Some(1),
            shutdown_grace_ms: Some(1),
            max_connections: Some(1),
            max_streams_per_connection: Some(1),
            idle_timeout_ms: Some(1),
            metrics_listen_addr: Some(String::new()),
            metrics_key_label: Some(KeyLabel::Digest),
            send_timeout_ms: Some(1),
            max_undelivered_bytes_per_connection: Some(1),
            ingest_stale_after_ms: Some(1),
            log_format: Some(LogFormat::Json),
            log_filter: Some("x".into()),
        };
        assert_eq!(keys_of(&flags), listed, "every config key has a flag");
    }

    /// An environment layer that reads nothing.
    fn no_env() -> Env {
        Env::prefixed("ENTROPY_TEST_UNUSED_").only(&[])
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn environment_overrides_file_and_ignores_unrelated_entropy_vars() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("g.toml", "max_wait_ms = 500\nmax_chunk_bytes = 4096\n")?;
            jail.set_env("ENTROPY_MAX_WAIT_MS", "900");
            // Variables of other programs (the CLI, dev mode) must not trip unknown-key errors.
            jail.set_env("ENTROPY_API_KEY", "not-a-gateway-key");
            jail.set_env("ENTROPY_DEV_API_KEY", "x");
            let flags = ConfigFlags::default();
            let c = load(Some(std::path::Path::new("g.toml")), true, &flags).expect("valid");
            assert_eq!((c.max_wait_ms, c.max_chunk_bytes), (900, 4096));

            jail.set_env("ENTROPY_POOL_CAPACITY_BYTES", "many");
            let err = load(None, true, &flags).expect_err("bad env value");
            assert_eq!(err.key, "pool_capacity_bytes");
            assert!(err.problem.contains("ENTROPY_POOL_CAPACITY_BYTES"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn layers_apply_in_order_and_errors_name_the_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("gateway.toml");
        std::fs::write(&file, "pool_capacity_bytes = 2097152\nmax_wait_ms = 500\n").expect("w");
        let flags = ConfigFlags { max_wait_ms: Some(700), ..ConfigFlags::default() };
        let c = load_with_env(Some(&file), true, &flags, no_env()).expect("valid");
        assert_eq!(c.pool_capacity_bytes, 2 << 20, "file overrides default");
        assert_eq!(c.max_wait_ms, 700, "flag overrides file");
        assert_eq!(c.listen_addr, SocketAddr::from(([127, 0, 0, 1], 50051)), "dev default");

        std::fs::write(&file, "pool_capacity_bytes = \"lots\"\n").expect("w");
        let err = load_with_env(Some(&file), true, &ConfigFlags::default(), no_env())
            .expect_err("bad type");
        assert_eq!(err.key, "pool_capacity_bytes", "{err}");

        std::fs::write(&file, "pool_capacity = 5\n").expect("w");
        let err = load_with_env(Some(&file), true, &ConfigFlags::default(), no_env())
            .expect_err("unknown key");
        assert!(err.to_string().contains("pool_capacity"), "{err}");
    }

    #[test]
    fn the_example_config_lists_every_key_and_loads() {
        let path =
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/gateway.example.toml"));
        let text = std::fs::read_to_string(path).expect("example config");
        let table: toml::Table = text.parse().expect("toml");
        let mut keys: Vec<_> = table.keys().cloned().collect();
        keys.sort();
        let mut listed: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
        listed.sort();
        assert_eq!(keys, listed, "the example shows every key");
        let c = load_with_env(Some(path), false, &ConfigFlags::default(), no_env()).expect("valid");
        assert!(c.tls_cert_file.is_some() && c.ingest_client_ca_file.is_some(), "TLS is shown set");
        assert_eq!(
            GatewayConfig {
                api_keys_file: None,
                ingest_keys_dir: None,
                tls_cert_file: None,
                tls_key_file: None,
                ingest_tls_cert_file: None,
                ingest_tls_key_file: None,
                ingest_client_ca_file: None,
                gateway_id: String::new(),
                ..c
            },
            GatewayConfig::default(),
            "the example shows the defaults"
        );
    }

    #[test]
    fn validation_names_the_key_and_bound() {
        let flags = ConfigFlags { pool_capacity_bytes: Some(1000), ..ConfigFlags::default() };
        let err = load_with_env(None, true, &flags, no_env()).expect_err("too small");
        assert_eq!(err.key, "pool_capacity_bytes");
        assert!(err.problem.contains("1048576"), "{err}");

        let err = load_with_env(None, false, &ConfigFlags::default(), no_env())
            .expect_err("a gateway id is required outside dev");
        assert_eq!(err.key, "gateway_id");
        let named = ConfigFlags { gateway_id: Some("gw-1".into()), ..ConfigFlags::default() };
        let err =
            load_with_env(None, false, &named, no_env()).expect_err("keys required outside dev");
        assert_eq!(err.key, "api_keys_file");
        let bad = ConfigFlags { gateway_id: Some("gw 1".into()), ..ConfigFlags::default() };
        let err = load_with_env(None, false, &bad, no_env()).expect_err("a space is not allowed");
        assert_eq!(err.key, "gateway_id");
    }
}
