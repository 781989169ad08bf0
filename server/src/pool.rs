//! The entropy pool: a bounded ring of verified bytes, each of which is handed out once.
//!
//! # Design
//!
//! Bytes live in one ring buffer allocated at start (capacity fixed by config), guarded by a
//! mutex that is held only for a `memcpy`. Who may take bytes is decided by a
//! [`tokio::sync::Semaphore`] whose permits count the bytes in the ring not yet claimed:
//!
//! - `put` copies bytes in, then adds that many permits;
//! - `take(n)` acquires `n` permits (waiting if needed), then copies `n` bytes out and zeroizes
//!   the ring region they came from.
//!
//! Tokio's semaphore is fair and `acquire_many` is all-or-nothing: waiters are served strictly
//! in arrival order, so a large request at the head is not overtaken by small ones (it cannot
//! starve) and does not jump ahead of earlier small ones either. A waiter that gives up (its
//! deadline passed, its client left) loses its place and holds nothing, so a failed take
//! consumes nothing. Permits never exceed the bytes in the ring, so once acquired, the bytes are
//! there; two takers hold disjoint permits, so no byte goes to two of them.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::{Semaphore, TryAcquireError};
use tokio::time::Instant;

use crate::secret::SecretBytes;

/// Distance between the writes that commit the ring's memory at start: the smallest page size
/// of the platforms we run on (a larger page is committed by its first write).
const COMMIT_STRIDE: usize = 4096;

/// Bytes drawn from the pool. Wiped when dropped unless moved out with `into_vec`.
pub type Drawn = SecretBytes;

/// A bounded pool of entropy bytes with fair, all-or-nothing takes.
#[derive(Debug)]
pub struct Pool {
    ring: Mutex<Ring>,
    /// Permits = bytes in the ring that no taker has claimed yet.
    available: Semaphore,
    capacity: usize,
    waiters: AtomicUsize,
    counters: Counters,
}

/// Why bytes could not be put into the pool. Nothing was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("pool has room for {free} bytes, chunk has {needed}")]
pub struct PoolFull {
    /// Free room in the pool when the put was tried.
    pub free: usize,
    /// Size of the rejected chunk.
    pub needed: usize,
}

/// Why a take returned no bytes. Nothing was consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TakeError {
    /// The deadline passed before enough bytes were available.
    #[error("not enough entropy before the deadline")]
    TimedOut,
    /// The pool was closed (the server is shutting down).
    #[error("the pool is closed")]
    Closed,
    /// More bytes were asked for than the pool can ever hold.
    #[error("request for {requested} bytes exceeds the pool capacity of {capacity}")]
    TooLarge {
        /// Bytes requested.
        requested: usize,
        /// The pool's capacity.
        capacity: usize,
    },
}

/// Running totals, in bytes, since the pool was created.
///
/// They balance: `ingested = served + pool level + discarded`, plus bytes claimed by a taker
/// that is copying them out at the moment of reading.
#[derive(Debug, Default)]
struct Counters {
    ingested: AtomicU64,
    served: AtomicU64,
    discarded: AtomicU64,
}

/// A snapshot of the pool's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes ready to be taken.
    pub level: usize,
    /// The most bytes the pool holds.
    pub capacity: usize,
    /// Takers waiting for bytes.
    pub waiters: usize,
    /// Bytes put into the pool since creation.
    pub ingested_total: u64,
    /// Bytes taken and not given back.
    pub served_total: u64,
    /// Bytes given back when the pool had no room for them, zeroized and dropped.
    pub discarded_total: u64,
}

impl Pool {
    /// Creates an empty pool that holds at most `capacity` bytes.
    ///
    /// The ring is allocated zeroed at once; the OS maps its pages in as they are first written.
    pub fn new(capacity: usize) -> Self {
        Self {
            ring: Mutex::new(Ring::new(capacity)),
            available: Semaphore::new(0),
            capacity,
            waiters: AtomicUsize::new(0),
            counters: Counters::default(),
        }
    }

