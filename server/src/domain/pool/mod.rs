//! The entropy pool: bounded FIFO lanes of verified bytes, each of which is handed out once.
//!
//! # Design
//!
//! Bytes live in one [`arena`] of fixed blocks allocated at start (capacity fixed by config),
//! in one FIFO lane per *class*: the set of source kinds (quantum, hardware, OS) behind a
//! chunk ([`Kinds`]). Every lane shares the one byte budget. Beside each lane's bytes the pool
//! keeps which chunk each run of them came from ([`origin`]), moved in step with the bytes,
//! so every draw carries its exact [`Provenance`]. One mutex guards the lanes and one [`fair`]
//! scheduler of waiting takes per lane, and is held for a `memcpy` at most. A lane's bytes are
//! either *unclaimed* or *reserved* for a waiting take:
//!
//! - `put` copies bytes in and shares them among waiting takes ([`fair`]: equal shares per
//!   tenant, arrival order within a tenant);
//! - `take(n)` copies `n` bytes out at once when no one is waiting and `n` are unclaimed;
//!   otherwise it waits until its reservation reaches `n`, then copies `n` bytes out. Either
//!   way the ring region they came from is zeroized.
//! - an *elastic* take ([`Pool::take_between`], for streams) names `min..=max`: it copies `max`
//!   out at once as `take(max)` would; otherwise it waits in line the same way, and leaves
//!   with what it has reserved as soon as that is at least `min`. Its reservation is checked
//!   after each sharing of arriving bytes (under the lock), so it leaves with its part of the
//!   bytes that reached the pool rather than waiting for all of `max`.
//!
//! At most once: the reservations never exceed the bytes in the ring (a reservation is only
//! ever made from unclaimed bytes, and a take removes as many bytes from the ring as it ends
//! of reservation), and every copy-out happens under the lock and removes what it copied, so
//! no byte leaves the ring twice. All or nothing: a take copies out exactly `n` bytes (an
//! elastic one, between its `min` and `max`) or nothing; a take that gives up (its deadline
//! passed, its client left) ends its reservation, and the bytes it held, which never left the
//! ring, go back to the round.
//!
//! # Classes
//!
//! A take accepts some classes (by default all). Its bytes all come from one lane: it takes
//! at once from the accepted lane whose oldest byte is oldest when that lane has enough
//! unclaimed bytes and no one waiting; otherwise it waits in line in *every* accepted lane at
//! once, and the first lane to fill its reservation serves it. The moment it is served (or
//! gives up) its places in the other lanes are cancelled, and what they had reserved goes back
//! to those lanes' rounds. Each lane keeps the invariants above on its own (reservations never
//! exceed its bytes; a copy-out removes what it copied under the lock), so at most once and
//! all or nothing hold across lanes. Fairness holds within each lane; a tenant waiting in
//! several lanes is charged only for the lane that served it.
//!
//! # Sharing the budget
//!
//! No class can keep another's bytes out ([`share`]): each present class is entitled to an
//! equal share of the capacity, and a chunk of a class below its share is stored even into a
//! full pool, by wiping the oldest unclaimed bytes of the classes above theirs (counted as
//! evicted). Reserved bytes are never wiped, so the invariants above are untouched.
//!
//! # Accounting
//!
//! Every byte stored is, at any time, in exactly one place:
//! `ingested = kept + level + reserved + discarded + expired + evicted`, where `level` is the
//! unclaimed bytes, `reserved` those assigned to takes still waiting for more, and `kept` the
//! bytes taken and neither given back nor wiped for age ([`PoolStats::kept`]: with their
//! callers; whether a caller got them is the delivery layer's count, not the pool's). Every
//! counter only grows: a give-back is counted as one, not subtracted from the takes.
//!
//! # Age limit
//!
//! With `max_byte_age` set, bytes older than it are wiped from the front of their lane and
//! counted as expired, before every store and take and on a timer ([`Pool::expire`]). When
//! that leaves a lane with fewer bytes than it has reserved, the newest reservations give the
//! difference back and their takes wait on ([`fair`]).

mod arena;
mod fair;
mod origin;
mod share;

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::time::{Duration, Instant};

use crate::domain::secret::SecretBytes;
use arena::{Arena, Lane};
use fair::{Progress, Scheduler};
pub(crate) use fair::{QUANTUM, Tenant};
use origin::Segments;
pub use origin::{ChunkOrigin, Kinds};
pub(crate) use origin::{Provenance, Segment};
use share::{Evictions, LaneLoad};

