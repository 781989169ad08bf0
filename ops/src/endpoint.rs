//! The `/metrics`, `/healthz` and `/readyz` HTTP endpoint of both binaries, bounded for
//! peers that never finish, and the [`Probe`] a program implements to fill it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::Throttle;

/// What the HTTP endpoint asks of the program it serves.
pub trait Probe: Send + Sync + 'static {
    /// The `/metrics` body (refresh state-mirroring gauges first).
    fn render(&self) -> String;
    /// Why the program is not ready to serve, as the one line `/readyz` shows; `None` when
    /// it is ready.
    fn not_ready(&self) -> Option<String>;
}

/// Binds the metrics address, naming the config key in the error so a second process on the
/// same machine fails clearly.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, BindError> {
    TcpListener::bind(addr).await.map_err(|error| BindError { addr, error })
}

/// The metrics address could not be bound.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot bind metrics_listen_addr {addr}: {error} (set metrics_listen_addr to a free \
     address, or \"\" to turn the metrics endpoint off)"
)]
pub struct BindError {
    /// The address.
    pub addr: SocketAddr,
    /// Why it could not be bound.
    pub error: std::io::Error,
}

/// Most connections the metrics and health endpoint holds open; past it new ones are closed.
/// Scrapers and probes open one or two at a time.
pub const MAX_HTTP_CONNECTIONS: usize = 64;
/// How long a connection may take to send a request's headers (slow-loris).
pub const HTTP_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest life of one connection: scrapes take milliseconds; keep-alive may reuse it until
/// then.
pub const HTTP_CONNECTION_MAX_AGE: Duration = Duration::from_secs(60);
/// Most bytes of a request a connection reads ahead (hyper's read buffer): a request head past
/// it is refused (431). Scrapers and probes send a few hundred bytes.
pub const HTTP_READ_BUFFER_BYTES: usize = 16 << 10;

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until `shutdown`.
///
/// Bounded for peers that never finish: at most [`MAX_HTTP_CONNECTIONS`] at once (more are
/// closed at accept), each with [`HTTP_HEADER_TIMEOUT`] to send its headers,
/// [`HTTP_READ_BUFFER_BYTES`] of request read ahead and [`HTTP_CONNECTION_MAX_AGE`] to live;
/// accept errors (out of descriptors) back off and are logged once a second with a count,
/// instead of spinning. HTTP/1.1 only (what Prometheus and probes speak): HTTP/2 would let one
/// connection hold many streams and large header blocks.
pub async fn serve(
    listener: TcpListener,
    probe: Arc<dyn Probe>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    use hyper::server::conn::http1;
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    let app = Router::new()
        .route("/metrics", get(metrics_page))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(probe);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_HTTP_CONNECTIONS));
    let connections = tokio_util::task::TaskTracker::new();
    let log = Throttle::default();
    loop {
        let tcp = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    if let Some(held_back) = log.allow("accept") {
                        tracing::warn!(held_back, "metrics endpoint: accept failed; backing off: {e}");
                    }
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    }
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if let Some(held_back) = log.allow("full") {
                tracing::warn!(held_back, "metrics endpoint: connection limit reached; closing");
            }
            continue; // dropping `tcp` closes it
        };
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let _slot = slot;
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HTTP_HEADER_TIMEOUT)
                .max_buf_size(HTTP_READ_BUFFER_BYTES)
                .serve_connection(TokioIo::new(tcp), service);
            tokio::select! {
                _ = connection => {}
                () = tokio::time::sleep(HTTP_CONNECTION_MAX_AGE) => {}
                () = shutdown.cancelled() => {}
            }
        });
    }
    connections.close();
    connections.wait().await;
    Ok(())
}

async fn metrics_page(State(probe): State<Arc<dyn Probe>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], probe.render())
}

async fn readyz(State(probe): State<Arc<dyn Probe>>) -> impl IntoResponse {
    match probe.not_ready() {
        None => (StatusCode::OK, "ready\n".to_owned()),
        Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("{reason}\n")),
    }
}
