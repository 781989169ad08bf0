//! Per-connection limits: how many connections a listener holds open, and how long one may sit
//! idle.
//!
//! **Count.** Each admitted TCP connection carries a semaphore permit inside its IO wrapper, so
//! the permit returns exactly when hyper (or a failed TLS handshake) drops the connection. The
//! permit is taken at accept, before any TLS handshake, so half-open handshakes count too. Past
//! the cap a new connection is closed at once, before any HTTP/2 exchange (grpc-go and grpcurl
//! report UNAVAILABLE, tonic CANCELLED; the client can retry or go to another gateway), and the
//! refusal is logged at most once per second. Memory per connection is bounded by HTTP/2
//! settings; this bounds how many there are.
//!
//! **Idleness.** A connection is idle while no call is in progress on it (gRPC's
//! MAX_CONNECTION_IDLE). [`TrackCallsLayer`] counts a call from the moment its request has
//! fully arrived (END_STREAM) to the end of its response body, so a long `StreamRandom` keeps
//! its connection busy however slowly entropy flows, while a request that never completes (a
//! HEADERS frame without END_STREAM, a body trickled forever) does not. Calls that cost a peer
//! nothing to hold open, grpc.health.v1 `Watch` and reflection streams, never count: they
//! need no key. A connection idle for the configured time is closed; HTTP/2 PINGs and bytes
//! trickled by a slow-loris client do not count as activity. Clients reconnect on their next
//! call.
//!
//! **Stalled readers.** Entropy drawn for a client waits in our buffers and hyper's until the
//! client's HTTP/2 window lets it out. A connection that has had a response waiting to be sent
//! ([`ConnectionInfo::sending`]: a unary response not yet delivered, a stream whose queue is
//! full) and has written nothing to the socket for `send_timeout` is closed: every response on
//! it is dropped, and what it held is wiped and counted as discarded. Besides, the bytes drawn
//! and not yet delivered on one connection are capped ([`ConnectionInfo::hold_undelivered`]),
//! as they are per key.

mod track_calls;

pub use track_calls::{TrackCalls, TrackCallsLayer, Tracked};

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use entropy_ops::Throttle;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::metrics::{ConnectionMetrics, OpenConnection};

/// How long to wait after an accept error before accepting again.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Admits connections to one listener: the cap on open connections and the idle timeout.
#[derive(Debug, Clone)]
pub struct Admission {
    slots: Arc<Semaphore>,
    max: usize,
    idle_timeout: Option<Duration>,
    delivery: DeliveryLimits,
    listener: &'static str,
    metrics: ConnectionMetrics,
    last_warning: Arc<std::sync::Mutex<Option<Instant>>>,
}

impl Admission {
    /// At most `max` open connections on `listener`, each closed after `idle_timeout` without
    /// a call in progress (`None`: never), counted in `metrics`.
    pub fn new(
        max: usize,
        idle_timeout: Option<Duration>,
        listener: &'static str,
        metrics: ConnectionMetrics,
    ) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max)),
            max,
            idle_timeout,
            delivery: DeliveryLimits::default(),
            listener,
            metrics,
            last_warning: Arc::default(),
        }
    }

    /// Closes connections whose responses wait longer than `limits.send_timeout` with
    /// nothing written, and caps each connection's undelivered bytes.
    pub fn with_delivery(mut self, limits: DeliveryLimits) -> Self {
        self.delivery = limits;
        self
    }

    /// `tcp` wrapped with its permit, or `None` (and `tcp` closed) when the listener is full.
    pub fn admit(&self, tcp: TcpStream) -> Option<Limited<TcpStream>> {
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            self.metrics.refused();
            self.warn_full();
            return None; // dropping `tcp` closes it
        };
        let slot = Slot { _permit: permit, _open: self.metrics.open() };
        let activity = Arc::new(Activity::new(self.delivery.max_undelivered_bytes));
        let idle = self
            .idle_timeout
            .map(|timeout| IdleTimer { timeout, sleep: Box::pin(tokio::time::sleep(timeout)) });
        let stall = self
            .delivery
            .send_timeout
            .map(|timeout| IdleTimer { timeout, sleep: Box::pin(tokio::time::sleep(timeout)) });
        Some(Limited { inner: tcp, _slot: slot, activity, idle, stall })
    }

    /// Passes through the admitted connections of `incoming`; the rest are closed. An accept
    /// error (out of descriptors, most often) is logged at most once a second with a count
    /// and waits [`ACCEPT_BACKOFF`] before the next accept, instead of spinning.
    pub fn limit<S, E>(self, incoming: S) -> impl Stream<Item = Result<Limited<TcpStream>, E>>
    where
        S: Stream<Item = Result<TcpStream, E>>,
        E: std::fmt::Display,
    {
        let errors = Arc::new(Throttle::default());
        incoming.filter_map(move |accepted| {
            let admitted = match accepted {
                Err(e) => {
                    if let Some(held_back) = errors.allow("accept") {
                        tracing::warn!(
                            held_back,
                            "{}: accept failed; backing off: {e}",
                            self.listener
                        );
                    }
                    None
                }
                Ok(tcp) => Some(self.admit(tcp).map(Ok)),
            };
            async move {
                match admitted {
                    Some(admitted) => admitted,
                    None => {
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        None
                    }
                }
            }
        })
    }

    fn warn_full(&self) {
        let mut last = self.last_warning.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
            tracing::warn!(
                listener = self.listener,
                max = self.max,
                "connection limit reached; closing new connections"
            );
            *last = Some(Instant::now());
        }
    }
}

