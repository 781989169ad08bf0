//! Replay protection: each (collector, epoch, sequence) is accepted once, in bounded memory.
//!
//! Per (collector id, epoch) the guard keeps the highest sequence seen and a bitmap of the
//! [`WINDOW`] sequences below it (the anti-replay window of IPsec, RFC 4303 3.4.3). A sequence
//! older than the window cannot be told apart from a replay and is refused as too old.
//!
//! Streams (collector id, epoch pairs) are forgotten only once no chunk of theirs can pass the
//! freshness check any more: a chunk accepted at time A carries a timestamp of at most A + W
//! (W the freshness window), so after A + 2W every chunk the stream ever sent is stale. At
//! exactly A + 2W a chunk signed at A + W is still fresh (the window is inclusive), so streams
//! are kept [`FORGET_MARGIN`] longer. If the
//! table is full of streams younger than that, a new stream is refused rather than an old one
//! forgotten: memory stays bounded and no replay is ever let through.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// Sequences tracked below the highest one seen, per stream.
pub(crate) const WINDOW: u64 = 1024;

const WORDS: usize = (WINDOW / 64) as usize;

/// How much longer than two freshness windows a stream is remembered: covers the inclusive
/// freshness bound, millisecond timestamps and small drift between the wall clock (freshness)
/// and the monotonic clock (forgetting).
pub const FORGET_MARGIN: Duration = Duration::from_secs(1);

/// Identifies a collector process: its id and the epoch it drew at start.
pub(crate) type StreamId = (String, u64);

/// Why a sequence is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// This exact sequence was accepted before.
    #[error("sequence {sequence} of this collector epoch was already accepted")]
    Duplicate {
        /// The replayed sequence.
        sequence: u64,
    },
    /// The sequence is older than the window, so whether it was seen is not known.
    #[error("sequence {sequence} is more than {WINDOW} behind the newest accepted ({highest})")]
    TooOld {
        /// The refused sequence.
        sequence: u64,
        /// The highest sequence accepted from this stream.
        highest: u64,
    },
    /// Too many collector epochs are active at once.
    #[error("tracking {0} collector epochs already; refusing a new one")]
    TableFull(usize),
}

/// Remembers which chunks were accepted.
#[derive(Debug)]
pub(crate) struct ReplayGuard {
    streams: HashMap<StreamId, Window>,
    max_streams: usize,
    forget_after: Duration,
}

#[derive(Debug, Clone)]
struct Window {
    highest: u64,
    /// Bit i set: sequence `highest - i` was accepted (bit 0 is `highest` itself).
    seen: [u64; WORDS],
    last_accept: Instant,
}

impl ReplayGuard {
    /// A guard that tracks at most `max_streams` collector epochs, forgetting one after
    /// `2 * freshness_window + FORGET_MARGIN` without an accepted chunk.
    pub(crate) fn new(max_streams: usize, freshness_window: Duration) -> Self {
        let forget_after = freshness_window * 2 + FORGET_MARGIN;
        Self { streams: HashMap::new(), max_streams, forget_after }
    }

    /// Accepts `sequence` of `stream` once: if it may be accepted, runs `store` (which puts the
    /// chunk in the pool) and records the sequence only if `store` succeeded, so a chunk is
    /// recorded exactly when it was stored. A chunk refused here or by `store` may come again.
    pub(crate) fn accept<T, E: From<ReplayError>>(
        &mut self,
        (stream, sequence): (&StreamId, u64),
        now: Instant,
        store: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.check(stream, sequence, now)?;
        let stored = store()?;
        self.record(stream, sequence, now);
        Ok(stored)
    }

    /// Whether `sequence` of `stream` may be accepted. Changes nothing.
    fn check(&self, stream: &StreamId, sequence: u64, now: Instant) -> Result<(), ReplayError> {
        match self.streams.get(stream) {
            Some(w) => w.check(sequence),
            None if self.streams.len() < self.max_streams => Ok(()),
            None if self.streams.values().any(|w| self.forgettable(w, now)) => Ok(()),
            None => Err(ReplayError::TableFull(self.streams.len())),
        }
    }

    /// Records `sequence` of `stream` as accepted, after a successful [`Self::check`].
    fn record(&mut self, stream: &StreamId, sequence: u64, now: Instant) {
        if !self.streams.contains_key(stream) && self.streams.len() >= self.max_streams {
            let forget_after = self.forget_after;
            self.streams.retain(|_, w| now.saturating_duration_since(w.last_accept) < forget_after);
        }
        self.streams
            .entry(stream.clone())
            .or_insert_with(|| Window { highest: sequence, seen: [0; WORDS], last_accept: now })
            .record(sequence, now);
    }

    #[cfg(test)]
    /// Collector epochs tracked now.
    pub(crate) fn len(&self) -> usize {
        self.streams.len()
    }

    fn forgettable(&self, w: &Window, now: Instant) -> bool {
        now.saturating_duration_since(w.last_accept) >= self.forget_after
    }
}

impl Window {
    fn check(&self, sequence: u64) -> Result<(), ReplayError> {
        if sequence > self.highest {
            return Ok(());
        }
        let age = self.highest - sequence;
        if age >= WINDOW {
            return Err(ReplayError::TooOld { sequence, highest: self.highest });
        }
        if self.bit(age) {
            return Err(ReplayError::Duplicate { sequence });
        }
        Ok(())
    }

