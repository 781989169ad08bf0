//! The serial correlation coefficient, as `ent` computes it: the correlation of each byte with
//! the next, circularly (the last byte is paired with the first), so that
//!
//! ```text
//! r = (N·Σ xᵢxᵢ₊₁ − (Σx)²) / (N·Σx² − (Σx)²)
//! ```
//!
//! For independent uniformly random bytes r is close to 0 with standard deviation about 1/√N;
//! a counting sequence gives r near 1, alternating values r near −1. When every byte is the
//! same the denominator is 0 and r is undefined (`ent` prints "undefined").
//!
//! The sums are kept exact in integers; only the final division is floating point.

use crate::counts::ByteCounts;

/// The serial correlation of one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SerialCorrelation {
    /// The coefficient in [−1, 1]; `None` when every byte has the same value.
    pub coefficient: Option<f64>,
    /// The bytes it was computed over.
    pub bytes: u64,
}

impl SerialCorrelation {
    /// The coefficient of a whole sample.
    pub fn of(sample: &[u8]) -> Self {
        let mut pairs = SerialPairs::default();
        pairs.add(sample);
        pairs.finish(&ByteCounts::of(sample))
    }

    /// The coefficient's standard deviation for independent uniformly random bytes: 1/√N.
    pub fn standard_error(&self) -> f64 {
        1.0 / (self.bytes as f64).sqrt()
    }
}

/// Sums the products of successive bytes as bytes arrive in pieces of any length; the sums of
/// `x` and `x²` come from the [`ByteCounts`] of the same bytes.
#[derive(Debug, Default, Clone)]
pub(crate) struct SerialPairs {
    /// The first byte (paired with the last one at the end) and the latest one.
    ends: Option<(u8, u8)>,
    /// `Σ xᵢxᵢ₊₁` over the pairs seen so far (not yet the circular one).
    sum_of_products: u64,
}

impl SerialPairs {
    pub(crate) fn add(&mut self, bytes: &[u8]) {
        let (Some(&head), Some(&tail)) = (bytes.first(), bytes.last()) else {
            return;
        };
        let first = match self.ends {
            Some((first, last)) => {
                self.sum_of_products += u64::from(last) * u64::from(head);
                first
            }
            None => head,
        };
        // A u32 holds the products of 66,000 pairs (255² · 66,000 < 2³²) and lets the compiler
        // add several lanes at once; the total goes into the u64.
        for piece in bytes.chunks(1 << 16) {
            let within: u32 =
                piece.iter().zip(&piece[1..]).map(|(&a, &b)| u32::from(a) * u32::from(b)).sum();
            self.sum_of_products += u64::from(within);
        }
        // The pairs that straddle two of the pieces above.
        for boundary in (1 << 16..bytes.len()).step_by(1 << 16) {
            self.sum_of_products += u64::from(bytes[boundary - 1]) * u64::from(bytes[boundary]);
        }
        self.ends = Some((first, tail));
    }

    /// The coefficient, given the counts of exactly the bytes that were added.
    pub(crate) fn finish(&self, counts: &ByteCounts) -> SerialCorrelation {
        let n = i128::from(counts.total());
        let circular = self.ends.map_or(0, |(first, last)| u64::from(first) * u64::from(last));
        let products = i128::from(self.sum_of_products + circular);
        let sum = i128::from(counts.sum());
        let squares = i128::from(counts.sum_of_squares());
        let numerator = n * products - sum * sum;
        let denominator = n * squares - sum * sum;
        SerialCorrelation {
            coefficient: (denominator != 0).then(|| numerator as f64 / denominator as f64),
            bytes: counts.total(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ent`'s loop, in floating point as it does it.
    fn ent_serial(sample: &[u8]) -> f64 {
        let n = sample.len() as f64;
        let (mut t1, mut t2, mut t3) = (0.0, 0.0, 0.0);
        for (i, &x) in sample.iter().enumerate() {
            let next = sample[(i + 1) % sample.len()];
            t1 += f64::from(x) * f64::from(next);
            t2 += f64::from(x);
            t3 += f64::from(x) * f64::from(x);
        }
        (n * t1 - t2 * t2) / (n * t3 - t2 * t2)
    }

    #[test]
    fn matches_the_floating_point_formula() {
        let sample: Vec<u8> =
            (0u32..5000).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        let r = SerialCorrelation::of(&sample).coefficient.unwrap();
        assert!((r - ent_serial(&sample)).abs() < 1e-12, "{r} vs {}", ent_serial(&sample));
    }

    #[test]
    fn counting_and_alternating_sequences() {
        let counting: Vec<u8> = (0..=255).cycle().take(4096).collect();
        assert!(SerialCorrelation::of(&counting).coefficient.unwrap() > 0.95);
        let alternating: Vec<u8> = [0, 255].into_iter().cycle().take(4096).collect();
        assert_eq!(SerialCorrelation::of(&alternating).coefficient, Some(-1.0));
    }

    #[test]
    fn constant_bytes_are_undefined() {
        assert_eq!(SerialCorrelation::of(&[0x5a; 3000]).coefficient, None);
    }

    #[test]
    fn pieces_of_any_length_give_the_same_sums() {
        let sample: Vec<u8> =
            (0u32..200_000).map(|i| (i.wrapping_mul(2_246_822_519) >> 9) as u8).collect();
        let whole = SerialCorrelation::of(&sample);
        assert!((whole.coefficient.unwrap() - ent_serial(&sample)).abs() < 1e-12);
        for piece in [1, 3, 1000, 65_536, 70_000] {
            let mut pairs = SerialPairs::default();
            for part in sample.chunks(piece) {
                pairs.add(part);
            }
            assert_eq!(pairs.finish(&ByteCounts::of(&sample)), whole, "pieces of {piece}");
        }
    }
}
