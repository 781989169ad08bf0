//! Pass or fail, and why. Each check bounds one statistic by a number of standard errors or a
//! tail probability *for the sample's own size*, so that the same thresholds hold for 2,500
//! bytes and for 16 MiB: uniformly random data fails a call with probability below
//! [`FALSE_FAILURE_BUDGET`], while the bounds tighten as the sample grows and a biased, stuck or
//! repeating source fails by a wide margin.
//!
//! | check | fails when | random data fails with probability |
//! |---|---|---|
//! | Monte Carlo pi | `|estimate − π|` > [`PI_MAX_STANDARD_ERRORS`] standard errors | 5.7e-7 (normal, two-sided) |
//! | serial correlation | `|r|` > [`SERIAL_MAX_STANDARD_ERRORS`]`/√N`, or r undefined | 5.7e-7 |
//! | chi-square, uneven | p-value < [`CHI_SQUARE_MIN_TAIL`] | 1e-6 |
//! | chi-square, too even | lower tail < [`CHI_SQUARE_MIN_TAIL`] | 1e-6 |
//! | FIPS 140-2 | failed blocks > [`fips_max_failed_blocks`] | ≤ [`FIPS_MAX_TAIL`] = 1e-6 |
//!
//! The sum is 4.1e-6. The normal and chi-square tails are approximations, weakest for the
//! smallest samples; at 2,500 bytes they hold where rates can be measured (400,000 samples of OS
//! random data, `tests/it/false_failures.rs`): beyond 3 standard errors, pi 2.78e-3 and serial
//! correlation 2.72e-3 against the normal 2.70e-3; beyond 4, 6.8e-5 and 8.3e-5 against 6.3e-5;
//! chi-square tails below 1e-3, 1.06e-3 and 0.94e-3. [`FALSE_FAILURE_BUDGET`] leaves each
//! extrapolated tail room to be twice its nominal rate, and is still a tenth of the 1e-4 the
//! gateway can afford.
//!
//! What fails, for scale: 1 MiB from a source whose bits are one with probability 0.51 has a
//! chi-square of 3521 (p-value below 1e-300), a pi estimate 15 standard errors low and 48 of
//! 419 FIPS blocks failed (the bound is 6); all zeros, a constant byte, a counting sequence, a
//! short repeating pattern and a replayed 4 KiB buffer fail too (the integration tests).
//!
//! The entropies are not judged: see [`crate::entropy`]. Nor is the mean, which the chi-square
//! test covers.

use std::fmt;

use crate::chi_square::ChiSquare;
use crate::fips140_2::Fips140_2;
use crate::pi::MonteCarloPi;
use crate::serial::SerialCorrelation;

/// Standard errors by which the Monte Carlo estimate may miss π.
pub const PI_MAX_STANDARD_ERRORS: f64 = 5.0;

/// Standard errors (1/√N each) by which the serial correlation may differ from 0.
pub const SERIAL_MAX_STANDARD_ERRORS: f64 = 5.0;

/// The smallest chi-square tail probability, upper or lower, that passes.
pub const CHI_SQUARE_MIN_TAIL: f64 = 1e-6;

/// The per-block probability that a block of uniformly random data fails at least one of the
/// four FIPS 140-2 tests, rounded up. Computed: monobit 1.035e-4 (the binomial tails beyond
/// 9725 and 10275), long run 2.976e-4 (a Markov chain over the current run length), poker about
/// 9.9e-5 (the χ²(15) tails beyond 2.16 and 46.17). Measured over 2²⁰ blocks of OS random data
/// (`tests/it/false_failures.rs`), three times: 8.40e-4, 7.99e-4 and 7.94e-4 for any test
/// (monobit about 1.1e-4, poker 1.0e-4 to 1.15e-4, runs 2.7e-4 to 3.3e-4, long run 2.8e-4 to
/// 3.1e-4); 1e-3 is above each by more than five standard errors. Erring high only makes the
/// bound looser, never the false-failure rate higher.
pub const FIPS_BLOCK_FAILURE_RATE: f64 = 1e-3;

/// The largest probability with which uniformly random data may exceed the failed-block bound.
pub const FIPS_MAX_TAIL: f64 = 1e-6;

/// An upper bound on the probability that uniformly random data fails a call: twice the sum of
/// the checks' nominal false-failure probabilities (4.1e-6), rounded up.
pub const FALSE_FAILURE_BUDGET: f64 = 1e-5;
// The gateway's requirement, 1e-4 per call, with a wide margin.
const _: () = assert!(FALSE_FAILURE_BUDGET <= 1e-4 / 10.0);

/// Which check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// The Monte Carlo estimate of pi is too far from π.
    MonteCarloPi,
    /// The byte values are spread too unevenly (chi-square upper tail).
    ChiSquareUneven,
    /// The byte values are spread too evenly to be chance (chi-square lower tail).
    ChiSquareTooEven,
    /// Successive bytes are correlated, or every byte is the same.
    SerialCorrelation,
    /// More FIPS 140-2 blocks failed than random data would fail.
    Fips140_2,
}

