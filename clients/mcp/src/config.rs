//! The MCP server's configuration: one typed struct, layered, validated before anything binds.
//!
//! Layers, later ones winning: built-in defaults, the TOML file given with `--config`,
//! `ENTROPY_<KEY>` environment variables, then `--<key>` flags. A bad value in any layer is
//! reported with the key that holds it; `main` exits 64 (EX_USAGE) on it.
//!
//! No secret is a config key, so the config can be printed whole: the gateway key comes from
//! the `ENTROPY_API_KEY` environment variable or the file named by `gateway_api_key_file` (never
//! a flag value, which other users can read in the process list), and the HTTP tokens file
//! holds only SHA-256 digests. An endpoint URL carrying credentials is refused.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// The environment variable that may hold the gateway API key (the `entropy` CLI reads it too).
pub const API_KEY_ENV: &str = "ENTROPY_API_KEY";

/// Longest gateway key accepted (the gateway's own bound).
const MAX_API_KEY_BYTES: usize = 512;

/// Every setting of the MCP server. Field names are the config keys; see the README.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// How agents reach this server: "stdio" (a child process of a desktop agent) or "http"
    /// (Streamable HTTP, for remote agents).
    pub transport: Transport,
    /// The gateway's gRPC address, `http://host:port` or `https://host:port`.
    pub gateway_endpoint: String,
    /// File holding the gateway API key (one line). Unset: the key comes from ENTROPY_API_KEY.
    pub gateway_api_key_file: Option<PathBuf>,
    /// PEM CA certificates to trust for an `https://` gateway (default: the web PKI roots).
    pub gateway_ca_file: Option<PathBuf>,
    /// Deadline of each gateway call, connecting included.
    pub gateway_timeout_ms: u64,
    /// Address of the HTTP transport. Loopback by default; any other address needs TLS (or
    /// `http_allow_plaintext_non_loopback`) and its host names in `http_allowed_hosts`.
    pub http_listen_addr: SocketAddr,
    /// TOML file of accepted bearer tokens, as SHA-256 digests. Required for "http".
    pub http_tokens_file: Option<PathBuf>,
    /// `Host` header values accepted (names or name:port): DNS-rebinding protection.
    pub http_allowed_hosts: Vec<String>,
    /// Browser origins (`https://app.example:443`, `http://localhost:*`) allowed to call; a
    /// request with any other `Origin` header is refused. Requests without one (non-browser
    /// clients) are not affected.
    pub http_allowed_origins: Vec<String>,
    /// PEM certificate chain for TLS on the HTTP transport (with `http_tls_key_file`).
    pub http_tls_cert_file: Option<PathBuf>,
    /// PEM private key for TLS on the HTTP transport.
    pub http_tls_key_file: Option<PathBuf>,
    /// Serve plain HTTP on a non-loopback address (behind a TLS-terminating proxy only).
    pub http_allow_plaintext_non_loopback: bool,
    /// Most MCP sessions open at once; further `initialize` requests get 503.
    pub http_max_sessions: usize,
    /// Most HTTP requests in progress at once; further requests get 503.
    pub http_max_concurrent_requests: usize,
    /// Largest request body; larger ones get 413.
    pub http_max_body_bytes: usize,
    /// A session without any request for this long is closed.
    pub http_session_idle_timeout_ms: u64,
    /// On SIGTERM/SIGINT, how long requests in progress get to finish.
    pub shutdown_grace_ms: u64,
    /// Log line format: "text" or "json" (always on stderr: stdout is the stdio transport).
    pub log_format: LogFormat,
    /// Log filter in `tracing` EnvFilter syntax.
    pub log_filter: String,
}

/// The transport agents use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// JSON-RPC lines on stdin/stdout.
    Stdio,
    /// MCP Streamable HTTP.
    Http,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Every config key, for environment variable lookup (`ENTROPY_` + upper case).
pub const KEYS: &[&str] = &[
    "transport",
    "gateway_endpoint",
    "gateway_api_key_file",
    "gateway_ca_file",
    "gateway_timeout_ms",
    "http_listen_addr",
    "http_tokens_file",
    "http_allowed_hosts",
    "http_allowed_origins",
    "http_tls_cert_file",
    "http_tls_key_file",
    "http_allow_plaintext_non_loopback",
    "http_max_sessions",
    "http_max_concurrent_requests",
    "http_max_body_bytes",
    "http_session_idle_timeout_ms",
    "shutdown_grace_ms",
    "log_format",
    "log_filter",
];

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            transport: Transport::Stdio,
            gateway_endpoint: "http://127.0.0.1:50051".into(),
            gateway_api_key_file: None,
            gateway_ca_file: None,
            gateway_timeout_ms: 10_000,
            http_listen_addr: SocketAddr::from(([127, 0, 0, 1], 8787)),
            http_tokens_file: None,
            http_allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            http_allowed_origins: Vec::new(),
            http_tls_cert_file: None,
            http_tls_key_file: None,
            http_allow_plaintext_non_loopback: false,
            http_max_sessions: 64,
            http_max_concurrent_requests: 64,
            http_max_body_bytes: 1 << 20,
            http_session_idle_timeout_ms: 300_000,
            shutdown_grace_ms: 5_000,
            log_format: LogFormat::Text,
            log_filter: "info".into(),
        }
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

