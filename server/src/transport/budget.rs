//! Byte allowances: what a key, a connection and the whole process may hold in buffers.
//!
//! Every bound on buffered memory in the gateway is an [`Account`]: a capacity in bytes and
//! the holds taken against it. A key's drawn-but-undelivered bytes, a connection's, the
//! process's response bytes, its request bytes and its ingest bodies are each one account; a
//! buffer that counts against several takes a hold on each ([`Holds`]), and gives them back
//! when it is delivered, decoded or dropped. [`Budget`] is the process-wide set: one ceiling,
//! `max_buffered_bytes`, split into the part ingest may use (`ingest_max_buffered_bytes`, kept
//! for collectors so public traffic cannot starve them), the part public requests may use
//! (`max_buffered_request_bytes`), and the rest for responses. docs/security.md ("Resource
//! bounds") gives the worst case of every listener as a formula of these.
//!
//! An account is a semaphore with one permit per byte. A hold for more than the capacity takes
//! the whole capacity (the largest single buffer must always fit an empty account).

use std::sync::Arc;

use std::task::{Context, Poll, ready};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;
use tokio_util::sync::PollSemaphore;

/// A byte allowance and the holds on it.
#[derive(Debug, Clone)]
pub struct Account {
    /// What the allowance is, for messages and metrics (`max_undelivered_bytes`, ...).
    name: &'static str,
    cap: usize,
    permits: Arc<Semaphore>,
}

impl Account {
    /// An allowance of `cap` bytes named after the setting `name` that sets it.
    pub fn new(name: &'static str, cap: usize) -> Self {
        // tokio's semaphore holds at most usize::MAX >> 3 permits.
        let cap = cap.min(Semaphore::MAX_PERMITS);
        Self { name, cap, permits: Arc::new(Semaphore::new(cap)) }
    }

    /// The setting this allowance comes from.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its capacity in bytes.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.cap - self.permits.available_permits()
    }

    fn permits_for(&self, n: usize) -> u32 {
        u32::try_from(n.min(self.cap)).unwrap_or(u32::MAX)
    }

    /// Holds `n` bytes now, or `None` when there is no room.
    pub fn try_hold(&self, n: usize) -> Option<Hold> {
        match self.permits.clone().try_acquire_many_owned(self.permits_for(n)) {
            Ok(permit) => Some(Hold(permit)),
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => None,
        }
    }

    /// Holds `n` bytes, waiting for room until `deadline` (`None`: without limit); `None` when
    /// the deadline passed first.
    pub async fn hold(&self, n: usize, deadline: Option<Instant>) -> Option<Hold> {
        let acquire = self.permits.clone().acquire_many_owned(self.permits_for(n));
        let permit = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, acquire).await.ok()?,
            None => acquire.await,
        };
        // The semaphore is never closed.
        permit.ok().map(Hold)
    }

    /// True when `hold` was taken on this account.
    fn owns(&self, hold: &Hold) -> bool {
        Arc::ptr_eq(hold.0.semaphore(), &self.permits)
    }
}

/// Bytes held on one account until dropped.
#[derive(Debug)]
pub struct Hold(OwnedSemaphorePermit);

impl Hold {
    /// Bytes held.
    pub fn len(&self) -> usize {
        self.0.num_permits()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps `n` bytes of this hold and gives back the rest.
    pub fn keep(mut self, n: usize) -> Option<Hold> {
        if n >= self.len() {
            return Some(self);
        }
        let kept = self.0.split(n).map(Hold);
        drop(self);
        kept
    }
}

/// Holds on several accounts, for one buffer that counts against each (a drawn response:
/// its key's, its connection's and the process's).
#[derive(Debug, Default)]
pub struct Holds(Vec<Hold>);

impl Holds {
    /// Adds `hold`, merged into a hold on the same account if there is one.
    pub fn add(&mut self, hold: Hold) {
        match self.0.iter_mut().find(|h| Arc::ptr_eq(h.0.semaphore(), hold.0.semaphore())) {
            Some(held) => held.0.merge(hold.0),
            None => self.0.push(hold),
        }
    }

    /// Moves every hold of `other` into these.
    pub fn merge(&mut self, other: Holds) {
        for hold in other.0 {
            self.add(hold);
        }
    }

    /// Bytes held on `account`.
    pub fn on(&self, account: &Account) -> usize {
        self.0.iter().filter(|h| account.owns(h)).map(Hold::len).sum()
    }

    /// Gives back `n` bytes of the hold on `account`.
    pub fn give_back_on(&mut self, account: &Account, n: usize) {
        if let Some(hold) = self.0.iter_mut().find(|h| account.owns(h)) {
            drop(hold.0.split(n.min(hold.len())));
        }
    }

