//! The collector's configuration: a TOML file with `[[source]]` and `[[gateway]]` tables.
//!
//! Scalar keys can be overridden by `ENTROPY_<KEY>` environment variables and then by
//! `--<key>` flags ([`ConfigFlags`]). Everything is validated before the collector reads a
//! byte; `main` exits 64 naming the bad key.
//! `collector/collector.example.toml` documents every key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use entropy_proto::v1::SourceKind;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::mixing::Scheme;
use crate::tls::TrustAnchor;

/// Everything the collector needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorConfig {
    /// Names this collector to the gateway (1..=64 printable characters).
    pub collector_id: String,
    /// Bytes per chunk (each source is read this much per round).
    #[serde(default = "defaults::chunk_bytes")]
    pub chunk_bytes: usize,
    /// How sources are combined: "none" (exactly one source), "xor" or "hkdf".
    #[serde(default = "defaults::mixing")]
    pub mixing: Scheme,
    /// Fewest healthy sources a chunk needs; with fewer, nothing is published.
    #[serde(default = "defaults::min_sources")]
    pub min_sources: usize,
    /// Signed chunks that may wait for a gateway; when full, sources are not read.
    #[serde(default = "defaults::buffer_chunks")]
    pub buffer_chunks: usize,
    /// Health tests' false-alarm probability is 2^-alpha_log2.
    #[serde(default = "defaults::alpha_log2")]
    pub alpha_log2: u32,
    /// Longest one source read may take before the source counts as unreachable.
    #[serde(default = "defaults::read_timeout_ms")]
    pub read_timeout_ms: u64,
    /// MAC key id, as named on the gateway (`<key_id>.key` in its ingest_keys_dir).
    pub key_id: String,
    /// File holding the MAC secret as hex (at least 32 bytes).
    pub key_file: PathBuf,
    /// On SIGTERM, how long already signed chunks may take to be delivered.
    #[serde(default = "defaults::shutdown_grace_ms")]
    pub shutdown_grace_ms: u64,
    /// HTTP address of `/metrics`, `/healthz` and `/readyz`; "" turns the endpoint off.
    #[serde(default = "defaults::metrics_listen_addr")]
    pub metrics_listen_addr: String,
    /// Log format: "text" or "json".
    #[serde(default = "defaults::log_format")]
    pub log_format: String,
    /// Log filter (tracing EnvFilter syntax).
    #[serde(default = "defaults::log_filter")]
    pub log_filter: String,
    /// Gateways to publish to; each chunk goes to exactly one of them.
    pub gateway: Vec<GatewayConfig>,
    /// Entropy sources.
    pub source: Vec<SourceConfig>,
}

/// One gateway's ingest endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// The gateway's `gateway_id` (its config): chunks are sealed for it, and no other gateway
    /// accepts them. 1..=64 characters of [A-Za-z0-9._-].
    pub id: String,
    /// `http://host:50052`, or `https://host:50052` for TLS.
    pub endpoint: String,
    /// https: PEM CA certificate(s) to trust for the gateway (default: web PKI roots).
    pub ca_file: Option<PathBuf>,
    /// https: PEM client certificate to present (mTLS), with `client_key_file`.
    pub client_cert_file: Option<PathBuf>,
    /// https: PEM private key of the client certificate.
    pub client_key_file: Option<PathBuf>,
}

