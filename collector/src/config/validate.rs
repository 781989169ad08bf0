//! The collector config's rules that one key's type cannot express: identifiers, ranges, and
//! relations between keys and tables. Each error names the key and the bound.

use super::{CollectorConfig, ConfigError};
use crate::mixing::Scheme;

impl CollectorConfig {
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
        if self.key_file.as_os_str().is_empty() {
            return bad("key_file", "required: the file holding the MAC secret");
        }
        entropy_ops::logging::check_filter(&self.log_filter)?;
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
        }
        Ok(())
    }
}

fn bad<T>(key: impl Into<String>, problem: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(key, problem))
}