    /// Copies `data` into the pool, all of it or (when there is no room) none of it.
    pub fn put(&self, data: &[u8]) -> Result<(), PoolFull> {
        {
            let mut ring = self.lock();
            let free = self.capacity - ring.len;
            if data.len() > free {
                return Err(PoolFull { free, needed: data.len() });
            }
            ring.push_back(data);
        }
        // Bytes first, permits second: permits never exceed the bytes in the ring.
        self.available.add_permits(data.len());
        self.counters.ingested.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Takes exactly `n` bytes, waiting in arrival order until they are there, `deadline`
    /// passes, or the pool closes. On error nothing is consumed.
    ///
    /// `deadline: None` waits without limit (streams, which end when their client leaves).
    /// Cancel-safe: dropping the future gives up the place in line and consumes nothing.
    pub async fn take(&self, n: usize, deadline: Option<Instant>) -> Result<Drawn, TakeError> {
        let permits = self.permits_for(n)?;
        if permits == 0 {
            return Ok(Drawn::default());
        }
        // Fast path: no queue to join.
        match self.available.try_acquire_many(permits) {
            Ok(permit) => {
                permit.forget();
                return Ok(self.draw(n));
            }
            Err(TryAcquireError::Closed) => return Err(TakeError::Closed),
            Err(TryAcquireError::NoPermits) => {}
        }
        let _waiting = WaiterGuard::enter(&self.waiters);
        let acquire = self.available.acquire_many(permits);
        let permit = match deadline {
            Some(deadline) => {
                tokio::time::timeout_at(deadline, acquire).await.map_err(|_| TakeError::TimedOut)?
            }
            None => acquire.await,
        }
        .map_err(|_| TakeError::Closed)?;
        permit.forget();
        Ok(self.draw(n))
    }

    /// Takes exactly `n` bytes if they are there now, without waiting in line.
    ///
    /// Fails with [`TakeError::TimedOut`] when the pool is short or others are waiting ahead.
    pub fn try_take(&self, n: usize) -> Result<Drawn, TakeError> {
        let permits = self.permits_for(n)?;
        match self.available.try_acquire_many(permits) {
            Ok(permit) => {
                permit.forget();
                Ok(self.draw(n))
            }
            Err(TryAcquireError::Closed) => Err(TakeError::Closed),
            Err(TryAcquireError::NoPermits) => Err(TakeError::TimedOut),
        }
    }

    /// Gives back bytes that were taken but never left the process (a call that failed after
    /// drawing part of what it needed). They go to the front, to be served next. If the pool
    /// has filled up meanwhile, they are counted as discarded instead. Either way `bytes` is
    /// wiped as it drops.
    pub fn give_back(&self, bytes: Drawn) {
        let len = bytes.len();
        if len == 0 {
            return;
        }
        let restored = {
            let mut ring = self.lock();
            if ring.len + len <= self.capacity {
                ring.push_front(&bytes);
                true
            } else {
                false
            }
        };
        if restored {
            self.available.add_permits(len);
            self.counters.served.fetch_sub(len as u64, Ordering::Relaxed);
        } else {
            self.counters.served.fetch_sub(len as u64, Ordering::Relaxed);
            self.counters.discarded.fetch_add(len as u64, Ordering::Relaxed);
        }
    }

    /// Closes the pool: waiting and future takes fail with [`TakeError::Closed`].
    pub fn close(&self) {
        self.available.close();
    }

    /// Bytes ready to be taken (not claimed by a taker).
    pub fn level(&self) -> usize {
        self.available.available_permits()
    }

    /// The most bytes the pool holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            level: self.level(),
            capacity: self.capacity,
            waiters: self.waiters.load(Ordering::Relaxed),
            ingested_total: self.counters.ingested.load(Ordering::Relaxed),
            served_total: self.counters.served.load(Ordering::Relaxed),
            discarded_total: self.counters.discarded.load(Ordering::Relaxed),
        }
    }

    fn permits_for(&self, n: usize) -> Result<u32, TakeError> {
        let too_large = TakeError::TooLarge { requested: n, capacity: self.capacity };
        if n > self.capacity {
            return Err(too_large);
        }
        u32::try_from(n).map_err(|_| too_large)
    }

    /// Copies out `n` bytes whose permits the caller has just acquired and forgotten.
    fn draw(&self, n: usize) -> Drawn {
        // Not `vec![0; n]`: every byte is written by the copy, so zeroing first is wasted work.
        let mut out = Vec::with_capacity(n);
        self.lock().pop_front_into(&mut out, n);
        self.counters.served.fetch_add(n as u64, Ordering::Relaxed);
        SecretBytes::new(out)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // A poisoned lock means a panic while copying bytes; the ring's head and length are
        // only written after a copy completes, so its state is still consistent.
        self.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Counts a taker as waiting for as long as it is alive.
struct WaiterGuard<'a>(&'a AtomicUsize);