/// Bytes drawn from the pool, with the record of the chunks they came from. The bytes are
/// wiped when dropped unless moved out with [`Drawn::into_vec`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drawn {
    bytes: SecretBytes,
    segments: Vec<Segment>,
}

impl Drawn {
    /// Where these bytes came from, as of `now`; `None` for no bytes.
    pub fn provenance(&self, now: Instant) -> Option<Provenance> {
        Provenance::of(&self.segments, now)
    }

    /// The runs of chunk bytes these bytes are made of, in byte order.
    pub(crate) fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The bytes, no longer wiped: for a response that takes them out of the process.
    pub(crate) fn into_vec(self) -> Vec<u8> {
        self.bytes.into_vec()
    }
}

impl std::ops::Deref for Drawn {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// How long bytes may wait and how classes are judged absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Bytes older than this are wiped unserved; `None`: no limit.
    pub max_byte_age: Option<Duration>,
    /// A class with no bytes in the pool and no chunk stored within this long is absent: a
    /// take that accepts only absent classes fails at once ([`TakeError::NoAcceptedClass`])
    /// while another class is present.
    pub class_absent_after: Duration,
}

impl Default for PoolLimits {
    fn default() -> Self {
        Self { max_byte_age: None, class_absent_after: Duration::from_secs(60) }
    }
}

/// A bounded pool of entropy bytes with fair, all-or-nothing takes.
#[derive(Debug)]
pub struct Pool {
    state: Mutex<State>,
    capacity: usize,
    limits: PoolLimits,
    /// Unclaimed bytes, mirrored out of the lock for readers that only look.
    level: AtomicUsize,
    /// Takes waiting, mirrored out of the lock.
    waiters: AtomicUsize,
    counters: Counters,
}

/// What the lock guards.
#[derive(Debug)]
struct State {
    arena: Arena,
    lanes: [LaneState; Kinds::CLASSES],
    /// Bytes in all lanes.
    held: usize,
    /// Takes waiting (each may wait in several lanes).
    tickets: usize,
    closed: bool,
}

/// One class's bytes, their origins and the takes waiting for them.
#[derive(Debug, Default)]
struct LaneState {
    bytes: Lane,
    segments: Segments,
    scheduler: Scheduler,
    last_put: Option<Instant>,
}

impl LaneState {
    /// Bytes in the lane that no waiting take has reserved.
    fn unclaimed(&self) -> usize {
        self.bytes.len - self.scheduler.reserved
    }

    /// Holds bytes or was fed within `window` of `now`.
    fn present(&self, now: Instant, window: Duration) -> bool {
        self.bytes.len > 0 || self.last_put.is_some_and(|t| now.duration_since(t) < window)
    }
}

impl State {
    fn unclaimed(&self) -> usize {
        self.lanes.iter().map(LaneState::unclaimed).sum()
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

/// Bytes held per class, indexed by lane, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassLevels(pub [usize; Kinds::CLASSES]);

impl ClassLevels {
    /// The classes holding bytes, largest first.
    pub fn held(&self) -> Vec<(Kinds, usize)> {
        let mut held: Vec<(Kinds, usize)> = (0..Kinds::CLASSES)
            .filter(|&l| self.0[l] > 0)
            .map(|l| (Kinds::of_lane(l), self.0[l]))
            .collect();
        held.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        held
    }
}

impl std::fmt::Display for ClassLevels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.held();
        if held.is_empty() {
            return f.write_str("no bytes");
        }
        for (i, (kinds, bytes)) in held.iter().enumerate() {
            write!(f, "{}{kinds}: {bytes} bytes", if i > 0 { ", " } else { "" })?;
        }
        Ok(())
    }
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
    /// No accepted class is present (see [`PoolLimits::class_absent_after`]) while another is.
    #[error(
        "this call accepts bytes of source kinds {} only; the pool holds {held}, and no accepted \
         bytes arrived in the last {} s",
        accept.list(),
        absent_after.as_secs()
    )]
    NoAcceptedClass {
        /// The kinds the take accepted.
        accept: Kinds,
        /// What the pool held.
        held: ClassLevels,
        /// The window a class must have been fed within to count as present.
        absent_after: Duration,
    },
}

