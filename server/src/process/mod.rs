//! The process around the gateway: configuration resolved and validated before anything binds,
//! its worst-case bounds, the listeners wired and run ([`server::Gateway`]), the process's
//! lifecycle ([`launch`]: keys and TLS loaded first, SIGHUP reload, drain and shutdown), the
//! metrics endpoint, and the dev mode. `main.rs` only parses arguments and maps
//! errors to exit codes.
//!
//! - [`config`]: the layered configuration and its validation; [`bounds`]: its worst-case
//!   memory and descriptors as a formula; [`fd_limit`]: the descriptor limit raised to fit.
//! - [`server`]: the two listeners, their routers and tasks.
//! - [`launch`]: a [`server::Gateway`] as a process.
//! - [`ops_endpoint`]: `/metrics`, `/healthz`, `/readyz` on the metrics port.
//! - `dev` (feature `dev`, on by default): `--dev` mode's keys, banner and in-process feed.
//! - [`devcerts`]: a throwaway CA and certificates for trying TLS.
//! - [`receipts`]: the receipt notary opened from the config, and its head signer.

pub mod bounds;
pub mod config;
#[cfg(feature = "dev")]
pub mod dev;
pub mod devcerts;
pub mod fd_limit;
pub mod launch;
pub(crate) mod ops_endpoint;
pub mod receipts;
pub mod server;
