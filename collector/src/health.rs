//! Continuous health tests on every source's raw output, before anything is mixed.
//!
//! # The tests
//!
//! NIST SP 800-90B section 4.4, on bytes (8-bit samples), with cutoffs computed from the
//! source's claimed min-entropy per byte `H` and the false-alarm probability `α = 2^-a`
//! (`a = alpha_log2`, default 40, so a fast source does not raise a false alarm every few
//! seconds):
//!
//! - **Repetition count test** (4.4.1): fails when one value repeats `C` times in a row, with
//!   `C = 1 + ceil(a / H)`. A run of `C` equal bytes has probability at most `2^-H(C-1) ≤ α`.
//! - **Adaptive proportion test** (4.4.2): in each window of `W = 512` bytes, counts how often
//!   the window's first byte occurs (itself included) and fails at `C` occurrences, `C` the
//!   smallest count with `P(1 + Binomial(W - 1, 2^-H) ≥ C) ≤ α`.
//!
//! These catch gross failures (a stuck or nearly stuck source). Two supplementary tests, with
//! cutoffs from the same `H` and `α`, catch what they let through at realistic claims:
//!
//! - **Bit proportion test**: in each window of 20,000 bits, fails when the count of ones (or
//!   zeros) exceeds `n·p + z·sqrt(n·p·(1-p))`, where `p = 2^(-H/8)` is the largest per-bit bias
//!   consistent with the claim and `z` the normal quantile for `α`. A 60/40 bit bias (about 5.9
//!   bits per byte) fails it at once at `H = 7`.
//! - **Block repetition test**: fails when an aligned 16-byte word equals one of the previous
//!   4,096 words (64 KiB). For a source meeting its claim, a collision within the window has
//!   probability about `4096² / 2 · 2^-16H` (≈ 2^-89 at `H = 7`, far below α). A source that
//!   replays a block fails once the repeat realigns with the word grid: at once for a period
//!   that is a multiple of 16 bytes up to 64 KiB (a replayed response), and within 16 periods
//!   for any period up to 4 KiB.
//!
//! # States
//!
//! A source starts in `Starting`: its first [`STARTUP_BYTES`] bytes (≥ 1024 samples, and a
//! full bit window) must pass every test before anything it produces is used. A failure at any
//! time moves it to `Quarantined` and discards the data being tested; a quarantined source must
//! pass a fresh start-up test to become `Healthy` again, and each recovery is counted.

use std::collections::{HashSet, VecDeque};

/// Seeded per process (foldhash's RandomState): fast on 16-byte keys, and a source cannot
/// predict the seed to aim collisions at the set.
type WordSet = HashSet<u128, foldhash::fast::RandomState>;

use entropy_proto::v1::SourceHealth;

/// Bytes a source must pass before its output is used (after start and after quarantine).
pub const STARTUP_BYTES: usize = 4096;
/// Adaptive proportion test window, in bytes (800-90B: 512 for non-binary samples).
pub const APT_WINDOW: usize = 512;
/// Bit proportion test window, in bits.
pub const BIT_WINDOW_BITS: usize = 20_000;
/// Block repetition test word size, in bytes.
pub const BLOCK_WORD_BYTES: usize = 16;
/// Block repetition test window, in words (64 KiB).
pub const BLOCK_WINDOW_WORDS: usize = 4096;

/// Which test failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthTest {
    /// Repetition count test (800-90B 4.4.1).
    RepetitionCount,
    /// Adaptive proportion test (800-90B 4.4.2).
    AdaptiveProportion,
    /// Bit proportion test (supplementary).
    BitProportion,
    /// Block repetition test (supplementary).
    BlockRepetition,
}

impl HealthTest {
    /// Every test, in the order of their discriminants.
    pub const ALL: [Self; 4] = [
        Self::RepetitionCount,
        Self::AdaptiveProportion,
        Self::BitProportion,
        Self::BlockRepetition,
    ];

    /// A stable label for logs and metrics.
    pub fn label(self) -> &'static str {
        match self {
            Self::RepetitionCount => "repetition_count",
            Self::AdaptiveProportion => "adaptive_proportion",
            Self::BitProportion => "bit_proportion",
            Self::BlockRepetition => "block_repetition",
        }
    }
}

/// Cutoffs derived from a source's claimed min-entropy and the false-alarm probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cutoffs {
    /// Repetition count cutoff `C`.
    pub repetition: u32,
    /// Adaptive proportion cutoff `C` (occurrences in a window of [`APT_WINDOW`]).
    pub proportion: u32,
    /// Most ones (or zeros) allowed in a window of [`BIT_WINDOW_BITS`].
    pub bit_count: u32,
}

impl Cutoffs {
    /// Cutoffs for a claim of `min_entropy` bits per byte (0 < H ≤ 8) at `α = 2^-alpha_log2`.
    pub fn new(min_entropy: f64, alpha_log2: u32) -> Self {
        let h = min_entropy.clamp(0.01, 8.0);
        let a = f64::from(alpha_log2);
        let repetition = 1 + (a / h).ceil() as u32;

        // Binomial(W-1, p) upper tail, summed from the top in f64 (terms stay far above
        // underflow for these sizes).
        let p = 2f64.powf(-h);
        let n = APT_WINDOW - 1;
        let alpha = 2f64.powf(-a);
        let mut terms = Vec::with_capacity(n + 1);
        let mut t = (1.0 - p).powi(n as i32);
        for j in 0..=n {
            terms.push(t);
            t *= (n - j) as f64 / (j + 1) as f64 * p / (1.0 - p);
        }
        // P(1 + X >= c) = P(X >= c - 1) = sum_{j >= c-1} terms[j]
        let mut tail = 0.0;
        let mut proportion = (n + 2) as u32; // unreachable cutoff if even P(X = n) > α
        for j in (0..=n).rev() {
            tail += terms[j];
            if tail > alpha {
                proportion = (j + 2) as u32;
                break;
            }
        }

        let pb = 2f64.powf(-h / 8.0);
        let bits = BIT_WINDOW_BITS as f64;
        let z = normal_upper_quantile(alpha);
        let bit_count = (bits * pb + z * (bits * pb * (1.0 - pb)).sqrt()).ceil() as u32;
        Self { repetition, proportion, bit_count }
    }
}

