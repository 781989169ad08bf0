//! The running state of every test over one source's bytes, and the start-up and quarantine
//! rules on top of it.

use std::collections::{HashSet, VecDeque};

use crate::{
    APT_WINDOW, BIT_WINDOW_BITS, BLOCK_WINDOW_WORDS, BLOCK_WORD_BYTES, Cutoffs, HealthTest,
    STARTUP_BYTES, State,
};

/// Seeded per process (foldhash's RandomState): fast on 16-byte keys, and a source cannot
/// predict the seed to aim collisions at the set.
type WordSet = HashSet<u128, foldhash::fast::RandomState>;

/// Bytes the health tests take at a time on their fast path (a multiple of the word size).
const FAST_BLOCK: usize = 256;

/// How many of `bytes` equal `value` (a loop the compiler vectorizes).
fn count_of(bytes: &[u8], value: u8) -> u32 {
    bytes.iter().map(|&b| u32::from(b == value)).sum()
}

/// The running state of all tests for one source.
#[derive(Debug, Clone)]
pub struct HealthMonitor {
    cutoffs: Cutoffs,
    state: State,
    startup_remaining: usize,
    // Repetition count
    last: Option<u8>,
    run: u32,
    // Adaptive proportion
    apt_first: u8,
    apt_seen: usize,
    apt_count: u32,
    // Bit proportion
    bits_seen: usize,
    ones: u32,
    // Block repetition
    word: [u8; BLOCK_WORD_BYTES],
    word_len: usize,
    recent: VecDeque<u128>,
    recent_set: WordSet,
    // Counters
    failures: u64,
    recoveries: u64,
    last_failure: Option<HealthTest>,
}

/// The verdict on one batch of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every byte passed and the source is healthy: the batch may be used.
    Usable,
    /// The batch passed but belongs to a start-up test still running: discard it.
    Starting,
    /// A test failed in this batch: discard it; the source is quarantined.
    Failed(HealthTest),
    /// The source was quarantined and is running its recovery start-up test: discard it.
    Recovering,
}

impl HealthMonitor {
    /// A monitor for a source claiming `min_entropy` bits per byte, at `α = 2^-alpha_log2`.
    pub fn new(min_entropy: f64, alpha_log2: u32) -> Self {
        Self {
            cutoffs: Cutoffs::new(min_entropy, alpha_log2),
            state: State::Starting,
            startup_remaining: STARTUP_BYTES,
            last: None,
            run: 0,
            apt_first: 0,
            apt_seen: 0,
            apt_count: 0,
            bits_seen: 0,
            ones: 0,
            word: [0; BLOCK_WORD_BYTES],
            word_len: 0,
            recent: VecDeque::with_capacity(BLOCK_WINDOW_WORDS),
            recent_set: WordSet::with_capacity_and_hasher(BLOCK_WINDOW_WORDS, Default::default()),
            failures: 0,
            recoveries: 0,
            last_failure: None,
        }
    }

    /// The cutoffs in use.
    pub fn cutoffs(&self) -> Cutoffs {
        self.cutoffs
    }

    /// Current state: STARTING, HEALTHY or QUARANTINED.
    pub fn state(&self) -> State {
        self.state
    }

    /// Test failures since start.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// Returns to HEALTHY after quarantine since start.
    pub fn recoveries(&self) -> u64 {
        self.recoveries
    }

    /// The test that failed most recently.
    pub fn last_failure(&self) -> Option<HealthTest> {
        self.last_failure
    }

    /// Marks the source as quarantined for a reason outside the statistical tests (a sanity
    /// check on its transport, say): it must pass a fresh start-up test to be used again.
    pub fn quarantine(&mut self) {
        self.enter_quarantine();
    }

    /// Runs every test over `bytes` and says whether they may be used.
    pub fn check(&mut self, bytes: &[u8]) -> Verdict {
        let before = self.state;
        if let Err(test) = self.sample_all(bytes) {
            return self.fail(test);
        }
        self.verdict_after(before, bytes.len())
    }

