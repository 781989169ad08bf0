//! A connection's delivery ledger: for each response, the body bytes handed to the transport,
//! the ones written out, and what the response is owed once its bytes have left.
//!
//! # Why
//!
//! A response is *delivered* when its bytes have been written to the socket (or handed to
//! TLS), not when the HTTP/2 layer takes them: h2 keeps what a stream's window admits until
//! the socket accepts it, and a client that stops reading must not make those bytes count as
//! served, nor free the allowances ([`crate::domain::allowance`]) that bound what it can make us hold.
//!
//! # How
//!
//! Each response has a *book*, keyed by its HTTP/2 stream id (or, on HTTP/1.1, its number on
//! the connection). The stream's pipe ([`super::stream`]) records the bytes it hands to h2
//! ([`Ledger::sent`]) with the [`Settle`]s due at given offsets (the end of each message); the
//! connection's write path parses what actually leaves ([`super::written`]) and reports it per
//! stream ([`Ledger::written`]), which runs the settles whose offset has been reached. Since h2
//! writes a stream's bytes in order, this is exact: a settle never runs before the last byte
//! it covers has been written, nor after.
//!
//! A stream that is reset (by the client, or by us) sends nothing more: h2 drops what it had
//! not written, and [`Ledger::reset`] discards the settles still due. When the connection ends
//! every settle still due is discarded ([`Ledger::close`]). A book is removed once its response
//! is finished and every byte of it written.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::small_queue::SmallQueue;

/// What a response is owed once its bytes are delivered, or if they never are.
pub(crate) trait Settle: Send {
    /// The bytes were written out.
    fn delivered(self: Box<Self>);
    /// They never will be (the stream was reset or the connection closed).
    fn discarded(self: Box<Self>);
}

/// Settles to run once the ledger's lock is released.
#[derive(Default)]
#[must_use = "settles must be run"]
pub(crate) struct Settled {
    delivered: SmallQueue<Box<dyn Settle>>,
    discarded: SmallQueue<Box<dyn Settle>>,
    /// Bytes of an entropy-bearing response were written in this step.
    pub entropy_written: bool,
}

impl Settled {
    /// Runs every settle.
    pub(crate) fn run(self) {
        for settle in self.delivered {
            settle.delivered();
        }
        for settle in self.discarded {
            settle.discarded();
        }
    }
}

impl std::fmt::Debug for Settled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settled")
            .field("delivered", &self.delivered.len())
            .field("discarded", &self.discarded.len())
            .field("entropy_written", &self.entropy_written)
            .finish()
    }
}

/// A settle due once `offset` bytes of the response have been written.
pub(crate) type Due = (u64, Box<dyn Settle>);

/// A connection's ledger (see the module docs).
#[derive(Default)]
pub(crate) struct Ledger {
    state: Mutex<State>,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").field("books", &self.lock().books.len()).finish()
    }
}

#[derive(Default)]
struct State {
    /// By stream id, hashed with foldhash (looked up for every write; seeded per process, so a
    /// client choosing its stream ids cannot aim at collisions).
    books: HashMap<u32, Book, foldhash::fast::RandomState>,
    closed: bool,
}

/// One response's bytes.
struct Book {
    /// Carries drawn entropy.
    entropy: bool,
    /// Body bytes handed to the transport.
    sent: u64,
    /// Body bytes written out; never more than `sent`.
    written: u64,
    /// Settles, by offset, in order.
    due: SmallQueue<Due>,
    /// Nothing more will be sent.
    finished: bool,
    /// When the response last made progress: a write, or the moment bytes began to wait.
    progress: Instant,
}

