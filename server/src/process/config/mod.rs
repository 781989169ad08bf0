//! The gateway's configuration: one typed struct, layered, validated before anything binds.
//!
//! Layers, later ones winning: built-in defaults (or dev-mode defaults), the TOML file given
//! with `--config`, `ENTROPY_<KEY>` environment variables, then `--<key>` flags. A bad value in
//! any layer is reported with the key that holds it; `main` exits 64 (EX_USAGE) on it.

use std::net::SocketAddr;
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};

pub use self::keys::{ConfigFlags, GatewayConfig, KEY_DOCS, KEYS};
pub use entropy_ops::{ConfigError, LogFormat};

mod keys;
#[cfg(test)]
mod tests;
mod validate;

/// Largest GetRandom request, and so the least pool capacity that can serve every request.
pub(crate) const MAX_GET_RANDOM_BYTES: usize = 1 << 20;

impl GatewayConfig {
    /// Defaults for `--dev`: public and metrics ports on loopback only, ingest on an ephemeral
    /// loopback port that only the in-process publisher uses, the ingest lease in memory.
    pub fn dev_defaults() -> Self {
        Self {
            listen_addr: SocketAddr::from(([127, 0, 0, 1], 50051)),
            ingest_listen_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            gateway_id: "dev".into(),
            state_dir: None,
            ..Self::default()
        }
    }

    /// Longest unary wait for entropy.
    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.max_wait_ms)
    }

    /// `send_timeout_ms` as a duration, `None` for never.
    pub(crate) fn send_timeout(&self) -> Option<Duration> {
        (self.send_timeout_ms > 0).then(|| Duration::from_millis(self.send_timeout_ms))
    }

    /// `max_future_skew_ms` as a duration.
    pub fn max_future_skew(&self) -> Duration {
        Duration::from_millis(self.max_future_skew_ms)
    }

    /// `stream_max_wait_ms` as a duration.
    pub(crate) fn stream_max_wait(&self) -> Duration {
        Duration::from_millis(self.stream_max_wait_ms)
    }

    /// When DRBG instances reseed from the pool.
    pub(crate) fn drbg_reseeding(&self) -> crate::domain::drbg::Reseeding {
        crate::domain::drbg::Reseeding {
            interval_bytes: self.drbg_reseed_interval_bytes,
            interval: Duration::from_millis(self.drbg_reseed_interval_ms),
        }
    }

    /// Freshness window for chunk timestamps.
    pub fn freshness_window(&self) -> Duration {
        Duration::from_millis(self.freshness_window_ms)
    }

    /// The metrics endpoint's address, or `None` when it is off.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listen_addr
    }

    /// How long ingest may be silent before the gateway is not ready (zero: no limit).
    pub(crate) fn ingest_stale_after(&self) -> Duration {
        Duration::from_millis(self.ingest_stale_after_ms)
    }

    /// The pool's limits: the byte age limit, and how long a class of sources may go unfed
    /// before calls that accept only it are refused (`ingest_stale_after_ms`, or a minute
    /// when that check is off).
    pub(crate) fn pool_limits(&self) -> crate::domain::pool::PoolLimits {
        let absent_ms =
            if self.ingest_stale_after_ms == 0 { 60_000 } else { self.ingest_stale_after_ms };
        crate::domain::pool::PoolLimits {
            max_byte_age: (self.max_byte_age_ms > 0)
                .then(|| Duration::from_millis(self.max_byte_age_ms)),
            class_absent_after: Duration::from_millis(absent_ms),
        }
    }

    /// Grace period on shutdown.
    pub(crate) fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }

    /// How long to keep serving after SIGTERM while reporting NOT_SERVING.
    pub(crate) fn shutdown_drain(&self) -> Duration {
        Duration::from_millis(self.shutdown_drain_ms)
    }

    /// How long a connection may sit without a call before it is closed (`None`: forever).
    pub(crate) fn idle_timeout(&self) -> Option<Duration> {
        (self.idle_timeout_ms > 0).then(|| Duration::from_millis(self.idle_timeout_ms))
    }
}

/// How the binary runs: as a service (keys files, state on disk), or in dev mode (plaintext,
/// keys made at start, loopback unless `listen_any`: `--dev`, `--dev-listen-any`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A service: keys files, a state directory.
    Service,
    /// `--dev`.
    Dev {
        /// `--dev-listen-any`: serve dev mode on an address that is not loopback.
        listen_any: bool,
    },
}

impl Mode {
    /// Dev mode on loopback, as `--dev` alone (tests).
    #[cfg(test)]
    pub(crate) const DEV: Mode = Mode::Dev { listen_any: false };

    /// True in dev mode.
    pub(crate) fn is_dev(self) -> bool {
        matches!(self, Mode::Dev { .. })
    }
}

/// Builds the effective config from the layers and validates it.
pub fn load(
    file: Option<&std::path::Path>,
    mode: Mode,
    flags: &ConfigFlags,
) -> Result<GatewayConfig, ConfigError> {
    load_with_env(file, mode, flags, Env::prefixed("ENTROPY_").only(KEYS))
}

/// [`load`] with the environment given (tests use `Env` over a fixed map).
pub(crate) fn load_with_env(
    file: Option<&std::path::Path>,
    mode: Mode,
    flags: &ConfigFlags,
    env: Env,
) -> Result<GatewayConfig, ConfigError> {
    let defaults =
        if mode.is_dev() { GatewayConfig::dev_defaults() } else { GatewayConfig::default() };
    let mut figment = Figment::from(Serialized::defaults(defaults));
    if let Some(path) = file {
        if !path.is_file() {
            return Err(ConfigError {
                key: "--config".into(),
                problem: format!("{} is not a readable file", path.display()),
            });
        }
        figment = figment.merge(Toml::file_exact(path));
    }
    let config: GatewayConfig = figment
        .merge(env)
        .merge(Serialized::defaults(flags))
        .extract()
        .map_err(|e| ConfigError::from_layered(&e))?;
    config.validate(mode)?;
    Ok(config)
}
