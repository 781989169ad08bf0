//! Readiness on `grpc.health.v1`: the health services of both listeners and the watcher that
//! keeps the public one in step with [`Readiness`] (what makes the gateway ready is decided
//! there; this file only publishes it with tonic-health).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::{HealthReporter, HealthService};

use crate::domain::readiness::{POLL_INTERVAL, Readiness};

/// Health service names the gateway reports (besides "", the server as a whole).
pub(crate) const PUBLIC_SERVICE: &str = "entropy.v1.EntropyService";
/// The ingest listener's service name.
pub(crate) const INGEST_SERVICE: &str = "entropy.v1.IngestService";

fn status(ready: bool) -> ServingStatus {
    if ready { ServingStatus::Serving } else { ServingStatus::NotServing }
}

/// A health service for the public listener whose overall ("") and EntropyService statuses
/// start as readiness is now. tonic-health starts "" as SERVING, so a gateway with an empty
/// pool said SERVING to whoever asked before the watcher's first turn (a load balancer would
/// have sent it calls it could only fail).
pub(crate) async fn public_health(
    readiness: &Readiness,
) -> (HealthReporter, HealthServer<impl Health + use<>>) {
    let reporter = HealthReporter::new();
    let status = status(readiness.evaluate().is_ok());
    reporter.set_service_status("", status).await;
    reporter.set_service_status(PUBLIC_SERVICE, status).await;
    let service = HealthServer::new(HealthService::from_health_reporter(reporter.clone()));
    (reporter, service)
}

/// Keeps the health reporters in step with readiness until `shutdown`, then reports
/// NOT_SERVING for good.
pub(crate) async fn watch(
    readiness: Arc<Readiness>,
    reporters: Vec<HealthReporter>,
    shutdown: CancellationToken,
) {
    let mut last = None;
    let mut tick = tokio::time::interval(POLL_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        let check = readiness.evaluate();
        let ready = check.is_ok();
        if last != Some(ready) {
            match check {
                Ok(()) => tracing::info!(level = readiness.pool_level(), "ready: SERVING"),
                // At start an empty pool is expected, not worth a warning.
                Err(reason) if last.is_none() => tracing::info!("{reason}: NOT_SERVING"),
                Err(reason) => tracing::warn!("{reason}: NOT_SERVING"),
            }
            for r in &reporters {
                r.set_service_status("", status(ready)).await;
                r.set_service_status(PUBLIC_SERVICE, status(ready)).await;
            }
            last = Some(ready);
        }
    }
    readiness.stop();
    for r in &reporters {
        r.set_service_status("", ServingStatus::NotServing).await;
        r.set_service_status(PUBLIC_SERVICE, ServingStatus::NotServing).await;
    }
}

#[cfg(test)]
mod tests {
    use tonic_health::pb::HealthCheckRequest;

    use super::*;
    use crate::domain::pool::Pool;

    #[tokio::test]
    async fn public_health_starts_as_readiness_is_not_as_serving() {
        let ready = Pool::new(1024);
        ready.put_test_bytes(&[7u8; 512]).expect("room in the pool");
        for (pool, want) in
            [(Pool::new(1024), ServingStatus::NotServing), (ready, ServingStatus::Serving)]
        {
            let readiness = Readiness::new(Arc::new(pool), 256);
            let (reporter, _) = public_health(&readiness).await;
            let service = HealthService::from_health_reporter(reporter);
            for name in ["", PUBLIC_SERVICE] {
                let request = tonic::Request::new(HealthCheckRequest { service: name.into() });
                let got = service.check(request).await.expect("known service").into_inner().status;
                assert_eq!(got, want as i32, "{name:?} before any watcher ran");
            }
        }
    }
}