/// Where a response's bytes stand (for its send timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Standing {
    /// Bytes handed to the transport and not yet written.
    pub unwritten: u64,
    /// When the response last made progress.
    pub progress: Instant,
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every update completes before the lock is released; a panic elsewhere leaves the
        // state consistent.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes that `len` more body bytes of response `id` (`entropy`: it carries drawn bytes)
    /// were handed to the transport, with settles due at offsets within them (in order).
    /// Discards the settles at once when the connection has already ended.
    pub(crate) fn sent(
        &self,
        id: u32,
        entropy: bool,
        len: usize,
        due: impl IntoIterator<Item = Due>,
    ) -> Settled {
        let mut state = self.lock();
        let mut settled = Settled::default();
        if state.closed {
            settled.discarded.extend(due.into_iter().map(|(_, s)| s));
            return settled;
        }
        let book = state.books.entry(id).or_insert_with(|| Book {
            entropy,
            sent: 0,
            written: 0,
            due: SmallQueue::default(),
            finished: false,
            progress: Instant::now(),
        });
        if book.sent == book.written {
            // Bytes begin to wait now: the send timeout counts from here.
            book.progress = Instant::now();
        }
        let start = book.sent;
        book.sent += len as u64;
        for (offset, settle) in due {
            book.due.push_back((start + offset.min(len as u64), settle));
        }
        settled
    }

    /// Attaches `settle` at the end of what response `id` has sent so far; settled at once if
    /// that is all written (or the response has no book), discarded if the connection ended.
    pub(crate) fn attach(&self, id: u32, settle: Box<dyn Settle>) -> Settled {
        let mut state = self.lock();
        let mut settled = Settled::default();
        if state.closed {
            settled.discarded.push_back(settle);
            return settled;
        }
        match state.books.get_mut(&id) {
            Some(book) if book.written < book.sent => {
                let end = book.sent;
                book.due.push_back((end, settle));
            }
            _ => settled.delivered.push_back(settle),
        }
        settled
    }

    /// Notes `n` body bytes of response `id` written out; returns the settles now due.
    pub(crate) fn written(&self, id: u32, n: usize) -> Settled {
        let mut state = self.lock();
        let mut settled = Settled::default();
        let Some(book) = state.books.get_mut(&id) else { return settled };
        book.written = (book.written + n as u64).min(book.sent);
        book.progress = Instant::now();
        settled.entropy_written = book.entropy;
        while book.due.front().is_some_and(|(end, _)| *end <= book.written) {
            settled.delivered.extend(book.due.pop_front().map(|(_, s)| s));
        }
        if book.finished && book.written == book.sent {
            settled.delivered.extend(book.due.drain().map(|(_, s)| s));
            state.books.remove(&id);
        }
        settled
    }

    /// Response `id` will send nothing more; its book goes once everything is written.
    pub(crate) fn finish(&self, id: u32) -> Settled {
        let mut state = self.lock();
        let mut settled = Settled::default();
        if let Some(book) = state.books.get_mut(&id) {
            book.finished = true;
            if book.written == book.sent {
                settled.delivered.extend(book.due.drain().map(|(_, s)| s));
                state.books.remove(&id);
            }
        }
        settled
    }

    /// Response `id` was reset: what it had not written never will be.
    pub(crate) fn reset(&self, id: u32) -> Settled {
        let mut settled = Settled::default();
        if let Some(book) = self.lock().books.remove(&id) {
            settled.discarded.extend(book.due.into_iter().map(|(_, s)| s));
        }
        settled
    }

    /// The connection ended: every settle still due is discarded, and any recorded later.
    pub(crate) fn close(&self) -> Settled {
        let mut state = self.lock();
        state.closed = true;
        let mut settled = Settled::default();
        for (_, book) in state.books.drain() {
            settled.discarded.extend(book.due.into_iter().map(|(_, s)| s));
        }
        settled
    }

    /// Where response `id`'s bytes stand; `None` when it has no book (nothing waits).
    pub(crate) fn standing(&self, id: u32) -> Option<Standing> {
        self.lock()
            .books
            .get(&id)
            .map(|b| Standing { unwritten: b.sent - b.written, progress: b.progress })
    }

    /// Body bytes handed to the transport and not yet written, over every response (tests).
    #[cfg(test)]
    pub(crate) fn unwritten(&self) -> u64 {
        self.lock().books.values().map(|b| b.sent - b.written).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use proptest::prelude::*;

    use super::*;

    #[derive(Default)]
    struct Tally {
        delivered: AtomicU64,
        discarded: AtomicU64,
    }

    struct Owed(Arc<Tally>, u64);

    impl Settle for Owed {
        fn delivered(self: Box<Self>) {
            self.0.delivered.fetch_add(self.1, Ordering::Relaxed);
        }
        fn discarded(self: Box<Self>) {
            self.0.discarded.fetch_add(self.1, Ordering::Relaxed);
        }
    }

    fn owed(tally: &Arc<Tally>, n: u64) -> Box<dyn Settle> {
        Box::new(Owed(tally.clone(), n))
    }

    fn totals(tally: &Tally) -> (u64, u64) {
        (tally.delivered.load(Ordering::Relaxed), tally.discarded.load(Ordering::Relaxed))
    }

    #[test]
    fn a_message_is_delivered_when_its_last_byte_is_written() {
        let (ledger, tally) = (Ledger::default(), Arc::new(Tally::default()));
        ledger.sent(1, true, 100, [(60, owed(&tally, 1)), (100, owed(&tally, 2))]).run();
        ledger.written(1, 59).run();
        assert_eq!(totals(&tally), (0, 0), "one byte short of the first message");
        let step = ledger.written(1, 1);
        assert!(step.entropy_written);
        step.run();
        assert_eq!(totals(&tally), (1, 0));
        ledger.written(1, 40).run();
        assert_eq!(totals(&tally), (3, 0));
    }

    #[test]
    fn streams_are_apart_whatever_order_their_bytes_leave_in() {
        let (ledger, tally) = (Ledger::default(), Arc::new(Tally::default()));
        ledger.sent(1, true, 50, [(50, owed(&tally, 1))]).run();
        ledger.sent(3, true, 50, [(50, owed(&tally, 10))]).run();
        // Stream 3's bytes leave while stream 1's window is closed.
        ledger.written(3, 50).run();
        assert_eq!(totals(&tally), (10, 0), "stream 1 is not credited with stream 3's bytes");
        ledger.reset(1).run();
        assert_eq!(totals(&tally), (10, 1));
    }

    #[test]
    fn attach_settles_at_once_when_everything_sent_is_written() {
        let (ledger, tally) = (Ledger::default(), Arc::new(Tally::default()));
        ledger.sent(5, true, 10, []).run();
        ledger.attach(5, owed(&tally, 1)).run();
        assert_eq!(totals(&tally), (0, 0));
        ledger.written(5, 10).run();
        assert_eq!(totals(&tally), (1, 0));
        ledger.attach(5, owed(&tally, 2)).run();
        ledger.attach(7, owed(&tally, 4)).run();
        assert_eq!(totals(&tally), (7, 0), "nothing waits on 5, nothing was sent on 7");
    }

    #[test]
    fn a_finished_book_goes_once_written_and_later_writes_are_ignored() {
        let (ledger, tally) = (Ledger::default(), Arc::new(Tally::default()));
        ledger.sent(1, false, 8, [(8, owed(&tally, 1))]).run();
        ledger.finish(1).run();
        assert!(ledger.standing(1).is_some());
        ledger.written(1, 8).run();
        assert!(ledger.standing(1).is_none());
        ledger.written(1, 8).run();
        assert_eq!(totals(&tally), (1, 0));
    }

    #[test]
    fn closing_discards_what_waits_and_what_comes_later() {
        let (ledger, tally) = (Ledger::default(), Arc::new(Tally::default()));
        ledger.sent(1, true, 10, [(10, owed(&tally, 1))]).run();
        ledger.close().run();
        ledger.attach(1, owed(&tally, 2)).run();
        ledger.sent(3, true, 5, [(5, owed(&tally, 4))]).run();
        assert_eq!(totals(&tally), (0, 7));
        assert_eq!(ledger.unwritten(), 0);
    }

    proptest! {
        /// Whatever the interleaving of sends, writes, resets, finishes and the close: every
        /// settle runs exactly once, and never before its stream wrote up to its offset.
        #[test]
        fn every_settle_runs_once_and_never_early(
            ops in proptest::collection::vec((0u8..5, 0u32..3, 1usize..200), 1..80)
        ) {
            let ledger = Ledger::default();
            let tally = Arc::new(Tally::default());
            let mut owed_total = 0u64;
            // Per stream: bytes sent, bytes written (as the transport would: at most sent).
            let mut sent = [0u64; 3];
            let mut written = [0u64; 3];
            let mut gone = [false; 3];
            let mut delivered_bound = 0u64;
            for (op, s, n) in ops {
                let id = s * 2 + 1;
                let i = s as usize;
                match op {
                    0 | 1 if !gone[i] => {
                        // A message of n bytes: its settle is worth n.
                        ledger.sent(id, true, n, [(n as u64, owed(&tally, n as u64))]).run();
                        sent[i] += n as u64;
                        owed_total += n as u64;
                    }
                    2 if !gone[i] => {
                        let w = (n as u64).min(sent[i] - written[i]);
                        written[i] += w;
                        delivered_bound += w;
                        ledger.written(id, w as usize).run();
                    }
                    3 => {
                        ledger.reset(id).run();
                        gone[i] = true;
                    }
                    4 => ledger.finish(id).run(),
                    _ => {}
                }
                let (delivered, _) = totals(&tally);
                prop_assert!(delivered <= delivered_bound, "{delivered} delivered, {delivered_bound} written");
            }
            ledger.close().run();
            let (delivered, discarded) = totals(&tally);
            prop_assert_eq!(delivered + discarded, owed_total);
        }
    }
}