impl<'a> WaiterGuard<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A fixed-size ring buffer of bytes. Freed regions are zeroized at once.
#[derive(Debug)]
struct Ring {
    buf: Box<[u8]>,
    head: usize,
    len: usize,
}

impl Ring {
    fn new(capacity: usize) -> Self {
        let mut buf = vec![0u8; capacity].into_boxed_slice();
        // Commit the memory now, one write per page (the zeroed allocation is otherwise only
        // reserved): a host without the memory fails at start, not when the pool first fills,
        // and storing a chunk never takes page faults (20% of the gateway's CPU when a fresh
        // pool filled, bench/README.md). `black_box` keeps the compiler from dropping the
        // writes as stores of zero into zeroed memory.
        for byte in buf.iter_mut().step_by(COMMIT_STRIDE) {
            *std::hint::black_box(byte) = 0;
        }
        Self { buf, head: 0, len: 0 }
    }

    /// The ring as (up to) two slices of physical positions, starting at logical offset
    /// `start` and `len` bytes long.
    fn spans(&self, start: usize, len: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let cap = self.buf.len();
        if cap == 0 {
            return (0..0, 0..0);
        }
        let first = start % cap;
        let first_len = len.min(cap - first);
        (first..first + first_len, 0..len - first_len)
    }

    /// Appends `data`; the caller has checked there is room.
    fn push_back(&mut self, data: &[u8]) {
        let (a, b) = self.spans(self.head + self.len, data.len());
        let split = a.len();
        self.buf[a].copy_from_slice(&data[..split]);
        self.buf[b].copy_from_slice(&data[split..]);
        self.len += data.len();
    }

    /// Prepends `data`; the caller has checked there is room.
    fn push_front(&mut self, data: &[u8]) {
        let cap = self.buf.len();
        let new_head = (self.head + cap - data.len() % cap) % cap;
        let (a, b) = self.spans(new_head, data.len());
        let split = a.len();
        self.buf[a].copy_from_slice(&data[..split]);
        self.buf[b].copy_from_slice(&data[split..]);
        self.head = new_head;
        self.len += data.len();
    }

    /// Moves the first `n` bytes to the end of `out` and zeroizes where they were.
    fn pop_front_into(&mut self, out: &mut Vec<u8>, n: usize) {
        assert!(n <= self.len, "pool permits exceeded the bytes in the ring");
        let (a, b) = self.spans(self.head, n);
        out.extend_from_slice(&self.buf[a.clone()]);
        out.extend_from_slice(&self.buf[b.clone()]);
        // A plain fill (memset) where `zeroize` writes byte by byte: the ring outlives this
        // call and is read again, so the compiler cannot drop these stores as dead, and the
        // fence keeps them ordered before the lock is released.
        self.buf[a].fill(0);
        self.buf[b].fill(0);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        self.head = if self.buf.is_empty() { 0 } else { (self.head + n) % self.buf.len() };
        self.len -= n;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;

    /// Bytes that identify their position in an ingest sequence: byte i of the whole stream
    /// fed to the pool is `serial(i)`, so any duplicate or loss shows up when decoding.
    fn numbered(start: u32, count: u32) -> Vec<u8> {
        (start..start + count).flat_map(u32::to_le_bytes).collect()
    }

    #[tokio::test]
    async fn put_then_take_returns_bytes_in_order() {
        let pool = Pool::new(64);
        pool.put(b"hello world").expect("room");
        assert_eq!(&*pool.take(5, None).await.expect("bytes"), b"hello");
        assert_eq!(&*pool.take(6, None).await.expect("bytes"), b" world");
        assert_eq!(pool.level(), 0);
    }

    #[test]
    fn full_pool_rejects_the_whole_chunk() {
        let pool = Pool::new(10);
        pool.put(&[1; 8]).expect("room");
        assert_eq!(pool.put(&[2; 3]), Err(PoolFull { free: 2, needed: 3 }));
        assert_eq!(pool.level(), 8, "nothing of the rejected chunk was stored");
        pool.put(&[3; 2]).expect("exactly fits");
        assert_eq!(pool.stats().ingested_total, 10);
    }

    /// Resident memory of this process, from /proc (Linux).
    fn rss_bytes() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
        let pages: usize =
            statm.split_whitespace().nth(1).and_then(|f| f.parse().ok()).expect("rss");
        pages * 4096
    }

