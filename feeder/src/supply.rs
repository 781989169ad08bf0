//! The feeder's [`Entropy`]: an endless StreamRandom from the gateway, every batch through the
//! continuous health tests on arrival, a bounded buffer of tested bytes, each handed out once.
//!
//! # Design
//!
//! One reader task owns the stream and a [`HealthMonitor`]; consumers (the kernel feed, EGD
//! clients) take from a ring buffer of at most `buffer_bytes` tested bytes under one mutex,
//! held for a memcpy. Bytes leave the ring by being copied out and wiped in place in the same
//! critical section, so no byte is handed out twice; bytes that are wiped instead of handed
//! out are counted as discarded, with their reason.
//!
//! **Backpressure.** The reader reads only when the ring has room for a whole read (at most
//! `min(chunk_bytes, buffer_bytes / 2)`); while it waits, the stream is not polled, and
//! HTTP/2 flow control holds the gateway. (The feeder opens its stream with a window of two
//! messages, `2 × chunk_bytes` but at least HTTP/2's 65,535 bytes, so at most that much arrives
//! untested into the client's receive buffer before the gateway is held; the gateway resets a
//! stream whose window stays shut for its `send_timeout_ms`, 30 s by default: that shows here
//! as a reconnect with a fresh start-up test when reading resumes.)
//!
//! **Health tests.** Each stream gets a fresh monitor: its first [`STARTUP_BYTES`] are tested
//! and discarded (reason `startup`). When a test fails, the failing batch and every byte of
//! that stream still in the ring are wiped and never handed out (reason `health`): the ring
//! knows how many of its newest bytes came from the current stream. The stream is dropped and
//! a new one is opened after a backoff; it must pass its own start-up test. The client
//! library may reopen a stream on its own after a transport error (its reconnect rule, here
//! with a budget of [`LIBRARY_RECONNECT_BUDGET`]); a read after its reconnect counter moved
//! brings bytes of a new stream, which get a fresh monitor too.
//!
//! **Outages.** When the library gives up (or the gateway refuses the key), the supply waits
//! and opens a new stream: backoff from [`INITIAL_BACKOFF`] doubling to [`MAX_BACKOFF`],
//! jittered, never a busy loop; reset once a stream has stayed healthy for
//! [`HEALTHY_RESETS_BACKOFF`]. Connection attempts in an outage: at most 9 per cycle (a
//! stream's attempts within the library's budget, `library_options`), one cycle per
//! `5 s + backoff`, so at most 9 per 20 s once the backoff reaches its cap. An outage longer
//! than the library's budget is logged once when the library gives up and once when bytes
//! flow again; a shorter one is logged once, when the library has reopened the stream.
//!
//! **Take.** [`Entropy::take`] waits until the ring holds all `n` bytes and takes them in one
//! critical section, so a take dropped while waiting has taken nothing (cancel-safe). A take
//! of more than `buffer_bytes` cannot be served at once; it gathers piece by piece, and if it
//! is dropped midway the pieces it held are wiped (handed to no one, so still at most once).
//! Waiting takers are woken together; there is no queue, so under scarcity a large take may
//! wait while small ones are served.
//!
//! Everything buffered is wiped on drop and at shutdown (reason `shutdown`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use entropy_diode_client::{Client, RandomStream, StreamOptions};
use entropy_health::{HealthMonitor, HealthTest, STARTUP_BYTES, Verdict};
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zeroize::{Zeroize, Zeroizing};

use crate::entropy::{Closed, Entropy};
use crate::metrics::{Discard, Metrics};

/// The health tests' false-alarm probability is 2^-ALPHA_LOG2 (the collector's default).
pub const ALPHA_LOG2: u32 = 40;
/// How long the client library's reader itself keeps reopening a broken stream before it
/// reports the failure here.
pub const LIBRARY_RECONNECT_BUDGET: Duration = Duration::from_secs(5);
/// The client library's reconnect rule for the feeder's streams: its budget, and its backoff
/// from 250 ms doubling to 2 s (jittered in the upper half). One outage cycle (a stream's
/// budget, then the supply's own backoff) makes at most 9 attempts: the first, and retries
/// after delays of at least 125, 250, 500, 1000, 1000, 1000, 1000 ms (4875 ms in all), then
/// one more the library clips to the budget's end.
fn library_options(chunk_bytes: u32) -> StreamOptions {
    StreamOptions {
        chunk_bytes,
        reconnect_budget: LIBRARY_RECONNECT_BUDGET,
        initial_backoff: Duration::from_millis(250),
        max_backoff: Duration::from_secs(2),
        ..StreamOptions::default()
    }
}