impl GatewayConfig {
    /// The tonic endpoint, with TLS (and a client identity for mTLS) for https:// URLs.
    pub fn endpoint(&self) -> Result<tonic::transport::Endpoint, ConfigError> {
        let bad = |problem: String| ConfigError { key: "gateway.endpoint".into(), problem };
        let endpoint = tonic::transport::Endpoint::from_shared(self.endpoint.clone())
            .map_err(|e| bad(format!("{:?}: {e}", self.endpoint)))?;
        if !self.endpoint.starts_with("https://") {
            return Ok(endpoint);
        }
        let read =
            |path: &Path| std::fs::read(path).map_err(|e| bad(format!("{}: {e}", path.display())));
        let mut tls = tonic::transport::ClientTlsConfig::new();
        tls = match &self.ca_file {
            Some(ca) => tls.ca_certificate(tonic::transport::Certificate::from_pem(read(ca)?)),
            None => tls.with_webpki_roots(),
        };
        if let (Some(cert), Some(key)) = (&self.client_cert_file, &self.client_key_file) {
            tls = tls.identity(tonic::transport::Identity::from_pem(read(cert)?, read(key)?));
        }
        endpoint.tls_config(tls).map_err(|e| bad(e.to_string()))
    }
}

/// Which kind of source a `[[source]]` table describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// A Quantis appliance over HTTPS.
    Quantis,
    /// A device file.
    Device,
    /// The OS CSPRNG.
    Os,
}

/// Kind label of a device source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// A quantum device (Quantis PCIe/USB).
    Quantum,
    /// Any other hardware noise source.
    Hardware,
}

/// One `[[source]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Unique name (1..=64 characters of [A-Za-z0-9._-]).
    pub name: String,
    /// "quantis", "device" or "os".
    #[serde(rename = "type")]
    pub source_type: SourceType,
    /// Claimed min-entropy per byte (0 < H ≤ 8); sets the health test cutoffs.
    #[serde(default = "defaults::min_entropy")]
    pub min_entropy_per_byte: f64,
    /// quantis: base URL, e.g. "https://10.0.0.5".
    pub url: Option<String>,
    /// quantis: PEM file of the CA (or self-signed certificate) to trust.
    pub ca_file: Option<PathBuf>,
    /// quantis: SHA-256 (hex) of the one certificate to accept, instead of a CA.
    pub pinned_cert_sha256: Option<String>,
    /// quantis: allow plain http:// (simulators on loopback only).
    #[serde(default)]
    pub allow_http: bool,
    /// quantis: timeout of one HTTP request.
    #[serde(default = "defaults::request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// quantis: attempts per read.
    #[serde(default = "defaults::attempts")]
    pub attempts: u32,
    /// device: path of the device or FIFO.
    pub path: Option<PathBuf>,
    /// device: "quantum" or "hardware".
    pub kind: Option<DeviceKind>,
}

mod defaults {
    use crate::mixing::Scheme;
    pub fn chunk_bytes() -> usize {
        64 << 10
    }
    pub fn mixing() -> Scheme {
        Scheme::Xor
    }
    pub fn min_sources() -> usize {
        1
    }
    pub fn buffer_chunks() -> usize {
        16
    }
    pub fn alpha_log2() -> u32 {
        40
    }
    pub fn read_timeout_ms() -> u64 {
        30_000
    }
    pub fn shutdown_grace_ms() -> u64 {
        10_000
    }
    pub fn metrics_listen_addr() -> String {
        "0.0.0.0:9464".into()
    }
    pub fn log_format() -> String {
        "text".into()
    }
    pub fn log_filter() -> String {
        "info".into()
    }
    pub fn min_entropy() -> f64 {
        7.0
    }
    pub fn request_timeout_ms() -> u64 {
        5_000
    }
    pub fn attempts() -> u32 {
        3
    }
}

/// Scalar keys that `ENTROPY_<KEY>` may override.
pub const ENV_KEYS: &[&str] = &[
    "collector_id",
    "chunk_bytes",
    "mixing",
    "min_sources",
    "buffer_chunks",
    "alpha_log2",
    "read_timeout_ms",
    "key_id",
    "key_file",
    "shutdown_grace_ms",
    "metrics_listen_addr",
    "log_format",
    "log_filter",
];

