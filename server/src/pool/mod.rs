//! The entropy pool: a bounded ring of verified bytes, each of which is handed out once.
//!
//! # Design
//!
//! Bytes live in one ring buffer allocated at start (capacity fixed by config). One mutex
//! guards the ring and the [`fair`] scheduler of waiting takes, and is held for a `memcpy` at
//! most. The ring's bytes are either *unclaimed* or *reserved* for a waiting take:
//!
//! - `put` copies bytes in and shares them among waiting takes ([`fair`]: equal shares per
//!   tenant, arrival order within a tenant);
//! - `take(n)` copies `n` bytes out at once when no one is waiting and `n` are unclaimed;
//!   otherwise it waits until its reservation reaches `n`, then copies `n` bytes out. Either
//!   way the ring region they came from is zeroized.
//!
//! At most once: the reservations never exceed the bytes in the ring (a reservation is only
//! ever made from unclaimed bytes, and a take removes as many bytes from the ring as it ends
//! of reservation), and every copy-out happens under the lock and removes what it copied, so
//! no byte leaves the ring twice. All or nothing: a take copies out exactly `n` bytes or
//! nothing; a take that gives up (its deadline passed, its client left) ends its reservation,
//! and the bytes it held, which never left the ring, go back to the round.

// Not wired yet: the storage of the classes kept apart (issue Quality, in progress).
#[allow(dead_code)]
mod arena;
mod fair;
#[allow(dead_code)]
mod origin;
mod ring;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::time::Instant;

use crate::secret::SecretBytes;
use fair::{Progress, Scheduler};
pub use fair::{QUANTUM, Tenant};
use ring::Ring;

/// Bytes drawn from the pool. Wiped when dropped unless moved out with `into_vec`.
pub type Drawn = SecretBytes;

/// A bounded pool of entropy bytes with fair, all-or-nothing takes.
#[derive(Debug)]
pub struct Pool {
    state: Mutex<State>,
    capacity: usize,
    /// Unclaimed bytes, mirrored out of the lock for readers that only look.
    level: AtomicUsize,
    /// Takes waiting, mirrored out of the lock.
    waiters: AtomicUsize,
    counters: Counters,
}

/// What the lock guards.
#[derive(Debug)]
struct State {
    ring: Ring,
    scheduler: Scheduler,
    closed: bool,
}

impl State {
    /// Bytes in the ring that no waiting take has reserved.
    fn unclaimed(&self) -> usize {
        self.ring.len - self.scheduler.reserved
    }
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
/// They balance: `ingested = served + level + reserved + discarded`, where `reserved` are
/// bytes assigned to takes still waiting for the rest of what they asked for.
#[derive(Debug, Default)]
struct Counters {
    ingested: AtomicU64,
    served: AtomicU64,
    discarded: AtomicU64,
}

/// A snapshot of the pool's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes ready to be taken (in the ring, reserved by no waiting take).
    pub level: usize,
    /// The most bytes the pool holds.
    pub capacity: usize,
    /// Takers waiting for bytes.
    pub waiters: usize,
    /// Bytes put into the pool since creation.
    pub ingested_total: u64,
    /// Bytes taken and not given back.
    pub served_total: u64,
    /// Bytes dropped: given back when the pool had no room for them, or drawn for a caller
    /// that left before they were sent. Zeroized.
    pub discarded_total: u64,
}

