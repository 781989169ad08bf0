//! The Entropy Diode collector: reads entropy sources, health-tests and mixes them, signs
//! chunks, and publishes them one way to gateways. It listens on nothing.
//!
//! Layout:
//! - [`source`]: where raw entropy comes from (Quantis appliance, device, OS), one trait.
//! - [`health`]: NIST SP 800-90B continuous tests (+ two supplementary ones), quarantine.
//! - [`mixing`]: XOR and HKDF-SHA256 combination of healthy sources.
//! - [`signer`]: bytes plus provenance into a `PublishRequest`, sealed per gateway.
//! - [`publisher`]: sealing for and delivery to one gateway; never re-dates a chunk after an
//!   unknown outcome.
//! - [`pipeline`]: one round: read, test, mix, sign, under the `min_sources` policy.
//! - [`runner`]: rounds into a bounded queue drained by one publisher per gateway; shutdown.
//! - [`config`]: the TOML configuration, validated.
//! - [`tls`]: rustls client trust (CA file or pinned certificate).
//! - [`simulator`]: a stand-in for a Quantis appliance, with fault modes.
//! - [`prom`]: a Prometheus registry per instance and the `/metrics` `/healthz` `/readyz`
//!   endpoint (shared with the gateway); [`metrics`]: the collector's series.
//!
//! Binaries: `entropy-collector` (src/bin/collector.rs), `entropy-simulator`
//! (src/bin/simulator.rs).

pub mod config;
pub mod config_reference;
pub mod health;
pub mod metrics;
pub mod mixing;
pub mod pipeline;
pub mod prom;
pub mod publisher;
pub mod runner;
pub mod signer;
pub mod simulator;
pub mod source;
pub mod tls;

use std::sync::Arc;

use tokio::sync::Mutex;

use crate::config::{CollectorConfig, SourceType};
use crate::metrics::CollectorMetrics;
use crate::pipeline::{Pipeline, SourceSlot};
use crate::publisher::{Publisher, RetryPolicy};
use crate::signer::ChunkSigner;
use crate::source::Source;
use crate::source::device::DeviceSource;
use crate::source::os::OsSource;
use crate::source::quantis::{QuantisOptions, QuantisSource};

/// Builds the pipeline and publishers a validated config describes.
pub fn build(
    config: &CollectorConfig,
    mac_key: Vec<u8>,
) -> anyhow::Result<(Arc<Mutex<Pipeline>>, Vec<Publisher>)> {
    build_observed(config, mac_key, None)
}

/// The series of the sources and queue `config` describes (gateways register when built).
pub fn metrics_for(config: &CollectorConfig) -> Arc<CollectorMetrics> {
    let names: Vec<&str> = config.source.iter().map(|s| s.name.as_str()).collect();
    CollectorMetrics::new(&names, config.min_sources, config.buffer_chunks)
}

/// [`build`], counting into `metrics` when given.
pub fn build_observed(
    config: &CollectorConfig,
    mac_key: Vec<u8>,
    metrics: Option<&Arc<CollectorMetrics>>,
) -> anyhow::Result<(Arc<Mutex<Pipeline>>, Vec<Publisher>)> {
    let mut slots = Vec::with_capacity(config.source.len());
    for s in &config.source {
        let source: Box<dyn Source> = match s.source_type {
            SourceType::Os => Box::new(OsSource::new(&s.name)),
            SourceType::Device => {
                let path =
                    s.path.clone().ok_or_else(|| anyhow::anyhow!("source {}: no path", s.name))?;
                Box::new(DeviceSource::new(&s.name, s.device_kind(), path))
            }
            SourceType::Quantis => Box::new(QuantisSource::new(
                &s.name,
                QuantisOptions {
                    base_url: s.url.clone().unwrap_or_default(),
                    trust: s.trust(),
                    allow_http: s.allow_http,
                    request_timeout: std::time::Duration::from_millis(s.request_timeout_ms),
                    attempts: s.attempts,
                    initial_backoff: std::time::Duration::from_millis(100),
                    max_backoff: std::time::Duration::from_secs(2),
                },
            )?),
        };
        slots.push(SourceSlot::new(source, s.min_entropy_per_byte, config.alpha_log2));
    }
    let signer = ChunkSigner::new(&config.collector_id, &config.key_id, mac_key)?;
    let sealer = signer.sealer();
    let mut pipeline = Pipeline::new(
        slots,
        config.mixing,
        config.min_sources,
        config.chunk_bytes,
        config.read_timeout(),
        signer,
    );
    if let Some(m) = metrics {
        pipeline = pipeline.with_metrics(m.clone());
    }
    let publishers = config
        .gateway
        .iter()
        .map(|g| {
            let publisher =
                Publisher::new(g.endpoint()?, RetryPolicy::default(), sealer.clone(), &g.id);
            Ok(match metrics {
                Some(m) => publisher.with_metrics(m.gateway(&g.endpoint)),
                None => publisher,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((Arc::new(Mutex::new(pipeline)), publishers))
}
