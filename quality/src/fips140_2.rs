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
//! Runs are counted 64 bits at a time rather than bit by bit. With `w` a word of the block and
//! the following bits behind it, `ahead(k)` has bit i set when bits i..i+k of the stream are
//! all ones (built by shifting and AND-ing, doubling k each time). A run of ones starts at i
//! when bit i is one and bit i − 1 is not, so the runs of length ≥ k are
//! `popcount(starts & ahead(k))`, and those of exactly k are the difference of two such counts.
//! The runs of zeros are the runs of ones of the complement. [`BlockStats`]'s tests check the
//! result against a plain bit-by-bit count.

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

/// Words of 64 bits holding a block; the last one holds 32 bits and zeros.
const WORDS: usize = BLOCK_BYTES.div_ceil(8);

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
        let mut ones_words = [0u64; WORDS + 1];
        for (word, bytes) in ones_words.iter_mut().zip(block.chunks(8)) {
            let mut be = [0u8; 8];
            be[..bytes.len()].copy_from_slice(bytes);
            *word = u64::from_be_bytes(be);
        }
        // The complement, so that runs of zeros become runs of ones; the bits past the block's
        // end (the second half of the last data word, the look-ahead word) stay zero.
        let mut zeros_words = ones_words.map(|word| !word);
        zeros_words[WORDS - 1] &= !0u64 << (64 * WORDS as u32 - BLOCK_BITS);
        zeros_words[WORDS] = 0;

        let (zeros_runs, zeros_long) = runs_of_ones(&zeros_words);
        let (ones_runs, ones_long) = runs_of_ones(&ones_words);
        Self {
            ones: ones_words.iter().map(|word| word.count_ones()).sum(),
            nibble_sum_of_squares: nibble_sum_of_squares(block),
            runs: [zeros_runs, ones_runs],
            has_long_run: zeros_long || ones_long,
        }
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

/// Σf² over the counts f of the 16 nibble values (high and low nibble of every byte).
fn nibble_sum_of_squares(block: &[u8; BLOCK_BYTES]) -> u32 {
    // Two tables, so that successive increments rarely wait on the same counter.
    let mut high = [0u32; 16];
    let mut low = [0u32; 16];
    for &byte in block {
        high[usize::from(byte >> 4)] += 1;
        low[usize::from(byte & 0xf)] += 1;
    }
    high.iter().zip(&low).map(|(h, l)| (h + l) * (h + l)).sum()
}

/// Counts the runs of ones in `words` (a block, then one word of zeros to look ahead into):
/// those of length 1 to 5 and 6 or more, and whether one reaches [`LONG_RUN_BITS`].
fn runs_of_ones(words: &[u64; WORDS + 1]) -> ([u32; 6], bool) {
    // at_least[k]: runs of length ≥ k + 1.
    let mut at_least = [0u32; 7];
    let mut long = false;
    // The bit before the block counts as a zero, so a run of ones may start at bit 0.
    let mut previous_bit = 0u64;
    for pair in words.windows(2) {
        let (word, next) = (pair[0], pair[1]);
        let starts = word & !((word >> 1) | (previous_bit << 63));
        previous_bit = word & 1;

        // 128 bits: this word, then the next one to look ahead into. Shifting left by j brings
        // bit i + j to bit i (bits are numbered from the top), so `aK` has bit i set when bits
        // i..i+K are all ones. Only the top 64 bits are read; they look at most 25 bits ahead.
        let a1 = (u128::from(word) << 64) | u128::from(next);
        let a2 = a1 & (a1 << 1);
        let a3 = a2 & (a1 << 2);
        let a4 = a2 & (a2 << 2);
        let a5 = a4 & (a1 << 4);
        let a6 = a4 & (a2 << 4);
        let a8 = a4 & (a4 << 4);
        let a16 = a8 & (a8 << 8);
        let a26 = a16 & (a8 << 16) & (a2 << 24);

        let top = |ahead: u128| (ahead >> 64) as u64;
        at_least[1] += starts.count_ones();
        at_least[2] += (starts & top(a2)).count_ones();
        at_least[3] += (starts & top(a3)).count_ones();
        at_least[4] += (starts & top(a4)).count_ones();
        at_least[5] += (starts & top(a5)).count_ones();
        at_least[6] += (starts & top(a6)).count_ones();
        long |= top(a26) != 0;
    }
    let exactly = |k: usize| at_least[k] - at_least[k + 1];
    ([exactly(1), exactly(2), exactly(3), exactly(4), exactly(5), at_least[6]], long)
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

    /// Blocks with long stretches of equal bits, where the word-wise count has its edge cases.
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
        fn word_wise_count_equals_bit_by_bit(bytes in lumpy_block()) {
            let block: &[u8; BLOCK_BYTES] = bytes.as_slice().try_into().unwrap();
            prop_assert_eq!(BlockStats::of(block), bit_by_bit(block));
        }
    }
}
