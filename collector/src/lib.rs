//! The Entropy Diode collector: reads entropy sources, health-tests and mixes them, signs
//! chunks, and publishes them one way to gateways. It listens on nothing.
//!
//! The health tests (NIST SP 800-90B continuous tests, two supplementary ones, start-up and
//! quarantine) are the `entropy-health` crate's, run by [`pipeline`] on every source.
//!
//! Layout:
//! - [`collector`]: the one entry point: [`Collector::build`] from a config and a MAC key,
//!   [`Collector::run`] until shutdown.
//! - [`source`]: where raw entropy comes from (Quantis appliance, device, OS), one trait.
//! - [`provenance`]: source kind, health and mixing in the collector's own words; the wire's
//!   enums only where a chunk is prepared.
//! - [`counters`]: each source's counters, kept once, read by status and metrics.
//! - [`mixing`]: XOR and HKDF-SHA256 combination of healthy sources.
//! - [`signer`]: bytes plus provenance into a `PublishRequest`, sealed per gateway.
//! - [`publisher`]: sealing for and delivery to one gateway; never re-dates a chunk after an
//!   unknown outcome.
//! - [`pipeline`]: one round: read, test, mix, sign, under the `min_sources` policy.
//! - [`runner`]: rounds into a bounded queue drained by one publisher per gateway; shutdown.
//! - [`config`]: the TOML configuration, validated.
//! - [`tls`]: rustls client trust (CA file or pinned certificate).
//! - `simulator` (feature `simulator`, on by default): a stand-in for a Quantis appliance,
//!   with fault modes.
//! - [`metrics`]: the collector's series (registry and endpoint from `entropy-ops`).
//!
//! Binaries: `entropy-collector` (src/bin/collector.rs), `entropy-simulator`
//! (src/bin/simulator.rs, feature `simulator`).

pub mod collector;
pub mod config;
pub mod counters;
pub mod metrics;
pub mod mixing;
pub mod pipeline;
pub mod provenance;
pub mod publisher;
pub mod runner;
pub mod signer;
#[cfg(feature = "simulator")]
pub mod simulator;
pub mod source;
pub mod tls;

pub use collector::{BuildError, Collector};
