//! Each test's cutoff, from the source's claimed min-entropy per byte and the false-alarm
//! probability (the formulas are in the crate's documentation).

use crate::{APT_WINDOW, BIT_WINDOW_BITS};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
