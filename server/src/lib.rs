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
//! - [`config`]: the layered, validated configuration; [`bounds`]: its worst-case memory and
//!   descriptors, as a formula.
//! - [`grpc`]: the tonic services, interceptor and status mapping; the only tonic-aware code.
//! - [`server`]: wires the two listeners and runs until shutdown.
//! - [`transport`]: below gRPC: admitting and serving connections (HTTP/2 on h2, gRPC-Web's
//!   HTTP/1.1, TLS), the byte allowances that bound every buffer, and delivery as the socket
//!   sees it (a response is served once its bytes are written out).
//! - [`launch`]: the process around a [`Gateway`]: keys and TLS loaded before binding, dev
//!   feed, SIGHUP key reload, graceful shutdown (`main.rs` only parses and maps exit codes).
//! - [`grpc_web`]: gRPC-Web for browsers (off by default) and its CORS gate.
//! - `dev` (feature `dev`, on by default): `--dev` mode's keys, banner and in-process
//!   collector.
//! - [`devcerts`]: a throwaway CA and certificates for trying TLS (`dev-certs`).

pub mod auth;
pub mod bounds;
pub mod config;
#[cfg(feature = "dev")]
pub mod dev;
pub mod devcerts;
pub mod fd_limit;
pub mod grpc;
pub mod grpc_web;
pub mod health;
pub mod http;
pub mod ingest;
pub mod launch;
pub mod log_safety;
pub mod metrics;
pub mod pool;
pub mod quota;
pub mod sampling;
pub mod secret;
pub mod server;
pub mod transport;

pub use server::Gateway;