    #[test]
    fn the_ring_is_committed_when_the_pool_is_made() {
        let before = rss_bytes();
        let pool = Pool::new(256 << 20);
        let grown = rss_bytes().saturating_sub(before);
        // Lazily zeroed memory would add next to nothing here; other tests running at the same
        // time can only add to the figure, or free a little of theirs.
        assert!(grown >= 200 << 20, "RSS grew by only {} MiB", grown >> 20);
        drop(pool);
    }

    #[test]
    fn taken_bytes_are_zeroized_in_the_ring() {
        let pool = Pool::new(8);
        pool.put(&[0xAA; 8]).expect("room");
        let drawn = pool.try_take(5).expect("bytes");
        assert_eq!(&*drawn, &[0xAA; 5]);
        let ring = pool.lock();
        assert_eq!(&ring.buf[..5], &[0; 5], "consumed region is zeroized");
        assert_eq!(&ring.buf[5..], &[0xAA; 3], "unconsumed bytes stay");
    }

    #[tokio::test(start_paused = true)]
    async fn short_pool_times_out_and_consumes_nothing() {
        let pool = Pool::new(64);
        pool.put(&[7; 10]).expect("room");
        let deadline = Instant::now() + Duration::from_millis(100);
        assert_eq!(pool.take(11, Some(deadline)).await, Err(TakeError::TimedOut));
        assert_eq!(pool.level(), 10);
        assert_eq!(pool.stats().served_total, 0);
    }

    #[tokio::test]
    async fn take_larger_than_capacity_fails_at_once() {
        let pool = Pool::new(16);
        assert_eq!(
            pool.take(17, None).await,
            Err(TakeError::TooLarge { requested: 17, capacity: 16 })
        );
    }

    #[tokio::test]
    async fn close_wakes_waiters() {
        let pool = Arc::new(Pool::new(16));
        let waiter = tokio::spawn({
            let pool = pool.clone();
            async move { pool.take(4, None).await }
        });
        tokio::task::yield_now().await;
        pool.close();
        assert_eq!(waiter.await.expect("join"), Err(TakeError::Closed));
        assert_eq!(pool.try_take(1), Err(TakeError::Closed));
    }

