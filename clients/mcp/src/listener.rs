//! The HTTP transport's accept loop and what bounds each connection: how many are open, how
//! long one may take to send a request head, how long one may sit idle, and how much HTTP/1.1
//! and HTTP/2 may buffer for it.
//!
//! **Count.** A connection takes a slot of `http_max_connections` at accept, before any TLS
//! handshake, and gives it back when its task ends; past the cap a new connection is closed at
//! once. So half-open handshakes and silent peers count, and descriptors stay bounded. Accept
//! errors (out of descriptors, most often) back off [`ACCEPT_BACKOFF`] instead of spinning.
//! Both are logged through the [`Refusals`] throttle: a line a second at most, with a count.
//!
//! **Time.** From accept, a connection has `http_header_timeout_ms` to finish its TLS
//! handshake and send a complete request head (any, even one refused): this covers half-open
//! connections, slow-loris heads on both protocols, and HTTP/2 connections that send only the
//! preface, SETTINGS or PINGs. On HTTP/1.1 hyper's header read timeout also bounds each next
//! head (it runs while a kept-alive connection waits, so such a connection closes after that
//! long without a request). Then a connection needs an authenticated request in progress at
//! least once every `http_idle_timeout_ms` ([`crate::activity`]); PINGs, trickled bytes and
//! refused requests are not activity. A connection due to close gets a graceful shutdown
//! (HTTP/2 GOAWAY) and [`CLOSE_GRACE`] to finish it.
//!
//! **Memory.** The constants below cap what hyper buffers per connection; docs/security.md
//! ("Resource bounds") adds them up with the other caps.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

use crate::activity::Activity;
use crate::refusal::{Refusal, Refusals};

/// How long to wait after an accept error before accepting again.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long a connection due to close (idle, or no head in time) gets to finish its shutdown.
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// HTTP/1.1: the most a connection's read buffer holds; a longer request head gets 431.
pub const H1_MAX_BUF_BYTES: usize = 64 << 10;
/// HTTP/2: streams open at once on one connection (an agent runs a few calls at a time).
pub const H2_MAX_STREAMS: u32 = 8;
/// HTTP/2: the largest header list of a request.
pub const H2_MAX_HEADER_LIST_BYTES: u32 = 16 << 10;
/// HTTP/2: request body bytes a peer may send on one stream before we read them.
pub const H2_STREAM_WINDOW_BYTES: u32 = 128 << 10;
/// HTTP/2: request body bytes a peer may send on one connection before we read them.
pub const H2_CONNECTION_WINDOW_BYTES: u32 = 128 << 10;
/// HTTP/2: response bytes buffered per stream for a peer that does not read.
pub const H2_MAX_SEND_BUF_BYTES: usize = 16 << 10;

/// The bounds of each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// From accept to a complete request head, TLS handshake included.
    pub header_timeout: Duration,
    /// Longest time without an authenticated request in progress.
    pub idle_timeout: Duration,
}

/// Serves `app` on accepted connections, plain or over TLS, within [`ConnectionLimits`].
pub struct Connections {
    app: axum::Router,
    acceptor: Option<TlsAcceptor>,
    limits: ConnectionLimits,
    refusals: Arc<Refusals>,
    http: auto::Builder<TokioExecutor>,
}

impl Connections {
    /// Connections to `app` within `limits` (TLS when `tls` is given), refusals logged to
    /// `refusals`.
    pub fn new(
        app: axum::Router,
        tls: Option<Arc<rustls::ServerConfig>>,
        limits: ConnectionLimits,
        refusals: Arc<Refusals>,
    ) -> Self {
        let mut http = auto::Builder::new(TokioExecutor::new());
        http.http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .max_buf_size(H1_MAX_BUF_BYTES);
        http.http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(H2_MAX_STREAMS)
            .max_header_list_size(H2_MAX_HEADER_LIST_BYTES)
            .initial_stream_window_size(H2_STREAM_WINDOW_BYTES)
            .initial_connection_window_size(H2_CONNECTION_WINDOW_BYTES)
            .max_send_buf_size(H2_MAX_SEND_BUF_BYTES);
        Self { app, acceptor: tls.map(TlsAcceptor::from), limits, refusals, http }
    }

    /// Accepts on `listener` until `shutdown`, then gives open connections `grace` to finish.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
        grace: Duration,
    ) -> io::Result<()> {
        let this = Arc::new(self);
        let slots = Arc::new(Semaphore::new(this.limits.max_connections));
        let connections = TaskTracker::new();
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = shutdown.cancelled() => break,
            };
            let tcp = match accepted {
                Ok((tcp, _peer)) => tcp,
                Err(e) => {
                    this.refusals.accept_failed(&e);
                    tokio::select! {
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                        () = shutdown.cancelled() => break,
                    }
                }
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                this.refusals.log(&Refusal::Connections { max: this.limits.max_connections });
                continue; // dropping `tcp` closes it
            };
            connections.spawn(this.clone().connection(tcp, slot, shutdown.clone()));
        }
        connections.close();
        if tokio::time::timeout(grace, connections.wait()).await.is_err() {
            tracing::warn!(?grace, "grace period over; closing connections still open");
        }
        Ok(())
    }

    async fn connection(
        self: Arc<Self>,
        tcp: TcpStream,
        _slot: OwnedSemaphorePermit,
        shutdown: CancellationToken,
    ) {
        let _ = tcp.set_nodelay(true);
        let activity = Activity::new();
        match &self.acceptor {
            Some(acceptor) => {
                // The handshake is part of the time to the first request head.
                let deadline = Instant::now() + self.limits.header_timeout;
                match tokio::time::timeout_at(deadline, acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => self.run(tls, activity, shutdown).await,
                    Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
                    Err(_) => tracing::debug!("TLS handshake timed out"),
                }
            }
            None => self.run(tcp, activity, shutdown).await,
        }
    }

    async fn run<I>(&self, io: I, activity: Arc<Activity>, shutdown: CancellationToken)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let seen = activity.clone();
        let app = self.app.clone().map_request(move |mut request: http::Request<_>| {
            request.extensions_mut().insert(seen.clone());
            request
        });
        let conn = self.http.serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
        tokio::pin!(conn);
        let ConnectionLimits { header_timeout, idle_timeout, .. } = self.limits;
        loop {
            // Busy: look again one idle timeout from now (a request ending re-stamps the clock).
            let wake = activity
                .deadline(header_timeout, idle_timeout)
                .unwrap_or_else(|| Instant::now() + idle_timeout);
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!("connection ended: {e}");
                    }
                    return;
                }
                () = tokio::time::sleep_until(wake) => {
                    let due = activity.deadline(header_timeout, idle_timeout);
                    if due.is_some_and(|due| due <= Instant::now()) {
                        tracing::debug!("closing a connection: no request head in time, or idle");
                        conn.as_mut().graceful_shutdown();
                        let _ = tokio::time::timeout(CLOSE_GRACE, conn.as_mut()).await;
                        return;
                    }
                }
                () = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.as_mut().await;
                    return;
                }
            }
        }
    }
}