/// A config value that is missing, malformed, or inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config key {key}: {problem}")]
pub struct ConfigError {
    /// The key at fault (`source[1].url`, say).
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

/// `url` with its user, password and query replaced by `REDACTED` (unchanged if it does not
/// parse: validation reports that).
fn redact_url(url: &str) -> String {
    const HIDDEN: &str = "REDACTED";
    let Ok(mut parsed) = reqwest::Url::parse(url) else { return url.to_owned() };
    if !parsed.username().is_empty() {
        let _ = parsed.set_username(HIDDEN);
    }
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some(HIDDEN));
    }
    if parsed.query().is_some() {
        parsed.set_query(Some(HIDDEN));
    }
    parsed.to_string()
}

fn bad<T>(key: impl Into<String>, problem: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError { key: key.into(), problem: problem.into() })
}

/// Command-line overrides of the scalar keys (`--<key>`), applied after the file and the
/// environment. Each help text's `[default: ...]` is checked against the code by
/// `collector/tests/config_reference.rs`.
#[derive(Debug, Default, Clone, clap::Args, Serialize)]
pub struct ConfigFlags {
    /// Name of this collector, as the gateway reports it
    #[arg(long, value_name = "ID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collector_id: Option<String>,
    /// Bytes per chunk; each source is read this much per round [default: 65536]
    #[arg(long, value_name = "BYTES")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<usize>,
    /// How healthy sources are combined: none, xor or hkdf [default: xor]
    #[arg(long, value_name = "SCHEME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixing: Option<String>,
    /// Fewest healthy sources a chunk needs [default: 1]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_sources: Option<usize>,
    /// Signed chunks that may wait for a gateway [default: 16]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_chunks: Option<usize>,
    /// Health tests' false-alarm probability is 2^-alpha_log2 [default: 40]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha_log2: Option<u32>,
    /// Longest one source read may take, ms [default: 30000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_timeout_ms: Option<u64>,
    /// MAC key id, as named on the gateway
    #[arg(long, value_name = "ID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// File holding the MAC secret as hex (at least 32 bytes)
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// On SIGTERM, how long signed chunks may take to be delivered, ms [default: 10000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_ms: Option<u64>,
    /// Metrics/health HTTP address, "" for none [default: 0.0.0.0:9464]
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_listen_addr: Option<String>,
    /// Log format: text or json [default: text]
    #[arg(long, value_name = "FORMAT")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<String>,
    /// Log filter (tracing EnvFilter syntax) [default: info]
    #[arg(long, value_name = "FILTER")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_filter: Option<String>,
}

impl CollectorConfig {
    /// Loads `path`, applies `ENTROPY_*` overrides and then `flags`, validates.
    pub fn load(path: &Path, flags: &ConfigFlags) -> Result<Self, ConfigError> {
        if !path.is_file() {
            return bad("--config", format!("{} is not a readable file", path.display()));
        }
        let config: Self = Figment::from(Toml::file_exact(path))
            .merge(Env::prefixed("ENTROPY_").only(ENV_KEYS))
            .merge(Serialized::defaults(flags))
            .extract()
            .map_err(|e| ConfigError { key: e.path.join("."), problem: e.kind.to_string() })?;
        config.validate()?;
        Ok(config)
    }

    /// A copy fit to print: credentials and query strings in URLs (gateway endpoints, source
    /// URLs) are replaced by `REDACTED`. Secrets themselves never appear in the config: it holds
    /// only the paths of key and certificate files.
    pub fn redacted(&self) -> Self {
        let mut copy = self.clone();
        for gateway in &mut copy.gateway {
            gateway.endpoint = redact_url(&gateway.endpoint);
        }
        for source in &mut copy.source {
            source.url = source.url.as_deref().map(redact_url);
        }
        copy
    }