/// Running totals, in bytes, since the pool was created.
///
/// They only grow, and balance as the module's opening comment says.
#[derive(Debug, Default)]
struct Counters {
    ingested: AtomicU64,
    taken: AtomicU64,
    given_back: AtomicU64,
    discarded: AtomicU64,
    expired: AtomicU64,
    expired_taken: AtomicU64,
    evicted: AtomicU64,
}

/// A snapshot of the pool's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes ready to be taken (in the pool, reserved by no waiting take).
    pub level: usize,
    /// The most bytes the pool holds.
    pub capacity: usize,
    /// Takers waiting for bytes.
    pub waiters: usize,
    /// Bytes put into the pool since creation.
    pub ingested_total: u64,
    /// Bytes taken out by callers.
    pub taken_total: u64,
    /// Bytes given back after a take (a call that failed after drawing), whether they found
    /// room again or not.
    pub given_back_total: u64,
    /// Bytes given back when the pool had no room for them, wiped. Part of `given_back_total`.
    pub discarded_total: u64,
    /// Bytes wiped unserved for being older than the age limit: in the pool, or taken as a
    /// stream's read-ahead and aged before they were sent (`expired_taken_total`).
    pub expired_total: u64,
    /// Bytes taken and then wiped for age before they were sent. Part of `expired_total`.
    pub expired_taken_total: u64,
    /// Bytes wiped unserved to make room for a class below its share of the pool ([`share`]).
    pub evicted_total: u64,
}

impl PoolStats {
    /// Bytes taken and neither given back nor wiped for age: with the callers that took them.
    pub fn kept(&self) -> u64 {
        self.taken_total - self.given_back_total - self.expired_taken_total
    }
}

impl Pool {
    /// Creates an empty pool that holds at most `capacity` bytes, with the default limits
    /// (no age limit).
    ///
    /// The arena is allocated and its memory committed at once.
    pub fn new(capacity: usize) -> Self {
        Self::with_limits(capacity, PoolLimits::default())
    }

    /// Creates an empty pool that holds at most `capacity` bytes under `limits`.
    pub(crate) fn with_limits(capacity: usize, limits: PoolLimits) -> Self {
        Self {
            state: Mutex::new(State {
                arena: Arena::new(capacity, Kinds::CLASSES),
                lanes: std::array::from_fn(|_| LaneState::default()),
                held: 0,
                tickets: 0,
                closed: false,
            }),
            capacity,
            limits,
            level: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            counters: Counters::default(),
        }
    }

    /// The pool's limits.
    pub fn limits(&self) -> PoolLimits {
        self.limits
    }

