//! One accepted connection: its place under the listener's cap, what it holds, when it is idle
//! or stalled, and the [`ConnectionInfo`] its requests carry.
//!
//! **Idleness.** A connection is idle while no *authenticated* call is in progress on it
//! (gRPC's MAX_CONNECTION_IDLE, narrowed): a call counts from the moment its request has fully
//! arrived and proved a key (or, on ingest, a verified chunk) to the end of its response
//! ([`super::calls`]). Calls that cost a peer nothing, health checks and watches, reflection,
//! refused calls, never count, nor do PINGs or bytes trickled by a slow-loris client. A
//! connection idle for `idle_timeout` is closed.
//!
//! **Stalls.** Entropy drawn for a connection's calls is *owed* until its bytes are written
//! out ([`super::ledger`]). A connection that owes bytes and has written none of an
//! entropy-bearing response for `send_timeout` is closed: every response on it is dropped,
//! and what it held is wiped and counted as discarded. Only body bytes of entropy-bearing
//! responses count as progress: not keepalive PINGs, not a health check's answer. A response
//! stalled on its own ([`super::stream`]) is reset unless the whole connection is stalled as
//! well: then the connection closes first. Both timers fall due together when nothing moves,
//! and a reset that ran first discarded what was owed, so nothing was owed any more and the
//! stalled connection stayed open (seen under load).
//!
//! **Eviction.** A connection that has never made an authenticated call is *unproven*. When
//! its listener is full, a new connection takes the place of the oldest unproven one
//! ([`super::admission`]), which is closed at its next turn.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Sleep;

use super::ledger::Ledger;
use crate::domain::allowance::Account;
use crate::metrics::OpenConnection;

/// A connection's place under its listener's cap, and in its open-connection gauge. It moves
/// to a new connection when this one is evicted.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(super) _permit: OwnedSemaphorePermit,
    pub(super) _open: OpenConnection,
}

/// Per-connection limits, from the config.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Close after this long without an authenticated call in progress; `None`: never.
    pub idle_timeout: Option<Duration>,
    /// Close when owed entropy has had nothing written for this long; `None`: never.
    pub send_timeout: Option<Duration>,
    /// Response bytes drawn for the connection's calls and not yet written.
    pub max_undelivered_bytes: usize,
    /// Request bytes (headers and bodies) and answers to calls without entropy, buffered.
    pub max_buffered_request_bytes: usize,
}

/// What is known about one connection, shared by its IO, its calls and its admission.
#[derive(Debug)]
pub(crate) struct Activity {
    origin: Instant,
    /// Authenticated calls in progress.
    calls: AtomicUsize,
    /// Milliseconds after `origin` when the last call ended (or the connection opened).
    idle_since_ms: AtomicU64,
    /// Responses (or stream messages) with drawn bytes not yet written.
    owed: AtomicUsize,
    /// Milliseconds after `origin` of the last entropy written, or of the moment bytes began
    /// to be owed when none were.
    progress_ms: AtomicU64,
    /// Has made an authenticated call.
    proven: AtomicBool,
    /// The key of its first authenticated call (public listener).
    key: std::sync::OnceLock<Box<str>>,
    /// Told to close (its place went to a newer connection).
    evicted: AtomicBool,
    /// A stalled response asked the connection to check whether it is stalled as a whole.
    stall_check: AtomicBool,
    /// One of its calls waits for room on the process's request allowance.
    charge_waiting: AtomicBool,
    /// The connection's read, to wake it on eviction.
    waker: AtomicWaker,
    /// Its place under the cap, taken away on eviction.
    pub(super) slot: Mutex<Option<Slot>>,
    /// What its responses' bytes have done.
    pub(super) ledger: Ledger,
    /// Response bytes drawn and not yet written (`max_undelivered_bytes_per_connection`).
    pub(super) responses: Account,
    /// Request bytes and answers without entropy (`max_buffered_request_bytes_per_connection`).
    pub(super) requests: Account,
}

