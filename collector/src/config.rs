//! The collector's configuration: a TOML file with `[[source]]` and `[[gateway]]` tables.
//!
//! Scalar keys can be overridden by `ENTROPY_<KEY>` environment variables. Everything is
//! validated before the collector reads a byte; `main` exits 64 naming the bad key.
//! `collector/collector.example.toml` documents every key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use entropy_proto::v1::SourceKind;
use figment::Figment;
use figment::providers::{Env, Format, Toml};
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

fn bad<T>(key: impl Into<String>, problem: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError { key: key.into(), problem: problem.into() })
}

impl CollectorConfig {
    /// Loads `path`, applies `ENTROPY_*` overrides, validates.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        if !path.is_file() {
            return bad("--config", format!("{} is not a readable file", path.display()));
        }
        let config: Self = Figment::from(Toml::file_exact(path))
            .merge(Env::prefixed("ENTROPY_").only(ENV_KEYS))
            .extract()
            .map_err(|e| ConfigError { key: e.path.join("."), problem: e.kind.to_string() })?;
        config.validate()?;
        Ok(config)
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
}
