//! Every collector config key, declared once: the scalar keys with their type, default, flag,
//! unit and meaning, then the two lists of tables. The struct, its `Default`, the `--<key>`
//! flags, [`KEYS`] and [`KEY_DOCS`] (docs/config.md) come from here
//! (`entropy_ops::config_keys!`).

use std::net::SocketAddr;
use std::path::PathBuf;

use entropy_ops::LogFormat;

use super::{GatewayConfig, SourceConfig};
use crate::mixing::Scheme;

entropy_ops::config_keys! {
    /// Everything the collector needs.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct CollectorConfig;
    /// Command-line overrides of the scalar keys (`--<key>`), applied after the file and the
    /// environment.
    pub struct ConfigFlags;
    keys {
        /// Names this collector to the gateway (1..=64 characters of [A-Za-z0-9._-]); required.
        collector_id: String = String::new(),
            flag(String, "ID"), unit("1..=64 of `[A-Za-z0-9._-]`"),
            help("Name of this collector, as the gateway reports it");
        /// Bytes per chunk (each source is read this much per round).
        chunk_bytes: usize = 64 << 10,
            flag(usize, "BYTES"), unit("bytes"),
            help("Bytes per chunk; each source is read this much per round");
        /// How sources are combined: "none" (exactly one source), "xor" or "hkdf".
        mixing: Scheme = Scheme::Xor,
            flag(String, "SCHEME"), unit("`none`, `xor` or `hkdf`"),
            help("How healthy sources are combined: none, xor or hkdf");
        /// Fewest healthy sources a chunk needs; with fewer, nothing is published.
        min_sources: usize = 1,
            flag(usize, "N"), unit("count"),
            help("Fewest healthy sources a chunk needs");
        /// Signed chunks that may wait for a gateway; when full, sources are not read.
        buffer_chunks: usize = 16,
            flag(usize, "N"), unit("count"),
            help("Signed chunks that may wait for a gateway");
        /// Health tests' false-alarm probability is 2^-alpha_log2.
        alpha_log2: u32 = 40,
            flag(u32, "N"), unit("bits (false alarm 2^-N)"),
            help("Health tests' false-alarm probability is 2^-alpha_log2");
        /// Longest one source read may take before the source counts as unreachable.
        read_timeout_ms: u64 = 30_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("Longest one source read may take, ms");
        /// MAC key id, as named on the gateway (`<key_id>.key` in its ingest_keys_dir);
        /// required.
        key_id: String = String::new(),
            flag(String, "ID"), unit("1..=64 of `[A-Za-z0-9._-]`"),
            help("MAC key id, as named on the gateway");
        /// File holding the MAC secret as hex (at least 32 bytes); required.
        key_file: PathBuf = PathBuf::new(),
            flag(PathBuf, "FILE"), unit("path"),
            help("File holding the MAC secret as hex (at least 32 bytes)");
        /// On SIGTERM, how long already signed chunks may take to be delivered.
        shutdown_grace_ms: u64 = 10_000,
            flag(u64, "MS"), unit("milliseconds"),
            help("On SIGTERM, how long signed chunks may take to be delivered, ms");
        /// HTTP address of `/metrics`, `/healthz` and `/readyz`; "" turns the endpoint off.
        #[serde(with = "entropy_ops::config_keys::optional_addr")]
        metrics_listen_addr: Option<SocketAddr> = Some(SocketAddr::from(([0, 0, 0, 0], 9464))),
            flag(String, "ADDR"), unit("host:port"),
            help("Metrics/health HTTP address, \"\" for none");
        /// Log format: "text" or "json".
        log_format: LogFormat = LogFormat::Text,
            flag(LogFormat, "FORMAT"), unit("`text` or `json`"),
            help("Log format: text or json");
        /// Log filter (tracing EnvFilter syntax).
        log_filter: String = "info".into(),
            flag(String, "FILTER"), unit("EnvFilter directives"),
            help("Log filter (tracing EnvFilter syntax)");
    }
    other {
        /// Gateways to publish to; each chunk goes to exactly one of them.
        gateway: Vec<GatewayConfig> = Vec::new();
        /// Entropy sources.
        source: Vec<SourceConfig> = Vec::new();
    }
}