/// Limits on what a connection may hold for a client that does not read.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryLimits {
    /// Close a connection whose waiting responses had nothing written for this long.
    pub send_timeout: Option<Duration>,
    /// Bytes drawn for a connection's calls and not yet delivered.
    pub max_undelivered_bytes: usize,
}

impl Default for DeliveryLimits {
    fn default() -> Self {
        Self { send_timeout: None, max_undelivered_bytes: 16 << 20 }
    }
}

/// Calls in progress on one connection, and since when it has had none.
#[derive(Debug)]
pub struct Activity {
    origin: Instant,
    calls: AtomicUsize,
    /// Milliseconds after `origin` when the last call ended (or the connection opened).
    idle_since_ms: AtomicU64,
    /// Responses waiting to be sent.
    sending: AtomicUsize,
    /// Milliseconds after `origin` of the last write to the socket, or of the moment a response
    /// began to wait when none did, whichever is later.
    progress_ms: AtomicU64,
    /// Permits = bytes this connection may still have drawn and undelivered.
    undelivered: Arc<Semaphore>,
    max_undelivered: usize,
}

impl Activity {
    fn new(max_undelivered: usize) -> Self {
        Self {
            origin: Instant::now(),
            calls: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            sending: AtomicUsize::new(0),
            progress_ms: AtomicU64::new(0),
            undelivered: Arc::new(Semaphore::new(max_undelivered)),
            max_undelivered,
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn wrote(&self) {
        self.progress_ms.fetch_max(self.now_ms(), Ordering::AcqRel);
    }

    /// When the connection, stalled now, would be closed; `None` while nothing waits to be
    /// sent.
    fn stall_deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.sending.load(Ordering::Acquire) == 0 {
            return None;
        }
        let since = Duration::from_millis(self.progress_ms.load(Ordering::Acquire));
        Some(self.origin + since + timeout)
    }

    pub(super) fn call_started(self: &Arc<Self>) -> CallGuard {
        self.calls.fetch_add(1, Ordering::AcqRel);
        CallGuard(self.clone())
    }

    /// When the connection, idle now, would time out; `None` while a call is in progress.
    fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.calls.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire));
        Some(self.origin + since + timeout)
    }
}

