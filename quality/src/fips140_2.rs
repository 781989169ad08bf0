//! The FIPS 140-2 statistical tests (section 4.9.1, change notice of 2001-10-10), on each whole
//! block of 20,000 bits, with the bounds `rngtest` uses:
//!
//! - monobit: the number of ones X passes when 9725 < X < 10275;
//! - poker: with f(i) the count of each 4-bit value among the 5000 nibbles,
//!   X = 16/5000·Σf(i)² − 5000 passes when 2.16 < X < 46.17;
//! - runs: the runs of zeros and the runs of ones of length 1, 2, 3, 4, 5 and 6 or more must
//!   each lie in [2315, 2685], [1114, 1386], [527, 723], [240, 384], [103, 209], [103, 209];
//! - long run: a run of 26 or more equal bits fails.
//!
//! Bits are read most significant first within each byte, as `rngtest` reads them, and runs do
//! not continue from one block into the next. Trailing bytes short of a block are not tested.
//! (`rngtest` also runs the continuous test, comparing each 32-bit word with the previous one;
//! that is a health test of a generator's successive outputs, not a statistic, and is left out.)
//!
//! Runs are counted from a table, four bits at a time (`fips140_2/runs.rs` says how); the
//! tests below hold the result to a plain bit-by-bit count.

mod runs;

/// Bytes in a block.
pub const BLOCK_BYTES: usize = 2500;

/// Bits in a block.
pub const BLOCK_BITS: u32 = 20_000;

/// Monobit: the block passes when the count of ones lies strictly between these.
pub const MONOBIT_EXCLUSIVE: (u32, u32) = (9725, 10_275);

/// Poker: the block passes when X lies strictly between these.
pub const POKER_EXCLUSIVE: (f64, f64) = (2.16, 46.17);

/// Poker in integers, as `rngtest` computes it: 2.16 < 16/5000·Σf² − 5000 < 46.17 holds exactly
/// when Σf² lies in this inclusive range (Σf² = (X + 5000)·312.5).
const POKER_SUM_OF_SQUARES_INCLUSIVE: (u32, u32) = (1_563_176, 1_576_928);

/// Runs: the inclusive range for the runs of length 1, 2, 3, 4, 5 and 6 or more, of each bit.
pub const RUNS_INCLUSIVE: [(u32, u32); 6] =
    [(2315, 2685), (1114, 1386), (527, 723), (240, 384), (103, 209), (103, 209)];

/// Long run: a run of this many equal bits or more fails the block.
pub const LONG_RUN_BITS: u32 = 26;

/// The four tests over the whole blocks of one sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fips140_2 {
    /// Whole 20,000-bit blocks tested.
    pub blocks: u64,
    /// Blocks that failed the monobit test.
    pub monobit_failures: u64,
    /// Blocks that failed the poker test.
    pub poker_failures: u64,
    /// Blocks that failed the runs test.
    pub runs_failures: u64,
    /// Blocks that failed the long-run test.
    pub long_run_failures: u64,
    /// Blocks that failed at least one of the four.
    pub blocks_failed: u64,
}

impl Fips140_2 {
    /// The tests on every whole block of a sample.
    pub fn of(sample: &[u8]) -> Self {
        let mut blocks = FipsBlocks::default();
        blocks.add(sample);
        blocks.summary
    }

    fn record(&mut self, outcome: BlockOutcome) {
        self.blocks += 1;
        self.monobit_failures += u64::from(outcome.monobit_failed);
        self.poker_failures += u64::from(outcome.poker_failed);
        self.runs_failures += u64::from(outcome.runs_failed);
        self.long_run_failures += u64::from(outcome.long_run_failed);
        self.blocks_failed += u64::from(outcome.failed());
    }
}

/// Which tests one block failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockOutcome {
    /// The count of ones is out of bounds.
    pub monobit_failed: bool,
    /// X is out of bounds.
    pub poker_failed: bool,
    /// At least one of the twelve run counts is out of bounds.
    pub runs_failed: bool,
    /// A run of [`LONG_RUN_BITS`] or more.
    pub long_run_failed: bool,
}

impl BlockOutcome {
    /// Whether the block failed any test.
    pub fn failed(&self) -> bool {
        self.monobit_failed || self.poker_failed || self.runs_failed || self.long_run_failed
    }
}

/// The numbers the four tests judge, for one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockStats {
    /// Bits that are one.
    pub ones: u32,
    /// Σf(i)² over the 16 nibble values.
    pub nibble_sum_of_squares: u32,
    /// `runs[b][k]`: runs of bit b of length k + 1, the last entry those of 6 or more.
    pub runs: [[u32; 6]; 2],
    /// The block has a run of [`LONG_RUN_BITS`] or more.
    pub has_long_run: bool,
}

