//! How often each byte value occurs. The chi-square statistic, both entropies, the mean and
//! the serial correlation's sums of `x` and `x²` all derive from these 256 counts, so the
//! sample is counted once rather than read again by each of them.

/// Occurrences of each of the 256 byte values in the bytes added so far.
#[derive(Debug, Clone)]
pub struct ByteCounts {
    /// Four tables, one per byte position modulo 4, summed when read: with one table, a run of
    /// equal bytes (a stuck source) makes every increment wait for the previous one to the
    /// same counter.
    tables: [[u64; 256]; 4],
    total: u64,
}

impl Default for ByteCounts {
    fn default() -> Self {
        Self { tables: [[0; 256]; 4], total: 0 }
    }
}

impl ByteCounts {
    /// Counts the byte values of a whole sample.
    pub fn of(sample: &[u8]) -> Self {
        let mut counts = Self::default();
        counts.add(sample);
        counts
    }

    /// Counts `bytes` on top of what was counted before.
    pub fn add(&mut self, bytes: &[u8]) {
        let [t0, t1, t2, t3] = &mut self.tables;
        let mut quads = bytes.chunks_exact(4);
        for quad in &mut quads {
            t0[usize::from(quad[0])] += 1;
            t1[usize::from(quad[1])] += 1;
            t2[usize::from(quad[2])] += 1;
            t3[usize::from(quad[3])] += 1;
        }
        for &byte in quads.remainder() {
            t0[usize::from(byte)] += 1;
        }
        self.total += bytes.len() as u64;
    }

    /// How many bytes were counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The count of each byte value, indexed by the value.
    pub fn counts(&self) -> [u64; 256] {
        let mut counts = [0u64; 256];
        for table in &self.tables {
            for (count, part) in counts.iter_mut().zip(table) {
                *count += part;
            }
        }
        counts
    }

    /// The largest count of any one value (that of the most common value); 0 when empty.
    pub fn max(&self) -> u64 {
        self.counts().into_iter().max().unwrap_or(0)
    }

    /// The sum of all bytes, `Σx`.
    pub fn sum(&self) -> u64 {
        (0u64..).zip(self.counts()).map(|(value, count)| value * count).sum()
    }

    /// The sum of the squares of all bytes, `Σx²`.
    pub fn sum_of_squares(&self) -> u64 {
        (0u64..).zip(self.counts()).map(|(value, count)| value * value * count).sum()
    }

    /// The arithmetic mean of the bytes (127.5 for uniformly random data); NaN when empty.
    pub fn mean(&self) -> f64 {
        self.sum() as f64 / self.total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_byte_whatever_the_alignment() {
        let sample: Vec<u8> = (0..=255u8).chain([7, 7, 7, 200, 0]).collect();
        let counts = ByteCounts::of(&sample);
        assert_eq!(counts.total(), 261);
        let by_value = counts.counts();
        assert_eq!(by_value[7], 4);
        assert_eq!(by_value[200], 2);
        assert_eq!(by_value[0], 2);
        assert_eq!(by_value[1], 1);
        assert_eq!(by_value.iter().sum::<u64>(), 261);
        assert_eq!(counts.max(), 4);
    }

    #[test]
    fn adding_in_pieces_equals_counting_at_once() {
        let sample: Vec<u8> = (0u32..10_000).map(|i| (i * 7919 % 251) as u8).collect();
        let mut pieces = ByteCounts::default();
        for piece in sample.chunks(333) {
            pieces.add(piece);
        }
        assert_eq!(pieces.counts(), ByteCounts::of(&sample).counts());
        assert_eq!(pieces.total(), 10_000);
    }

    #[test]
    fn sums_and_mean() {
        let counts = ByteCounts::of(&[0, 1, 2, 255]);
        assert_eq!(counts.sum(), 258);
        assert_eq!(counts.sum_of_squares(), 1 + 4 + 255 * 255);
        assert_eq!(counts.mean(), 64.5);
    }
}