    /// Copies `data`, the bytes of the chunk `origin`, into its class's lane, all of it or
    /// (when there is no room) none of it, and shares it among that lane's waiting takes. A
    /// full pool makes room for a class below its share of the pool by wiping unclaimed bytes
    /// of the classes above theirs ([`share`]).
    pub fn put(&self, data: &[u8], origin: Arc<ChunkOrigin>) -> Result<(), PoolFull> {
        let lane = origin.kinds.lane();
        {
            let now = Instant::now();
            let mut state = self.lock();
            self.expire_locked(&mut state, now);
            let window = self.limits.class_absent_after;
            let loads = std::array::from_fn(|l| {
                let lane = &state.lanes[l];
                LaneLoad {
                    held: lane.bytes.len,
                    unclaimed: lane.unclaimed(),
                    present: lane.present(now, window),
                }
            });
            let evictions = share::make_room(&loads, self.capacity, lane, data.len())?;
            self.evict_locked(&mut state, &evictions);
            let State { arena, lanes, .. } = &mut *state;
            let target = &mut lanes[lane];
            target.bytes.push_back(arena, data);
            target.segments.push_back(Segment { len: data.len(), origin, stored_at: now });
            target.last_put = Some(now);
            state.held += data.len();
            self.share(&mut state, lane);
        }
        self.counters.ingested.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Takes exactly `n` bytes of any class for an anonymous caller (see [`Pool::take_for`]).
    pub async fn take(&self, n: usize, deadline: Option<Instant>) -> Result<Drawn, TakeError> {
        self.take_for(Tenant::ANONYMOUS, n, Kinds::ANY, deadline).await
    }

    /// Takes exactly `n` bytes of one class within `accept` for `tenant`, waiting until they
    /// are there, `deadline` passes, or the pool closes. While others wait, bytes are shared
    /// equally across tenants and in arrival order within one ([`fair`]). On error nothing is
    /// consumed.
    ///
    /// `deadline: None` waits without limit. Cancel-safe: dropping the future gives up the
    /// place in line and consumes nothing.
    pub(crate) async fn take_for(
        &self,
        tenant: Tenant,
        n: usize,
        accept: Kinds,
        deadline: Option<Instant>,
    ) -> Result<Drawn, TakeError> {
        self.take_between(tenant, n..=n, accept, deadline).await
    }

    /// Takes between `want.start()` and `want.end()` bytes of one class within `accept` for
    /// `tenant`: all of `want.end()` at once when they are there and no one waits; otherwise,
    /// waiting in line as [`Pool::take_for`] does, what it has been assigned as soon as that is
    /// at least `want.start()` (clamped to `1..=want.end()`). Same errors, deadline and
    /// cancel-safety as [`Pool::take_for`]: on error nothing is consumed.
    pub(crate) async fn take_between(
        &self,
        tenant: Tenant,
        want: RangeInclusive<usize>,
        accept: Kinds,
        deadline: Option<Instant>,
    ) -> Result<Drawn, TakeError> {
        let (min, n) = (*want.start(), *want.end());
        self.check_size(n)?;
        if n == 0 {
            return Ok(Drawn::default());
        }
        let entries = {
            let now = Instant::now();
            let mut state = self.lock();
            if state.closed {
                return Err(TakeError::Closed);
            }
            self.expire_locked(&mut state, now);
            if let Some(lane) = Self::ready_lane(&state, n, accept) {
                state.lanes[lane].scheduler.took(tenant, n);
                return Ok(self.copy_out(&mut state, lane, n));
            }
            self.check_accepted_present(&state, accept, now)?;
            let lanes: Vec<usize> =
                (0..Kinds::CLASSES).filter(|&l| Kinds::of_lane(l).within(accept)).collect();
            let entries: Vec<(usize, u64)> = lanes
                .iter()
                .map(|&l| (l, state.lanes[l].scheduler.enqueue_between(tenant, min, n)))
                .collect();
            state.tickets += 1;
            for &lane in &lanes {
                self.share(&mut state, lane);
            }
            entries
        };
        let mut ticket = Ticket { pool: self, entries: Some(entries) };
        let wait = std::future::poll_fn(|cx| ticket.poll(cx));
        match deadline {
            Some(deadline) => {
                tokio::time::timeout_at(deadline, wait).await.map_err(|_| TakeError::TimedOut)?
            }
            None => wait.await,
        }
    }

    /// Takes exactly `n` bytes of any class if they are there now, without waiting in line.
    ///
    /// Fails with [`TakeError::TimedOut`] when the pool is short or others are waiting.
    pub fn try_take(&self, n: usize) -> Result<Drawn, TakeError> {
        self.check_size(n)?;
        let mut state = self.lock();
        if state.closed {
            return Err(TakeError::Closed);
        }
        self.expire_locked(&mut state, Instant::now());
        let Some(lane) = Self::ready_lane(&state, n, Kinds::ANY) else {
            return Err(TakeError::TimedOut);
        };
        state.lanes[lane].scheduler.took(Tenant::ANONYMOUS, n);
        Ok(self.copy_out(&mut state, lane, n))
    }

    /// Gives back bytes that were taken but never left the process (a call that failed after
    /// drawing part of what it needed). They go to the front of their lane, with their origin
    /// records, to be served next. If the pool has filled up meanwhile, they are counted as
    /// discarded instead. Either way the given bytes are wiped as they drop.
    pub(crate) fn give_back(&self, drawn: Drawn) {
        let Drawn { bytes, segments } = drawn;
        let len = bytes.len();
        let Some(first) = segments.first() else { return };
        let lane = first.origin.kinds.lane();
        let restored = {
            let mut state = self.lock();
            if self.capacity - state.held >= len {
                let State { arena, lanes, .. } = &mut *state;
                lanes[lane].bytes.push_front(arena, &bytes);
                lanes[lane].segments.push_front(segments);
                state.held += len;
                self.share(&mut state, lane);
                true
            } else {
                false
            }
        };
        self.counters.given_back.fetch_add(len as u64, Ordering::Relaxed);
        if !restored {
            self.counters.discarded.fetch_add(len as u64, Ordering::Relaxed);
        }
    }

    /// Counts `n` taken bytes as expired instead: they aged past the limit after they were
    /// taken, before they were sent (a stream's read-ahead), and were wiped.
    pub(crate) fn count_expired(&self, n: usize) {
        self.counters.expired_taken.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Wipes bytes older than the age limit, now (no-op without one). Stores and takes do it
    /// too; a timer calls this so idle bytes expire and the counters say so.
    pub(crate) fn expire(&self) {
        if self.limits.max_byte_age.is_some() {
            let mut state = self.lock();
            self.expire_locked(&mut state, Instant::now());
        }
    }

    /// Closes the pool: waiting and future takes fail with [`TakeError::Closed`].
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        for lane in &mut state.lanes {
            lane.scheduler.wake_all();
        }
    }

    /// Bytes ready to be taken (in the pool, reserved by no waiting take).
    pub fn level(&self) -> usize {
        self.level.load(Ordering::Relaxed)
    }

    /// Bytes ready to be taken, by class.
    pub(crate) fn levels_by_class(&self) -> ClassLevels {
        let state = self.lock();
        ClassLevels(std::array::from_fn(|l| state.lanes[l].unclaimed()))
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
            taken_total: self.counters.taken.load(Ordering::Relaxed),
            given_back_total: self.counters.given_back.load(Ordering::Relaxed),
            discarded_total: self.counters.discarded.load(Ordering::Relaxed),
            expired_total: self.counters.expired.load(Ordering::Relaxed)
                + self.counters.expired_taken.load(Ordering::Relaxed),
            expired_taken_total: self.counters.expired_taken.load(Ordering::Relaxed),
            evicted_total: self.counters.evicted.load(Ordering::Relaxed),
        }
    }

