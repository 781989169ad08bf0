//! A stand-in for an ID Quantique Quantis appliance, for demos, tests and benchmarks.
//!
//! Serves the REST API v2.0 endpoint `GET /api/2.0/streambytes?size=N` (raw bytes, from the
//! OS RNG: it simulates the interface, not the physics), over HTTP or HTTPS with a self-signed
//! certificate it can write out for the collector to pin. It throttles to a configurable rate
//! (default ~80 KB/s, like the real appliance), adds latency, and can misbehave on purpose so
//! every failure path of the collector can be exercised.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use entropy_ops::tls::{Identity, ServerSettings, TlsError, Versions};
use rustls::pki_types::PrivatePkcs8KeyDer;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Largest `size` one request may ask for.
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// Ways the simulator can misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[repr(u8)]
pub enum Fault {
    /// Behave.
    None = 0,
    /// Every byte the same (a stuck detector).
    Stuck = 1,
    /// Each bit 1 with probability 0.6.
    Bias = 2,
    /// `200 OK` with an HTML error page, as a misconfigured proxy does.
    Html = 3,
    /// `503 Service Unavailable`.
    ServerError = 4,
    /// Accept the request and never answer.
    Hang = 5,
    /// Answer half the bytes asked for.
    Short = 6,
    /// Answer the same random block every time (a replaying device).
    Repeat = 7,
}

impl Fault {
    fn from_u8(v: u8) -> Self {
        [
            Self::None,
            Self::Stuck,
            Self::Bias,
            Self::Html,
            Self::ServerError,
            Self::Hang,
            Self::Short,
            Self::Repeat,
        ]
        .get(usize::from(v))
        .copied()
        .unwrap_or(Self::None)
    }
}

/// Simulator settings.
#[derive(Debug, Clone)]
pub struct SimulatorOptions {
    /// Output rate in bytes per second; 0 for unthrottled.
    pub rate_bytes_per_s: u64,
    /// Extra latency per request.
    pub latency: Duration,
    /// Misbehaviour at start.
    pub fault: Fault,
}

impl Default for SimulatorOptions {
    fn default() -> Self {
        Self { rate_bytes_per_s: 80_000, latency: Duration::ZERO, fault: Fault::None }
    }
}

/// Shared state of a running simulator; lets tests switch faults at run time.
#[derive(Debug)]
pub struct Simulator {
    options: SimulatorOptions,
    fault: AtomicU8,
    /// Virtual clock of the rate limiter: when the next byte may leave.
    next_free: Mutex<Instant>,
    repeat_block: Mutex<Vec<u8>>,
}

impl Simulator {
    /// A simulator with `options`.
    pub fn new(options: SimulatorOptions) -> Arc<Self> {
        Arc::new(Self {
            fault: AtomicU8::new(options.fault as u8),
            options,
            next_free: Mutex::new(Instant::now()),
            repeat_block: Mutex::new(Vec::new()),
        })
    }

    /// Switches the misbehaviour.
    pub fn set_fault(&self, fault: Fault) {
        self.fault.store(fault as u8, Ordering::Relaxed);
    }

    /// The axum router of the appliance API.
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new().route("/api/2.0/streambytes", get(stream_bytes)).with_state(self.clone())
    }

    /// Serves plain HTTP on `listener` until `shutdown`.
    pub async fn serve_http(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    }

    /// Serves HTTPS on `listener` with `tls` until `shutdown`.
    pub async fn serve_https(
        self: Arc<Self>,
        listener: TcpListener,
        tls: Arc<rustls::ServerConfig>,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let service = hyper_util::service::TowerToHyperService::new(self.router());
        loop {
            let (tcp, peer) = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                accepted = listener.accept() => accepted?,
            };
            let (acceptor, service, shutdown) =
                (acceptor.clone(), service.clone(), shutdown.clone());
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    tracing::debug!(%peer, "TLS handshake failed");
                    return;
                };
                let builder = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                );
                let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::select! {
                    () = shutdown.cancelled() => {}
                    _ = conn => {}
                }
            });
        }
    }

    /// Waits for the rate limiter to let `n` bytes out.
    async fn throttle(&self, n: usize) {
        if self.options.rate_bytes_per_s == 0 {
            return;
        }
        let cost = Duration::from_secs_f64(n as f64 / self.options.rate_bytes_per_s as f64);
        let done = {
            let mut next = self.next_free.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let start = (*next).max(Instant::now());
            *next = start + cost;
            *next
        };
        tokio::time::sleep_until(done).await;
    }
}