impl Pool {
    /// Creates an empty pool that holds at most `capacity` bytes.
    ///
    /// The ring is allocated and its memory committed at once.
    pub fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State {
                ring: Ring::new(capacity),
                scheduler: Scheduler::default(),
                closed: false,
            }),
            capacity,
            level: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            counters: Counters::default(),
        }
    }

    /// Copies `data` into the pool, all of it or (when there is no room) none of it, and
    /// shares it among waiting takes.
    pub fn put(&self, data: &[u8]) -> Result<(), PoolFull> {
        {
            let mut state = self.lock();
            let free = state.ring.free();
            if data.len() > free {
                return Err(PoolFull { free, needed: data.len() });
            }
            state.ring.push_back(data);
            self.share(&mut state);
        }
        self.counters.ingested.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Takes exactly `n` bytes for an anonymous caller (see [`Pool::take_for`]).
    pub async fn take(&self, n: usize, deadline: Option<Instant>) -> Result<Drawn, TakeError> {
        self.take_for(Tenant::ANONYMOUS, n, deadline).await
    }

    /// Takes exactly `n` bytes for `tenant`, waiting until they are there, `deadline` passes,
    /// or the pool closes. While others wait, bytes are shared equally across tenants and in
    /// arrival order within one ([`fair`]). On error nothing is consumed.
    ///
    /// `deadline: None` waits without limit. Cancel-safe: dropping the future gives up the
    /// place in line and consumes nothing.
    pub async fn take_for(
        &self,
        tenant: Tenant,
        n: usize,
        deadline: Option<Instant>,
    ) -> Result<Drawn, TakeError> {
        self.check_size(n)?;
        if n == 0 {
            return Ok(Drawn::default());
        }
        let id = {
            let mut state = self.lock();
            if state.closed {
                return Err(TakeError::Closed);
            }
            // Fast path: no one waiting, enough unclaimed.
            if state.scheduler.unsatisfied() == 0 && state.unclaimed() >= n {
                state.scheduler.took(tenant, n);
                return Ok(self.copy_out(&mut state, n));
            }
            let id = state.scheduler.enqueue(tenant, n);
            self.share(&mut state);
            id
        };
        let mut ticket = Ticket { pool: self, id: Some(id) };
        let wait = std::future::poll_fn(|cx| ticket.poll(cx));
        match deadline {
            Some(deadline) => {
                tokio::time::timeout_at(deadline, wait).await.map_err(|_| TakeError::TimedOut)?
            }
            None => wait.await,
        }
    }

    /// Takes exactly `n` bytes if they are there now, without waiting in line.
    ///
    /// Fails with [`TakeError::TimedOut`] when the pool is short or others are waiting.
    pub fn try_take(&self, n: usize) -> Result<Drawn, TakeError> {
        self.check_size(n)?;
        let mut state = self.lock();
        if state.closed {
            return Err(TakeError::Closed);
        }
        if state.scheduler.unsatisfied() > 0 || state.unclaimed() < n {
            return Err(TakeError::TimedOut);
        }
        state.scheduler.took(Tenant::ANONYMOUS, n);
        Ok(self.copy_out(&mut state, n))
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
            let mut state = self.lock();
            if state.ring.free() >= len {
                state.ring.push_front(&bytes);
                self.share(&mut state);
                true
            } else {
                false
            }
        };
        self.counters.served.fetch_sub(len as u64, Ordering::Relaxed);
        if !restored {
            self.counters.discarded.fetch_add(len as u64, Ordering::Relaxed);
        }
    }

    /// Counts `n` served bytes as discarded instead: they were drawn for a caller that left
    /// before they were sent, and were wiped.
    pub fn count_undelivered(&self, n: usize) {
        self.counters.served.fetch_sub(n as u64, Ordering::Relaxed);
        self.counters.discarded.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Closes the pool: waiting and future takes fail with [`TakeError::Closed`].
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.scheduler.wake_all();
    }

    /// Bytes ready to be taken (in the ring, reserved by no waiting take).
    pub fn level(&self) -> usize {
        self.level.load(Ordering::Relaxed)
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

    fn check_size(&self, n: usize) -> Result<(), TakeError> {
        if n > self.capacity {
            return Err(TakeError::TooLarge { requested: n, capacity: self.capacity });
        }
        Ok(())
    }

    /// Shares unclaimed bytes among waiters, then refreshes the mirrors.
    fn share(&self, state: &mut State) {
        let unclaimed = state.unclaimed();
        state.scheduler.distribute(unclaimed);
        self.mirror(state);
    }

    fn mirror(&self, state: &State) {
        self.level.store(state.unclaimed(), Ordering::Relaxed);
        self.waiters.store(state.scheduler.waiting(), Ordering::Relaxed);
    }

    /// Copies out `n` bytes that the caller may take: unclaimed (fast path), or the end of
    /// the caller's own reservation.
    fn copy_out(&self, state: &mut State, n: usize) -> Drawn {
        // Not `vec![0; n]`: every byte is written by the copy, so zeroing first is wasted work.
        let mut out = Vec::with_capacity(n);
        state.ring.pop_front_into(&mut out, n);
        self.mirror(state);
        self.counters.served.fetch_add(n as u64, Ordering::Relaxed);
        SecretBytes::new(out)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock means a panic while copying bytes; the ring's head and length are
        // only written after a copy completes, so its state is still consistent.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A waiting take's place in line. Dropping it before it is served gives the place up.
struct Ticket<'a> {
    pool: &'a Pool,
    /// `None` once served or failed.
    id: Option<u64>,
}

impl Ticket<'_> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<Drawn, TakeError>> {
        let Some(id) = self.id else { return Poll::Ready(Err(TakeError::Closed)) };
        let mut state = self.pool.lock();
        if state.closed {
            state.scheduler.cancel(id);
            self.id = None;
            self.pool.mirror(&state);
            return Poll::Ready(Err(TakeError::Closed));
        }
        match state.scheduler.progress(id, cx.waker()) {
            Progress::Waiting => Poll::Pending,
            Progress::Ready(n) => {
                state.scheduler.complete(id);
                self.id = None;
                Poll::Ready(Ok(self.pool.copy_out(&mut state, n)))
            }
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let mut state = self.pool.lock();
            state.scheduler.cancel(id);
            self.pool.share(&mut state);
        }
    }
}

#[cfg(test)]
mod tests;