    /// Gives back `n` bytes of the hold on every account.
    pub fn give_back(&mut self, n: usize) {
        for hold in &mut self.0 {
            drop(hold.0.split(n.min(hold.len())));
        }
    }
}

/// Holds taken on several accounts by a body that polls (see [`Waiter::poll_hold`]).
#[derive(Debug)]
pub struct Waiter {
    accounts: Vec<(Account, PollSemaphore)>,
}

impl Waiter {
    /// Takes holds on every one of `accounts`.
    pub fn new(accounts: &[Account]) -> Self {
        let accounts =
            accounts.iter().map(|a| (a.clone(), PollSemaphore::new(a.permits.clone()))).collect();
        Self { accounts }
    }

    /// Completes once `holds` holds `n` bytes (or the whole account, when `n` is larger) on
    /// every account; registers the waker while one has no room. What it took stays in `holds`
    /// meanwhile, so a body that is dropped while waiting gives it all back.
    pub fn poll_hold(&mut self, cx: &mut Context<'_>, n: usize, holds: &mut Holds) -> Poll<()> {
        for (account, semaphore) in &mut self.accounts {
            let want = n.min(account.cap);
            let have = holds.on(account);
            if have >= want {
                continue;
            }
            let permits = u32::try_from(want - have).unwrap_or(u32::MAX);
            // `None` only if the semaphore closed, which it never does.
            if let Some(permit) = ready!(semaphore.poll_acquire_many(cx, permits)) {
                holds.add(Hold(permit));
            }
        }
        Poll::Ready(())
    }
}

/// The process-wide allowances (see the module docs).
#[derive(Debug, Clone)]
pub struct Budget {
    /// Entropy drawn for public callers and not yet written to their sockets.
    pub responses: Account,
    /// Public request headers and bodies received and not yet handled.
    pub requests: Account,
    /// Publish bodies received and not yet verified.
    pub ingest: Account,
}

impl Budget {
    /// The split of `total` bytes: `ingest` for ingest bodies, `requests` for public requests,
    /// the rest for responses. The config validated that the parts leave room for responses.
    pub fn new(total: usize, ingest: usize, requests: usize) -> Self {
        Self {
            responses: Account::new(
                "max_buffered_bytes",
                total.saturating_sub(ingest).saturating_sub(requests),
            ),
            requests: Account::new("max_buffered_request_bytes", requests),
            ingest: Account::new("ingest_max_buffered_bytes", ingest),
        }
    }

    /// Every account, for metrics.
    pub fn accounts(&self) -> [(&'static str, &Account); 3] {
        [("responses", &self.responses), ("requests", &self.requests), ("ingest", &self.ingest)]
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn holds_are_capped_waited_for_and_given_back() {
        let account = Account::new("test_bytes", 100);
        let a = account.try_hold(60).expect("room");
        assert!(account.try_hold(50).is_none(), "60 + 50 > 100");
        let soon = Instant::now() + Duration::from_millis(20);
        assert!(account.hold(50, Some(soon)).await.is_none(), "no room before the deadline");
        let waiting = {
            let account = account.clone();
            tokio::spawn(async move { account.hold(50, None).await.map(|h| h.len()) })
        };
        tokio::task::yield_now().await;
        drop(a);
        assert_eq!(waiting.await.expect("task"), Some(50), "room came back");
        assert_eq!(account.held(), 0, "the waiter's hold dropped with its task");
    }

    #[test]
    fn a_hold_larger_than_the_account_takes_all_of_it() {
        let account = Account::new("test_bytes", 10);
        let all = account.try_hold(1000).expect("fits an empty account");
        assert_eq!((all.len(), account.held()), (10, 10));
        assert!(account.try_hold(1).is_none());
    }

    #[test]
    fn keep_returns_the_rest_and_holds_merge_by_account() {
        let (a, b) = (Account::new("a", 100), Account::new("b", 100));
        let kept = a.try_hold(40).expect("room").keep(15).expect("kept");
        assert_eq!(a.held(), 15);
        let mut holds = Holds::default();
        holds.add(kept);
        holds.add(a.try_hold(5).expect("room"));
        holds.add(b.try_hold(7).expect("room"));
        assert_eq!((holds.on(&a), holds.on(&b)), (20, 7));
        drop(holds);
        assert_eq!((a.held(), b.held()), (0, 0));
    }

    #[test]
    fn the_budget_splits_its_total() {
        let budget = Budget::new(100, 30, 20);
        assert_eq!(
            (budget.responses.cap(), budget.requests.cap(), budget.ingest.cap()),
            (50, 20, 30)
        );
    }
}