    /// Counts a failure of `test` and quarantines the source: the batch is discarded.
    fn fail(&mut self, test: HealthTest) -> Verdict {
        self.failures += 1;
        self.last_failure = Some(test);
        self.enter_quarantine();
        Verdict::Failed(test)
    }

    fn verdict_after(&mut self, before: State, n: usize) -> Verdict {
        match before {
            State::Healthy => Verdict::Usable,
            State::Quarantined => {
                self.advance_startup(n, true);
                Verdict::Recovering
            }
            _ => {
                self.advance_startup(n, false);
                Verdict::Starting
            }
        }
    }

    /// Every test over `bytes`, with exactly the outcome of [`Self::sample`] byte by byte:
    /// blocks of [`FAST_BLOCK`] aligned bytes go through [`Self::sample_block`], which falls
    /// back to the byte loop for a block in which a test might fail.
    fn sample_all(&mut self, bytes: &[u8]) -> Result<(), HealthTest> {
        let mut rest = bytes;
        while self.word_len != 0 && !rest.is_empty() {
            self.sample(rest[0])?;
            rest = &rest[1..];
        }
        let mut blocks = rest.chunks_exact(FAST_BLOCK);
        for block in &mut blocks {
            self.sample_block(block)?;
        }
        blocks.remainder().iter().try_for_each(|&b| self.sample(b))
    }

    /// One block of [`FAST_BLOCK`] bytes starting on a word boundary. The repetition count,
    /// adaptive proportion and bit proportion tests run over whole slices (loops the compiler
    /// vectorizes) into new state that is kept only if none of them could fail in the block;
    /// otherwise the block goes byte by byte. Block repetition then runs word by word, as it
    /// would byte by byte, since it is the only test that can fail in the block.
    fn sample_block(&mut self, block: &[u8]) -> Result<(), HealthTest> {
        debug_assert!(block.len() == FAST_BLOCK && self.word_len == 0);
        let Some((run, apt, bits)) = self.quiet_block(block) else {
            return block.iter().try_for_each(|&b| self.sample(b));
        };
        (self.last, self.run) = (block.last().copied(), run);
        (self.apt_first, self.apt_seen, self.apt_count) = apt;
        (self.bits_seen, self.ones) = bits;
        for word in block.chunks_exact(BLOCK_WORD_BYTES) {
            let mut w = [0u8; BLOCK_WORD_BYTES];
            w.copy_from_slice(word);
            self.push_word(u128::from_le_bytes(w))?;
        }
        Ok(())
    }

    /// The repetition count, adaptive proportion and bit proportion states after `block`, or
    /// `None` if any of those tests might fail within it (never a wrong `Some`).
    #[allow(clippy::type_complexity)]
    fn quiet_block(&self, block: &[u8]) -> Option<(u32, (u8, usize, u32), (usize, u32))> {
        // Repetition count: with no three equal bytes in a row (and no run carried in), runs
        // stay at 2 or less, below any cutoff of 3 or more.
        if self.cutoffs.repetition < 3 || self.last == Some(block[0]) {
            return None;
        }
        let n = block.len();
        let triples = block[..n - 2]
            .iter()
            .zip(&block[1..n - 1])
            .zip(&block[2..])
            .fold(0u8, |acc, ((a, b), c)| acc | (u8::from(a == b) & u8::from(b == c)));
        if triples != 0 {
            return None;
        }
        let run = if block[n - 1] == block[n - 2] { 2 } else { 1 };

        // Adaptive proportion: each window's count of its first byte.
        let (mut first, mut seen, mut count) = (self.apt_first, self.apt_seen, self.apt_count);
        let mut rest = block;
        while !rest.is_empty() {
            let (window, tail) = rest.split_at(rest.len().min(APT_WINDOW - seen));
            let counted = if seen == 0 {
                first = window[0];
                1 + count_of(&window[1..], first)
            } else {
                count + count_of(window, first)
            };
            if counted >= self.cutoffs.proportion {
                return None;
            }
            (seen, count, rest) = ((seen + window.len()) % APT_WINDOW, counted, tail);
        }

        // Bit proportion, judged where a window ends.
        let (mut bits_seen, mut ones) = (self.bits_seen, self.ones);
        let mut rest = block;
        while !rest.is_empty() {
            let (part, tail) = rest.split_at(rest.len().min((BIT_WINDOW_BITS - bits_seen) / 8));
            ones += part.iter().map(|b| b.count_ones()).sum::<u32>();
            bits_seen += 8 * part.len();
            if bits_seen >= BIT_WINDOW_BITS {
                let zeros = bits_seen as u32 - ones;
                if ones > self.cutoffs.bit_count || zeros > self.cutoffs.bit_count {
                    return None;
                }
                (bits_seen, ones) = (0, 0);
            }
            rest = tail;
        }
        Some((run, (first, seen, count), (bits_seen, ones)))
    }