/// The z with P(N(0,1) > z) = alpha, for small alpha (asymptotic expansion of the normal tail,
/// accurate to well under 1% of z for alpha below 1e-3).
fn normal_upper_quantile(alpha: f64) -> f64 {
    // Solve phi(z)/z * (1 - 1/z^2) = alpha by Newton steps on ln.
    let target = alpha.ln();
    let mut z = (-2.0 * target).sqrt();
    for _ in 0..20 {
        let tail = |z: f64| {
            -z * z / 2.0 - (2.0 * std::f64::consts::PI).sqrt().ln() - z.ln()
                + (1.0 - 1.0 / (z * z)).ln()
        };
        let f = tail(z) - target;
        let df = -z - 1.0 / z + 2.0 / (z * z * z - z);
        z -= f / df;
    }
    z
}

/// The running state of all tests for one source.
#[derive(Debug, Clone)]
pub struct HealthMonitor {
    cutoffs: Cutoffs,
    state: SourceHealth,
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
            state: SourceHealth::Starting,
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
    pub fn state(&self) -> SourceHealth {
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
        for &b in bytes {
            if let Err(test) = self.sample(b) {
                self.failures += 1;
                self.last_failure = Some(test);
                self.enter_quarantine();
                return Verdict::Failed(test);
            }
        }
        match before {
            SourceHealth::Healthy => Verdict::Usable,
            SourceHealth::Quarantined => {
                self.advance_startup(bytes.len(), true);
                Verdict::Recovering
            }
            _ => {
                self.advance_startup(bytes.len(), false);
                Verdict::Starting
            }
        }
    }

    fn advance_startup(&mut self, n: usize, recovering: bool) {
        self.startup_remaining = self.startup_remaining.saturating_sub(n);
        if self.startup_remaining == 0 {
            self.state = SourceHealth::Healthy;
            if recovering {
                self.recoveries += 1;
            }
        }
    }

    /// Restarts every test for a fresh start-up test, keeping the counters and the recent
    /// words: a source that replays a block must not pass its recovery test with that block.
    fn enter_quarantine(&mut self) {
        let mut fresh = Self::new_with(self.cutoffs);
        fresh.state = SourceHealth::Quarantined;
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
            let w = u128::from_le_bytes(self.word);
            if !self.recent_set.insert(w) {
                return Err(HealthTest::BlockRepetition);
            }
            self.recent.push_back(w);
            if self.recent.len() > BLOCK_WINDOW_WORDS
                && let Some(old) = self.recent.pop_front()
            {
                self.recent_set.remove(&old);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(m.state(), SourceHealth::Healthy);
        m
    }

    #[test]
    fn cutoffs_match_the_formulas() {
        let c = Cutoffs::new(8.0, 40);
        assert_eq!(c.repetition, 6); // 1 + ceil(40 / 8)
        let c7 = Cutoffs::new(7.0, 40);
        assert_eq!(c7.repetition, 7); // 1 + ceil(40 / 7)
        // APT at H = 8: 511 trials at p = 1/256 (mean ~2); the cutoff sits far in the tail.
        assert!((12..=20).contains(&c.proportion), "{c:?}");
        // Lower claims tolerate more repeats.
        assert!(Cutoffs::new(1.0, 40).proportion > c7.proportion);
        assert!(Cutoffs::new(4.0, 40).repetition > c7.repetition);
        // z for 2^-40 is about 7.1; at H = 8 the bit cutoff is 10,000 + 7.1 * 70.7 ≈ 10,502.
        assert!((10_480..=10_520).contains(&c.bit_count), "{c:?}");
    }

    #[test]
    fn normal_quantile_is_accurate() {
        // Known values: P(Z > 3.0902) = 1e-3, P(Z > 4.7534) = 1e-6, P(Z > 7.0344) = 1e-12.
        for (alpha, z) in [(1e-3, 3.0902), (1e-6, 4.7534), (1e-12, 7.0344)] {
            let got = normal_upper_quantile(alpha);
            assert!((got - z).abs() < 0.01, "alpha {alpha}: {got} vs {z}");
        }
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
        assert_eq!(m.state(), SourceHealth::Starting);
        assert_eq!(m.check(&random(1000)), Verdict::Starting);
        assert_eq!(m.state(), SourceHealth::Starting);
        assert_eq!(m.check(&random(STARTUP_BYTES - 1000)), Verdict::Starting);
        assert_eq!(m.check(&random(100)), Verdict::Usable);
    }

    #[test]
    fn stuck_output_is_caught_by_repetition_count() {
        let mut m = healthy();
        let mut data = random(1000);
        data[500..507].fill(0x42);
        assert_eq!(m.check(&data), Verdict::Failed(HealthTest::RepetitionCount));
        assert_eq!(m.state(), SourceHealth::Quarantined);
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
        assert_eq!(m.state(), SourceHealth::Quarantined);
        assert_eq!(m.check(&random(STARTUP_BYTES / 2)), Verdict::Recovering);
        assert_eq!(m.state(), SourceHealth::Healthy);
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
        assert_eq!(m.state(), SourceHealth::Quarantined);
    }
}
