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
}