#[derive(serde::Deserialize)]
struct SizeQuery {
    size: Option<usize>,
}

async fn stream_bytes(State(sim): State<Arc<Simulator>>, Query(q): Query<SizeQuery>) -> Response {
    let size = match q.size {
        Some(n) if (1..=MAX_REQUEST_BYTES).contains(&n) => n,
        _ => {
            return (StatusCode::BAD_REQUEST, format!("size must be 1..={MAX_REQUEST_BYTES}\n"))
                .into_response();
        }
    };
    if !sim.options.latency.is_zero() {
        tokio::time::sleep(sim.options.latency).await;
    }
    let fault = Fault::from_u8(sim.fault.load(Ordering::Relaxed));
    match fault {
        Fault::Hang => return std::future::pending().await,
        Fault::ServerError => {
            return (StatusCode::SERVICE_UNAVAILABLE, "appliance busy\n").into_response();
        }
        Fault::Html => {
            let page = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>";
            return ([(header::CONTENT_TYPE, "text/html")], page).into_response();
        }
        _ => {}
    }
    sim.throttle(size).await;
    let mut bytes = vec![0u8; size];
    if getrandom::fill(&mut bytes).is_err() {
        return (StatusCode::INTERNAL_SERVER_ERROR, "rng failure\n").into_response();
    }
    match fault {
        Fault::Stuck => bytes.fill(0x5A),
        Fault::Bias => {
            // Each output bit is an independent coin flip with P(1) = 154/256 ≈ 0.6, drawn
            // from its own noise byte (reusing noise would add repetition, a different fault).
            let mut noise = vec![0u8; size * 8];
            if getrandom::fill(&mut noise).is_err() {
                return (StatusCode::INTERNAL_SERVER_ERROR, "rng failure\n").into_response();
            }
            for (b, flips) in bytes.iter_mut().zip(noise.chunks_exact(8)) {
                *b = flips
                    .iter()
                    .enumerate()
                    .fold(0u8, |acc, (k, r)| acc | (u8::from(*r < 154) << k));
            }
        }
        Fault::Short => bytes.truncate(size / 2),
        Fault::Repeat => {
            let mut block =
                sim.repeat_block.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if block.len() < size {
                block.clone_from(&bytes);
            }
            bytes.copy_from_slice(&block[..size]);
        }
        _ => {}
    }
    ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
}

/// Why the simulator's self-signed TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SelfSignedError {
    /// The certificate could not be generated.
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused it.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// A self-signed certificate for `names` and its rustls server config (TLS 1.3 and 1.2, no
/// ALPN; [`entropy_ops::tls`]'s set-up). Returns the config and the certificate in PEM (to
/// write out for the collector to trust or pin).
pub fn self_signed_tls(
    names: &[&str],
) -> Result<(Arc<rustls::ServerConfig>, String), SelfSignedError> {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let rcgen::CertifiedKey { cert, signing_key } = rcgen::generate_simple_self_signed(names)?;
    // rcgen serializes the key pair as PKCS#8.
    let key = PrivatePkcs8KeyDer::from(signing_key.serialize_der());
    let identity =
        Identity::new(vec![cert.der().clone()], key.into(), "the self-signed certificate");
    let settings = ServerSettings { versions: Versions::Tls13And12, client_ca: None, alpn: &[] };
    Ok((entropy_ops::tls::server_config(identity, &settings)?, cert.pem()))
}

/// Binds `addr` (port 0 for any).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}