    fn check_size(&self, n: usize) -> Result<(), TakeError> {
        if n > self.capacity {
            return Err(TakeError::TooLarge { requested: n, capacity: self.capacity });
        }
        Ok(())
    }

    /// The accepted lane to take `n` bytes from at once: no one waiting there, `n` unclaimed;
    /// of several, the one whose oldest byte is oldest.
    fn ready_lane(state: &State, n: usize, accept: Kinds) -> Option<usize> {
        (0..Kinds::CLASSES)
            .filter(|&l| Kinds::of_lane(l).within(accept))
            .filter(|&l| {
                let lane = &state.lanes[l];
                lane.scheduler.unsatisfied() == 0 && lane.unclaimed() >= n
            })
            .min_by_key(|&l| state.lanes[l].segments.oldest())
    }

    /// Fails when no accepted class is present while another is: the caller would wait for
    /// bytes that are not coming.
    fn check_accepted_present(
        &self,
        state: &State,
        accept: Kinds,
        now: Instant,
    ) -> Result<(), TakeError> {
        let window = self.limits.class_absent_after;
        let (mut accepted, mut other) = (false, false);
        for (l, lane) in state.lanes.iter().enumerate() {
            if lane.present(now, window) {
                if Kinds::of_lane(l).within(accept) { accepted = true } else { other = true }
            }
        }
        if accepted || !other {
            return Ok(());
        }
        Err(TakeError::NoAcceptedClass {
            accept,
            held: ClassLevels(std::array::from_fn(|l| state.lanes[l].bytes.len)),
            absent_after: window,
        })
    }

    /// Shares a lane's unclaimed bytes among its waiters, then refreshes the mirrors.
    fn share(&self, state: &mut State, lane: usize) {
        let target = &mut state.lanes[lane];
        let unclaimed = target.unclaimed();
        target.scheduler.distribute(unclaimed);
        self.mirror(state);
    }

    fn mirror(&self, state: &State) {
        self.level.store(state.unclaimed(), Ordering::Relaxed);
        self.waiters.store(state.tickets, Ordering::Relaxed);
    }

    /// Wipes the bytes older than the age limit from the front of every lane.
    fn expire_locked(&self, state: &mut State, now: Instant) {
        let Some(max_age) = self.limits.max_byte_age else { return };
        let mut expired = 0;
        for lane in 0..Kinds::CLASSES {
            let State { arena, lanes, held, .. } = &mut *state;
            let target = &mut lanes[lane];
            let mut wiped = 0;
            while let Some(oldest) = target.segments.oldest() {
                if now.saturating_duration_since(oldest) < max_age {
                    break;
                }
                let n = target.segments.front_len();
                target.segments.pop_front(n);
                target.bytes.discard_front(arena, n);
                wiped += n;
            }
            if wiped == 0 {
                continue;
            }
            *held -= wiped;
            expired += wiped;
            let excess = target.scheduler.reserved.saturating_sub(target.bytes.len);
            if excess > 0 {
                target.scheduler.shrink(excess);
            }
            self.share(state, lane);
        }
        if expired > 0 {
            self.counters.expired.fetch_add(expired as u64, Ordering::Relaxed);
        }
    }

