//! Who gets the pool's bytes while callers wait: fair shares across tenants (one per API
//! key), arrival order within a tenant.
//!
//! A waiting take is a *reservation*: it names how many bytes it needs, and bytes that reach
//! the pool are assigned to waiters as a count, while they stay in the ring. Bytes are handed
//! out [`QUANTUM`] at a time, each time to the waiting tenant that has received the fewest
//! bytes so far, and within that tenant to its oldest waiter. A waiter whose count reaches what
//! it needs is woken and copies that many bytes out of the ring. One that gives up (deadline,
//! client gone) hands its count back: the bytes never left the ring, so a failed take consumes
//! nothing.
//!
//! So a tenant that waits for 1 MiB at an appliance's rate no longer holds up a tenant asking
//! for 32 bytes: the small request is served by the first [`QUANTUM`] bytes that arrive once
//! the tenants ahead of it in received bytes have had theirs. Under contention, tenants receive
//! equal bytes whatever the number or size of their requests.
//!
//! An *elastic* waiter names a range instead: it is ready once it holds at least its minimum
//! (it keeps receiving turns up to its maximum until it collects them), so under scarcity it
//! leaves with the bytes that reached it instead of waiting for all it could use. A waiter whose
//! minimum equals its maximum is the all-or-nothing waiter above.
//!
//! *Received* counts every byte a tenant took, waiting or not. A tenant that starts waiting (new,
//! back from a gap, or after taking bytes no one else was waiting for) starts within
//! [`CATCH_UP`] of the scheduler's *clock*: the received count of the last tenant served a turn,
//! which only moves forward. So neither idleness nor bytes taken while no one else waited are
//! banked: before this, a key that came back (or arrived) far behind took every turn until it
//! caught up, up to 256 KiB per key, and a key that had drained a full pool alone got nothing
//! until every other key had caught up with it, long enough for its streams to time out.
//!
//! The bound this gives: every waiting tenant's count stays within `CATCH_UP` below and
//! `CATCH_UP + QUANTUM` above the clock, so a waiting tenant gets its next turn after at most
//! about `(tenants - 1) × (2 × CATCH_UP + 2 × QUANTUM)` bytes have been shared out: 16 KiB per
//! other waiting tenant (784 KiB for 50 keys, 10 s of an 80 KB/s appliance, well within the
//! 30 s a stream waits by default).
//!
//! The scheduler is plain data under the pool's lock; it never blocks and never allocates for
//! bytes, only for its bookkeeping.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::task::Waker;

/// Bytes handed to one tenant at a time.
pub(crate) const QUANTUM: usize = 4096;

/// How far from the scheduler's clock a tenant that starts waiting may start: one turn, so a
/// key that just arrived is among the next served, and one that drank alone waits a turn.
pub(super) const CATCH_UP: u64 = QUANTUM as u64;

/// Tenants remembered while idle, beyond which the idle ones are forgotten.
const MAX_IDLE_TENANTS: usize = 1024;

/// A fairness class: callers of one tenant are served in arrival order; tenants share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Tenant(u64);

impl Tenant {
    /// The tenant of callers that do not say (benchmarks, tests, in-process use).
    pub(crate) const ANONYMOUS: Tenant = Tenant(0);

    /// The tenant of the API key called `name`. Names map to 64-bit classes; two names sharing
    /// one would only share a share.
    pub(crate) fn named(name: &str) -> Self {
        // SipHash with fixed keys: cheap enough to compute per call.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        name.hash(&mut hasher);
        Tenant(hasher.finish() | 1)
    }
}

/// One waiting take.
#[derive(Debug)]
struct Waiter {
    tenant: Tenant,
    /// The most it takes.
    need: usize,
    /// The least it leaves with (at most `need`).
    min: usize,
    reserved: usize,
    waker: Option<Waker>,
}

/// A tenant's line and what it has received.
#[derive(Debug, Default)]
struct Line {
    /// Unsatisfied waiters, oldest first.
    queue: VecDeque<u64>,
    /// Bytes assigned to this tenant since it was first seen (or forgotten).
    received: u64,
}

