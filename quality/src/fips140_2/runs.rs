//! The runs of one FIPS 140-2 block, counted four bits at a time from a table.
//!
//! A run starts at bit i when bit i differs from bit i − 1, and its class for the runs test
//! (its length, with 6 and more in one class) depends on bits i..i+5 only. So the runs that
//! start among 4 given bits, their values and their classes, are a function of 10 bits: the bit
//! before, the 4 bits and the 5 bits after. [`RUN_STARTS`] tabulates that function for all 1024
//! windows, as 12 counters (2 bit values × 6 classes) of 10 bits each packed into a u128, so a
//! block's runs are counted by adding 5000 table entries: no branch and no per-bit work. The
//! window's edges are completed so that runs end at the block's: the bit before the first is
//! taken as the complement of the first bit, the bits after the last as the complement of the
//! last bit.
//!
//! The long-run test looks further than a window. A run of 26 or more covers two whole bytes in
//! a row that are both 0x00 or both 0xff (at most 7 of its bits lie in the byte where it starts,
//! and 19 more fill two bytes), so the block is first searched for such a pair, 8 bytes at a
//! time; about 7% of random blocks have one, and only those are measured byte by byte.

use super::BLOCK_BYTES;

/// Words of 64 bits holding a block: 312 whole ones and one of 32 bits.
const WORDS: usize = BLOCK_BYTES.div_ceil(8);

/// Bits in a counter of [`RUN_STARTS`]: entries are added at most 256 at a time (16 words)
/// before being unpacked, at most 2 runs per counter per entry, so 512 < 2¹⁰ fits.
const COUNTER_BITS: usize = 10;
const COUNTER_MASK: u64 = (1 << COUNTER_BITS) - 1;
const WORDS_PER_FLUSH: usize = 16;

/// For each 10-bit window (the bit before, 4 bits, 5 bits after; the most significant bit
/// first), the runs that start among the 4 bits: in entry v those of bit value v, by class c
/// (0 for length 1, …, 5 for length 6 or more), counted at bit `COUNTER_BITS · c`. Two u64
/// rather than one u128, so that the two sums do not wait on each other's carry.
static RUN_STARTS: [[u64; 2]; 1024] = run_starts_table();

const fn run_starts_table() -> [[u64; 2]; 1024] {
    const fn bit(window: usize, i: usize) -> usize {
        (window >> (9 - i)) & 1
    }
    let mut table = [[0u64; 2]; 1024];
    let mut window = 0;
    while window < 1024 {
        let mut start = 1;
        while start <= 4 {
            let value = bit(window, start);
            if value != bit(window, start - 1) {
                // At least 10 − 4 = 6 bits remain in the window: enough to tell 6 or more.
                let mut len = 1;
                while len < 6 && bit(window, start + len) == value {
                    len += 1;
                }
                table[window][value] += 1 << (COUNTER_BITS * (len - 1));
            }
            start += 1;
        }
        window += 1;
    }
    table
}

/// The runs of one block.
pub(super) struct Runs {
    /// `counts[b][c]`: runs of bit b of length c + 1, the last entry those of 6 or more.
    pub(super) counts: [[u32; 6]; 2],
    /// A run of 26 or more.
    pub(super) has_long_run: bool,
}

/// Counts the runs of `block`, read most significant bit first.
pub(super) fn runs(block: &[u8; BLOCK_BYTES]) -> Runs {
    let mut words = [0u64; WORDS];
    let (whole, rest) = block.as_chunks::<8>();
    for (word, bytes) in words.iter_mut().zip(whole) {
        *word = u64::from_be_bytes(*bytes);
    }
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    let last = u64::from_be_bytes(last);
    // Past the block's last bit, its complement: the last run ends with the block.
    let last_bit = (last >> 32) & 1;
    words[WORDS - 1] = last | if last_bit == 0 { 0xffff_ffff } else { 0 };

    Runs { counts: count_runs(&words), has_long_run: has_long_run(block, &words) }
}

fn count_runs(words: &[u64; WORDS]) -> [[u32; 6]; 2] {
    let mut counts = [[0u32; 6]; 2];
    let mut packed = [0u64; 2];
    // Before the block, the complement of its first bit: a run starts at bit 0.
    let mut previous_bit = (!words[0]) >> 63;
    for (i, pair) in words.windows(2).enumerate() {
        add_word(&mut packed, previous_bit, pair[0], pair[1], 16);
        previous_bit = pair[0] & 1;
        if i % WORDS_PER_FLUSH == WORDS_PER_FLUSH - 1 {
            unpack(&mut packed, &mut counts);
        }
    }
    // The last word holds 32 bits of the block (8 nibbles), then their look-ahead.
    add_word(&mut packed, previous_bit, words[WORDS - 1], 0, 8);
    unpack(&mut packed, &mut counts);
    counts
}

/// Adds the table entries of the first `nibbles` nibbles of `word`.
#[inline(always)]
fn add_word(packed: &mut [u64; 2], previous_bit: u64, word: u64, next: u64, nibbles: u32) {
    // `before`: the previous bit, then the word's first 63 bits. `after`: the word's bits from
    // the 8th, then the next word's first 8. The window of nibble n (bits 4n..4n+4 of the word)
    // is the 10 bits from bit 4n − 1: in `before` for n < 14, in `after` for the last two.
    let before = (previous_bit << 63) | (word >> 1);
    let after = (word << 8) | (next >> 56);
    for n in 0..nibbles {
        let bits = if n < 14 { before >> (54 - 4 * n) } else { after >> (63 - 4 * n) };
        let [zeros, ones] = RUN_STARTS[(bits & 0x3ff) as usize];
        packed[0] += zeros;
        packed[1] += ones;
    }
}