/// First wait before opening a new stream after a failure.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between streams.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A stream healthy for this long resets the backoff.
pub const HEALTHY_RESETS_BACKOFF: Duration = Duration::from_secs(60);

/// The HTTP/2 window the supply's stream is opened with: two messages (at least HTTP/2's
/// initial 65,535 bytes, which the client library enforces), so that what sits untested in the
/// client's receive buffer while the ring is full stays that small.
pub fn stream_window(chunk_bytes: u32) -> u32 {
    chunk_bytes.saturating_mul(2)
}

/// What the supply needs to know (from the config).
#[derive(Debug, Clone, Copy)]
pub struct SupplyOptions {
    /// StreamRandom message size.
    pub chunk_bytes: u32,
    /// Most tested bytes held.
    pub buffer_bytes: usize,
    /// The min-entropy per byte the health tests assume.
    pub min_entropy_bits_per_byte: f64,
}

/// Health-tested gateway bytes (see the module docs).
pub struct Supply {
    shared: Arc<Shared>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Supply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supply").field("available", &self.available()).finish_non_exhaustive()
    }
}

struct Shared {
    ring: Mutex<Ring>,
    /// Bytes arrived (or the supply closed).
    data: Notify,
    /// Bytes left (room for the reader).
    room: Notify,
    /// The current stream has passed its start-up test and not failed since.
    healthy: AtomicBool,
    metrics: Metrics,
}

impl Shared {
    /// The ring. A panic while it was held cannot leave it inconsistent for readers of it
    /// (every operation updates `head`/`len` after its copy), so a poisoned lock is used as is.
    fn ring(&self) -> MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Tested bytes, oldest first, in a fixed buffer; wiped as they leave.
struct Ring {
    buf: Zeroizing<Vec<u8>>,
    head: usize,
    len: usize,
    /// How many of the newest bytes came from the current stream.
    from_stream: usize,
    closed: bool,
}

impl Ring {
    fn new(capacity: usize) -> Self {
        Self {
            buf: Zeroizing::new(vec![0; capacity]),
            head: 0,
            len: 0,
            from_stream: 0,
            closed: false,
        }
    }

    fn capacity(&self) -> usize {
        self.buf.len()
    }

    fn room(&self) -> usize {
        self.capacity() - self.len
    }

    /// Appends `bytes` of the current stream; the caller checked the room.
    fn push(&mut self, bytes: &[u8]) {
        debug_assert!(bytes.len() <= self.room());
        let cap = self.capacity();
        let tail = (self.head + self.len) % cap;
        let first = bytes.len().min(cap - tail);
        self.buf[tail..tail + first].copy_from_slice(&bytes[..first]);
        self.buf[..bytes.len() - first].copy_from_slice(&bytes[first..]);
        self.len += bytes.len();
        self.from_stream += bytes.len();
    }

    /// Moves the oldest `n` bytes (at most `len`) to `out`, wiping them here.
    fn pop_into(&mut self, out: &mut Vec<u8>, n: usize) {
        let n = n.min(self.len);
        let cap = self.capacity();
        let first = n.min(cap - self.head);
        out.extend_from_slice(&self.buf[self.head..self.head + first]);
        self.buf[self.head..self.head + first].zeroize();
        out.extend_from_slice(&self.buf[..n - first]);
        self.buf[..n - first].zeroize();
        self.head = (self.head + n) % cap;
        self.len -= n;
        self.from_stream = self.from_stream.min(self.len);
    }

    /// Wipes the newest `n` bytes; returns how many.
    fn wipe_newest(&mut self, n: usize) -> usize {
        let n = n.min(self.len);
        let cap = self.capacity();
        for i in 0..n {
            self.buf[(self.head + self.len - 1 - i) % cap] = 0;
        }
        self.len -= n;
        self.from_stream = self.from_stream.min(self.len);
        n
    }