/// The waiting takes and the shares among them.
#[derive(Debug, Default)]
pub(super) struct Scheduler {
    next_id: u64,
    waiters: HashMap<u64, Waiter>,
    lines: HashMap<Tenant, Line>,
    /// Tenants with unsatisfied waiters.
    active: Vec<Tenant>,
    /// Bytes assigned to waiters and still in the ring (sum of every waiter's `reserved`).
    pub(super) reserved: usize,
    unsatisfied: usize,
    /// The received count of the last tenant served a turn (never moves back): where tenants
    /// that start waiting are placed, within [`CATCH_UP`].
    clock: u64,
}

/// A waiter's state as seen by its take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Progress {
    /// Still short of what it needs.
    Waiting,
    /// Its reservation reached its minimum: it may copy this many bytes (what it holds) out.
    Ready(usize),
}

impl Scheduler {
    /// Waiters not yet satisfied.
    pub(super) fn unsatisfied(&self) -> usize {
        self.unsatisfied
    }

    /// Waiters, satisfied or not, that have not collected their bytes.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Counts `n` bytes taken by `tenant` without waiting.
    pub(super) fn took(&mut self, tenant: Tenant, n: usize) {
        self.forget_idle();
        self.lines.entry(tenant).or_default().received += n as u64;
    }

    /// Adds a waiter for exactly `need` bytes at the back of `tenant`'s line.
    #[cfg(test)]
    pub(super) fn enqueue(&mut self, tenant: Tenant, need: usize) -> u64 {
        self.enqueue_between(tenant, need, need)
    }

