//! Unbiased choices from gateway bytes: uniform indices by rejection sampling, and the
//! shuffles, samples and passwords built on them.
//!
//! Every choice here is a uniform index below some bound. One index takes just enough bytes to
//! hold `bound - 1`, keeps the bits `bound - 1` needs, and is rejected (its bytes dropped, never
//! reused) when it lands at or above `bound`. An attempt succeeds with probability above 1/2,
//! and an accepted index is uniform whatever was rejected before it, so the result carries no
//! modulo bias and stopping to fetch more bytes midway does not bias it either.
//!
//! The code is pure: [`Indices`] consumes an [`EntropyBuf`] and says how many bytes it still
//! wants; `tools` fetches those from the gateway and feeds them in.

use zeroize::Zeroizing;

/// Bytes fetched from the gateway for one call, handed out once each and wiped on drop.
pub struct EntropyBuf {
    bytes: Zeroizing<Vec<u8>>,
    pos: usize,
}

impl EntropyBuf {
    /// A buffer over `bytes`.
    pub fn new(bytes: Vec<u8>) -> Self {
        Self { bytes: Zeroizing::new(bytes), pos: 0 }
    }

    /// The next `n` bytes, or `None` (and nothing consumed) when fewer are left.
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.bytes.len())?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Some(out)
    }
}

/// Bytes one attempt at an index below `bound` takes: enough to hold `bound - 1` (0 for a
/// bound of 1, whose only index needs no randomness).
pub fn bytes_per_draw(bound: u64) -> usize {
    bits_for(bound).div_ceil(8) as usize
}

/// Bits needed to write `bound - 1`.
fn bits_for(bound: u64) -> u32 {
    u64::BITS - bound.saturating_sub(1).leading_zeros()
}

/// One attempt at a uniform index below `bound` (which must be at least 1). `Some(None)` is a
/// rejected attempt; `None` means the buffer ran out.
fn attempt(bound: u64, buf: &mut EntropyBuf) -> Option<Option<u64>> {
    let bits = bits_for(bound);
    if bits == 0 {
        return Some(Some(0));
    }
    let raw = buf.take(bytes_per_draw(bound))?;
    let mut le = [0u8; 8];
    le[..raw.len()].copy_from_slice(raw);
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let value = u64::from_le_bytes(le) & mask;
    Some((value < bound).then_some(value))
}

/// A list of uniform indices to draw, one per bound, filled in as bytes arrive.
#[derive(Debug, Clone)]
pub struct Indices {
    bounds: Vec<u64>,
    values: Vec<u64>,
}

impl Indices {
    /// Indices below each of `bounds` (each at least 1).
    pub fn new(bounds: Vec<u64>) -> Self {
        debug_assert!(bounds.iter().all(|&b| b >= 1));
        let values = Vec::with_capacity(bounds.len());
        Self { bounds, values }
    }

    /// True when every index is drawn.
    pub fn is_done(&self) -> bool {
        self.values.len() == self.bounds.len()
    }

    /// Draws from `buf` until every index is drawn (true) or `buf` runs out (false). What is
    /// left of `buf` after running out is too short for the next draw and is dropped.
    pub fn fill(&mut self, buf: &mut EntropyBuf) -> bool {
        while let Some(&bound) = self.bounds.get(self.values.len()) {
            match attempt(bound, buf) {
                Some(Some(value)) => self.values.push(value),
                Some(None) => {} // rejected: try again with fresh bytes
                None => return false,
            }
        }
        true
    }

    /// How many bytes to fetch for the remaining draws: their expected need (each attempt
    /// succeeds with probability `bound / 2^bits`) plus a quarter and a few bytes, so one fetch
    /// nearly always finishes the job without drawing much more than it uses.
    pub fn bytes_wanted(&self) -> usize {
        let expected: f64 = self.bounds[self.values.len()..]
            .iter()
            .filter(|&&b| b > 1)
            .map(|&b| bytes_per_draw(b) as f64 * (bits_for(b) as f64).exp2() / b as f64)
            .sum();
        if expected == 0.0 { 0 } else { (expected * 1.25).ceil() as usize + 8 }
    }

    /// The drawn indices, in the order of their bounds.
    pub fn into_values(self) -> Vec<u64> {
        self.values
    }
}

/// Bounds of a Fisher-Yates (Durstenfeld) shuffle of `n` items: the step at position `i`
/// (from `n - 1` down to 1) swaps it with a uniform position in `0..=i`.
pub fn shuffle_bounds(n: usize) -> Vec<u64> {
    (2..=n as u64).rev().collect()
}

/// Shuffles `items` in place with the indices drawn for [`shuffle_bounds`]`(items.len())`.
pub fn shuffle_with<T>(items: &mut [T], indices: &[u64]) {
    for (i, &j) in (1..items.len()).rev().zip(indices) {
        items.swap(i, j as usize);
    }
}

/// Bounds of drawing `k` of `n` items without replacement (the first `k` steps of a forward
/// Fisher-Yates): step `i` picks uniformly among the `n - i` items not yet picked.
pub fn sample_bounds(n: usize, k: usize) -> Vec<u64> {
    (0..k).map(|i| (n - i) as u64).collect()
}

/// The `k` items picked (in the order they were picked) with the indices drawn for
/// [`sample_bounds`]`(items.len(), k)`.
pub fn sample_with<T>(mut items: Vec<T>, indices: &[u64]) -> Vec<T> {
    for (i, &offset) in indices.iter().enumerate() {
        items.swap(i, i + offset as usize);
    }
    items.truncate(indices.len());
    items
}

