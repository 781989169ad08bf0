//! One error for a config value that is missing, malformed, or inconsistent with another,
//! whichever binary reads it: the message always names the key and what is wrong with it.

/// A config value that is missing, malformed, or inconsistent with another.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config key {key}: {problem}")]
pub struct ConfigError {
    /// The config key at fault (`source[1].url`, say).
    pub key: String,
    /// What is wrong, with the bound.
    pub problem: String,
}

impl ConfigError {
    /// The error for `key`, saying `problem`.
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { key: key.into(), problem: problem.into() }
    }

    /// The error for a config layered from a file, `ENTROPY_*` variables and flags (figment):
    /// names the key (`(config)` for the whole) and the layer the bad value came from, so
    /// `ENTROPY_POOL_CAPACITY_BYTES=x` reads "(from environment variable
    /// ENTROPY_POOL_CAPACITY_BYTES)" and a file value "(from /etc/entropy/gateway.toml)".
    pub fn from_layered(e: &figment::Error) -> Self {
        let key = e.path.join(".");
        let key = if key.is_empty() { "(config)".to_owned() } else { key };
        let from = match e.metadata.as_ref() {
            Some(m) if m.name.contains("environment") => {
                format!(" (from environment variable ENTROPY_{})", key.to_uppercase())
            }
            Some(m) => {
                format!(
                    " (from {})",
                    m.source.as_ref().map_or(m.name.to_string(), |s| s.to_string())
                )
            }
            None => String::new(),
        };
        Self { key, problem: format!("{}{from}", e.kind) }
    }
}