    fn record(&mut self, sequence: u64, now: Instant) {
        self.last_accept = now;
        if sequence > self.highest {
            self.shift(sequence - self.highest);
            self.highest = sequence;
        }
        let age = self.highest - sequence;
        if age < WINDOW {
            self.seen[(age / 64) as usize] |= 1 << (age % 64);
        }
    }

    fn bit(&self, age: u64) -> bool {
        self.seen[(age / 64) as usize] & (1 << (age % 64)) != 0
    }

    /// Ages every recorded sequence by `by` (a newer highest arrived).
    fn shift(&mut self, by: u64) {
        if by >= WINDOW {
            self.seen = [0; WORDS];
            return;
        }
        let (words, bits) = ((by / 64) as usize, (by % 64) as u32);
        for i in (0..WORDS).rev() {
            let lo = i.checked_sub(words).map_or(0, |j| self.seen[j]);
            let carry = match (bits, i.checked_sub(words + 1)) {
                (0, _) | (_, None) => 0,
                (b, Some(j)) => self.seen[j] >> (64 - b),
            };
            self.seen[i] = (lo << bits) | carry;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const W: Duration = Duration::from_secs(60);

    fn stream(id: &str) -> StreamId {
        (id.to_owned(), 7)
    }

    fn accept(
        g: &mut ReplayGuard,
        s: &StreamId,
        seq: u64,
        now: Instant,
    ) -> Result<(), ReplayError> {
        g.accept((s, seq), now, || Ok::<(), ReplayError>(()))
    }

    #[test]
    fn each_sequence_once_in_any_order() {
        let mut g = ReplayGuard::new(8, W);
        let (s, now) = (stream("a"), Instant::now());
        for seq in [5, 3, 9, 4, 1000, 6] {
            accept(&mut g, &s, seq, now).expect("first time");
        }
        for seq in [5, 3, 9, 4, 1000, 6] {
            assert_eq!(accept(&mut g, &s, seq, now), Err(ReplayError::Duplicate { sequence: seq }));
        }
        // Another epoch of the same collector is another stream.
        accept(&mut g, &("a".to_owned(), 8), 5, now).expect("new epoch");
    }

    #[test]
    fn sequences_older_than_the_window_are_refused() {
        let mut g = ReplayGuard::new(8, W);
        let (s, now) = (stream("a"), Instant::now());
        accept(&mut g, &s, 5000, now).expect("first");
        assert_eq!(
            accept(&mut g, &s, 5000 - WINDOW, now),
            Err(ReplayError::TooOld { sequence: 5000 - WINDOW, highest: 5000 })
        );
        accept(&mut g, &s, 5000 - WINDOW + 1, now).expect("just inside the window");
    }

    #[test]
    fn full_table_refuses_new_streams_until_old_ones_expire() {
        let mut g = ReplayGuard::new(2, W);
        let t0 = Instant::now();
        accept(&mut g, &stream("a"), 1, t0).expect("a");
        accept(&mut g, &stream("b"), 1, t0).expect("b");
        assert_eq!(accept(&mut g, &stream("c"), 1, t0 + W), Err(ReplayError::TableFull(2)));
        // After 2W without traffic, "a" and "b" can be forgotten: all their chunks are stale.
        accept(&mut g, &stream("c"), 1, t0 + 2 * W + FORGET_MARGIN).expect("c after expiry");
        assert_eq!(g.len(), 1);
    }

    /// Found by fuzzing (`fuzz/`, target `ingest_chunks`): a chunk accepted at t0 and signed
    /// W ahead is still fresh at exactly t0 + 2W. Had its stream been forgotten then, the same
    /// chunk could have been accepted a second time.
    #[test]
    fn streams_are_not_forgotten_while_a_chunk_signed_ahead_is_fresh() {
        let mut g = ReplayGuard::new(1, W);
        let t0 = Instant::now();
        accept(&mut g, &stream("a"), 1, t0).expect("a");
        assert_eq!(accept(&mut g, &stream("b"), 1, t0 + 2 * W), Err(ReplayError::TableFull(1)));
        assert_eq!(
            accept(&mut g, &stream("a"), 1, t0 + 2 * W),
            Err(ReplayError::Duplicate { sequence: 1 })
        );
        accept(&mut g, &stream("b"), 1, t0 + 2 * W + FORGET_MARGIN).expect("b once a expired");
    }

    proptest! {
        /// The bitmap agrees with a plain set of accepted sequences, for any arrival order.
        #[test]
        fn matches_a_set_model(seqs in proptest::collection::vec(0u64..3000, 1..400)) {
            let mut g = ReplayGuard::new(1, W);
            let (s, now) = (stream("m"), Instant::now());
            let mut accepted = std::collections::BTreeSet::new();
            let mut highest: Option<u64> = None;
            for seq in seqs {
                let expected = match highest {
                    Some(h) if seq + WINDOW <= h => Err(ReplayError::TooOld { sequence: seq, highest: h }),
                    _ if accepted.contains(&seq) => Err(ReplayError::Duplicate { sequence: seq }),
                    _ => Ok(()),
                };
                prop_assert_eq!(accept(&mut g, &s, seq, now), expected.clone());
                if expected.is_ok() {
                    accepted.insert(seq);
                    highest = Some(highest.map_or(seq, |h| h.max(seq)));
                }
            }
        }
    }
}