    /// Wipes the current stream's bytes; returns how many.
    fn wipe_stream(&mut self) -> usize {
        let n = self.from_stream;
        self.wipe_newest(n)
    }
}

impl Supply {
    /// Starts the reader task on `client` (it connects lazily). It runs until `shutdown`;
    /// the supply then closes: buffered bytes are wiped and takes return [`Closed`].
    pub fn start(
        client: Client,
        options: SupplyOptions,
        metrics: Metrics,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let shared = Arc::new(Shared {
            ring: Mutex::new(Ring::new(options.buffer_bytes)),
            data: Notify::new(),
            room: Notify::new(),
            healthy: AtomicBool::new(false),
            metrics,
        });
        let reader = tokio::spawn(Reader::new(shared.clone(), client, options).run(shutdown));
        Arc::new(Self { shared, reader })
    }

    /// The current stream has passed its start-up test and not failed since.
    pub fn stream_healthy(&self) -> bool {
        self.shared.healthy.load(Ordering::Relaxed)
    }

    /// Waits until the reader task has ended (after shutdown).
    pub async fn closed(&self) {
        loop {
            let notified = self.shared.data.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.ring().closed {
                return;
            }
            notified.await;
        }
    }

    fn take_ready(&self, max: usize) -> Zeroizing<Vec<u8>> {
        let mut ring = self.shared.ring();
        let n = max.min(ring.len);
        // Allocated at its final size: a Vec that grew would leave unwiped copies behind.
        let mut out = Zeroizing::new(Vec::with_capacity(n));
        ring.pop_into(&mut out, n);
        self.shared.metrics.buffered.set(ring.len as f64);
        drop(ring);
        if !out.is_empty() {
            self.shared.room.notify_one();
        }
        out
    }
}

impl Drop for Supply {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Entropy for Supply {
    async fn take(&self, n: usize) -> Result<Zeroizing<Vec<u8>>, Closed> {
        let capacity = self.shared.ring().capacity();
        // Allocated at its final size: a Vec that grew would leave unwiped copies behind.
        let mut out = Zeroizing::new(Vec::with_capacity(n));
        while out.len() < n {
            let notified = self.shared.data.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut ring = self.shared.ring();
                if ring.closed {
                    return Err(Closed);
                }
                let want = n - out.len();
                // All at once when it can fit (cancel-safe); piecewise only beyond the ring.
                let ready = if n <= capacity { ring.len >= want } else { ring.len > 0 };
                if ready {
                    ring.pop_into(&mut out, want);
                    self.shared.metrics.buffered.set(ring.len as f64);
                    drop(ring);
                    self.shared.room.notify_one();
                    continue;
                }
            }
            notified.await;
        }
        Ok(out)
    }

    fn take_now(&self, max: usize) -> Zeroizing<Vec<u8>> {
        self.take_ready(max)
    }

    fn available(&self) -> usize {
        self.shared.ring().len
    }
}

/// Why a stream ended.
enum Ended {
    Shutdown,
    Health(HealthTest),
    Failed(std::io::Error),
}

/// The reader task's state across streams.
struct Reader {
    shared: Arc<Shared>,
    client: Client,
    options: SupplyOptions,
    /// Bytes per read: at most half the ring, so a read fits while bytes wait to be taken.
    read_bytes: usize,
    /// Failures in a row (for the backoff).
    failures: u32,
    /// When the current outage began, if one is going on.
    outage_since: Option<Instant>,
    /// When the current stream passed its start-up test.
    healthy_since: Option<Instant>,
    streams: u64,
}

impl Reader {
    fn new(shared: Arc<Shared>, client: Client, options: SupplyOptions) -> Self {
        let read_bytes = (options.chunk_bytes as usize).min(options.buffer_bytes / 2).max(1);
        Self {
            shared,
            client,
            options,
            read_bytes,
            failures: 0,
            outage_since: None,
            healthy_since: None,
            streams: 0,
        }
    }

