//! The collector as one value: built from its config and MAC key, run until shutdown. The
//! binary, dev mode (`entropy-gateway --dev`) and the tests all start a collector this way, so
//! there is one way to assemble sources, pipeline, signer, publishers and metrics.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{CollectorConfig, ConfigError};
use crate::metrics::CollectorMetrics;
use crate::pipeline::{Pipeline, RoundPolicy, SourceSlot};
use crate::publisher::{Publisher, RetryPolicy};
use crate::runner::{self, RunStats};
use crate::signer::{ChunkSigner, EpochError};
use crate::source::{self, OpenError};

/// Why a collector could not be built from its config.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A source could not be set up (its TLS trust, say).
    #[error("source {name}: {error}")]
    Source {
        /// The source's name.
        name: String,
        /// What went wrong.
        error: OpenError,
    },
    /// A gateway's endpoint or TLS files are unusable.
    #[error(transparent)]
    Gateway(#[from] ConfigError),
    /// No random epoch could be drawn for the signer.
    #[error(transparent)]
    Epoch(#[from] EpochError),
}

/// A collector ready to run: its sources, pipeline, publishers (one per gateway) and metrics.
pub struct Collector {
    pub(crate) pipeline: Pipeline,
    pub(crate) publishers: Vec<Publisher>,
    pub(crate) metrics: Arc<CollectorMetrics>,
    pub(crate) stats: Arc<RunStats>,
    pub(crate) buffer_chunks: usize,
    pub(crate) grace: Duration,
    metrics_listener: Option<TcpListener>,
}

impl Collector {
    /// Builds what `config` describes, signing with `mac_key`. Validate `config` first
    /// ([`CollectorConfig::load`] does): this only reports what cannot be known before trying.
    pub fn build(config: &CollectorConfig, mac_key: Vec<u8>) -> Result<Self, BuildError> {
        let names: Vec<&str> = config.source.iter().map(|s| s.name.as_str()).collect();
        let metrics = CollectorMetrics::new(&names, config.min_sources, config.buffer_chunks);
        let mut slots = Vec::with_capacity(config.source.len());
        for s in &config.source {
            let opened = source::open(s)
                .map_err(|error| BuildError::Source { name: s.name.clone(), error })?;
            slots.push(SourceSlot::new(opened, s.min_entropy_per_byte, config.alpha_log2));
        }
        let signer = ChunkSigner::new(&config.collector_id, &config.key_id, mac_key)?;
        let sealer = signer.sealer();
        let policy = RoundPolicy {
            scheme: config.mixing,
            min_sources: config.min_sources,
            chunk_bytes: config.chunk_bytes,
            read_timeout: config.read_timeout(),
        };
        let pipeline = Pipeline::new(slots, policy, signer).with_metrics(metrics.clone());
        let publishers = config
            .gateway
            .iter()
            .map(|g| {
                let publisher =
                    Publisher::new(g.endpoint()?, RetryPolicy::default(), sealer.clone(), &g.id);
                Ok(publisher.with_metrics(metrics.gateway(&g.endpoint)))
            })
            .collect::<Result<Vec<_>, ConfigError>>()?;
        Ok(Self {
            pipeline,
            publishers,
            metrics,
            stats: Arc::new(RunStats::default()),
            buffer_chunks: config.buffer_chunks,
            grace: config.shutdown_grace(),
            metrics_listener: None,
        })
    }

    /// Retries deliveries by `policy` instead of [`RetryPolicy::default`].
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.publishers = self.publishers.into_iter().map(|p| p.with_policy(policy)).collect();
        self
    }

    /// Serves `/metrics`, `/healthz` and `/readyz` on `listener` while running, and through the
    /// flush after shutdown.
    pub fn with_metrics_listener(mut self, listener: TcpListener) -> Self {
        self.metrics_listener = Some(listener);
        self
    }

    /// Its series and readiness.
    pub fn metrics(&self) -> Arc<CollectorMetrics> {
        self.metrics.clone()
    }

    /// Its counters, readable while it runs.
    pub fn stats(&self) -> Arc<RunStats> {
        self.stats.clone()
    }

    /// Runs rounds and publishes until `shutdown`, then delivers what is already signed for at
    /// most `shutdown_grace_ms`. Returns the run's counters.
    pub async fn run(mut self, shutdown: CancellationToken) -> Arc<RunStats> {
        // The endpoint outlives the rounds, so scrapes see the flush after SIGTERM too.
        let endpoint_stop = CancellationToken::new();
        let upkeep = self.metrics.registry().spawn_upkeep(endpoint_stop.clone());
        let http = self.metrics_listener.take().map(|listener| {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!(%addr, "metrics endpoint: /metrics /healthz /readyz");
            }
            let probe: Arc<dyn entropy_ops::endpoint::Probe> = self.metrics.clone();
            tokio::spawn(entropy_ops::endpoint::serve(listener, probe, endpoint_stop.clone()))
        });
        let stats = runner::run(self, shutdown).await;
        endpoint_stop.cancel();
        let _ = upkeep.await;
        if let Some(http) = http {
            let _ = http.await;
        }
        stats
    }
}