    /// Adds a waiter for `min..=need` bytes at the back of `tenant`'s line; `min` is clamped to
    /// `1..=need`.
    pub(super) fn enqueue_between(&mut self, tenant: Tenant, min: usize, need: usize) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let min = min.clamp(1, need.max(1));
        self.waiters.insert(id, Waiter { tenant, need, min, reserved: 0, waker: None });
        self.forget_idle();
        let (low, high) = (self.clock.saturating_sub(CATCH_UP), self.clock + CATCH_UP);
        let line = self.lines.entry(tenant).or_default();
        if line.queue.is_empty() {
            line.received = line.received.clamp(low, high);
            self.active.push(tenant);
        }
        line.queue.push_back(id);
        self.unsatisfied += 1;
        id
    }

    /// Where waiter `id` stands; registers `waker` to be woken when it is ready.
    pub(super) fn progress(&mut self, id: u64, waker: &Waker) -> Progress {
        let Some(waiter) = self.waiters.get_mut(&id) else {
            // Only its own take removes a waiter, and it stops asking then.
            return Progress::Waiting;
        };
        // `min <= need`, so an all-or-nothing waiter is ready exactly when it holds `need`.
        if waiter.reserved >= waiter.min {
            return Progress::Ready(waiter.reserved);
        }
        match &mut waiter.waker {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        Progress::Waiting
    }

    /// Removes a ready waiter whose bytes are being copied out: its reservation ends. An
    /// elastic waiter that leaves short of its maximum also leaves its tenant's line; its tenant
    /// keeps the charge for what it got.
    pub(super) fn complete(&mut self, id: u64) {
        let Some(waiter) = self.waiters.remove(&id) else { return };
        self.reserved -= waiter.reserved;
        if waiter.reserved < waiter.need {
            self.unsatisfied -= 1;
            self.leave_line(waiter.tenant, id);
        }
    }

    /// Removes a waiter that gave up; its reservation returns to the others (call
    /// [`Scheduler::distribute`] next). Its tenant is not charged for it.
    pub(super) fn cancel(&mut self, id: u64) {
        let Some(waiter) = self.waiters.remove(&id) else { return };
        self.reserved -= waiter.reserved;
        let Some(line) = self.lines.get_mut(&waiter.tenant) else { return };
        line.received = line.received.saturating_sub(waiter.reserved as u64);
        if waiter.reserved < waiter.need {
            self.unsatisfied -= 1;
            self.leave_line(waiter.tenant, id);
        }
    }

    /// Takes unsatisfied waiter `id` out of `tenant`'s line (and the tenant out of the active
    /// ones when its line empties).
    fn leave_line(&mut self, tenant: Tenant, id: u64) {
        let Some(line) = self.lines.get_mut(&tenant) else { return };
        line.queue.retain(|w| *w != id);
        if line.queue.is_empty() {
            self.active.retain(|t| *t != tenant);
        }
    }

    /// Shares `unclaimed` bytes (in the ring, reserved by no one) among unsatisfied waiters,
    /// [`QUANTUM`] at a time to the least-served waiting tenant, oldest waiter first. Wakes
    /// the waiters that became ready (an elastic one when it reaches its minimum: it stays in
    /// line, and takes further turns, until it collects).
    pub(super) fn distribute(&mut self, mut unclaimed: usize) {
        while unclaimed > 0 {
            let Some(slot) = self.least_served_slot() else { return };
            let tenant = self.active[slot];
            let Some(line) = self.lines.get_mut(&tenant) else {
                self.active.swap_remove(slot); // unreachable: active tenants have lines
                continue;
            };
            self.clock = self.clock.max(line.received);
            let mut turn = QUANTUM.min(unclaimed);
            while turn > 0 {
                let Some(&id) = line.queue.front() else { break };
                let Some(waiter) = self.waiters.get_mut(&id) else {
                    line.queue.pop_front(); // unreachable: cancel removes ids from lines
                    continue;
                };
                let give = turn.min(waiter.need - waiter.reserved);
                waiter.reserved += give;
                line.received += give as u64;
                self.reserved += give;
                turn -= give;
                unclaimed -= give;
                if waiter.reserved == waiter.need {
                    line.queue.pop_front();
                    self.unsatisfied -= 1;
                }
                if waiter.reserved >= waiter.min
                    && let Some(waker) = waiter.waker.take()
                {
                    waker.wake();
                }
            }
            if line.queue.is_empty() {
                self.active.swap_remove(slot);
            }
        }
    }

    /// Takes `excess` reserved bytes back: bytes that left the ring without being served (wiped
    /// as too old), so the reservations again fit the bytes there are. The newest waiters give
    /// back first; one that had all it needed waits again, at its place in its tenant's line,
    /// and its tenant is not charged for what it gave back.
    pub(super) fn shrink(&mut self, mut excess: usize) {
        let mut newest_first: Vec<u64> = self.waiters.keys().copied().collect();
        newest_first.sort_unstable_by(|a, b| b.cmp(a));
        for id in newest_first {
            if excess == 0 {
                break;
            }
            let Some(waiter) = self.waiters.get_mut(&id) else { continue };
            let back = waiter.reserved.min(excess);
            if back == 0 {
                continue;
            }
            let was_ready = waiter.reserved == waiter.need;
            waiter.reserved -= back;
            let tenant = waiter.tenant;
            excess -= back;
            self.reserved -= back;
            let line = self.lines.entry(tenant).or_default();
            line.received = line.received.saturating_sub(back as u64);
            if was_ready {
                self.unsatisfied += 1;
                let at = line.queue.partition_point(|&queued| queued < id);
                line.queue.insert(at, id);
                if !self.active.contains(&tenant) {
                    self.active.push(tenant);
                }
            }
        }
    }

    /// Wakes every waiter (the pool closed: each take sees it and gives up).
    pub(super) fn wake_all(&mut self) {
        for waiter in self.waiters.values_mut() {
            if let Some(waker) = waiter.waker.take() {
                waker.wake();
            }
        }
    }

    /// The position in `active` of the waiting tenant that has received the least.
    fn least_served_slot(&self) -> Option<usize> {
        let received = |t: &Tenant| self.lines.get(t).map_or(0, |l| l.received);
        (0..self.active.len()).min_by_key(|&i| received(&self.active[i]))
    }

    /// Keeps the memory of idle tenants bounded: past [`MAX_IDLE_TENANTS`], idle ones start
    /// afresh (at the clock) when they return.
    fn forget_idle(&mut self) {
        if self.lines.len() > MAX_IDLE_TENANTS + self.active.len() {
            self.lines.retain(|_, line| !line.queue.is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(s: &mut Scheduler, id: u64) -> bool {
        matches!(s.progress(id, Waker::noop()), Progress::Ready(_))
    }

    #[test]
    fn one_tenant_is_served_in_arrival_order() {
        let mut s = Scheduler::default();
        let t = Tenant::named("a");
        let first = s.enqueue(t, 10_000);
        let second = s.enqueue(t, 10);
        s.distribute(9_000);
        assert!(!ready(&mut s, first) && !ready(&mut s, second), "the head takes all it can");
        s.distribute(1_010);
        assert!(ready(&mut s, first) && ready(&mut s, second));
        assert_eq!(s.reserved, 10_010);
        assert_eq!(s.unsatisfied(), 0);
    }

    #[test]
    fn a_big_waiter_does_not_hold_up_another_tenants_small_one() {
        let mut s = Scheduler::default();
        let big = s.enqueue(Tenant::named("greedy"), 1 << 20);
        let small = s.enqueue(Tenant::named("modest"), 32);
        s.distribute(2 * QUANTUM);
        assert!(ready(&mut s, small), "one turn each serves the small request");
        assert!(!ready(&mut s, big));
        assert_eq!(s.reserved, 2 * QUANTUM, "every byte was assigned");
    }

    #[test]
    fn contending_tenants_receive_equal_shares() {
        let mut s = Scheduler::default();
        let tenants: Vec<_> = (0..3).map(|i| Tenant::named(&format!("key-{i}"))).collect();
        // Different request shapes: many small, a few large, one huge.
        let mut ids: Vec<Vec<u64>> = vec![Vec::new(); 3];
        for _ in 0..1_000 {
            ids[0].push(s.enqueue(tenants[0], 512));
        }
        for _ in 0..10 {
            ids[1].push(s.enqueue(tenants[1], 64 << 10));
        }
        ids[2].push(s.enqueue(tenants[2], 1 << 20));
        for _ in 0..30 {
            s.distribute(16 << 10);
        }
        let got: Vec<usize> = ids
            .iter()
            .map(|ids| ids.iter().map(|id| s.waiters.get(id).map_or(0, |w| w.reserved)).sum())
            .collect();
        assert_eq!(got.iter().sum::<usize>(), 30 * (16 << 10));
        let (min, max) = (got.iter().min().copied(), got.iter().max().copied());
        assert_eq!(min, max, "equal shares: {got:?}");
    }

    #[test]
    fn cancelling_returns_the_reservation_to_the_others() {
        let mut s = Scheduler::default();
        let quitter = s.enqueue(Tenant::named("a"), 2 * QUANTUM);
        let other = s.enqueue(Tenant::named("b"), 2 * QUANTUM);
        s.distribute(2 * QUANTUM);
        assert_eq!(s.reserved, 2 * QUANTUM, "a turn each");
        s.cancel(quitter);
        assert_eq!(s.reserved, QUANTUM, "b keeps its turn's worth");
        s.distribute(QUANTUM);
        assert!(ready(&mut s, other), "a's bytes went to b");
        s.complete(other);
        assert_eq!((s.reserved, s.waiting(), s.unsatisfied()), (0, 0, 0));
    }

    #[test]
    fn shrinking_takes_back_from_the_newest_and_ready_waiters_wait_again() {
        let mut s = Scheduler::default();
        let t = Tenant::named("a");
        let (old, new) = (s.enqueue(t, 100), s.enqueue(t, 100));
        s.distribute(200);
        assert!(ready(&mut s, old) && ready(&mut s, new));
        s.shrink(150);
        assert_eq!(s.reserved, 50);
        assert!(!ready(&mut s, new), "the newest gave back all it had");
        assert!(!ready(&mut s, old), "then the older one, 50 of its 100");
        assert_eq!(s.unsatisfied(), 2);
        s.distribute(50);
        assert!(ready(&mut s, old), "in line again ahead of the newer one");
        assert!(!ready(&mut s, new));
        s.distribute(100);
        assert!(ready(&mut s, new));
        assert_eq!((s.reserved, s.unsatisfied()), (200, 0));
    }

    #[test]
    fn an_elastic_waiter_is_ready_at_its_minimum_and_takes_turns_until_it_collects() {
        let mut s = Scheduler::default();
        let t = Tenant::named("stream");
        let elastic = s.enqueue_between(t, QUANTUM, 16 * QUANTUM);
        let behind = s.enqueue(t, 10);
        s.distribute(QUANTUM - 1);
        assert!(!ready(&mut s, elastic), "short of its minimum");
        s.distribute(1);
        assert_eq!(s.progress(elastic, Waker::noop()), Progress::Ready(QUANTUM));
        s.distribute(QUANTUM);
        assert_eq!(
            s.progress(elastic, Waker::noop()),
            Progress::Ready(2 * QUANTUM),
            "still first in its tenant's line until it collects"
        );
        assert!(!ready(&mut s, behind));
        s.complete(elastic);
        assert_eq!((s.reserved, s.waiting(), s.unsatisfied()), (0, 1, 1));
        s.distribute(10);
        assert!(ready(&mut s, behind), "the next in line once the elastic one left");
        assert_eq!(s.lines[&t].received, 2 * QUANTUM as u64 + 10, "charged for what it got");
    }

    #[test]
    fn elastic_waiters_of_many_tenants_leave_with_equal_turns() {
        let mut s = Scheduler::default();
        let ids: Vec<u64> = (0..50)
            .map(|i| s.enqueue_between(Tenant::named(&format!("key-{i}")), QUANTUM, 16 * QUANTUM))
            .collect();
        s.distribute(50 * QUANTUM);
        for &id in &ids {
            assert_eq!(s.progress(id, Waker::noop()), Progress::Ready(QUANTUM));
            s.complete(id);
        }
        assert_eq!((s.reserved, s.waiting(), s.unsatisfied()), (0, 0, 0));
        assert!(s.active.is_empty());
    }

    #[test]
    fn a_key_that_drank_alone_is_not_starved_and_one_back_from_a_gap_does_not_take_every_turn() {
        let mut s = Scheduler::default();
        let (alone, other, late) = (Tenant::named("a"), Tenant::named("b"), Tenant::named("c"));
        // "a" took 2 MiB while no one waited; "b" has been waiting and served a while.
        s.took(alone, 2 << 20);
        let b = s.enqueue(other, 1 << 20);
        s.distribute(10 * QUANTUM);
        let a = s.enqueue(alone, 1 << 20);
        s.distribute(2 * QUANTUM);
        assert_eq!(s.waiters[&a].reserved, QUANTUM, "a's turn comes at once, not after 2 MiB");
        // "c" comes back from a long gap far behind: it starts a turn behind the clock, so it
        // has two turns before the others' next, not 11 of them.
        let c = s.enqueue(late, 1 << 20);
        s.distribute(6 * QUANTUM);
        let got = |id: u64| s.waiters[&id].reserved / QUANTUM;
        assert_eq!((got(a), got(b), got(c)), (2, 13, 3));
    }

    proptest::proptest! {
        /// Whatever tenants arrive, take bytes alone, wait, leave and come back, every waiting
        /// tenant's count stays within CATCH_UP below and CATCH_UP + QUANTUM above the clock:
        /// the bound behind the longest wait for a turn (module docs).
        #[test]
        fn waiting_tenants_stay_near_the_clock(
            ops in proptest::collection::vec((0u8..4, 0u8..20, 1usize..100_000), 1..300),
        ) {
            let mut s = Scheduler::default();
            let mut ids = Vec::new();
            for (op, t, n) in ops {
                let tenant = Tenant::named(&format!("t{t}"));
                match op {
                    0 => ids.push(s.enqueue_between(tenant, n.min(QUANTUM), n)),
                    1 => s.distribute(n),
                    2 => ids.retain(|&id| {
                        let ready = matches!(s.progress(id, Waker::noop()), Progress::Ready(_));
                        if ready {
                            s.complete(id);
                        }
                        !ready
                    }),
                    // The pool's fast path: only when no one waits.
                    _ if s.unsatisfied() == 0 => s.took(tenant, n),
                    _ => {}
                }
                for tenant in &s.active {
                    let received = s.lines[tenant].received;
                    proptest::prop_assert!(
                        received + CATCH_UP >= s.clock
                            && received <= s.clock + CATCH_UP + QUANTUM as u64,
                        "{received} vs clock {}", s.clock
                    );
                }
            }
        }
    }

    #[test]
    fn a_ready_waiter_that_leaves_frees_its_bytes() {
        let mut s = Scheduler::default();
        let id = s.enqueue(Tenant::ANONYMOUS, 10);
        s.distribute(10);
        assert!(ready(&mut s, id));
        s.cancel(id);
        assert_eq!((s.reserved, s.waiting(), s.unsatisfied()), (0, 0, 0));
    }
}