impl BlockStats {
    /// The statistics of one block.
    pub fn of(block: &[u8; BLOCK_BYTES]) -> Self {
        let runs = runs::runs(block);
        let (ones, nibble_sum_of_squares) = ones_and_nibbles(block);
        Self { ones, nibble_sum_of_squares, runs: runs.counts, has_long_run: runs.has_long_run }
    }

    /// The tests' verdicts on these statistics.
    pub fn outcome(&self) -> BlockOutcome {
        let within = |value: u32, (low, high): (u32, u32)| low <= value && value <= high;
        let (mono_low, mono_high) = MONOBIT_EXCLUSIVE;
        BlockOutcome {
            monobit_failed: !(mono_low < self.ones && self.ones < mono_high),
            poker_failed: !within(self.nibble_sum_of_squares, POKER_SUM_OF_SQUARES_INCLUSIVE),
            runs_failed: !self.runs.iter().all(|counts| {
                counts.iter().zip(RUNS_INCLUSIVE).all(|(&n, range)| within(n, range))
            }),
            long_run_failed: self.has_long_run,
        }
    }

    /// The poker statistic X = 16/5000·Σf² − 5000.
    pub fn poker_x(&self) -> f64 {
        16.0 / 5000.0 * f64::from(self.nibble_sum_of_squares) - 5000.0
    }
}

/// The count of ones, and Σf² over the counts f of the 16 nibble values (high and low nibble
/// of every byte), both from the block's byte counts: one increment per byte, then 256 values.
fn ones_and_nibbles(block: &[u8; BLOCK_BYTES]) -> (u32, u32) {
    // Two tables, so that successive increments rarely wait on the same counter.
    let mut tables = [[0u32; 256]; 2];
    let (pairs, rest) = block.as_chunks::<2>();
    for &[even, odd] in pairs {
        tables[0][usize::from(even)] += 1;
        tables[1][usize::from(odd)] += 1;
    }
    for &byte in rest {
        tables[0][usize::from(byte)] += 1;
    }
    let mut ones = 0;
    let mut nibbles = [0u32; 16];
    for (value, (a, b)) in (0u8..=255).zip(tables[0].iter().zip(&tables[1])) {
        let count = a + b;
        ones += count * value.count_ones();
        nibbles[usize::from(value >> 4)] += count;
        nibbles[usize::from(value & 0xf)] += count;
    }
    (ones, nibbles.iter().map(|f| f * f).sum())
}

/// Tests blocks as bytes arrive in pieces of any length; a block split across pieces is
/// completed from the next ones.
#[derive(Debug, Clone)]
pub(crate) struct FipsBlocks {
    pending: [u8; BLOCK_BYTES],
    pending_len: usize,
    pub(crate) summary: Fips140_2,
}

impl Default for FipsBlocks {
    fn default() -> Self {
        Self { pending: [0; BLOCK_BYTES], pending_len: 0, summary: Fips140_2::default() }
    }
}