    #[tokio::test]
    async fn waiters_are_served_in_arrival_order() {
        // A big request that arrives first is not overtaken by later small ones, and small
        // ones that arrived before a big one are served before it.
        let pool = Arc::new(Pool::new(1024));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for (label, n) in [("small-1", 10), ("big", 500), ("small-2", 10), ("small-3", 10)] {
            let taker = pool.clone();
            let tx = tx.clone();
            tasks.push(tokio::spawn(async move {
                let bytes = taker.take(n, None).await.expect("bytes");
                tx.send((label, bytes.len())).expect("receiver alive");
            }));
            // Let the task join the queue before the next one arrives.
            while pool.stats().waiters < tasks.len() {
                tokio::task::yield_now().await;
            }
        }
        // Feed in small amounts: small-1 can be served at once, the big one needs many puts,
        // and small-2/3 must wait behind it even though each put would satisfy them.
        for _ in 0..53 {
            pool.put(&[1; 10]).expect("room");
            tokio::task::yield_now().await;
        }
        for task in tasks {
            task.await.expect("join");
        }
        let order: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).map(|(l, _)| l).collect();
        assert_eq!(order, ["small-1", "big", "small-2", "small-3"]);
    }

    #[tokio::test]
    async fn give_back_returns_bytes_to_the_front() {
        let pool = Pool::new(16);
        pool.put(b"abcdef").expect("room");
        let drawn = pool.try_take(3).expect("bytes");
        pool.give_back(drawn);
        assert_eq!(pool.level(), 6);
        assert_eq!(&*pool.try_take(6).expect("bytes"), b"abcdef");
        let stats = pool.stats();
        assert_eq!((stats.served_total, stats.discarded_total), (6, 0));
    }

    #[test]
    fn give_back_into_a_refilled_pool_discards() {
        let pool = Pool::new(8);
        pool.put(&[1; 8]).expect("room");
        let drawn = pool.try_take(4).expect("bytes");
        pool.put(&[2; 4]).expect("room again");
        pool.give_back(drawn);
        let stats = pool.stats();
        assert_eq!((stats.level, stats.served_total, stats.discarded_total), (8, 0, 4));
        assert_eq!(stats.ingested_total, stats.served_total + stats.level as u64 + 4);
    }

    #[test]
    fn ring_wraps_around() {
        let pool = Pool::new(10);
        for round in 0u8..50 {
            let chunk = [round; 7];
            pool.put(&chunk).expect("room");
            assert_eq!(&*pool.try_take(7).expect("bytes"), &chunk);
        }
        pool.put(b"0123456789").expect("exactly full");
        assert_eq!(&*pool.try_take(10).expect("bytes"), b"0123456789");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// At most once, exactly once: with concurrent takers of random sizes racing a
        /// producer, every byte the producer put is received by exactly one taker, none twice,
        /// none invented, and within one taker's draw the bytes keep their order.
        #[test]
        fn concurrent_takers_never_share_a_byte(
            capacity_words in 16usize..512,
            takes in proptest::collection::vec(
                proptest::collection::vec(1usize..64, 1..20), 2..33),
            chunk_words in 1u32..64,
            threads in 1usize..4,
        ) {
            let capacity = capacity_words * 4;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_time()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let pool = Arc::new(Pool::new(capacity));
                // Each taker asks for whole 4-byte words so words stay decodable.
                let mut handles = Vec::new();
                for sizes in takes.clone() {
                    let pool = pool.clone();
                    handles.push(tokio::spawn(async move {
                        let mut got = Vec::new();
                        for words in sizes {
                            let n = (words * 4).min(pool.capacity() / 4 * 4);
                            got.extend_from_slice(&pool.take(n, None).await.expect("bytes"));
                        }
                        got
                    }));
                }
                // Produce exactly what the takers will consume, in chunks, racing them.
                let total_words = takes
                    .iter()
                    .flatten()
                    .map(|w| (*w * 4).min(capacity / 4 * 4) as u64 / 4)
                    .sum::<u64>() as u32;
                let mut next = 0u32;
                while next < total_words {
                    let mut count = chunk_words.min(total_words - next);
                    if let Err(full) = pool.put(&numbered(next, count)) {
                        // Put what fits: the head waiter may need exactly the missing room.
                        count = count.min((full.free / 4) as u32);
                        if count > 0 {
                            pool.put(&numbered(next, count)).expect("fits now");
                        }
                    }
                    next += count;
                    tokio::task::yield_now().await;
                }
                let mut seen = vec![false; total_words as usize];
                for handle in handles {
                    let got = handle.await.expect("join");
                    let words: Vec<u32> = got
                        .chunks_exact(4)
                        .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
                        .collect();
                    for w in words {
                        prop_assert!(w < total_words, "byte invented: word {w}");
                        prop_assert!(!seen[w as usize], "word {w} served twice");
                        seen[w as usize] = true;
                    }
                }
                prop_assert!(seen.iter().all(|s| *s), "every produced byte was served");
                let stats = pool.stats();
                prop_assert_eq!(stats.level, 0);
                prop_assert_eq!(stats.ingested_total, stats.served_total);
                Ok(())
            })?;
        }
    }
}