impl Activity {
    pub(super) fn new(slot: Slot, limits: &ConnectionLimits) -> Self {
        Self {
            origin: Instant::now(),
            calls: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            owed: AtomicUsize::new(0),
            progress_ms: AtomicU64::new(0),
            proven: AtomicBool::new(false),
            key: std::sync::OnceLock::new(),
            evicted: AtomicBool::new(false),
            stall_check: AtomicBool::new(false),
            charge_waiting: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            slot: Mutex::new(Some(slot)),
            ledger: Ledger::default(),
            responses: Account::new(
                "max_undelivered_bytes_per_connection",
                limits.max_undelivered_bytes,
            ),
            requests: Account::new(
                "max_buffered_request_bytes_per_connection",
                limits.max_buffered_request_bytes,
            ),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Entropy bytes were written: the connection is making progress.
    pub(super) fn progressed(&self) {
        self.progress_ms.fetch_max(self.now_ms(), Ordering::AcqRel);
    }

    /// True when the connection as a whole owes entropy and has written none for `timeout`:
    /// then it closes (see the module docs, "Stalls").
    pub(super) fn is_stalled(&self, timeout: Duration) -> bool {
        self.stall_deadline(timeout).is_some_and(|deadline| deadline <= Instant::now())
    }

    /// Has the connection's task check now whether it is stalled as a whole (a response of it
    /// stalled), rather than when its own timer next fires.
    pub(super) fn check_stall(&self) {
        self.stall_check.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// When the connection, stalled now, would be closed; `None` while nothing is owed.
    fn stall_deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.owed.load(Ordering::Acquire) == 0 {
            return None;
        }
        let since = Duration::from_millis(self.progress_ms.load(Ordering::Acquire));
        Some(self.origin + since + timeout)
    }

    /// When the connection, idle now, would time out; `None` while a call is in progress.
    fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.calls.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire));
        Some(self.origin + since + timeout)
    }

    /// How long the connection has been without an authenticated call in progress; `None`
    /// while one is.
    pub(super) fn idle_for(&self) -> Option<Duration> {
        if self.calls.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.idle_since_ms.load(Ordering::Acquire);
        Some(Duration::from_millis(self.now_ms().saturating_sub(since)))
    }

    /// The connection's one place to wait for a call's charge, while it lasts; `None` when
    /// another call holds it.
    pub(super) fn wait_for_charge(self: &Arc<Self>) -> Option<ChargeWait> {
        (!self.charge_waiting.swap(true, Ordering::AcqRel)).then(|| ChargeWait(self.clone()))
    }

    pub(super) fn call_started(self: &Arc<Self>) -> CallGuard {
        self.calls.fetch_add(1, Ordering::AcqRel);
        CallGuard(self.clone())
    }

    /// Marks the connection proven: it made an authenticated call.
    pub(super) fn prove(&self) {
        self.proven.store(true, Ordering::Release);
    }

    /// Marks the connection proven by a call with `key` (the first such key is kept).
    pub(super) fn prove_as(&self, key: &str) {
        self.key.get_or_init(|| key.into());
        self.prove();
    }

    /// The key of its first authenticated call, if it made one with a key.
    pub(super) fn key(&self) -> Option<&str> {
        self.key.get().map(|k| &**k)
    }

    pub(super) fn is_proven(&self) -> bool {
        self.proven.load(Ordering::Acquire)
    }

    /// Tells the connection to close at its next turn, and takes its place under the cap.
    pub(super) fn evict(&self) -> Option<Slot> {
        let slot = self.slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        self.evicted.store(true, Ordering::Release);
        self.waker.wake();
        slot
    }

    pub(super) fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }
}

/// A call of the connection waiting for its charge; dropping it frees the place.
pub(super) struct ChargeWait(Arc<Activity>);

impl Drop for ChargeWait {
    fn drop(&mut self) {
        self.0.charge_waiting.store(false, Ordering::Release);
    }
}