    /// Wipes `evictions[l]` bytes from the front of each lane `l` (at most its unclaimed bytes,
    /// so every reservation still fits) and counts them as evicted.
    fn evict_locked(&self, state: &mut State, evictions: &Evictions) {
        let mut evicted = 0;
        for (lane, &n) in evictions.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let State { arena, lanes, held, .. } = &mut *state;
            let target = &mut lanes[lane];
            debug_assert!(n <= target.unclaimed(), "eviction of reserved bytes");
            target.segments.pop_front(n);
            target.bytes.discard_front(arena, n);
            *held -= n;
            evicted += n;
        }
        if evicted > 0 {
            self.mirror(state);
            self.counters.evicted.fetch_add(evicted as u64, Ordering::Relaxed);
        }
    }

    /// Copies out `n` bytes of `lane` that the caller may take: unclaimed (fast path), or the
    /// end of the caller's own reservation.
    fn copy_out(&self, state: &mut State, lane: usize, n: usize) -> Drawn {
        // Not `vec![0; n]`: every byte is written by the copy, so zeroing first is wasted work.
        let mut out = Vec::with_capacity(n);
        let State { arena, lanes, .. } = &mut *state;
        lanes[lane].bytes.pop_front_into(arena, &mut out, n);
        let segments = lanes[lane].segments.pop_front(n);
        state.held -= n;
        self.mirror(state);
        self.counters.taken.fetch_add(n as u64, Ordering::Relaxed);
        Drawn { bytes: SecretBytes::new(out), segments }
    }

    /// Ends a ticket's places in line, except the one in lane `keep` (ids are per lane);
    /// shares what they had reserved.
    fn cancel_entries(&self, state: &mut State, entries: &[(usize, u64)], keep: Option<usize>) {
        for &(lane, id) in entries {
            if Some(lane) != keep {
                state.lanes[lane].scheduler.cancel(id);
                self.share(state, lane);
            }
        }
        state.tickets -= 1;
        self.mirror(state);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock means a panic while copying bytes; a lane's head and length are
        // only written after a copy completes, so its state is still consistent.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stores `data` as a chunk of the OS class from a test collector.
    #[cfg(test)]
    pub(crate) fn put_test_bytes(&self, data: &[u8]) -> Result<(), PoolFull> {
        self.put(data, test_origin(Kinds::OS, 0))
    }
}

/// A chunk origin for tests: collector "test", epoch 1, the given sequence.
#[cfg(test)]
pub(crate) fn test_origin(kinds: Kinds, sequence: u64) -> Arc<ChunkOrigin> {
    Arc::new(ChunkOrigin {
        collector: "test".into(),
        epoch: 1,
        sequence,
        signed_at_unix_ms: 1_700_000_000_000,
        kinds,
        mixed: false,
    })
}

/// A waiting take's places in line, one per accepted lane. Dropping it before it is served
/// gives them up.
struct Ticket<'a> {
    pool: &'a Pool,
    /// (lane, waiter id) per accepted lane; `None` once served or failed.
    entries: Option<Vec<(usize, u64)>>,
}

impl Ticket<'_> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<Drawn, TakeError>> {
        let Some(entries) = self.entries.as_deref() else {
            return Poll::Ready(Err(TakeError::Closed));
        };
        let mut state = self.pool.lock();
        if state.closed {
            self.pool.cancel_entries(&mut state, entries, None);
            self.entries = None;
            return Poll::Ready(Err(TakeError::Closed));
        }
        self.pool.expire_locked(&mut state, Instant::now());
        let mut ready = None;
        for &(lane, id) in entries {
            if let Progress::Ready(n) = state.lanes[lane].scheduler.progress(id, cx.waker()) {
                ready = Some((lane, id, n));
                break;
            }
        }
        let Some((lane, id, n)) = ready else { return Poll::Pending };
        state.lanes[lane].scheduler.complete(id);
        self.pool.cancel_entries(&mut state, entries, Some(lane));
        self.entries = None;
        Poll::Ready(Ok(self.pool.copy_out(&mut state, lane, n)))
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let Some(entries) = self.entries.take() {
            let mut state = self.pool.lock();
            self.pool.cancel_entries(&mut state, &entries, None);
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_sharing;