/// One failed check and a sentence naming the statistic, its value and the bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The check.
    pub check: Check,
    /// For people: the statistic, its value, the bound it crossed.
    pub reason: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// The verdict on one sample: it passes when no check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Every failed check, in the order pi, chi-square, serial correlation, FIPS 140-2.
    pub failures: Vec<Failure>,
}

impl Verdict {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// Whether `check` is among the failures.
    pub fn failed(&self, check: Check) -> bool {
        self.failures.iter().any(|failure| failure.check == check)
    }

    /// Judges the statistics of one sample.
    pub fn of(
        pi: &MonteCarloPi,
        chi_square: &ChiSquare,
        serial: &SerialCorrelation,
        fips: &Fips140_2,
    ) -> Self {
        let mut failures = Vec::new();
        let mut fail = |check, reason| failures.push(Failure { check, reason });

        let pi_bound = PI_MAX_STANDARD_ERRORS * pi.standard_error;
        if !at_most(pi.error, pi_bound) {
            fail(
                Check::MonteCarloPi,
                format!(
                    "Monte Carlo pi estimate {:.6} is {:.6} from π ({:.2}%), more than \
                     {PI_MAX_STANDARD_ERRORS} standard errors ({pi_bound:.6}) for {} points",
                    pi.estimate, pi.error, pi.error_percent, pi.points
                ),
            );
        }

        if !at_least(chi_square.p_value, CHI_SQUARE_MIN_TAIL) {
            fail(
                Check::ChiSquareUneven,
                format!(
                    "chi-square {:.2} ({} degrees of freedom) has p-value {:.3e}, below \
                     {CHI_SQUARE_MIN_TAIL:e}: byte values are spread too unevenly",
                    chi_square.statistic, chi_square.degrees_of_freedom, chi_square.p_value
                ),
            );
        }
        if !at_least(chi_square.lower_tail, CHI_SQUARE_MIN_TAIL) {
            fail(
                Check::ChiSquareTooEven,
                format!(
                    "chi-square {:.2} ({} degrees of freedom) has lower-tail probability \
                     {:.3e}, below {CHI_SQUARE_MIN_TAIL:e}: byte values are spread too evenly \
                     to be random",
                    chi_square.statistic, chi_square.degrees_of_freedom, chi_square.lower_tail
                ),
            );
        }

        let serial_bound = SERIAL_MAX_STANDARD_ERRORS * serial.standard_error();
        match serial.coefficient {
            None => fail(
                Check::SerialCorrelation,
                format!("serial correlation is undefined: all {} bytes are equal", serial.bytes),
            ),
            Some(r) if !at_most(r.abs(), serial_bound) => fail(
                Check::SerialCorrelation,
                format!(
                    "serial correlation {r:.6} is beyond ±{serial_bound:.6} \
                     ({SERIAL_MAX_STANDARD_ERRORS}/√N for N = {} bytes)",
                    serial.bytes
                ),
            ),
            Some(_) => {}
        }

        let max_failed = fips_max_failed_blocks(fips.blocks);
        if fips.blocks_failed > max_failed {
            fail(
                Check::Fips140_2,
                format!(
                    "FIPS 140-2: {} of {} blocks failed (monobit {}, poker {}, runs {}, long run \
                     {}), more than the {max_failed} that random data exceeds with probability \
                     {FIPS_MAX_TAIL:e}",
                    fips.blocks_failed,
                    fips.blocks,
                    fips.monobit_failures,
                    fips.poker_failures,
                    fips.runs_failures,
                    fips.long_run_failures
                ),
            );
        }

        Self { failures }
    }
}

/// The bounds the verdict applied to statistics of this size, one line each, in the order of
/// the checks: what a caller reads to see how close a passing sample came.
pub fn thresholds(pi: &MonteCarloPi, serial: &SerialCorrelation, fips: &Fips140_2) -> Vec<String> {
    vec![
        format!(
            "Monte Carlo pi: |estimate - π| <= {PI_MAX_STANDARD_ERRORS} standard errors \
             ({:.6} for {} points)",
            PI_MAX_STANDARD_ERRORS * pi.standard_error,
            pi.points
        ),
        format!("chi-square: p-value >= {CHI_SQUARE_MIN_TAIL:e} (values spread too unevenly)"),
        format!(
            "chi-square: lower-tail probability >= {CHI_SQUARE_MIN_TAIL:e} (values spread too \
             evenly)"
        ),
        format!(
            "serial correlation: |r| <= {SERIAL_MAX_STANDARD_ERRORS}/√N ({:.6} for N = {} bytes)",
            SERIAL_MAX_STANDARD_ERRORS * serial.standard_error(),
            serial.bytes
        ),
        format!(
            "FIPS 140-2: at most {} of {} blocks failed (monobit, poker, runs, long run)",
            fips_max_failed_blocks(fips.blocks),
            fips.blocks
        ),
    ]
}

/// Whether `value ≤ bound`. A NaN is not, so a statistic that could not be computed fails.
fn at_most(value: f64, bound: f64) -> bool {
    value <= bound
}

