//! The gateway's listeners below gRPC: accepting, admitting and serving connections, within
//! byte allowances that make every buffer bounded, and delivery as the socket sees it.
//!
//! A connection, from the socket up:
//!
//! - [`admission`]: a place under the listener's cap, taken at accept; when full, the oldest
//!   connection that never authenticated gives way.
//! - [`connection::Conn`]: the socket, closed when idle (no authenticated call), stalled
//!   (owed entropy, none written for `send_timeout`) or evicted.
//! - TLS ([`tls`]), when configured.
//! - [`write_coalesce`]: the frames of one turn leave in one write; every byte that leaves is
//!   shown to [`written`], which tells the connection's [`ledger`] which response it belongs
//!   to, so a response counts as delivered only once its bytes have left the process.
//! - [`http2`] (h2, driven by the gateway: see there why not hyper) with a task per stream
//!   ([`stream`]): requests read within allowances ([`request_body`]), responses sent only as
//!   far as the peer's windows admit, each message settled ([`dues`]) when its last byte leaves;
//!   or, for gRPC-Web, Connect and the REST routes, [`http1`] (hyper).
//! - [`calls`]: which calls keep the connection from being idle.
//!
//! Every buffer counts against [`crate::domain::allowance`] accounts: per key (the key's
//! `max_undelivered_bytes`), per connection and for the whole process. docs/security.md
//! ("Resource bounds") gives each listener's worst case as a formula of the config.

pub(crate) mod admission;
pub(crate) mod calls;
pub(crate) mod connection;
pub(crate) mod dues;
mod framing;
pub(crate) mod http1;
pub(crate) mod http2;
pub(crate) mod ledger;
pub(crate) mod request_body;
mod small_queue;
mod stream;
pub mod tls;
pub(crate) mod write_coalesce;
pub(crate) mod written;

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use prost::bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::domain::allowance::Account;

pub(crate) use admission::Admission;
pub(crate) use calls::{CallSlot, TrackCallsLayer};
pub(crate) use connection::{Activity, ConnectionInfo, ConnectionLimits, Owing};
pub(crate) use dues::Dues;
pub(crate) use http2::Http2Settings;
pub(crate) use ledger::Settle;
pub(crate) use stream::CALL_BYTES;

use connection::Conn;
use stream::StreamContext;
use write_coalesce::{Coalesce, Outbound};
use written::Written;

/// One listener: what it admits, how it speaks, and the process account its requests use.
#[derive(Debug, Clone)]
pub struct Listener {
    /// Its connection cap and per-connection limits.
    pub admission: Admission,
    /// TLS (HTTP/2 by ALPN), or plaintext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Its HTTP/2 settings.
    pub http2: Http2Settings,
    /// Which HTTP/1.1 requests it serves besides HTTP/2 (none: HTTP/2 only): over plaintext
    /// told apart by the HTTP/2 preface, over TLS by ALPN (the TLS config must offer
    /// `http/1.1`: [`tls::with_http1`]).
    pub http1: Http1,
    /// The process's account for this listener's requests (public requests, or ingest bodies).
    pub requests: Account,
    /// Where refusals and cuts are counted.
    pub events: crate::metrics::ListenerEvents,
}

/// The HTTP/1.1 requests a listener serves; any other method is answered 405 there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Http1 {
    /// POST and OPTIONS (gRPC-Web and its CORS preflight).
    pub post: bool,
    /// GET (the REST routes).
    pub get: bool,
}

impl Http1 {
    /// Whether the listener speaks HTTP/1.1 at all.
    pub fn any(self) -> bool {
        self.post || self.get
    }

    /// Whether a request with `method` is served (else 405).
    pub(crate) fn serves(self, method: &http::Method) -> bool {
        match *method {
            http::Method::POST | http::Method::OPTIONS => self.post,
            http::Method::GET => self.get,
            _ => false,
        }
    }
}

/// Serves `service` on `tcp` for `listener` until `shutdown`; then stops accepting and waits
/// for every connection to finish (each is told to, with GOAWAY).
pub async fn serve<S, B>(
    tcp: TcpListener,
    listener: Listener,
    service: S,
    shutdown: CancellationToken,
) where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<B>,
            Error = Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display + Send,
{
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = tcp.accept() => accepted,
        };
        let (socket, _) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // Out of descriptors, most often: back off instead of spinning.
                tokio::time::sleep(listener.admission.accept_failed(&e)).await;
                continue;
            }
        };
        // Nagle's algorithm costs unary calls ~40 ms (STACK.md).
        let _ = socket.set_nodelay(true);
        let Some(conn) = listener.admission.admit(socket) else { continue };
        connections.spawn(serve_connection(
            conn,
            listener.clone(),
            service.clone(),
            shutdown.clone(),
        ));
    }
    // Closing the listening socket now: the kernel stops completing new connections.
    drop(tcp);
    connections.close();
    connections.wait().await;
}

