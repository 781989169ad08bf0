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

use std::path::Path;
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// The environment variable that may hold the gateway API key (the `entropy` CLI reads it too).
pub const API_KEY_ENV: &str = "ENTROPY_API_KEY";

/// Longest gateway key accepted (the gateway's own bound).
const MAX_API_KEY_BYTES: usize = 512;

pub use entropy_ops::{ConfigError, LogFormat};
pub use keys::{ConfigFlags, KEY_DOCS, KEYS, McpConfig};

/// The transport agents use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// JSON-RPC lines on stdin/stdout.
    Stdio,
    /// MCP Streamable HTTP.
    Http,
}

fn bad<T>(key: &str, problem: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(key, problem))
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

    /// Time from accept to a complete request head (TLS handshake included).
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.http_header_timeout_ms)
    }

    /// Time a connection may go without an authenticated request in progress.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.http_idle_timeout_ms)
    }

    /// Most sessions one token may hold: the configured share, or a quarter of
    /// `http_max_sessions` (at least 1), so no token can take every session.
    pub fn sessions_per_token(&self) -> usize {
        self.http_max_sessions_per_token.unwrap_or((self.http_max_sessions / 4).max(1))
    }

    /// Grace period on shutdown.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }

    /// Checks bounds and relations between keys that types alone cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let endpoint = self.gateway_endpoint.as_str();
        if endpoint.contains('@') || endpoint.contains('?') {
            return bad(
                "gateway_endpoint",
                format!(
                    "must not carry credentials or a query; the key goes in {API_KEY_ENV} or \
                     gateway_api_key_file"
                ),
            );
        }
        // The syntax every Entropy Diode client shares (clients/README.md).
        entropy_diode_client::Endpoint::parse(endpoint, self.gateway_ca_file.is_some())
            .map_err(|e| ConfigError::new("gateway_endpoint", e.to_string()))?;
        if !(1..=600_000).contains(&self.gateway_timeout_ms) {
            return bad(
                "gateway_timeout_ms",
                format!("{} must be 1..=600000", self.gateway_timeout_ms),
            );
        }
        let ranges: [(&str, usize, usize, usize); 4] = [
            ("http_max_connections", self.http_max_connections, 1, 65_536),
            ("http_max_sessions", self.http_max_sessions, 1, 100_000),
            ("http_max_concurrent_requests", self.http_max_concurrent_requests, 1, 100_000),
            ("http_max_body_bytes", self.http_max_body_bytes, 1_024, 16 << 20),
        ];
        for (key, value, low, high) in ranges {
            if !(low..=high).contains(&value) {
                return bad(key, format!("{value} must be {low}..={high}"));
            }
        }
        if let Some(share) = self.http_max_sessions_per_token
            && !(1..=self.http_max_sessions).contains(&share)
        {
            return bad(
                "http_max_sessions_per_token",
                format!("{share} must be 1..=http_max_sessions ({})", self.http_max_sessions),
            );
        }
        let timeouts: [(&str, u64, u64, u64); 3] = [
            ("http_header_timeout_ms", self.http_header_timeout_ms, 100, 600_000),
            ("http_idle_timeout_ms", self.http_idle_timeout_ms, 1_000, 86_400_000),
            ("http_session_idle_timeout_ms", self.http_session_idle_timeout_ms, 1_000, 86_400_000),
        ];
        for (key, value, low, high) in timeouts {
            if !(low..=high).contains(&value) {
                return bad(key, format!("{value} must be {low}..={high}"));
            }
        }
        if self.shutdown_grace_ms > 600_000 {
            return bad("shutdown_grace_ms", "must be at most 600000");
        }
        entropy_ops::logging::check_filter(&self.log_filter)?;
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
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new("gateway_api_key_file", format!("cannot read {}: {e}", path.display()))
    })?;
    Ok(text.trim().to_owned())
}

/// Builds the effective config from the layers and validates it.
pub fn load(file: Option<&Path>, flags: &ConfigFlags) -> Result<McpConfig, ConfigError> {
    load_with_env(file, flags, [client_env(), Env::prefixed("ENTROPY_").only(KEYS)])
}

/// The variables every client library and the CLI read (clients/README.md), so that one
/// environment points them all at the same gateway: `ENTROPY_ENDPOINT` is `gateway_endpoint`
/// and `ENTROPY_CA_FILE` is `gateway_ca_file`. The server's own names
/// (`ENTROPY_GATEWAY_ENDPOINT`, `ENTROPY_GATEWAY_CA_FILE`) win where both are set.
pub fn client_env() -> Env {
    Env::raw().only(&["ENTROPY_ENDPOINT", "ENTROPY_CA_FILE"]).map(|key| {
        if key == "ENTROPY_ENDPOINT" { "gateway_endpoint".into() } else { "gateway_ca_file".into() }
    })
}

/// [`load`] with the environment given: the client-wide variables, then the server's own,
/// each layer over the one before (tests use `Env`s that read nothing).
pub fn load_with_env(
    file: Option<&Path>,
    flags: &ConfigFlags,
    [client, env]: [Env; 2],
) -> Result<McpConfig, ConfigError> {
    let mut figment = Figment::from(Serialized::defaults(McpConfig::default()));
    if let Some(path) = file {
        if !path.is_file() {
            return bad("--config", format!("{} is not a readable file", path.display()));
        }
        figment = figment.merge(Toml::file_exact(path));
    }
    let config: McpConfig = figment
        .merge(client)
        .merge(env)
        .merge(Serialized::defaults(flags))
        .extract()
        .map_err(|e| ConfigError::from_layered(&e))?;
    config.validate()?;
    Ok(config)
}

mod keys;
#[cfg(test)]
mod tests;
