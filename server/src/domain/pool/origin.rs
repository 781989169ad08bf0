//! Where the pool's bytes came from: a record per stored chunk, kept beside the bytes and moved
//! in step with them, so every draw can say which chunks, collectors and source kinds are
//! behind it, and how long its oldest byte waited.
//!
//! The record is bounded by the bytes: one [`Segment`] per chunk (or piece of a chunk) in the
//! pool, and chunks are at least a few hundred bytes.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::time::{Duration, Instant};

/// A set of source kinds: the kinds of the sources that contributed to a chunk, or the kinds a
/// caller accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Kinds(u8);

impl Kinds {
    /// Quantum sources.
    pub const QUANTUM: Kinds = Kinds(1);
    /// Non-quantum hardware noise sources.
    pub(crate) const HARDWARE: Kinds = Kinds(2);
    /// The operating system's CSPRNG.
    pub const OS: Kinds = Kinds(4);
    /// Any kind: what a caller accepts when it names none.
    pub(crate) const ANY: Kinds = Kinds(7);
    /// The classes a chunk can have (non-empty sets of kinds).
    pub(crate) const CLASSES: usize = 7;

    /// The union of two sets.
    pub const fn with(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    /// True when every kind in `self` is in `accepted`: a chunk of these kinds may serve a
    /// caller that accepts `accepted`.
    pub const fn within(self, accepted: Kinds) -> bool {
        self.0 & !accepted.0 == 0
    }

    /// True for the empty set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The lane of a non-empty set: 0..CLASSES.
    pub(super) fn lane(self) -> usize {
        debug_assert!(!self.is_empty() && self.0 <= 7);
        usize::from(self.0) - 1
    }

    /// The set whose lane is `lane`.
    pub(crate) fn of_lane(lane: usize) -> Kinds {
        Kinds(u8::try_from(lane + 1).unwrap_or(7))
    }

    /// The kinds in the set, in the proto's enum order (quantum, hardware, OS).
    pub fn iter(self) -> impl Iterator<Item = Kinds> {
        [Kinds::QUANTUM, Kinds::HARDWARE, Kinds::OS].into_iter().filter(move |k| k.within(self))
    }
}

impl Kinds {
    /// The set's kinds, each by its proto name without prefix, joined by `sep`.
    fn join(self, sep: &str) -> String {
        let names: Vec<&str> = self
            .iter()
            .map(|k| match k {
                Kinds::QUANTUM => "QUANTUM",
                Kinds::HARDWARE => "HARDWARE",
                _ => "OS",
            })
            .collect();
        names.join(sep)
    }

    /// The kinds as a list, for a caller's filter: "QUANTUM, OS".
    pub fn list(self) -> String {
        self.join(", ")
    }
}

/// A class: the kinds mixed into its chunks, "QUANTUM+OS".
impl std::fmt::Display for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.join("+"))
    }
}

/// One chunk as its collector signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkOrigin {
    /// The signing collector.
    pub collector: Arc<str>,
    /// The collector's run.
    pub epoch: u64,
    /// The chunk's sequence number within that run.
    pub sequence: u64,
    /// When it was signed (Unix ms, the collector's clock).
    pub signed_at_unix_ms: i64,
    /// The kinds of the sources that contributed to it.
    pub kinds: Kinds,
    /// Whether two or more sources were mixed into it.
    pub mixed: bool,
}

/// A run of pool bytes from one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Bytes in the run.
    pub len: usize,
    /// The chunk they came from.
    pub origin: Arc<ChunkOrigin>,
    /// When the chunk was stored in the pool.
    pub stored_at: Instant,
}

/// The segments of one lane, in the order of its bytes.
#[derive(Debug, Default)]
pub(super) struct Segments(VecDeque<Segment>);

impl Segments {
    pub(super) fn push_back(&mut self, segment: Segment) {
        if segment.len > 0 {
            self.0.push_back(segment);
        }
    }

    /// Puts `segments` (in byte order) back in front: bytes given back.
    pub(super) fn push_front(&mut self, segments: Vec<Segment>) {
        for segment in segments.into_iter().rev() {
            match self.0.front_mut() {
                // The same chunk's bytes meet again: one run.
                Some(first) if Arc::ptr_eq(&first.origin, &segment.origin) => {
                    first.len += segment.len
                }
                _ => self.0.push_front(segment),
            }
        }
    }

    /// Removes the segments of the first `n` bytes, splitting the last one if needed.
    pub(super) fn pop_front(&mut self, mut n: usize) -> Vec<Segment> {
        let mut out = Vec::new();
        while n > 0 {
            let Some(first) = self.0.front_mut() else { break };
            if first.len <= n {
                n -= first.len;
                out.extend(self.0.pop_front());
            } else {
                out.push(Segment { len: n, ..first.clone() });
                first.len -= n;
                n = 0;
            }
        }
        out
    }

    /// Bytes in the first segment (0 when empty).
    pub(super) fn front_len(&self) -> usize {
        self.0.front().map_or(0, |s| s.len)
    }

