//! The gateway's HTTP side: `/metrics`, `/healthz` and `/readyz` on `metrics_listen_addr`.
//!
//! The routes themselves are shared with the collector ([`entropy_ops::endpoint::serve`]);
//! this file says what "ready" means for a gateway and refreshes the state-mirroring gauges
//! right before each scrape.

use std::sync::Arc;

use entropy_ops::endpoint::Probe;

use crate::domain::allowance::Budget;
use crate::domain::ingest::Ingest;
use crate::domain::pool::Pool;
use crate::domain::readiness::Readiness;
use crate::domain::served::Totals;
use crate::metrics::GatewayMetrics;

/// What the endpoint reads.
#[derive(Debug, Clone)]
pub(crate) struct GatewayProbe {
    /// The gateway's series.
    pub metrics: Arc<GatewayMetrics>,
    /// The pool, for its level, capacity and waiters.
    pub pool: Arc<Pool>,
    /// Readiness, the same rule as grpc.health.v1.
    pub readiness: Arc<Readiness>,
    /// The ingest path, for its chunk counters.
    pub ingest: Arc<Ingest>,
    /// The process-wide byte allowances, for what they hold.
    pub budget: Budget,
    /// Served, discarded and tested bytes.
    pub totals: Arc<Totals>,
    /// The receipt notary, if the gateway keeps a receipt log.
    pub notary: Option<Arc<crate::domain::receipts::Notary>>,
}

impl Probe for GatewayProbe {
    fn render(&self) -> String {
        let ready = self.readiness.check().is_ok();
        let pool = (&self.pool.stats(), &self.pool.levels_by_class());
        self.metrics.refresh(pool, self.readiness.low_watermark(), ready);
        self.metrics.refresh_ingest(self.ingest.counters());
        self.metrics.refresh_buffers(&self.budget, &self.totals);
        self.metrics.refresh_receipts(self.notary.as_deref());
        self.metrics.registry().render()
    }

    fn not_ready(&self) -> Option<String> {
        self.readiness.explain().err().map(|unready| unready.to_string())
    }
}