    fn advance_startup(&mut self, n: usize, recovering: bool) {
        self.startup_remaining = self.startup_remaining.saturating_sub(n);
        if self.startup_remaining == 0 {
            self.state = State::Healthy;
            if recovering {
                self.recoveries += 1;
            }
        }
    }

    /// Restarts every test for a fresh start-up test, keeping the counters and the recent
    /// words: a source that replays a block must not pass its recovery test with that block.
    fn enter_quarantine(&mut self) {
        let mut fresh = Self::new_with(self.cutoffs);
        fresh.state = State::Quarantined;
        fresh.failures = self.failures;
        fresh.recoveries = self.recoveries;
        fresh.last_failure = self.last_failure;
        fresh.recent = std::mem::take(&mut self.recent);
        fresh.recent_set = std::mem::take(&mut self.recent_set);
        *self = fresh;
    }

    fn new_with(cutoffs: Cutoffs) -> Self {
        let mut m = Self::new(8.0, 40);
        m.cutoffs = cutoffs;
        m
    }

    fn sample(&mut self, b: u8) -> Result<(), HealthTest> {
        // Repetition count.
        if self.last == Some(b) {
            self.run += 1;
            if self.run >= self.cutoffs.repetition {
                return Err(HealthTest::RepetitionCount);
            }
        } else {
            self.last = Some(b);
            self.run = 1;
        }

        // Adaptive proportion: the window's first sample counts itself.
        if self.apt_seen == 0 {
            self.apt_first = b;
            self.apt_count = 1;
        } else if b == self.apt_first {
            self.apt_count += 1;
            if self.apt_count >= self.cutoffs.proportion {
                return Err(HealthTest::AdaptiveProportion);
            }
        }
        self.apt_seen = (self.apt_seen + 1) % APT_WINDOW;

        // Bit proportion.
        self.ones += b.count_ones();
        self.bits_seen += 8;
        if self.bits_seen >= BIT_WINDOW_BITS {
            let zeros = self.bits_seen as u32 - self.ones;
            if self.ones > self.cutoffs.bit_count || zeros > self.cutoffs.bit_count {
                return Err(HealthTest::BitProportion);
            }
            self.bits_seen = 0;
            self.ones = 0;
        }

        // Block repetition on aligned 16-byte words.
        self.word[self.word_len] = b;
        self.word_len += 1;
        if self.word_len == BLOCK_WORD_BYTES {
            self.word_len = 0;
            self.push_word(u128::from_le_bytes(self.word))?;
        }
        Ok(())
    }