    async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let stream = self.client.stream_with(None, library_options(self.options.chunk_bytes));
            if self.streams > 0 {
                self.shared.metrics.reconnects.increment(1);
            }
            self.streams += 1;
            let ended = self.read_stream(stream, &shutdown).await;
            self.shared.healthy.store(false, Ordering::Relaxed);
            if self.healthy_since.take().is_some_and(|t| t.elapsed() >= HEALTHY_RESETS_BACKOFF) {
                self.failures = 0;
            }
            match ended {
                Ended::Shutdown => break,
                Ended::Health(test) => {
                    tracing::warn!(
                        test = test.label(),
                        "health test failed on the gateway's bytes: the batch and the stream's \
                         buffered bytes are wiped; opening a new stream after a backoff"
                    );
                }
                Ended::Failed(e) => {
                    if self.outage_since.is_none() {
                        self.outage_since = Some(Instant::now());
                        tracing::warn!(
                            "gateway stream failed: {e}; retrying with backoff up to {} s",
                            MAX_BACKOFF.as_secs()
                        );
                    } else {
                        tracing::debug!("gateway stream attempt failed: {e}");
                    }
                }
            }
            let delay = self.backoff();
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        // Dropping `self` closes the supply (also when the task is aborted or panics).
    }

    /// The next wait: doubling from INITIAL_BACKOFF per failure in a row, capped, with jitter
    /// in the upper half.
    fn backoff(&mut self) -> Duration {
        let delay = backoff_delay(self.failures, jitter());
        self.failures = self.failures.saturating_add(1);
        delay
    }

    /// Reads one stream until it fails a test, fails, or the feeder stops.
    async fn read_stream(
        &mut self,
        mut stream: RandomStream,
        shutdown: &CancellationToken,
    ) -> Ended {
        let mut monitor = HealthMonitor::new(self.options.min_entropy_bits_per_byte, ALPHA_LOG2);
        let mut reconnects = stream.reconnects();
        self.shared.ring().from_stream = 0;
        let mut batch = Zeroizing::new(vec![0u8; self.read_bytes]);
        loop {
            if !self.wait_for_room(shutdown).await {
                return Ended::Shutdown;
            }
            let n = tokio::select! {
                () = shutdown.cancelled() => return Ended::Shutdown,
                read = stream.read(&mut batch[..]) => match read {
                    Ok(0) => return Ended::Failed(std::io::Error::other("the stream ended")),
                    Ok(n) => n,
                    Err(e) => return Ended::Failed(e),
                },
            };
            self.shared.metrics.received.increment(n as u64);
            if let Some(since) = self.outage_since.take() {
                tracing::info!(
                    "gateway stream flowing again after {:.1} s",
                    since.elapsed().as_secs_f64()
                );
            }
            if stream.reconnects() != reconnects {
                // The library reopened the stream: these bytes are a new stream's.
                let more = stream.reconnects().wrapping_sub(reconnects);
                reconnects = stream.reconnects();
                self.shared.metrics.reconnects.increment(u64::from(more));
                self.shared.healthy.store(false, Ordering::Relaxed);
                self.healthy_since = None;
                monitor = HealthMonitor::new(self.options.min_entropy_bits_per_byte, ALPHA_LOG2);
                self.shared.ring().from_stream = 0;
                tracing::info!("the client library reopened the stream: fresh start-up test");
            }
            let verdict = monitor.check(&batch[..n]);
            match verdict {
                Verdict::Usable => self.keep(&batch[..n]),
                Verdict::Starting | Verdict::Recovering => {
                    self.shared.metrics.discarded(Discard::Startup, n);
                }
                Verdict::Failed(test) => {
                    batch.zeroize();
                    let wiped = {
                        let mut ring = self.shared.ring();
                        let wiped = ring.wipe_stream();
                        self.shared.metrics.buffered.set(ring.len as f64);
                        wiped
                    };
                    self.shared.metrics.discarded(Discard::Health, n + wiped);
                    self.shared.metrics.health_failure(test);
                    return Ended::Health(test);
                }
            }
            batch[..n].zeroize();
        }
    }

    /// Puts tested bytes in the ring (room was waited for) and wakes takers.
    fn keep(&mut self, bytes: &[u8]) {
        if self.healthy_since.is_none() {
            self.healthy_since = Some(Instant::now());
            self.shared.healthy.store(true, Ordering::Relaxed);
            tracing::debug!("stream passed its start-up test ({STARTUP_BYTES} bytes)");
        }
        let mut ring = self.shared.ring();
        ring.push(bytes);
        self.shared.metrics.buffered.set(ring.len as f64);
        drop(ring);
        self.shared.data.notify_waiters();
    }

