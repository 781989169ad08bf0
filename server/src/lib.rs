//! The Entropy Diode gateway: verifies signed chunks from collectors, keeps their bytes in a
//! bounded pool, and serves each byte to one caller, once, over gRPC.
//!
//! Layout (domain first, transport at the edge):
//! - [`pool`]: the bounded, fair, all-or-nothing pool; the at-most-once promise lives here.
//! - [`ingest`]: chunk verification (MAC, CRC, freshness), replay window, provenance.
//! - [`sampling`]: unbiased integers, floats and UUIDs from bytes.
//! - [`auth`]: client API keys (SHA-256 digests, constant-time match), scopes.
//! - [`quota`]: per-key request, byte and stream limits.
//! - [`health`]: readiness from the pool level and ingest activity, for grpc.health.v1.
//! - [`metrics`]: the Prometheus series and their handles; [`http`]: `/metrics`, `/healthz`,
//!   `/readyz` on the metrics port.
//! - [`config`]: the layered, validated configuration.
//! - [`grpc`]: the tonic services, interceptor and status mapping; the only tonic-aware code.
//! - [`server`]: wires the two listeners and runs until shutdown; [`tls`]: rustls for them.
//! - [`launch`]: the process around a [`Gateway`]: keys and TLS loaded before binding, dev
//!   feed, SIGHUP key reload, graceful shutdown (`main.rs` only parses and maps exit codes).
//! - [`conn_limit`]: the cap on open connections per listener.
//! - [`grpc_web`]: gRPC-Web for browsers (off by default) and its CORS gate.
//! - [`dev`]: `--dev` mode's keys, banner and in-process collector.
//! - [`devcerts`]: a throwaway CA and certificates for trying TLS (`dev-certs`).

pub mod auth;
pub mod config;
pub mod conn_limit;
pub mod dev;
pub mod devcerts;
pub mod fd_limit;
pub mod grpc;
pub mod grpc_web;
pub mod health;
pub mod http;
pub mod ingest;
pub mod ingest_budget;
pub mod launch;
pub mod log_safety;
pub mod metrics;
pub mod pool;
pub mod quota;
pub mod sampling;
pub mod secret;
pub mod server;
pub mod tls;
pub mod write_coalesce;

pub use server::Gateway;