    /// Block repetition: `w` must not be among the last [`BLOCK_WINDOW_WORDS`] words.
    fn push_word(&mut self, w: u128) -> Result<(), HealthTest> {
        if !self.recent_set.insert(w) {
            return Err(HealthTest::BlockRepetition);
        }
        self.recent.push_back(w);
        if self.recent.len() > BLOCK_WINDOW_WORDS
            && let Some(old) = self.recent.pop_front()
        {
            self.recent_set.remove(&old);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn random(n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        getrandom::fill(&mut v).expect("os rng");
        v
    }

    /// A monitor that has passed its start-up test on good data.
    fn healthy() -> HealthMonitor {
        let mut m = HealthMonitor::new(7.0, 40);
        assert_eq!(m.check(&random(STARTUP_BYTES)), Verdict::Starting);
        assert_eq!(m.state(), State::Healthy);
        m
    }

    #[test]
    fn good_data_passes_for_megabytes() {
        let mut m = healthy();
        for _ in 0..64 {
            assert_eq!(m.check(&random(64 << 10)), Verdict::Usable);
        }
        assert_eq!(m.failures(), 0);
    }

    #[test]
    fn startup_discards_and_then_admits() {
        let mut m = HealthMonitor::new(7.0, 40);
        assert_eq!(m.state(), State::Starting);
        assert_eq!(m.check(&random(1000)), Verdict::Starting);
        assert_eq!(m.state(), State::Starting);
        assert_eq!(m.check(&random(STARTUP_BYTES - 1000)), Verdict::Starting);
        assert_eq!(m.check(&random(100)), Verdict::Usable);
    }

    #[test]
    fn stuck_output_is_caught_by_repetition_count() {
        let mut m = healthy();
        let mut data = random(1000);
        data[500..507].fill(0x42);
        assert_eq!(m.check(&data), Verdict::Failed(HealthTest::RepetitionCount));
        assert_eq!(m.state(), State::Quarantined);
    }

    #[test]
    fn all_zero_output_is_caught() {
        let mut m = healthy();
        assert_eq!(m.check(&[0u8; 4096]), Verdict::Failed(HealthTest::RepetitionCount));
    }

    #[test]
    fn a_frequent_value_is_caught_by_adaptive_proportion() {
        // No runs (so the RCT stays quiet), but 0x00 at every other position.
        let mut m = healthy();
        let data: Vec<u8> = random(4096)
            .into_iter()
            .enumerate()
            .map(|(i, b)| if i % 2 == 0 { 0 } else { b | 1 })
            .collect();
        assert_eq!(m.check(&data), Verdict::Failed(HealthTest::AdaptiveProportion));
    }

    #[test]
    fn biased_bits_are_caught() {
        // Each bit 1 with probability 0.6, independently: ~5.9 bits of min-entropy per byte.
        let mut m = healthy();
        let noise = random(8 * 8192);
        let data: Vec<u8> = noise
            .chunks_exact(8)
            .map(|c| c.iter().enumerate().fold(0u8, |acc, (i, r)| acc | (u8::from(*r < 154) << i)))
            .collect();
        let ones: u32 = data.iter().map(|b| b.count_ones()).sum();
        assert!((0.58..0.62).contains(&(ones as f64 / (data.len() * 8) as f64)));
        assert_eq!(m.check(&data), Verdict::Failed(HealthTest::BitProportion));
    }

    #[test]
    fn repeating_blocks_are_caught() {
        let mut m = healthy();
        let block = random(64);
        let data: Vec<u8> = block.iter().cycle().take(4096).copied().collect();
        assert_eq!(m.check(&data), Verdict::Failed(HealthTest::BlockRepetition));
        let block = random(4096); // a replayed 4 KiB block is caught too
        let mut m = healthy();
        assert_eq!(m.check(&block), Verdict::Usable);
        assert_eq!(m.check(&block), Verdict::Failed(HealthTest::BlockRepetition));
    }

    #[test]
    fn quarantine_then_counted_recovery() {
        let mut m = healthy();
        assert!(matches!(m.check(&[7u8; 100]), Verdict::Failed(_)));
        assert_eq!(m.check(&random(STARTUP_BYTES / 2)), Verdict::Recovering);
        assert_eq!(m.state(), State::Quarantined);
        assert_eq!(m.check(&random(STARTUP_BYTES / 2)), Verdict::Recovering);
        assert_eq!(m.state(), State::Healthy);
        assert_eq!((m.failures(), m.recoveries()), (1, 1));
        assert_eq!(m.check(&random(1000)), Verdict::Usable);
        // A failure during recovery restarts it.
        assert!(matches!(m.check(&[9u8; 50]), Verdict::Failed(_)));
        assert!(matches!(m.check(&[9u8; 50]), Verdict::Failed(_)));
        assert_eq!((m.failures(), m.recoveries()), (3, 1));
    }

    #[test]
    fn a_failing_startup_never_admits() {
        let mut m = HealthMonitor::new(7.0, 40);
        assert!(matches!(m.check(&[0u8; STARTUP_BYTES]), Verdict::Failed(_)));
        assert_eq!(m.state(), State::Quarantined);
    }

    /// The adaptive proportion cutoff holds to the byte on both paths: a window whose first
    /// value occurs `C - 1` times passes, `C` times fails.
    #[test]
    fn adaptive_proportion_cutoff_is_exact_on_both_paths() {
        for h in [8.0, 7.0, 4.0] {
            let c = Cutoffs::new(h, 40).proportion as usize;
            for count in [c - 1, c] {
                let mut window: Vec<u8> = random(APT_WINDOW)
                    .into_iter()
                    .map(|b| if b == 0xAA { 0x55 } else { b })
                    .collect();
                let step = APT_WINDOW / count;
                for i in 0..count {
                    window[i * step] = 0xAA;
                }
                let (mut fast, mut slow) = (HealthMonitor::new(h, 40), HealthMonitor::new(h, 40));
                let want = if count < c {
                    Verdict::Starting
                } else {
                    Verdict::Failed(HealthTest::AdaptiveProportion)
                };
                assert_eq!(check_bytewise(&mut slow, &window), want, "H = {h}, {count} of C = {c}");
                assert_eq!(fast.check(&window), want, "H = {h}, {count} of C = {c}");
            }
        }
    }

    /// The byte-by-byte path alone: the reference the fast path must match exactly.
    fn check_bytewise(m: &mut HealthMonitor, bytes: &[u8]) -> Verdict {
        let before = m.state;
        for &b in bytes {
            if let Err(test) = m.sample(b) {
                return m.fail(test);
            }
        }
        m.verdict_after(before, bytes.len())
    }

    /// Everything the tests carry from one batch to the next.
    fn carried(m: &HealthMonitor) -> impl PartialEq + std::fmt::Debug {
        (
            (m.state, m.startup_remaining, m.failures, m.recoveries, m.last_failure),
            (m.last, m.run, m.apt_first, m.apt_seen, m.apt_count, m.bits_seen, m.ones),
            (m.word_len, m.word[..m.word_len].to_vec(), m.recent.clone(), m.recent_set.len()),
        )
    }

    /// Byte sequences that trip each test now and then: random bytes, runs, a frequent value,
    /// biased bits and replayed blocks, in pieces of random lengths.
    fn hostile_feed() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            4 => proptest::collection::vec(any::<u8>(), 1..3000),
            1 => (any::<u8>(), 2usize..12).prop_map(|(b, n)| vec![b; n]),
            1 => (any::<u8>(), proptest::collection::vec(any::<u8>(), 1..600))
                .prop_map(|(v, mut bytes)| { for b in bytes.iter_mut().step_by(3) { *b = v; } bytes }),
            1 => proptest::collection::vec(any::<u8>(), 1..3000)
                .prop_map(|bytes| bytes.into_iter().map(|b| b | 0x11).collect()),
            1 => (proptest::collection::vec(any::<u8>(), 16..64), 2usize..6)
                .prop_map(|(block, n)| block.repeat(n)),
        ];
        proptest::collection::vec(piece, 1..24).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The fast path gives every verdict and every carried state the byte loop gives,
        /// whatever the batch sizes and claims.
        #[test]
        fn the_fast_path_matches_the_byte_loop(
            feed in hostile_feed(),
            cuts in proptest::collection::vec(1usize..5000, 1..16),
            min_entropy in prop_oneof![Just(8.0), Just(7.0), Just(4.0), Just(1.0), Just(0.3)],
        ) {
            let (mut fast, mut slow) = (HealthMonitor::new(min_entropy, 40), HealthMonitor::new(min_entropy, 40));
            let mut rest = &feed[..];
            for cut in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (batch, tail) = rest.split_at((*cut).min(rest.len()));
                prop_assert_eq!(fast.check(batch), check_bytewise(&mut slow, batch));
                prop_assert_eq!(carried(&fast), carried(&slow));
                rest = tail;
            }
        }
    }
}