    /// Waits until a whole read fits; false on shutdown.
    async fn wait_for_room(&self, shutdown: &CancellationToken) -> bool {
        loop {
            let notified = self.shared.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.ring().room() >= self.read_bytes {
                return true;
            }
            tokio::select! {
                () = shutdown.cancelled() => return false,
                () = notified => {}
            }
        }
    }
}

impl Drop for Reader {
    /// Wipes what is buffered and wakes every taker with [`Closed`]: when the reader stops
    /// for shutdown, and if its task is aborted (the supply dropped) or panics, so no taker
    /// waits for bytes that will never come.
    fn drop(&mut self) {
        let mut ring = self.shared.ring();
        let len = ring.len;
        ring.wipe_newest(len);
        ring.closed = true;
        self.shared.metrics.buffered.set(0.0);
        drop(ring);
        self.shared.metrics.discarded(Discard::Shutdown, len);
        self.shared.data.notify_waiters();
    }
}

/// The wait after `failures` failures in a row (0 for the first), `jitter` in [0, 1]: within
/// `[c/2, c]` for the ceiling `c = min(INITIAL_BACKOFF * 2^failures, MAX_BACKOFF)`.
fn backoff_delay(failures: u32, jitter: f64) -> Duration {
    let ceiling = INITIAL_BACKOFF.saturating_mul(1 << failures.min(16)).min(MAX_BACKOFF);
    ceiling / 2 + ceiling.mul_f64(jitter.clamp(0.0, 1.0) / 2.0)
}

/// A number in [0, 1] for backoff jitter (not for anything secret).
fn jitter() -> f64 {
    use std::hash::{BuildHasher, RandomState};
    (RandomState::new().hash_one(std::time::Instant::now()) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_half_a_second_and_stays_within_a_quarter_second_and_thirty() {
        let ms = Duration::from_millis;
        assert_eq!(backoff_delay(0, 0.0), ms(250));
        assert_eq!(backoff_delay(0, 1.0), ms(500));
        assert_eq!(backoff_delay(1, 1.0), ms(1000));
        assert_eq!(backoff_delay(5, 1.0), ms(16_000));
        for failures in [6, 7, 20, u32::MAX] {
            assert_eq!(backoff_delay(failures, 1.0), MAX_BACKOFF);
            assert_eq!(backoff_delay(failures, 0.0), MAX_BACKOFF / 2);
        }
        // Over any sweep of failures and jitter: never below 250 ms (no busy loop), never
        // above 30 s.
        for failures in 0..40 {
            for j in 0..=10 {
                let d = backoff_delay(failures, f64::from(j) / 10.0);
                assert!(d >= ms(250) && d <= MAX_BACKOFF, "{failures} {j}: {d:?}");
            }
        }
    }

    #[test]
    fn the_ring_hands_out_in_order_across_the_wrap_and_wipes_what_leaves() {
        let mut ring = Ring::new(8);
        ring.push(&[1, 2, 3, 4, 5, 6]);
        let mut out = Vec::new();
        ring.pop_into(&mut out, 4);
        assert_eq!(out, [1, 2, 3, 4]);
        ring.push(&[7, 8, 9, 10, 11]); // wraps
        assert_eq!((ring.len, ring.room()), (7, 1));
        out.clear();
        ring.pop_into(&mut out, 100);
        assert_eq!(out, [5, 6, 7, 8, 9, 10, 11]);
        assert!(ring.buf.iter().all(|&b| b == 0), "popped bytes are wiped: {:?}", ring.buf);
    }

    #[test]
    fn a_failed_stream_loses_exactly_its_own_buffered_bytes() {
        let mut ring = Ring::new(16);
        ring.push(&[1; 6]); // an earlier stream's bytes
        ring.from_stream = 0; // a new stream begins
        ring.push(&[2; 5]);
        let mut out = Vec::new();
        ring.pop_into(&mut out, 3);
        assert_eq!(ring.wipe_stream(), 5);
        out.clear();
        ring.pop_into(&mut out, 100);
        assert_eq!(out, [1; 3], "the earlier stream's bytes remain");
        // When takers consumed into the stream's bytes, only the rest is its to wipe.
        ring.from_stream = 0;
        ring.push(&[3; 4]);
        out.clear();
        ring.pop_into(&mut out, 2);
        assert_eq!(ring.wipe_stream(), 2);
        assert_eq!(ring.len, 0);
        assert!(ring.buf.iter().all(|&b| b == 0));
    }
}
