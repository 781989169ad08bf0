//! The Entropy Diode gateway: verifies signed chunks from collectors, keeps their bytes in a
//! bounded pool, and serves each byte to one caller, once, over gRPC.
//!
//! Layout, inside out (each layer imports only the ones before it):
//! - [`domain`]: the pool and its at-most-once promise, chunk verification and the replay
//!   window, sampling, keys and quotas, byte allowances, readiness. No tonic, no HTTP, no
//!   process (a test checks its imports).
//! - [`metrics`]: the Prometheus series, named once, and the handles the layers above count
//!   with.
//! - [`transport`]: below gRPC: admitting and serving connections (HTTP/2 on h2, gRPC-Web's
//!   HTTP/1.1, TLS) within allowances that bound every buffer, and delivery as the socket sees
//!   it (a response is served once its bytes are written out).
//! - [`grpc`]: the tonic services, interceptor, status mapping, health and gRPC-Web: wire
//!   types become domain types here, once.
//! - [`process`]: configuration and its bounds, the listeners wired ([`Gateway`]), the
//!   process's lifecycle, the metrics endpoint, dev mode. `main.rs` only parses
//!   arguments and maps exit codes.

// `pub` says another crate (the binary, the integration tests, fuzzing, the benchmarks) uses
// it; everything else is `pub(crate)`, and this lint keeps it so.
#![warn(unreachable_pub)]

pub mod domain;
pub mod grpc;
pub mod metrics;
pub mod process;
pub mod transport;

pub use process::server::Gateway;
