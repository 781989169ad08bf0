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
//! An account is a counter of bytes held, taken and given back with atomic operations (a hold
//! is a compare-and-swap, giving it back a subtraction), because every call takes several: a
//! semaphore's lock on every release cost more than the rest of a small call's bookkeeping.
//! Takers that find no room wait to be woken when bytes come back (all of them, each trying
//! again; fairness among callers is the pool's job, not the allowances'). The counter and the
//! count of waiters are sequentially consistent, so a taker that registers and a holder that
//! gives back never both miss each other. A hold for more than
//! the capacity takes the whole capacity (the largest single buffer must always fit an empty
//! account).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::sync::Notify;
use tokio::time::Instant;

/// A byte allowance and the holds on it.
#[derive(Debug, Clone)]
pub struct Account(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// What the allowance is, for messages and metrics (`max_undelivered_bytes`, ...).
    name: &'static str,
    cap: usize,
    held: AtomicUsize,
    /// Takers waiting for room.
    waiting: AtomicUsize,
    room: Notify,
}

impl Account {
    /// An allowance of `cap` bytes named after the setting `name` that sets it.
    pub fn new(name: &'static str, cap: usize) -> Self {
        Self(Arc::new(Inner {
            name,
            cap,
            held: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            room: Notify::new(),
        }))
    }

    /// The setting this allowance comes from.
    pub fn name(&self) -> &'static str {
        self.0.name
    }

    /// Its capacity in bytes.
    pub fn cap(&self) -> usize {
        self.0.cap
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.0.held.load(Ordering::SeqCst)
    }

    /// Holds `n` bytes now, or `None` when there is no room.
    pub(crate) fn try_hold(&self, n: usize) -> Option<Hold> {
        let n = n.min(self.0.cap);
        let mut held = self.0.held.load(Ordering::SeqCst);
        loop {
            if held + n > self.0.cap {
                return None;
            }
            match self.0.held.compare_exchange_weak(
                held,
                held + n,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(Hold { account: self.clone(), n }),
                Err(now) => held = now,
            }
        }
    }

    /// Holds `n` bytes, waiting for room until `deadline` (`None`: without limit); `None` when
    /// the deadline passed first.
    pub async fn hold(&self, n: usize, deadline: Option<Instant>) -> Option<Hold> {
        if let Some(hold) = self.try_hold(n) {
            return Some(hold);
        }
        let wait = self.clone().hold_owned(n);
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, wait).await.ok(),
            None => Some(wait.await),
        }
    }

    /// Holds `n` bytes once there is room (a future that owns what it needs).
    pub(crate) async fn hold_owned(self, n: usize) -> Hold {
        loop {
            if let Some(hold) = self.try_hold(n) {
                return hold;
            }
            // Register before trying again, so room given back in between wakes us.
            let room = self.0.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            let _waiting = Waiting::new(&self.0.waiting);
            if let Some(hold) = self.try_hold(n) {
                return hold;
            }
            room.await;
        }
    }

    /// True when `hold` was taken on this account.
    fn owns(&self, hold: &Hold) -> bool {
        Arc::ptr_eq(&hold.account.0, &self.0)
    }

    fn give_back(&self, n: usize) {
        if n == 0 {
            return;
        }
        self.0.held.fetch_sub(n, Ordering::SeqCst);
        if self.0.waiting.load(Ordering::SeqCst) > 0 {
            self.0.room.notify_waiters();
        }
    }
}

/// Counts a waiting taker while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Bytes held on one account until dropped.
#[derive(Debug)]
pub struct Hold {
    account: Account,
    n: usize,
}

impl Hold {
    /// Bytes held.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Keeps `n` bytes of this hold and gives back the rest.
    pub fn keep(mut self, n: usize) -> Option<Hold> {
        self.release(self.n.saturating_sub(n));
        (self.n > 0).then_some(self)
    }

    /// Gives back `n` bytes of the hold (at most all of it).
    fn release(&mut self, n: usize) {
        let n = n.min(self.n);
        self.n -= n;
        self.account.give_back(n);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.account.give_back(self.n);
    }
}