fn unpack(packed: &mut [u64; 2], counts: &mut [[u32; 6]; 2]) {
    for (sums, bit_counts) in packed.iter_mut().zip(counts) {
        for (class, count) in bit_counts.iter_mut().enumerate() {
            *count += ((*sums >> (COUNTER_BITS * class)) & COUNTER_MASK) as u32;
        }
        *sums = 0;
    }
}

/// Whether the block has a run of 26 bits or more.
fn has_long_run(block: &[u8; BLOCK_BYTES], words: &[u64; WORDS]) -> bool {
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    // Whether some byte of `v` is zero: the classic bit trick, exact as a yes-or-no answer.
    let has_zero_byte = |v: u64| v.wrapping_sub(LOW_BITS) & !v & HIGH_BITS != 0;
    // Each byte against the one after it: both 0x00 means a zero byte in `x | y`, both 0xff a
    // zero byte in `!(x & y)`. The last word's second half is padding: its pairs are checked
    // from the bytes below.
    let pair_in_words = words.windows(2).any(|pair| {
        let (x, y) = (pair[0], (pair[0] << 8) | (pair[1] >> 56));
        has_zero_byte(x | y) || has_zero_byte(!(x & y))
    });
    let tail = &block[8 * (WORDS - 1)..];
    let pair_in_tail =
        tail.windows(2).any(|pair| pair[0] == pair[1] && matches!(pair[0], 0 | 0xff));
    (pair_in_words || pair_in_tail)
        && longest_run_through_uniform_bytes(block) >= super::LONG_RUN_BITS
}

/// The longest run that covers two or more whole bytes in a row (0 if there is none).
fn longest_run_through_uniform_bytes(block: &[u8; BLOCK_BYTES]) -> u32 {
    let mut longest = 0;
    let mut i = 0;
    while i + 1 < BLOCK_BYTES {
        let byte = block[i];
        if !matches!(byte, 0 | 0xff) || block[i + 1] != byte {
            i += 1;
            continue;
        }
        // Bytes i..=end are all `byte`, and block[i − 1] is not (else the search would have
        // stopped there): the run also takes the equal bits at the end of the byte before and
        // at the start of the byte after.
        let mut end = i + 1;
        while end + 1 < BLOCK_BYTES && block[end + 1] == byte {
            end += 1;
        }
        let ones = byte == 0xff;
        let before = i
            .checked_sub(1)
            .map_or(0, |j| if ones { block[j].trailing_ones() } else { block[j].trailing_zeros() });
        let after = block
            .get(end + 1)
            .map_or(0, |&b| if ones { b.leading_ones() } else { b.leading_zeros() });
        longest = longest.max(8 * (end - i + 1) as u32 + before + after);
        i = end + 1;
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_entries_by_hand() {
        // The window of the bit before, the nibble and the 5 bits after.
        let window =
            |before: usize, nibble: usize, after: usize| (before << 9) | (nibble << 5) | after;
        let count = |window: usize, value: usize, class: usize| {
            (RUN_STARTS[window][value] >> (COUNTER_BITS * class)) & COUNTER_MASK
        };
        // 0 | 1010 | 10101: a run starts at each of the 4 bits: two of ones, two of zeros, all
        // of length 1.
        assert_eq!(RUN_STARTS[window(0b0, 0b1010, 0b10101)], [2, 2]);
        // 1 | 1111 | 11111: no run starts (the run began before).
        assert_eq!(RUN_STARTS[window(0b1, 0b1111, 0b11111)], [0, 0]);
        // 1 | 0000 | 00111: a run of zeros of length 6 starts at the first bit.
        assert_eq!(count(window(0b1, 0b0000, 0b00111), 0, 5), 1);
        assert_eq!(RUN_STARTS[window(0b1, 0b0000, 0b00111)][1], 0);
        // 1 | 1100 | 11000: the ones continue a run begun before; a run of zeros of length 2
        // starts at the third bit.
        assert_eq!(count(window(0b1, 0b1100, 0b11000), 0, 1), 1);
        assert_eq!(RUN_STARTS[window(0b1, 0b1100, 0b11000)][0].count_ones(), 1);
        assert_eq!(RUN_STARTS[window(0b1, 0b1100, 0b11000)][1], 0);
    }

    #[test]
    fn long_runs_through_uniform_bytes() {
        let with = |at: usize, bytes: &[u8]| {
            let mut block = [0x5a; BLOCK_BYTES]; // 01011010: no run longer than 2
            block[at..at + bytes.len()].copy_from_slice(bytes);
            longest_run_through_uniform_bytes(&block)
        };
        assert_eq!(with(10, &[0x01, 0xff, 0xff, 0x80]), 1 + 16 + 1);
        assert_eq!(with(10, &[0x07, 0xff, 0xff, 0xff]), 3 + 24);
        assert_eq!(with(0, &[0x00, 0x00, 0x1a]), 16 + 3);
        assert_eq!(with(BLOCK_BYTES - 4, &[0x5b, 0xff, 0xff, 0xff]), 2 + 24);
        assert_eq!(with(10, &[0xff, 0x00, 0xff]), 0);
        assert_eq!(longest_run_through_uniform_bytes(&[0; BLOCK_BYTES]), 20_000);
    }
}