    /// Checks every key and the relations between them.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let id_ok = |s: &str| {
            (1..=64).contains(&s.len())
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        };
        if !id_ok(&self.collector_id) {
            return bad("collector_id", "must be 1..=64 characters of [A-Za-z0-9._-]");
        }
        if !id_ok(&self.key_id) {
            return bad("key_id", "must be 1..=64 characters of [A-Za-z0-9._-]");
        }
        if !(1..=(16 << 20)).contains(&self.chunk_bytes) {
            return bad("chunk_bytes", format!("{} must be 1..=16777216", self.chunk_bytes));
        }
        if !(1..=4096).contains(&self.buffer_chunks) {
            return bad("buffer_chunks", format!("{} must be 1..=4096", self.buffer_chunks));
        }
        if !(20..=64).contains(&self.alpha_log2) {
            return bad("alpha_log2", format!("{} must be 20..=64", self.alpha_log2));
        }
        if self.read_timeout_ms == 0 {
            return bad("read_timeout_ms", "must be at least 1");
        }
        if !self.metrics_listen_addr.is_empty()
            && self.metrics_listen_addr.parse::<std::net::SocketAddr>().is_err()
        {
            return bad(
                "metrics_listen_addr",
                format!(
                    "{:?} is not an address like 0.0.0.0:9464 (\"\" turns the endpoint off)",
                    self.metrics_listen_addr
                ),
            );
        }
        if !["text", "json"].contains(&self.log_format.as_str()) {
            return bad("log_format", "must be \"text\" or \"json\"");
        }
        if self.gateway.is_empty() {
            return bad("gateway", "at least one [[gateway]] is needed");
        }
        for (i, g) in self.gateway.iter().enumerate() {
            if !id_ok(&g.id) {
                return bad(
                    format!("gateway[{i}].id"),
                    "must be 1..=64 characters of [A-Za-z0-9._-]: the gateway_id of that gateway",
                );
            }
            if self.gateway[..i].iter().any(|other| other.id == g.id) {
                return bad(format!("gateway[{i}].id"), format!("{:?} is used twice", g.id));
            }
            if g.client_cert_file.is_some() != g.client_key_file.is_some() {
                return bad(
                    format!("gateway[{i}].client_key_file"),
                    "client_cert_file and client_key_file go together",
                );
            }
            if !g.endpoint.starts_with("https://")
                && (g.ca_file.is_some() || g.client_cert_file.is_some())
            {
                return bad(
                    format!("gateway[{i}].endpoint"),
                    "TLS settings need an https:// endpoint",
                );
            }
            if tonic::transport::Endpoint::from_shared(g.endpoint.clone()).is_err() {
                return bad(
                    format!("gateway[{i}].endpoint"),
                    format!("{:?} is not a URL", g.endpoint),
                );
            }
        }
        if self.source.is_empty() {
            return bad("source", "at least one [[source]] is needed");
        }
        if !(1..=self.source.len()).contains(&self.min_sources) {
            return bad(
                "min_sources",
                format!(
                    "{} must be 1..={} (the number of sources)",
                    self.min_sources,
                    self.source.len()
                ),
            );
        }
        if self.mixing == Scheme::None && self.source.len() != 1 {
            return bad("mixing", "\"none\" takes exactly one source; use \"xor\" or \"hkdf\"");
        }
        for (i, s) in self.source.iter().enumerate() {
            let key = |k: &str| format!("source[{i}].{k}");
            if !id_ok(&s.name) {
                return bad(key("name"), "must be 1..=64 characters of [A-Za-z0-9._-]");
            }
            if self.source[..i].iter().any(|o| o.name == s.name) {
                return bad(key("name"), format!("{:?} is used twice", s.name));
            }
            if !(s.min_entropy_per_byte > 0.0 && s.min_entropy_per_byte <= 8.0) {
                return bad(key("min_entropy_per_byte"), "must be in (0, 8]");
            }
            match s.source_type {
                SourceType::Quantis => {
                    if s.url.is_none() {
                        return bad(key("url"), "required for a quantis source");
                    }
                    if s.ca_file.is_some() && s.pinned_cert_sha256.is_some() {
                        return bad(
                            key("pinned_cert_sha256"),
                            "give ca_file or pinned_cert_sha256, not both",
                        );
                    }
                    if let Some(pin) = &s.pinned_cert_sha256
                        && parse_pin(pin).is_none()
                    {
                        return bad(key("pinned_cert_sha256"), "must be 64 hex digits");
                    }
                    if s.attempts == 0 {
                        return bad(key("attempts"), "must be at least 1");
                    }
                }
                SourceType::Device => {
                    if s.path.is_none() {
                        return bad(key("path"), "required for a device source");
                    }
                    if s.kind.is_none() {
                        return bad(
                            key("kind"),
                            "required for a device source: \"quantum\" or \"hardware\"",
                        );
                    }
                }
                SourceType::Os => {}
            }
        }
        Ok(())
    }

    /// The metrics endpoint's address, or `None` when it is off (`validate` checked it).
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics_listen_addr.parse().ok()
    }

    /// Shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }

    /// Source read timeout.
    pub fn read_timeout(&self) -> Duration {
        Duration::from_millis(self.read_timeout_ms)
    }
}