/// Most accounts one buffer counts against (a drawn response: its key's, its connection's and
/// the process's).
const MOST_ACCOUNTS: usize = 3;

/// Holds on several accounts, for one buffer that counts against each (a drawn response:
/// its key's, its connection's and the process's). Kept inline, up to [`MOST_ACCOUNTS`]:
/// every call takes some, and an allocation each would cost more than the holds.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    inline: [Option<Hold>; MOST_ACCOUNTS],
    /// Holds on further accounts (none of today's buffers has any).
    more: Vec<Hold>,
}

impl Holds {
    fn iter(&self) -> impl Iterator<Item = &Hold> {
        self.inline.iter().flatten().chain(&self.more)
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Hold> {
        self.inline.iter_mut().flatten().chain(&mut self.more)
    }

    /// Adds `hold`, merged into a hold on the same account if there is one.
    pub(crate) fn add(&mut self, mut hold: Hold) {
        if let Some(held) = self.iter_mut().find(|h| Arc::ptr_eq(&h.account.0, &hold.account.0)) {
            held.n += std::mem::take(&mut hold.n);
            return;
        }
        match self.inline.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = Some(hold),
            None => self.more.push(hold),
        }
    }

    /// Moves every hold of `other` into these.
    pub(crate) fn merge(&mut self, mut other: Holds) {
        for slot in &mut other.inline {
            if let Some(hold) = slot.take() {
                self.add(hold);
            }
        }
        for hold in std::mem::take(&mut other.more) {
            self.add(hold);
        }
    }

    /// Bytes held on `account`.
    pub(crate) fn on(&self, account: &Account) -> usize {
        self.iter().filter(|h| account.owns(h)).map(Hold::len).sum()
    }

    /// Gives back `n` bytes of the hold on `account`.
    pub(crate) fn give_back_on(&mut self, account: &Account, n: usize) {
        if let Some(hold) = self.iter_mut().find(|h| account.owns(h)) {
            hold.release(n);
        }
    }

    /// Keeps at most `n` bytes of the hold on every account.
    pub(crate) fn keep_at_most(&mut self, n: usize) {
        for hold in self.iter_mut() {
            let excess = hold.n.saturating_sub(n);
            hold.release(excess);
        }
    }
}

/// Holds taken on a connection's and the process's accounts by a body that polls (see
/// [`Waiter::poll_hold`]).
pub(crate) struct Waiter {
    accounts: [Account; 2],
    /// A hold being waited for.
    waiting: Option<Pin<Box<dyn Future<Output = Hold> + Send>>>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter").field("accounts", &self.accounts).finish_non_exhaustive()
    }
}

impl Waiter {
    /// Takes holds on both `accounts`.
    pub(crate) fn new(accounts: [Account; 2]) -> Self {
        Self { accounts, waiting: None }
    }

    /// Completes once `holds` holds `n` bytes (or the whole account, when `n` is larger) on
    /// every account; registers the waker while one has no room. What it took stays in `holds`
    /// meanwhile, so a body that is dropped while waiting gives it all back.
    pub(crate) fn poll_hold(
        &mut self,
        cx: &mut Context<'_>,
        n: usize,
        holds: &mut Holds,
    ) -> Poll<()> {
        for account in &self.accounts {
            let want = n.min(account.cap());
            let have = holds.on(account);
            if have >= want {
                continue;
            }
            if let Some(hold) = account.try_hold(want - have) {
                holds.add(hold);
                continue;
            }
            let wait = self
                .waiting
                .get_or_insert_with(|| Box::pin(account.clone().hold_owned(want - have)));
            match wait.as_mut().poll(cx) {
                Poll::Ready(hold) => {
                    holds.add(hold);
                    self.waiting = None;
                }
                Poll::Pending => return Poll::Pending,
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
    pub(crate) fn accounts(&self) -> [(&'static str, &Account); 3] {
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