impl FipsBlocks {
    pub(crate) fn add(&mut self, mut bytes: &[u8]) {
        if self.pending_len > 0 {
            let take = (BLOCK_BYTES - self.pending_len).min(bytes.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&bytes[..take]);
            self.pending_len += take;
            bytes = &bytes[take..];
            if self.pending_len < BLOCK_BYTES {
                return;
            }
            self.summary.record(BlockStats::of(&self.pending).outcome());
            self.pending_len = 0;
        }
        let (blocks, rest) = bytes.as_chunks::<BLOCK_BYTES>();
        for block in blocks {
            self.summary.record(BlockStats::of(block).outcome());
        }
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The statistics counted one bit at a time, the way `rngtest`'s `fips_test_store` does.
    fn bit_by_bit(block: &[u8; BLOCK_BYTES]) -> BlockStats {
        let bits: Vec<usize> = block
            .iter()
            .flat_map(|&byte| (0..8).rev().map(move |i| usize::from((byte >> i) & 1)))
            .collect();
        let mut runs = [[0u32; 6]; 2];
        let mut has_long_run = false;
        let mut start = 0;
        for i in 1..=bits.len() {
            if i == bits.len() || bits[i] != bits[start] {
                let len = i - start;
                runs[bits[start]][len.min(6) - 1] += 1;
                has_long_run |= len >= LONG_RUN_BITS as usize;
                start = i;
            }
        }
        let mut nibbles = [0u32; 16];
        for &byte in block {
            nibbles[usize::from(byte >> 4)] += 1;
            nibbles[usize::from(byte & 15)] += 1;
        }
        BlockStats {
            ones: bits.iter().filter(|&&bit| bit == 1).count() as u32,
            nibble_sum_of_squares: nibbles.iter().map(|f| f * f).sum(),
            runs,
            has_long_run,
        }
    }

    /// A block of pseudo-random bytes (SplitMix64), then edited by the test.
    fn block_from(seed: u64) -> [u8; BLOCK_BYTES] {
        let mut state = seed;
        let mut block = [0u8; BLOCK_BYTES];
        for chunk in block.chunks_mut(8) {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
        block
    }

    #[test]
    fn random_block_passes_and_matches_the_bit_by_bit_count() {
        let block = block_from(1);
        let stats = BlockStats::of(&block);
        assert_eq!(stats, bit_by_bit(&block));
        assert_eq!(stats.outcome(), BlockOutcome::default(), "{stats:?}");
        assert!(POKER_EXCLUSIVE.0 < stats.poker_x() && stats.poker_x() < POKER_EXCLUSIVE.1);
    }

    #[test]
    fn zeros_fail_everything() {
        let stats = BlockStats::of(&[0; BLOCK_BYTES]);
        assert_eq!(stats.ones, 0);
        assert_eq!(stats.runs, [[0, 0, 0, 0, 0, 1], [0; 6]]);
        let outcome = stats.outcome();
        assert!(outcome.monobit_failed && outcome.poker_failed && outcome.runs_failed);
        assert!(outcome.long_run_failed);
    }

    #[test]
    fn a_run_of_exactly_25_passes_and_26_fails() {
        // 0x00 0xff 0xff 0xff 0x80 holds a run of 25 ones, 0x01 0xff 0xff 0xff 0x80 one of 26.
        // Read least significant bit first, the second would hold a run of 24 and pass.
        for (lead, expected) in [(0x00, false), (0x01, true)] {
            let mut block = block_from(2);
            block[1000..1005].copy_from_slice(&[lead, 0xff, 0xff, 0xff, 0x80]);
            let stats = BlockStats::of(&block);
            assert_eq!(stats, bit_by_bit(&block));
            assert_eq!(stats.has_long_run, expected, "lead byte {lead:#04x}");
        }
    }

    #[test]
    fn runs_reaching_the_ends_of_the_block_are_cut_there() {
        let mut block = block_from(3);
        block[..4].fill(0xff);
        block[BLOCK_BYTES - 4..].fill(0x00);
        let stats = BlockStats::of(&block);
        assert_eq!(stats, bit_by_bit(&block));
        assert!(stats.has_long_run);
    }

    #[test]
    fn bounds_are_those_of_rngtest() {
        // rngtest's integer poker bounds are X = 2.16 and 46.17 rounded inward.
        let x = |sum: u32| 16.0 / 5000.0 * f64::from(sum) - 5000.0;
        let (low, high) = POKER_SUM_OF_SQUARES_INCLUSIVE;
        assert!(x(low - 1) <= POKER_EXCLUSIVE.0 && POKER_EXCLUSIVE.0 < x(low));
        assert!(x(high) < POKER_EXCLUSIVE.1 && POKER_EXCLUSIVE.1 <= x(high + 1));
    }

    #[test]
    fn pieces_of_any_length_test_the_same_blocks() {
        let sample: Vec<u8> = (0..7).flat_map(block_from).chain([1, 2, 3]).collect();
        let whole = Fips140_2::of(&sample);
        assert_eq!(whole.blocks, 7);
        for piece in [1, 999, 2500, 2501, 6000] {
            let mut blocks = FipsBlocks::default();
            for part in sample.chunks(piece) {
                blocks.add(part);
            }
            assert_eq!(blocks.summary, whole, "pieces of {piece}");
        }
    }

    /// Blocks with long stretches of equal bits, where the counts have their edge cases (runs
    /// across words, long runs, the block's ends).
    fn lumpy_block() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            prop::collection::vec(any::<u8>(), 1..40),
            (prop_oneof![Just(0u8), Just(0xff)], 1usize..12).prop_map(|(byte, n)| vec![byte; n]),
            (any::<u8>(), 1usize..40).prop_map(|(byte, n)| vec![byte; n]),
        ];
        prop::collection::vec(piece, 1..400).prop_map(|pieces| {
            let mut bytes: Vec<u8> = pieces.concat();
            bytes.resize(BLOCK_BYTES, 0x5a);
            bytes
        })
    }

    proptest! {
        #[test]
        fn table_count_equals_bit_by_bit(bytes in lumpy_block()) {
            let block: &[u8; BLOCK_BYTES] = bytes.as_slice().try_into().unwrap();
            prop_assert_eq!(BlockStats::of(block), bit_by_bit(block));
        }
    }
}