/// Bits of entropy of `choices` independent uniform picks among `options` each.
pub fn entropy_bits(options: usize, choices: usize) -> f64 {
    choices as f64 * (options as f64).log2()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Draws indices from a deterministic byte stream (a test stand-in for the gateway).
    fn draw(bounds: Vec<u64>, mut next_byte: impl FnMut() -> u8) -> Vec<u64> {
        let mut ix = Indices::new(bounds);
        for _ in 0..1000 {
            let n = ix.bytes_wanted();
            let mut buf = EntropyBuf::new((0..n).map(|_| next_byte()).collect());
            if ix.fill(&mut buf) {
                return ix.into_values();
            }
        }
        panic!("never finished");
    }

    fn counter_bytes() -> impl FnMut() -> u8 {
        let mut state = 0x1234_5678_9abc_def0u64;
        move || {
            // xorshift64*: deterministic, well spread, for tests only
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        }
    }

    #[test]
    fn bytes_per_draw_fits_the_bound() {
        assert_eq!(bytes_per_draw(1), 0);
        assert_eq!(bytes_per_draw(2), 1);
        assert_eq!(bytes_per_draw(256), 1);
        assert_eq!(bytes_per_draw(257), 2);
        assert_eq!(bytes_per_draw(1 << 16), 2);
        assert_eq!(bytes_per_draw(u64::MAX), 8);
    }

    #[test]
    fn rejection_drops_values_at_or_above_the_bound() {
        // Bound 3 keeps 2 bits: byte 0b11 (3) is rejected, then 0b10 (2) accepted; the high
        // bits of each byte are masked off.
        let mut ix = Indices::new(vec![3]);
        assert!(ix.fill(&mut EntropyBuf::new(vec![0xff, 0xf6])));
        assert_eq!(ix.into_values(), vec![2]);
    }

    #[test]
    fn running_out_keeps_what_was_drawn_and_asks_for_more() {
        let mut ix = Indices::new(vec![256, 256, 256]);
        assert!(!ix.fill(&mut EntropyBuf::new(vec![7, 9])));
        assert!(ix.bytes_wanted() >= 1);
        assert!(ix.fill(&mut EntropyBuf::new(vec![11])));
        assert_eq!(ix.into_values(), vec![7, 9, 11]);
    }

    #[test]
    fn a_bound_of_one_needs_no_bytes() {
        let mut ix = Indices::new(vec![1, 1]);
        assert_eq!(ix.bytes_wanted(), 0);
        assert!(ix.fill(&mut EntropyBuf::new(vec![])));
        assert_eq!(ix.into_values(), vec![0, 0]);
    }

    #[test]
    fn every_index_is_reachable_and_counts_are_even() {
        // 6 faces, 60000 draws: each face's count within 4.5 sigma of 10000 (sigma ~ 91).
        let values = draw(vec![6; 60_000], counter_bytes());
        let mut counts = [0u32; 6];
        for v in values {
            counts[v as usize] += 1;
        }
        for c in counts {
            assert!((9_590..=10_410).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn all_permutations_of_three_appear_about_equally() {
        let mut next = counter_bytes();
        let mut counts = std::collections::HashMap::new();
        for _ in 0..6_000 {
            let mut items = ['a', 'b', 'c'];
            shuffle_with(&mut items, &draw(shuffle_bounds(3), &mut next));
            *counts.entry(items).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 6);
        for c in counts.values() {
            assert!((850..=1_150).contains(c), "{counts:?}"); // mean 1000, sigma ~ 29
        }
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut items: Vec<u32> = (0..500).collect();
        shuffle_with(&mut items, &draw(shuffle_bounds(500), counter_bytes()));
        let mut sorted = items.clone();
        sorted.sort();
        assert_eq!(sorted, (0..500).collect::<Vec<_>>());
        assert_ne!(items, sorted, "500 items left in order (p = 1/500!)");
        shuffle_with(&mut Vec::<u32>::new(), &[]);
        let mut one = vec![9];
        shuffle_with(&mut one, &draw(shuffle_bounds(1), counter_bytes()));
        assert_eq!(one, vec![9]);
    }

    #[test]
    fn sample_picks_distinct_items_each_equally_often() {
        let mut next = counter_bytes();
        let mut counts = [0u32; 10];
        for _ in 0..3_000 {
            let picked = sample_with(
                (0..10).collect::<Vec<usize>>(),
                &draw(sample_bounds(10, 3), &mut next),
            );
            assert_eq!(picked.len(), 3);
            assert!(picked[0] != picked[1] && picked[1] != picked[2] && picked[0] != picked[2]);
            for p in picked {
                counts[p] += 1;
            }
        }
        for c in counts {
            assert!((780..=1_020).contains(&c), "{counts:?}"); // mean 900, sigma ~ 25
        }
        let all = sample_with(vec!['x', 'y'], &draw(sample_bounds(2, 2), &mut next));
        assert_eq!(all.len(), 2);
    }

    #[test]
    fn entropy_bits_are_exact_for_powers_of_two() {
        assert_eq!(entropy_bits(2048, 6), 66.0);
        assert_eq!(entropy_bits(16, 32), 128.0);
        assert!((entropy_bits(62, 20) - 119.08).abs() < 0.01);
    }
}