/// One authenticated call in progress; dropping it ends the call.
#[derive(Debug)]
pub(super) struct CallGuard(Arc<Activity>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        // Stamp the time before the count can reach zero, so an idle check never pairs a zero
        // count with a stale stamp.
        self.0.idle_since_ms.fetch_max(self.0.now_ms(), Ordering::AcqRel);
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Drawn bytes of one response (or stream message) not yet written; dropping it settles them.
#[derive(Debug)]
pub(crate) struct Owing(Arc<Activity>);

impl Drop for Owing {
    fn drop(&mut self) {
        self.0.owed.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a request learns about its connection (in its extensions).
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    pub(super) activity: Arc<Activity>,
}

impl ConnectionInfo {
    /// Marks drawn bytes as owed until the guard drops (see the module docs on stalls).
    pub(crate) fn owe(&self) -> Owing {
        if self.activity.owed.fetch_add(1, Ordering::AcqRel) == 0 {
            // The first bytes owed get the whole send timeout from now.
            self.activity.progressed();
        }
        Owing(self.activity.clone())
    }

    /// The connection's allowance for drawn, unwritten response bytes.
    pub fn responses(&self) -> &Account {
        &self.activity.responses
    }

    /// Marks the connection proven (an authenticated call arrived on it).
    pub fn prove(&self) {
        self.activity.prove();
    }

    /// The connection of a request, from its extensions.
    pub fn of(extensions: &http::Extensions) -> Option<&ConnectionInfo> {
        extensions.get::<ConnectionInfo>()
    }
}

#[derive(Debug)]
struct Timer {
    timeout: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl Timer {
    fn new(timeout: Option<Duration>) -> Option<Self> {
        timeout.map(|timeout| Timer { timeout, sleep: Box::pin(tokio::time::sleep(timeout)) })
    }

    /// True when `deadline` (asked again each time the timer fires) has passed; otherwise
    /// re-arms the timer, registering the waker, for the next moment it could.
    fn expired(
        &mut self,
        cx: &mut Context<'_>,
        deadline: impl Fn(Duration) -> Option<Instant>,
    ) -> bool {
        while self.sleep.as_mut().poll(cx).is_ready() {
            let next = match deadline(self.timeout) {
                Some(deadline) if deadline <= Instant::now() => return true,
                Some(deadline) => deadline,
                // Not counting now: look again one timeout from now (whatever starts the
                // count stamps its start, so it gets the whole timeout).
                None => Instant::now() + self.timeout,
            };
            self.sleep.as_mut().reset(next.into());
        }
        false
    }
}

/// A connection's socket, closed when idle, stalled or evicted; its ledger is closed when it
/// drops.
#[derive(Debug)]
pub(crate) struct Conn<T> {
    inner: T,
    activity: Arc<Activity>,
    idle: Option<Timer>,
    stall: Option<Timer>,
    /// Counts the connection if it is closed as stalled.
    stalled: metrics::Counter,
}

impl<T> Conn<T> {
    pub(super) fn new(
        inner: T,
        activity: Arc<Activity>,
        limits: &ConnectionLimits,
        stalled: metrics::Counter,
    ) -> Self {
        Self {
            inner,
            activity,
            idle: Timer::new(limits.idle_timeout),
            stall: Timer::new(limits.send_timeout),
            stalled,
        }
    }

    /// What the connection's requests learn about it.
    pub(crate) fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }

    /// An error when the connection has owed entropy for the send timeout without writing it.
    fn stalled(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let activity = &self.activity;
        let stall = self.stall.as_mut()?;
        // A load first: this runs on every read and write, and a swap would write the line.
        let asked = activity.stall_check.load(Ordering::Acquire)
            && activity.stall_check.swap(false, Ordering::AcqRel)
            && activity.is_stalled(stall.timeout);
        if !asked && !stall.expired(cx, |t| activity.stall_deadline(t)) {
            return None;
        }
        tracing::debug!("closing a connection whose client stopped reading");
        self.stalled.increment(1);
        self.stall = None;
        Some(io::Error::new(
            io::ErrorKind::TimedOut,
            "owed entropy waited longer than the send timeout",
        ))
    }

    /// Why the connection must close now, if it must (checked where it reads, which the
    /// connection's task always polls: eviction wakes it there).
    fn must_close(&mut self, cx: &mut Context<'_>) -> Option<io::Result<()>> {
        self.activity.waker.register(cx.waker());
        if self.activity.is_evicted() {
            tracing::debug!("closing a connection evicted for a newer one");
            return Some(Ok(()));
        }
        if let Some(e) = self.stalled(cx) {
            return Some(Err(e));
        }
        let activity = &self.activity;
        if let Some(idle) = &mut self.idle
            && idle.expired(cx, |t| activity.idle_deadline(t))
        {
            tracing::debug!("closing idle connection");
            return Some(Ok(()));
        }
        None
    }
}

impl<T> Drop for Conn<T> {
    fn drop(&mut self) {
        // Nothing more will be written: what the responses still owe is discarded.
        self.activity.ledger.close().run();
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Conn<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // An end of stream makes h2 close the connection; the peer sees it closed.
        if let Some(close) = self.must_close(cx) {
            return Poll::Ready(close);
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Conn<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.stalled(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
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
        if let Some(e) = self.stalled(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
