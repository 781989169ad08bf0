//! Logging set-up shared by both binaries: `log_filter` (a `tracing` env-filter directive) and
//! `log_format` (`text` or `json`), to stderr, with colours only on a terminal.

use std::io::IsTerminal as _;

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Checks a `log_filter` directive without installing anything (config validation).
pub fn check_filter(filter: &str) -> Result<(), ConfigError> {
    tracing_subscriber::EnvFilter::try_new(filter)
        .map(drop)
        .map_err(|_| ConfigError::new("log_filter", format!("{filter:?} is not a valid filter")))
}

/// Installs the global subscriber. Fails, naming `log_filter`, on a directive that does not
/// parse; call it before anything is bound so a typo exits with the usage code.
pub fn init(filter: &str, format: LogFormat) -> Result<(), ConfigError> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| ConfigError::new("log_filter", e.to_string()))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
    Ok(())
}
