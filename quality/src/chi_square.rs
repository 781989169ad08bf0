//! Pearson's chi-square test of the byte counts against the uniform distribution, as `ent`
//! computes it: `Σ (count − N/256)² / (N/256)` over the 256 values, with 255 degrees of freedom.
//!
//! Both tails are reported. The upper tail (the p-value `ent` prints as "would exceed this value
//! x percent of the times") is small when the values are too unevenly spread: a bias, a stuck or
//! repeating source. The lower tail is small when they are spread too evenly to be chance: a
//! counting sequence hits every value exactly as often, which random bytes almost never do.
//!
//! The tails are the regularized incomplete gamma functions `Q(k/2, x/2)` and `P(k/2, x/2)`,
//! taken from `statrs` (see quality/Cargo.toml for why that crate): it evaluates the upper tail
//! directly by a continued fraction, so a p-value of 1e-300 is not lost to `1 − P` rounding.

use statrs::function::gamma::{gamma_lr, gamma_ur};

use crate::counts::ByteCounts;

/// Degrees of freedom of the test over 256 byte values.
pub const DEGREES_OF_FREEDOM: u32 = 255;

/// The chi-square test of one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChiSquare {
    /// `Σ (count − expected)² / expected`, expected = N/256 (NaN for an empty sample).
    pub statistic: f64,
    /// Always [`DEGREES_OF_FREEDOM`]; reported so the number reads on its own.
    pub degrees_of_freedom: u32,
    /// The upper tail `P(X ≥ statistic)` for X ~ χ²(255): how often uniformly random data would
    /// be at least this uneven. Small means too uneven.
    pub p_value: f64,
    /// The lower tail `P(X ≤ statistic)`: how often random data would be at least this even.
    /// Small means too even to be random.
    pub lower_tail: f64,
}

impl ChiSquare {
    /// The test on the counts of a sample.
    pub fn of(counts: &ByteCounts) -> Self {
        let expected = counts.total() as f64 / 256.0;
        let statistic: f64 = counts
            .counts()
            .into_iter()
            .map(|count| {
                let deviation = count as f64 - expected;
                deviation * deviation / expected
            })
            .sum();
        let (p_value, lower_tail) = tails(statistic);
        Self { statistic, degrees_of_freedom: DEGREES_OF_FREEDOM, p_value, lower_tail }
    }
}

/// `(P(X ≥ x), P(X ≤ x))` for X ~ χ²(255).
fn tails(statistic: f64) -> (f64, f64) {
    let half_df = f64::from(DEGREES_OF_FREEDOM) / 2.0;
    if statistic == 0.0 {
        // Every value exactly N/256 times; statrs takes x > 0 only.
        return (1.0, 0.0);
    }
    if statistic.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    // statrs panics only for a ≤ 0, x ≤ 0 or an infinite argument: here a = 127.5 and x is a
    // positive finite sum of 256 finite terms.
    let x = statistic / 2.0;
    (gamma_ur(half_df, x), gamma_lr(half_df, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistic_by_hand() {
        // 512 bytes: value 0 four times, values 1 and 2 none, the rest twice each.
        let mut sample = vec![0u8; 4];
        sample.extend((3..=255u8).flat_map(|v| [v, v]));
        sample.extend([3u8, 3]);
        assert_eq!(sample.len(), 512);
        // Expected 2: (4−2)²/2 + 2·(0−2)²/2 + (4−2)²/2 (value 3) = 2 + 4 + 2.
        let chi = ChiSquare::of(&ByteCounts::of(&sample));
        assert!((chi.statistic - 8.0).abs() < 1e-12, "{}", chi.statistic);
    }

    /// Reference values of the χ²(255) distribution, from mpmath at 40 digits:
    /// `gammainc(255/2, x/2, inf, regularized=True)` and `gammainc(255/2, 0, x/2, ...)`.
    #[test]
    fn tails_match_reference_values() {
        let cases = [
            // (x, upper, lower)
            (255.0, 0.488_222_521_770_406, 0.511_777_478_229_594),
            (200.0, 0.995_425_444_541_952, 0.004_574_555_458_048_1),
            (350.0, 7.132_745_072_663_47e-5, 0.999_928_672_549_273),
            (600.0, 7.531_973_752_278_67e-30, 1.0),
            (120.0, 0.999_999_999_999_975, 2.484_413_246_047_93e-14),
        ];
        for (x, upper, lower) in cases {
            let (p, q) = tails(x);
            assert!(((p - upper) / upper).abs() < 1e-8, "upper at {x}: {p} vs {upper}");
            assert!(((q - lower) / lower).abs() < 1e-8, "lower at {x}: {q} vs {lower}");
        }
    }

    #[test]
    fn perfectly_even_counts() {
        let counting: Vec<u8> = (0..=255).cycle().take(256 * 20).collect();
        let chi = ChiSquare::of(&ByteCounts::of(&counting));
        assert_eq!((chi.statistic, chi.p_value, chi.lower_tail), (0.0, 1.0, 0.0));
    }
}
