//! Operational plumbing shared by `entropy-gateway`, `entropy-collector` and `entropy-mcp`, so
//! that no binary reaches into another's crate for it. Nothing here knows about entropy.
//!
//! Layout:
//! - [`registry`]: a Prometheus registry per instance (no global recorder), the series
//!   families, latency buckets and gRPC code names every exported series shares.
//! - [`endpoint`]: the `/metrics` `/healthz` `/readyz` HTTP endpoint, bounded against peers
//!   that never finish, and the [`endpoint::Probe`] a program implements for it.
//! - [`throttle`]: log lines rate-limited per reason, with a count of those held back.
//! - [`signals`]: SIGTERM/SIGINT into a `CancellationToken`; SIGHUP as a stream of reloads.
//! - [`logging`]: the `log_format` / `log_filter` set-up both binaries share.
//! - [`config_keys`]: `config_keys!`, each config key declared once (struct, flag, docs).
//! - [`config_error`]: the one error type of a config key that is missing or wrong.
//! - [`clock`]: wall-clock milliseconds, as chunks and metrics carry them.
//! - [`tls`]: the one rustls server set-up (ring provider, PEM files, versions, client CA,
//!   ALPN) of every TLS listener.

pub mod clock;
pub mod config_error;
pub mod config_keys;
pub mod endpoint;
pub mod logging;
pub mod peer_text;
pub mod registry;
pub mod signals;
pub mod throttle;
pub mod tls;

pub use config_error::ConfigError;
pub use logging::LogFormat;
pub use throttle::Throttle;
