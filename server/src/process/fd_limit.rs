//! File descriptors: every connection costs one, so the connection caps must fit the
//! process's descriptor limit, or a flood of connections leaves none for accepting, logging or
//! reading key files (seen: `GetRandom` failing and the accept loop spinning under
//! `prlimit --nofile=1024`).
//!
//! At start the gateway raises its soft limit towards the hard one (as Go's runtime does), then
//! checks that the public listener at `max_connections`, the ingest listener at
//! `ingest_max_connections`, the metrics endpoint and a reserve fit. `max_connections = 0` (the
//! default) picks the most that fit, at most [`AUTO_MAX_CONNECTIONS`] (chosen so the default
//! config's worst-case memory fits a small host: `crate::process::bounds`); an explicit value that does
//! not fit is a config error.

use crate::process::config::{ConfigError, GatewayConfig};

/// Descriptors kept for everything else: listeners, files, the runtime, logs.
pub(crate) const RESERVE: u64 = 256;
/// The largest `max_connections` chosen automatically.
pub(crate) const AUTO_MAX_CONNECTIONS: u64 = 512;
/// Connections the metrics and health endpoint may hold (`entropy_ops::endpoint`).
pub(crate) const METRICS_CONNECTIONS: u64 = entropy_ops::endpoint::MAX_HTTP_CONNECTIONS as u64;

/// Raises the soft descriptor limit as far as `config` needs (up to the hard limit) and
/// returns `config` with `max_connections` resolved: `0` (pick what fits) becomes the number
/// of public connections the limit leaves room for. Everything after reads the resolved value;
/// nothing resolves it again.
pub fn prepare(mut config: GatewayConfig) -> Result<GatewayConfig, ConfigError> {
    let ingest = config.ingest_max_connections as u64;
    let wanted = match config.max_connections {
        0 => need_for(AUTO_MAX_CONNECTIONS, ingest),
        n => need_for(n as u64, ingest),
    };
    // Raising fails only on platforms without the limit; then the check below uses it as is.
    let _ = rlimit::increase_nofile_limit(wanted);
    config.max_connections = resolve(config.max_connections, ingest, soft_limit())?;
    Ok(config)
}

/// The public listener's `max_connections` for a configured value, the ingest listener's cap
/// and a descriptor limit.
pub(crate) fn resolve(
    configured: usize,
    ingest: u64,
    limit: Option<u64>,
) -> Result<usize, ConfigError> {
    let Some(limit) = limit else {
        return Ok(if configured == 0 { AUTO_MAX_CONNECTIONS as usize } else { configured });
    };
    if configured == 0 {
        let fit = limit.saturating_sub(need_for(0, ingest));
        return match fit.min(AUTO_MAX_CONNECTIONS) {
            0 => Err(too_few(0, ingest, limit)),
            n => Ok(n as usize),
        };
    }
    if need_for(configured as u64, ingest) > limit {
        return Err(too_few(configured as u64, ingest, limit));
    }
    Ok(configured)
}

/// The soft descriptor limit now, if the platform has one.
pub(crate) fn soft_limit() -> Option<u64> {
    rlimit::getrlimit(rlimit::Resource::NOFILE).ok().map(|(soft, _)| soft)
}

/// Descriptors needed for `max_connections` public and `ingest` ingest connections.
pub(crate) fn need_for(max_connections: u64, ingest: u64) -> u64 {
    max_connections + ingest + METRICS_CONNECTIONS + RESERVE
}

fn too_few(max_connections: u64, ingest: u64, limit: u64) -> ConfigError {
    ConfigError {
        key: "max_connections".into(),
        problem: format!(
            "{max_connections} public connections need {} file descriptors (with \
             {ingest} ingest connections, {METRICS_CONNECTIONS} for metrics, {RESERVE} spare), \
             but the limit is {limit}: lower max_connections (0 picks what fits) or raise the \
             limit (ulimit -n, systemd LimitNOFILE=, compose ulimits)",
            need_for(max_connections, ingest)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_fits_the_limit_and_explicit_must() {
        assert_eq!(resolve(0, 64, Some(1024)).expect("fits"), 512);
        assert_eq!(resolve(0, 64, Some(800)).expect("fits"), 800 - 256 - 64 - 64);
        assert_eq!(resolve(0, 64, Some(1 << 20)).expect("fits"), 512);
        assert_eq!(resolve(0, 64, None).expect("no limit"), 512);
        assert_eq!(resolve(100, 64, Some(1024)).expect("fits"), 100);
        let err = resolve(10_000, 64, Some(1024)).expect_err("does not fit");
        assert_eq!(err.key, "max_connections");
        assert!(err.problem.contains("10384") && err.problem.contains("1024"), "{err}");
        assert!(resolve(0, 64, Some(300)).is_err(), "nothing fits");
    }
}