/// One call in progress; dropping it ends the call.
#[derive(Debug)]
pub(super) struct CallGuard(Arc<Activity>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        // Stamp the time before the count can reach zero, so an idle check never pairs a zero
        // count with a stale stamp.
        let now = u64::try_from(self.0.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.idle_since_ms.fetch_max(now, Ordering::AcqRel);
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response waiting to be sent on its connection; dropping it ends the wait.
#[derive(Debug)]
pub struct Sending(Arc<Activity>);

impl Drop for Sending {
    fn drop(&mut self) {
        self.0.sending.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Debug)]
struct IdleTimer {
    timeout: Duration,
    sleep: Pin<Box<Sleep>>,
}

/// A connection's place under its listener's cap, and in its open-connection gauge.
#[derive(Debug)]
struct Slot {
    _permit: OwnedSemaphorePermit,
    _open: OpenConnection,
}

/// A connection that counts against its listener's cap until dropped, and closes itself when
/// idle too long.
#[derive(Debug)]
pub struct Limited<T> {
    inner: T,
    _slot: Slot,
    activity: Arc<Activity>,
    idle: Option<IdleTimer>,
    stall: Option<IdleTimer>,
}

impl<T> Limited<T> {
    /// True when responses have waited with nothing written for the send timeout. Otherwise
    /// re-arms the timer for the next moment that could happen.
    fn stalled(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(stall) = &mut self.stall else { return false };
        while stall.sleep.as_mut().poll(cx).is_ready() {
            let next = match self.activity.stall_deadline(stall.timeout) {
                Some(deadline) if deadline <= Instant::now() => return true,
                Some(deadline) => deadline,
                // Nothing waits: look again one timeout from now (a response that starts
                // waiting stamps its start, so it gets the whole timeout).
                None => Instant::now() + stall.timeout,
            };
            stall.sleep.as_mut().reset(next.into());
        }
        false
    }

    /// True when the idle timer has run out with no call in progress. Otherwise re-arms the
    /// timer (registering the waker) for the next moment the connection could time out.
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(idle) = &mut self.idle else { return false };
        while idle.sleep.as_mut().poll(cx).is_ready() {
            let next = match self.activity.idle_deadline(idle.timeout) {
                Some(deadline) if deadline <= Instant::now() => return true,
                Some(deadline) => deadline,
                // Busy: look again one timeout from now (a call ending re-stamps the clock).
                None => Instant::now() + idle.timeout,
            };
            idle.sleep.as_mut().reset(next.into());
        }
        false
    }
}

/// What a request learns about its connection (found in its extensions by tonic).
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    /// The peer's address.
    pub remote_addr: Option<SocketAddr>,
    activity: Arc<Activity>,
}

impl ConnectionInfo {
    /// Marks a response as waiting to be sent until the guard drops (see the module docs).
    pub fn sending(&self) -> Sending {
        if self.activity.sending.fetch_add(1, Ordering::AcqRel) == 0 {
            // The first response to wait gets the whole timeout from now.
            self.activity.wrote();
        }
        Sending(self.activity.clone())
    }

    /// Holds `n` bytes of this connection's undelivered allowance until the permit drops,
    /// waiting until `deadline`; `None` when it passed first.
    pub async fn hold_undelivered(
        &self,
        n: usize,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<OwnedSemaphorePermit> {
        let n = u32::try_from(n.min(self.activity.max_undelivered)).unwrap_or(u32::MAX);
        let acquire = self.activity.undelivered.clone().acquire_many_owned(n);
        let permit = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, acquire).await.ok()?,
            None => acquire.await,
        };
        // The semaphore is never closed.
        permit.ok()
    }

    /// Bytes drawn for this connection and not yet delivered, and the cap.
    pub fn undelivered_bytes(&self) -> (usize, usize) {
        let cap = self.activity.max_undelivered;
        (cap - self.activity.undelivered.available_permits(), cap)
    }

    /// The connection of a request, from its extensions (plaintext or TLS).
    pub fn of(extensions: &http::Extensions) -> Option<&ConnectionInfo> {
        extensions.get::<ConnectionInfo>().or_else(|| {
            let tls = extensions.get::<tonic::transport::server::TlsConnectInfo<ConnectionInfo>>();
            tls.map(|tls| tls.get_ref())
        })
    }
}

impl Connected for Limited<TcpStream> {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        let TcpConnectInfo { remote_addr, .. } = self.inner.connect_info();
        ConnectionInfo { remote_addr, activity: self.activity.clone() }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Limited<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.stalled(cx) {
            return Poll::Ready(Err(stalled_error()));
        }
        if self.idle_expired(cx) {
            tracing::debug!("closing idle connection");
            // End of stream: hyper closes the connection, the peer sees it closed.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Limited<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.stalled(cx) {
            return Poll::Ready(Err(stalled_error()));
        }
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written
            && n > 0
        {
            self.activity.wrote();
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.stalled(cx) {
            return Poll::Ready(Err(stalled_error()));
        }
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = written
            && n > 0
        {
            self.activity.wrote();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The error that closes a stalled connection.
fn stalled_error() -> io::Error {
    tracing::debug!("closing a connection whose client stopped reading");
    io::Error::new(io::ErrorKind::TimedOut, "responses waited longer than the send timeout")
}