fn bad<T>(key: &str, problem: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError { key: key.into(), problem: problem.into() })
}

impl McpConfig {
    /// Deadline of each gateway call.
    pub fn gateway_timeout(&self) -> Duration {
        Duration::from_millis(self.gateway_timeout_ms)
    }

    /// How long an idle HTTP session lives.
    pub fn session_idle_timeout(&self) -> Duration {
        Duration::from_millis(self.http_session_idle_timeout_ms)
    }

    /// Grace period on shutdown.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }

    /// Checks bounds and relations between keys that types alone cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let endpoint = self.gateway_endpoint.as_str();
        let Some(rest) =
            endpoint.strip_prefix("http://").or_else(|| endpoint.strip_prefix("https://"))
        else {
            return bad(
                "gateway_endpoint",
                format!("{endpoint:?} must start with http:// or https://"),
            );
        };
        if rest.split('/').next().is_some_and(|authority| authority.contains('@'))
            || rest.contains('?')
        {
            return bad(
                "gateway_endpoint",
                format!(
                    "must not carry credentials or a query; the key goes in {API_KEY_ENV} or \
                     gateway_api_key_file"
                ),
            );
        }
        if self.gateway_ca_file.is_some() && !endpoint.starts_with("https://") {
            return bad("gateway_ca_file", "applies only to an https:// gateway_endpoint");
        }
        if !(1..=600_000).contains(&self.gateway_timeout_ms) {
            return bad(
                "gateway_timeout_ms",
                format!("{} must be 1..=600000", self.gateway_timeout_ms),
            );
        }
        let ranges: [(&str, usize, usize, usize); 3] = [
            ("http_max_sessions", self.http_max_sessions, 1, 100_000),
            ("http_max_concurrent_requests", self.http_max_concurrent_requests, 1, 100_000),
            ("http_max_body_bytes", self.http_max_body_bytes, 1_024, 16 << 20),
        ];
        for (key, value, low, high) in ranges {
            if !(low..=high).contains(&value) {
                return bad(key, format!("{value} must be {low}..={high}"));
            }
        }
        if !(1_000..=86_400_000).contains(&self.http_session_idle_timeout_ms) {
            return bad(
                "http_session_idle_timeout_ms",
                format!("{} must be 1000..=86400000", self.http_session_idle_timeout_ms),
            );
        }
        if self.shutdown_grace_ms > 600_000 {
            return bad("shutdown_grace_ms", "must be at most 600000");
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log_filter).is_err() {
            return bad("log_filter", format!("{:?} is not a valid filter", self.log_filter));
        }
        if self.http_tls_cert_file.is_some() != self.http_tls_key_file.is_some() {
            return bad(
                "http_tls_key_file",
                "http_tls_cert_file and http_tls_key_file go together",
            );
        }
        if self.http_allowed_hosts.is_empty() {
            return bad("http_allowed_hosts", "must list at least one host name");
        }
        for origin in &self.http_allowed_origins {
            let shape = origin == "null"
                || ["http://", "https://"].iter().any(|s| {
                    origin.strip_prefix(s).is_some_and(|h| !h.is_empty() && !h.contains('/'))
                });
            if !shape {
                return bad(
                    "http_allowed_origins",
                    format!(
                        "{origin:?} is not an origin like \"https://app.example:443\", \
                         \"http://localhost:*\" or \"null\""
                    ),
                );
            }
        }
        if self.transport == Transport::Http {
            if self.http_tokens_file.is_none() {
                return bad("http_tokens_file", "required for transport \"http\"");
            }
            let ip = self.http_listen_addr.ip();
            if !ip.is_loopback() {
                if self.http_tls_cert_file.is_none() && !self.http_allow_plaintext_non_loopback {
                    return bad(
                        "http_listen_addr",
                        format!(
                            "{ip} is not loopback: bearer tokens would cross the network in \
                             plain text; set http_tls_cert_file and http_tls_key_file (or \
                             http_allow_plaintext_non_loopback behind a TLS proxy)"
                        ),
                    );
                }
                if self.http_allowed_hosts == Self::default().http_allowed_hosts {
                    return bad(
                        "http_allowed_hosts",
                        format!(
                            "only loopback names are listed, but http_listen_addr {ip} is not \
                             loopback: list the host names clients use to reach this server"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

/// Reads the gateway key: from `gateway_api_key_file`, else from `env_key` (the value of
/// ENTROPY_API_KEY). Exactly one must be set; the key must be printable ASCII.
pub fn gateway_key(config: &McpConfig, env_key: Option<String>) -> Result<String, ConfigError> {
    let key = match (&config.gateway_api_key_file, env_key) {
        (Some(_), Some(_)) => {
            return bad(
                "gateway_api_key_file",
                format!("both it and {API_KEY_ENV} are set; use one"),
            );
        }
        (Some(path), None) => read_key_file(path)?,
        (None, Some(key)) => key,
        (None, None) => {
            return bad(
                "gateway_api_key_file",
                format!(
                    "no gateway API key: set {API_KEY_ENV} or gateway_api_key_file (never a \
                     flag value)"
                ),
            );
        }
    };
    let ok = !key.is_empty()
        && key.len() <= MAX_API_KEY_BYTES
        && key.bytes().all(|b| b.is_ascii_graphic());
    if !ok {
        let key = if config.gateway_api_key_file.is_some() {
            "gateway_api_key_file"
        } else {
            API_KEY_ENV
        };
        return bad(
            key,
            format!("the key must be 1..={MAX_API_KEY_BYTES} printable ASCII characters"),
        );
    }
    Ok(key)
}

fn read_key_file(path: &Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        key: "gateway_api_key_file".into(),
        problem: format!("cannot read {}: {e}", path.display()),
    })?;
    Ok(text.trim().to_owned())
}

/// `--<key>` flags, one per config key; only those given override the other layers.
#[derive(Debug, Default, Clone, Args, Serialize)]
pub struct ConfigFlags {
    /// stdio or http [default: stdio]
    #[arg(long, value_name = "TRANSPORT")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// Gateway gRPC address [default: http://127.0.0.1:50051]
    #[arg(long, value_name = "URL")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_endpoint: Option<String>,
    /// File holding the gateway API key (else ENTROPY_API_KEY)
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_api_key_file: Option<PathBuf>,
    /// CA (PEM) to trust for an https:// gateway
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_ca_file: Option<PathBuf>,
    /// Deadline of each gateway call, ms [default: 10000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_timeout_ms: Option<u64>,
    /// HTTP transport address [default: 127.0.0.1:8787]
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_listen_addr: Option<SocketAddr>,
    /// Bearer tokens file (TOML, SHA-256 digests); required for http
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_tokens_file: Option<PathBuf>,
    /// Accepted Host names, comma-separated [default: localhost,127.0.0.1,::1]
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_allowed_hosts: Option<Vec<String>>,
    /// Allowed browser origins, comma-separated [default: none]
    #[arg(long, value_name = "ORIGINS", value_delimiter = ',')]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_allowed_origins: Option<Vec<String>>,
    /// TLS certificate chain (PEM) for the HTTP transport
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_tls_cert_file: Option<PathBuf>,
    /// TLS private key (PEM) for the HTTP transport
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_tls_key_file: Option<PathBuf>,
    /// Plain HTTP on a non-loopback address (behind a TLS proxy) [default: false]
    #[arg(long, value_name = "BOOL")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_allow_plaintext_non_loopback: Option<bool>,
    /// Most open MCP sessions [default: 64]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_max_sessions: Option<usize>,
    /// Most HTTP requests in progress [default: 64]
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_max_concurrent_requests: Option<usize>,
    /// Largest request body, bytes [default: 1048576]
    #[arg(long, value_name = "BYTES")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_max_body_bytes: Option<usize>,
    /// Close sessions idle this long, ms [default: 300000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_session_idle_timeout_ms: Option<u64>,
    /// Shutdown grace period, ms [default: 5000]
    #[arg(long, value_name = "MS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_ms: Option<u64>,
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
pub fn load(file: Option<&Path>, flags: &ConfigFlags) -> Result<McpConfig, ConfigError> {
    load_with_env(file, flags, Env::prefixed("ENTROPY_").only(KEYS))
}

/// [`load`] with the environment given (tests use an `Env` that reads nothing).
pub fn load_with_env(
    file: Option<&Path>,
    flags: &ConfigFlags,
    env: Env,
) -> Result<McpConfig, ConfigError> {
    let mut figment = Figment::from(Serialized::defaults(McpConfig::default()));
    if let Some(path) = file {
        if !path.is_file() {
            return bad("--config", format!("{} is not a readable file", path.display()));
        }
        figment = figment.merge(Toml::file_exact(path));
    }
    let config: McpConfig =
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
    config.validate()?;
    Ok(config)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