impl SourceConfig {
    /// How a quantis source's certificate is trusted.
    pub fn trust(&self) -> TrustAnchor {
        match (&self.ca_file, self.pinned_cert_sha256.as_deref().and_then(parse_pin)) {
            (Some(ca), _) => TrustAnchor::CaFile(ca.clone()),
            (None, Some(pin)) => TrustAnchor::Pinned(pin),
            (None, None) => TrustAnchor::WebPki,
        }
    }

    /// The kind a device source is labelled with.
    pub fn device_kind(&self) -> SourceKind {
        match self.kind {
            Some(DeviceKind::Quantum) => SourceKind::Quantum,
            _ => SourceKind::Hardware,
        }
    }
}

fn parse_pin(hex_text: &str) -> Option<[u8; 32]> {
    let cleaned: String = hex_text.chars().filter(|c| *c != ':').collect();
    hex::decode(cleaned).ok()?.try_into().ok()
}

/// Reads a hex secret (at least 32 bytes) from `path`.
pub fn read_key_file(path: &Path) -> Result<Vec<u8>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        key: "key_file".into(),
        problem: format!("{}: {e}", path.display()),
    })?;
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let key = hex::decode(compact).map_err(|_| ConfigError {
        key: "key_file".into(),
        problem: "expected the secret as hex".into(),
    })?;
    if key.len() < 32 {
        return bad("key_file", format!("secret is {} bytes, at least 32 needed", key.len()));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
collector_id = "c1"
key_id = "k1"
key_file = "/run/secrets/k1.key"
mixing = "xor"
min_sources = 1

[[gateway]]
id = "gw-1"
endpoint = "http://127.0.0.1:50052"

[[source]]
name = "quantis-a"
type = "quantis"
url = "https://10.0.0.5"
pinned_cert_sha256 = "0000000000000000000000000000000000000000000000000000000000000000"

[[source]]
name = "hwrng"
type = "device"
path = "/dev/hwrng"
kind = "hardware"
"#;

    fn parse(text: &str) -> Result<CollectorConfig, ConfigError> {
        let c: CollectorConfig = toml::from_str(text)
            .map_err(|e| ConfigError { key: "(toml)".into(), problem: e.to_string() })?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn a_good_config_parses_with_defaults() {
        let c = parse(GOOD).expect("valid");
        assert_eq!((c.chunk_bytes, c.buffer_chunks, c.alpha_log2), (65536, 16, 40));
        assert_eq!(c.metrics_addr(), Some(([0, 0, 0, 0], 9464).into()));
        assert_eq!(c.source[0].trust(), TrustAnchor::Pinned([0; 32]));
        assert_eq!(c.source[1].device_kind(), SourceKind::Hardware);
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            (GOOD.replace("min_sources = 1", "min_sources = 3"), "min_sources"),
            (GOOD.replace("mixing = \"xor\"", "mixing = \"none\""), "mixing"),
            (GOOD.replace("url = \"https://10.0.0.5\"", ""), "source[0].url"),
            (GOOD.replace("kind = \"hardware\"", ""), "source[1].kind"),
            (GOOD.replace("\"hwrng\"", "\"quantis-a\""), "source[1].name"),
            (
                GOOD.replace(
                    "000000000000000000000000000000000000000000000000000000000000000\"",
                    "zz\"",
                ),
                "source[0].pinned_cert_sha256",
            ),
            (GOOD.replace("http://127.0.0.1:50052", "not a url"), "gateway[0].endpoint"),
            (
                GOOD.replace("min_sources = 1", "min_sources = 1\nmetrics_listen_addr = \"9464\""),
                "metrics_listen_addr",
            ),
        ];
        for (text, key) in cases {
            let err = parse(&text).expect_err(key);
            assert_eq!(err.key, key, "{err}");
        }
    }

    #[test]
    fn the_example_config_is_valid() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/collector.example.toml"))
                .expect("example config");
        parse(&text).expect("example is valid");
    }

    fn table_keys<T: Serialize>(value: &T) -> Vec<String> {
        let table = toml::Table::try_from(value).expect("serializes to a table");
        let mut keys: Vec<String> = table.keys().cloned().collect();
        keys.sort();
        keys
    }

    #[test]
    fn every_scalar_key_has_an_environment_variable_and_a_flag() {
        let config = parse(GOOD).expect("valid");
        let mut scalars: Vec<String> = table_keys(&config);
        scalars.retain(|k| k != "gateway" && k != "source");
        let mut env: Vec<String> = ENV_KEYS.iter().map(|k| k.to_string()).collect();
        env.sort();
        assert_eq!(env, scalars, "ENV_KEYS lists every scalar key");
        let flags = ConfigFlags {
            collector_id: Some("c".into()),
            chunk_bytes: Some(1),
            mixing: Some("xor".into()),
            min_sources: Some(1),
            buffer_chunks: Some(1),
            alpha_log2: Some(1),
            read_timeout_ms: Some(1),
            key_id: Some("k".into()),
            key_file: Some("f".into()),
            shutdown_grace_ms: Some(1),
            metrics_listen_addr: Some(String::new()),
            log_format: Some("json".into()),
            log_filter: Some("x".into()),
        };
        assert_eq!(table_keys(&flags), scalars, "every scalar key has a flag");
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn flags_override_the_environment_which_overrides_the_file() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("c.toml", &GOOD.replace("min_sources = 1", "buffer_chunks = 3"))?;
            jail.set_env("ENTROPY_BUFFER_CHUNKS", "5");
            jail.set_env("ENTROPY_ALPHA_LOG2", "30");
            let flags = ConfigFlags { buffer_chunks: Some(7), ..ConfigFlags::default() };
            let c = CollectorConfig::load(Path::new("c.toml"), &flags).expect("valid");
            assert_eq!((c.buffer_chunks, c.alpha_log2), (7, 30));
            let bad = ConfigFlags { chunk_bytes: Some(0), ..ConfigFlags::default() };
            let err = CollectorConfig::load(Path::new("c.toml"), &bad).expect_err("0 bytes");
            assert_eq!(err.key, "chunk_bytes");
            Ok(())
        });
    }

    #[test]
    fn printing_redacts_credentials_and_queries_in_urls() {
        let text = GOOD
            .replace("https://10.0.0.5", "https://admin:hunter2@10.0.0.5/api?token=s3cret")
            .replace("http://127.0.0.1:50052", "https://user@gw.internal:50052");
        let config = parse(&text).expect("valid");
        let printed = toml::to_string(&config.redacted()).expect("prints");
        for secret in ["hunter2", "admin", "s3cret", "user@"] {
            assert!(!printed.contains(secret), "{secret} leaked:\n{printed}");
        }
        assert!(printed.contains("https://REDACTED:REDACTED@10.0.0.5/api?REDACTED"), "{printed}");
        assert!(printed.contains("https://REDACTED@gw.internal:50052"), "{printed}");
        // Nothing else changes.
        assert_eq!(config.redacted().source[1], config.source[1]);
    }
}