    /// When the first byte was stored, if there is one.
    pub(super) fn oldest(&self) -> Option<Instant> {
        self.0.front().map(|s| s.stored_at)
    }
}

/// Where one draw's bytes came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The kinds of the sources behind the bytes.
    pub kinds: Kinds,
    /// Whether any of the chunks mixed two or more sources.
    pub mixed: bool,
    /// The collectors, each once, in the order of the bytes.
    pub collectors: Vec<Arc<str>>,
    /// The chunk of the first byte.
    pub first: Arc<ChunkOrigin>,
    /// The chunk of the last byte.
    pub last: Arc<ChunkOrigin>,
    /// How many chunks (runs of one chunk's bytes) the draw spans.
    pub chunks: usize,
    /// How long the oldest byte had been in the pool.
    pub oldest_age: Duration,
}

impl Provenance {
    /// The provenance of a draw made of `segments` (in byte order) at `now`; `None` when empty.
    pub fn of(segments: &[Segment], now: Instant) -> Option<Provenance> {
        let (first, last) = (segments.first()?, segments.last()?);
        let mut collectors: Vec<Arc<str>> = Vec::new();
        let (mut kinds, mut mixed, mut oldest) = (Kinds::default(), false, first.stored_at);
        for s in segments {
            kinds = kinds.with(s.origin.kinds);
            mixed |= s.origin.mixed;
            oldest = oldest.min(s.stored_at);
            if !collectors.iter().any(|c| *c == s.origin.collector) {
                collectors.push(s.origin.collector.clone());
            }
        }
        Some(Provenance {
            kinds,
            mixed,
            collectors,
            first: first.origin.clone(),
            last: last.origin.clone(),
            chunks: segments.len(),
            oldest_age: now.saturating_duration_since(oldest),
        })
    }

    /// Adds the origin of a later draw (a DRBG's next seed): kinds and collectors joined, its
    /// last chunk now the last, its chunks counted, the greater age kept.
    pub(crate) fn merge(&mut self, later: &Provenance) {
        self.kinds = self.kinds.with(later.kinds);
        self.mixed |= later.mixed;
        for collector in &later.collectors {
            if !self.collectors.contains(collector) {
                self.collectors.push(collector.clone());
            }
        }
        self.last = later.last.clone();
        self.chunks += later.chunks;
        self.oldest_age = self.oldest_age.max(later.oldest_age);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(collector: &str, sequence: u64, kinds: Kinds) -> Arc<ChunkOrigin> {
        Arc::new(ChunkOrigin {
            collector: collector.into(),
            epoch: 7,
            sequence,
            signed_at_unix_ms: 1_000 + sequence as i64,
            kinds,
            mixed: kinds != Kinds::QUANTUM,
        })
    }

    #[test]
    fn kinds_accept_only_subsets() {
        let qo = Kinds::QUANTUM.with(Kinds::OS);
        assert!(Kinds::QUANTUM.within(Kinds::QUANTUM) && Kinds::QUANTUM.within(qo));
        assert!(!qo.within(Kinds::QUANTUM), "quantum XOR OS is not quantum-only");
        assert!(qo.within(Kinds::ANY));
        assert_eq!(qo.iter().collect::<Vec<_>>(), [Kinds::QUANTUM, Kinds::OS]);
        let lanes: Vec<_> = (0..Kinds::CLASSES).map(|l| Kinds::of_lane(l).lane()).collect();
        assert_eq!(lanes, (0..Kinds::CLASSES).collect::<Vec<_>>());
    }

    #[test]
    fn segments_split_and_rejoin_with_the_bytes() {
        let t0 = Instant::now();
        let (a, b) = (origin("c1", 1, Kinds::QUANTUM), origin("c2", 2, Kinds::QUANTUM));
        let mut segs = Segments::default();
        segs.push_back(Segment { len: 100, origin: a.clone(), stored_at: t0 });
        segs.push_back(Segment {
            len: 50,
            origin: b.clone(),
            stored_at: t0 + Duration::from_millis(5),
        });
        let taken = segs.pop_front(120);
        assert_eq!(taken.iter().map(|s| s.len).collect::<Vec<_>>(), [100, 20]);
        let p = Provenance::of(&taken, t0 + Duration::from_millis(30)).expect("bytes");
        assert_eq!((p.first.sequence, p.last.sequence, p.chunks), (1, 2, 2));
        assert_eq!(p.collectors, [Arc::from("c1"), Arc::from("c2")]);
        assert_eq!(p.oldest_age, Duration::from_millis(30));
        segs.push_front(taken[1..].to_vec());
        assert_eq!(segs.0.len(), 1, "b's bytes given back rejoin b's run");
        assert_eq!(segs.0[0].len, 50);
        assert_eq!(segs.oldest(), Some(t0 + Duration::from_millis(5)));
        assert!(Provenance::of(&[], t0).is_none());
    }
}
