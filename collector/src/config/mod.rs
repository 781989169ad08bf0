//! The collector's configuration: a TOML file of scalar keys, `[[gateway]]` and `[[source]]`
//! tables.
//!
//! Scalar keys can be overridden by `ENTROPY_<KEY>` environment variables and then by
//! `--<key>` flags ([`ConfigFlags`]); each is declared once in [`keys`]. Sources are parsed
//! into what their type needs ([`source`]); what one key's type cannot say is checked in
//! [`validate`](CollectorConfig::validate), before the collector reads a byte. `main` exits 64
//! naming the bad key. `collector/collector.example.toml` documents every key.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};

pub use self::gateway::GatewayConfig;
pub use self::keys::{CollectorConfig, ConfigFlags, KEY_DOCS, KEYS};
pub use self::source::{DeviceKind, QuantisSpec, SourceConfig, SourceSpec, SourceType};
pub use entropy_ops::{ConfigError, LogFormat};

mod gateway;
mod keys;
mod source;
#[cfg(test)]
mod tests;
mod validate;

impl CollectorConfig {
    /// Loads `path`, applies `ENTROPY_*` overrides and then `flags`, validates.
    pub fn load(path: &Path, flags: &ConfigFlags) -> Result<Self, ConfigError> {
        if !path.is_file() {
            return Err(ConfigError::new(
                "--config",
                format!("{} is not a readable file", path.display()),
            ));
        }
        let figment = Figment::from(Toml::file_exact(path))
            .merge(Env::prefixed("ENTROPY_").only(KEYS))
            .merge(Serialized::defaults(flags));
        extract(figment)
    }

    /// Parses and validates a config given as TOML text (dev mode's in-process collector,
    /// tests); no environment or flags apply.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        extract(Figment::from(Toml::string(text)))
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
            if let SourceSpec::Quantis(q) = &mut source.spec {
                q.url = redact_url(&q.url);
            }
        }
        copy
    }

    /// The metrics endpoint's address, or `None` when it is off.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listen_addr
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

/// The config out of `figment`, validated; errors name the key (`source[1].url`, say).
fn extract(figment: Figment) -> Result<CollectorConfig, ConfigError> {
    let config: CollectorConfig = figment.extract().map_err(|e| {
        let problem = e.kind.to_string();
        // A table of a list is `source[N]`; a source's own check says `field: problem`.
        let mut key = String::new();
        for part in &e.path {
            if part.parse::<usize>().is_ok() {
                key.push_str(&format!("[{part}]"));
            } else {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(part);
            }
        }
        match problem.split_once(": ") {
            Some((field, rest))
                if key.ends_with(']')
                    && field
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
            {
                ConfigError::new(format!("{key}.{field}"), rest)
            }
            _ => {
                ConfigError::new(if key.is_empty() { "(config)".to_owned() } else { key }, problem)
            }
        }
    })?;
    config.validate()?;
    Ok(config)
}

/// `url` with its user, password and query replaced by `REDACTED`; a URL that does not parse
/// is printed whole only if it has no `@` or `?` (validation reports it either way). Parsed by
/// `http::Uri`, in every build, where the `url` crate came only with the Quantis client.
fn redact_url(url: &str) -> String {
    const HIDDEN: &str = "REDACTED";
    let unparsed = || {
        if url.contains(['@', '?']) { format!("{HIDDEN} (not a URL)") } else { url.to_owned() }
    };
    let Ok(uri) = url.parse::<http::Uri>() else { return unparsed() };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return unparsed();
    };
    let mut out = format!("{scheme}://");
    let host_port = match authority.as_str().rsplit_once('@') {
        Some((userinfo, host_port)) => {
            out.push_str(HIDDEN);
            if userinfo.contains(':') {
                out.push(':');
                out.push_str(HIDDEN);
            }
            out.push('@');
            host_port
        }
        None => authority.as_str(),
    };
    out.push_str(host_port);
    if let Some(path_and_query) = uri.path_and_query() {
        out.push_str(path_and_query.path());
    }
    if uri.query().is_some() {
        out.push('?');
        out.push_str(HIDDEN);
    }
    out
}

/// Reads a hex secret (at least 32 bytes) from `path`.
pub fn read_key_file(path: &Path) -> Result<Vec<u8>, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new("key_file", format!("{}: {e}", path.display())))?;
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let key = hex::decode(compact)
        .map_err(|_| ConfigError::new("key_file", "expected the secret as hex"))?;
    if key.len() < 32 {
        return Err(ConfigError::new(
            "key_file",
            format!("secret is {} bytes, at least 32 needed", key.len()),
        ));
    }
    Ok(key)
}