/// Serves one admitted connection to its end.
async fn serve_connection<S, B>(
    conn: Conn<TcpStream>,
    listener: Listener,
    service: S,
    shutdown: CancellationToken,
) where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<B>,
            Error = Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display + Send,
{
    let activity = conn.activity().clone();
    let limits = *listener.admission.limits();
    let ctx = Arc::new(StreamContext {
        service: service.clone(),
        activity: activity.clone(),
        admission: listener.admission.clone(),
        requests: listener.requests.clone(),
        send_timeout: limits.send_timeout,
        events: listener.events.clone(),
    });
    let leaving = Leaving { written: Written::default(), activity: activity.clone() };
    match listener.tls.clone() {
        Some(config) => {
            let handshake = TlsAcceptor::from(config).accept(conn);
            // A connection still shaking hands at shutdown has no call to finish: it is
            // dropped then, rather than holding the drain for up to the handshake timeout.
            let handshake = tokio::select! {
                done = tokio::time::timeout(tls::HANDSHAKE_TIMEOUT, handshake) => done,
                () = shutdown.cancelled() => {
                    return tracing::debug!("shutting down during a TLS handshake");
                }
            };
            let tls = match handshake {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => return tracing::debug!("TLS handshake failed: {e}"),
                Err(_) => return tracing::debug!("TLS handshake timed out"),
            };
            // A client certificate the verifier accepted (mTLS) proves the connection.
            if tls.get_ref().1.peer_certificates().is_some() {
                activity.prove();
            }
            // With HTTP/1.1 offered too, ALPN says which; a client that named neither gets
            // the one its first bytes show.
            match (listener.http1.any(), tls.get_ref().1.alpn_protocol()) {
                (true, Some(b"http/1.1")) => {
                    let io = Coalesce::with_outbound(tls, leaving).flushing_at_once();
                    let (admission, requests, methods) =
                        (listener.admission, listener.requests, listener.http1);
                    http1::serve(io, service, (activity, methods), admission, requests, shutdown)
                        .await;
                }
                (true, None) => {
                    serve_sniffed(tls, leaving, listener, ctx, service, shutdown).await;
                }
                _ => {
                    let io = Coalesce::with_outbound(tls, leaving);
                    http2::serve(io, listener.http2, ctx, shutdown).await;
                }
            }
        }
        None if listener.http1.any() => {
            serve_sniffed(conn, leaving, listener, ctx, service, shutdown).await;
        }
        None => {
            let io = Coalesce::with_outbound(conn, leaving);
            http2::serve(io, listener.http2, ctx, shutdown).await;
        }
    }
}

/// Serves a connection that may speak HTTP/2 or HTTP/1.1, as its first bytes show.
async fn serve_sniffed<IO, S, B>(
    io: IO,
    leaving: Leaving,
    listener: Listener,
    ctx: Arc<StreamContext<S>>,
    service: S,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<B>,
            Error = Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display + Send,
{
    // A client that sends nothing is closed after the time a request head may take, or at
    // shutdown, which it would otherwise hold up: it has no call to finish.
    let sniffed = tokio::select! {
        sniffed = tokio::time::timeout(http1::HEADER_READ_TIMEOUT, sniff(io)) => sniffed,
        () = shutdown.cancelled() => return tracing::debug!("shutting down before a request"),
    };
    let (is_http2, io) = match sniffed {
        Ok(Ok(sniffed)) => sniffed,
        Ok(Err(e)) => return tracing::debug!("connection closed before a request: {e}"),
        Err(_) => return tracing::debug!("no request within {:?}", http1::HEADER_READ_TIMEOUT),
    };
    let io = Coalesce::with_outbound(io, leaving);
    if is_http2 {
        http2::serve(io, listener.http2, ctx, shutdown).await;
    } else {
        let (admission, requests, activity, methods) =
            (listener.admission, listener.requests, ctx.activity.clone(), listener.http1);
        let io = io.flushing_at_once();
        http1::serve(io, service, (activity, methods), admission, requests, shutdown).await;
    }
}

/// Shows a connection's ledger the body bytes that leave it.
struct Leaving {
    written: Written,
    activity: Arc<Activity>,
}

impl Outbound for Leaving {
    fn wrote(&mut self, bytes: &[u8]) {
        let activity = &self.activity;
        // Consecutive frames of one response (a 64 KiB message is four) go to the ledger as one.
        let mut run: Option<(u32, usize)> = None;
        let settle = |response: u32, n: usize| {
            let settled = activity.ledger.written(response, n);
            if settled.entropy_written {
                activity.progressed();
            }
            settled.run();
        };
        self.written.scan(bytes, |response, n| match &mut run {
            Some((current, sum)) if *current == response => *sum += n,
            _ => {
                if let Some((current, sum)) = run.replace((response, n)) {
                    settle(current, sum);
                }
            }
        });
        if let Some((current, sum)) = run {
            settle(current, sum);
        }
    }
}

/// The HTTP/2 client preface (RFC 9113 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads enough of a plaintext connection to tell HTTP/2 (its preface) from HTTP/1.1; returns
/// which, and the connection with those bytes put back.
async fn sniff<T: AsyncRead + Unpin>(mut io: T) -> io::Result<(bool, Rewind<T>)> {
    let mut seen = Vec::with_capacity(PREFACE.len());
    while seen.len() < PREFACE.len() && PREFACE.starts_with(&seen) {
        let mut byte = [0u8; PREFACE.len()];
        let want = PREFACE.len() - seen.len();
        let n = io.read(&mut byte[..want]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        seen.extend_from_slice(&byte[..n]);
    }
    Ok((seen.starts_with(PREFACE), Rewind { seen: Bytes::from(seen), io }))
}

/// A connection whose first bytes, already read, are read again.
#[derive(Debug)]
struct Rewind<T> {
    seen: Bytes,
    io: T,
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewind<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.seen.is_empty() {
            let n = self.seen.len().min(buf.remaining());
            buf.put_slice(&self.seen.split_to(n));
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Rewind<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