/// Whether `value ≥ bound`. A NaN is not.
fn at_least(value: f64, bound: f64) -> bool {
    value >= bound
}

/// The most failed blocks, out of `blocks`, that pass: the smallest m with
/// `P(Binomial(blocks, FIPS_BLOCK_FAILURE_RATE) > m) ≤ FIPS_MAX_TAIL`.
///
/// With one or two blocks the check cannot fail (one block fails with probability 1e-3, two
/// with 1e-6, on the bound), and small samples rest on the other checks. Examples: 1 block → 1,
/// 2 → 2, 3 to 10 → 2, 26 blocks (64 KiB) → 3, 419 (1 MiB) → 6, 6710 (16 MiB) → 22.
pub fn fips_max_failed_blocks(blocks: u64) -> u64 {
    let p = FIPS_BLOCK_FAILURE_RATE;
    let n = blocks as f64;
    // ln P(X = k), from P(X = 0) = (1 − p)ⁿ up by the ratio
    // P(X = k + 1) / P(X = k) = (n − k)/(k + 1) · p/(1 − p): logarithms, so that no term
    // underflows for any n. Past the mean, the terms shrink geometrically; those beyond one
    // below 1e-30 add nothing that matters next to FIPS_MAX_TAIL.
    let negligible = 1e-30f64.ln();
    let log_odds = (p / (1.0 - p)).ln();
    let mut log_probabilities = vec![n * (-p).ln_1p()];
    for k in 0..blocks {
        let last = log_probabilities[log_probabilities.len() - 1];
        if k as f64 > n * p && last < negligible {
            break;
        }
        log_probabilities.push(last + ((n - k as f64) / (k as f64 + 1.0)).ln() + log_odds);
    }
    // Walk down from the top, summing the tail P(X > m) from its small end: no `1 − P(X ≤ m)`
    // whose rounding would swamp a tail of 1e-6.
    let mut m = log_probabilities.len() - 1;
    let mut tail = 0.0;
    while m > 0 {
        let tail_below = tail + log_probabilities[m].exp();
        if tail_below > FIPS_MAX_TAIL {
            break;
        }
        tail = tail_below;
        m -= 1;
    }
    m as u64
}

#[cfg(test)]
mod tests {
    use statrs::function::erf::erfc;

    use super::*;

    #[test]
    fn thresholds_state_each_bound_for_the_sample_size() {
        let sample: Vec<u8> =
            (0..26 * 2500u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let (pi, serial, fips) =
            (MonteCarloPi::of(&sample), SerialCorrelation::of(&sample), Fips140_2::of(&sample));
        let lines = thresholds(&pi, &serial, &fips);
        assert_eq!(lines.len(), 5);
        assert!(lines[0].contains(&format!("for {} points", pi.points)), "{}", lines[0]);
        assert!(lines[3].contains("N = 65000 bytes"), "{}", lines[3]);
        assert!(lines[4].starts_with("FIPS 140-2: at most 3 of 26 blocks"), "{}", lines[4]);
    }

    #[test]
    fn the_checks_fit_the_budget() {
        // Two-sided normal tail at k standard errors: erfc(k/√2).
        let two_sided = |k: f64| erfc(k / std::f64::consts::SQRT_2);
        let total = two_sided(PI_MAX_STANDARD_ERRORS)
            + two_sided(SERIAL_MAX_STANDARD_ERRORS)
            + 2.0 * CHI_SQUARE_MIN_TAIL
            + FIPS_MAX_TAIL;
        assert!((total - 4.1e-6).abs() < 0.05e-6, "{total}");
        assert!(2.0 * total <= FALSE_FAILURE_BUDGET, "{total}");
    }

    /// P(Binomial(n, p) > m), summed from the top for an independent check.
    fn upper_tail(n: u64, p: f64, m: u64) -> f64 {
        let ln_choose =
            |k: u64| -> f64 { (0..k).map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln()).sum() };
        (m + 1..=n.min(m + 200))
            .map(|k| (ln_choose(k) + k as f64 * p.ln() + (n - k) as f64 * (-p).ln_1p()).exp())
            .sum()
    }

    #[test]
    fn fips_bound_is_the_smallest_with_a_small_enough_tail() {
        for blocks in [1, 2, 26, 419, 1000, 6710, 100_000] {
            let m = fips_max_failed_blocks(blocks);
            assert!(upper_tail(blocks, FIPS_BLOCK_FAILURE_RATE, m) <= FIPS_MAX_TAIL, "{blocks}");
            if m > 0 && m < blocks {
                assert!(upper_tail(blocks, FIPS_BLOCK_FAILURE_RATE, m - 1) > FIPS_MAX_TAIL);
            }
        }
        assert_eq!(fips_max_failed_blocks(1), 1);
        // The examples in the function's documentation.
        let examples = [2, 3, 10, 26, 419, 6710].map(fips_max_failed_blocks);
        assert_eq!(examples, [2, 2, 2, 3, 6, 22]);
    }
}
