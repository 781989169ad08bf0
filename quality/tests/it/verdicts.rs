//! Verdicts on whole samples: OS random data passes; broken sources fail, each for the reasons
//! its flaw predicts.
//!
//! The OS random tests draw fresh bytes each run, so they could fail by chance, with
//! probability below `FALSE_FAILURE_BUDGET` (1e-5) per sample; a failure prints the report.

use std::collections::BTreeSet;

use entropy_quality::verdict::{Check, fips_max_failed_blocks};
use entropy_quality::{MIN_SAMPLE_BYTES, Report, TooSmall, analyze, reference_pi};

use super::sources::{SplitMix64, biased, os_random, repeated};

const KIB_64: usize = 64 << 10;
const MIB: usize = 1 << 20;

fn failed_checks(report: &Report) -> BTreeSet<String> {
    report.verdict.failures.iter().map(|failure| format!("{:?}", failure.check)).collect()
}

fn checks(list: &[Check]) -> BTreeSet<String> {
    list.iter().map(|check| format!("{check:?}")).collect()
}

/// The sentence given for `check`.
fn reason(report: &Report, check: Check) -> &str {
    let failure = report.verdict.failures.iter().find(|failure| failure.check == check);
    &failure.unwrap_or_else(|| panic!("{check:?} did not fail: {report:#?}")).reason
}

#[test]
fn os_random_data_passes() {
    for len in [MIN_SAMPLE_BYTES, KIB_64, MIB] {
        let report = analyze(&os_random(len)).unwrap();
        assert!(report.verdict.passed(), "{len} bytes: {report:#?}");
        assert!(report.shannon_entropy > 7.9 || len < KIB_64, "{report:#?}");
    }
}

#[test]
fn reference_pi_of_os_random_data_is_within_its_bound() {
    let pi = reference_pi(&os_random(MIB)).unwrap();
    assert_eq!(pi.points, (MIB / 6) as u64);
    assert!(pi.standard_errors_off() < 5.0, "{pi:?}");
    assert_eq!(reference_pi(&[0; 100]), Err(TooSmall { bytes: 100, min_bytes: MIN_SAMPLE_BYTES }));
}

#[test]
fn a_too_small_sample_is_refused_naming_the_minimum() {
    let error = analyze(&os_random(MIN_SAMPLE_BYTES - 1)).unwrap_err();
    assert_eq!(error.min_bytes, 2500);
    assert_eq!(
        error.to_string(),
        "a sample of 2499 bytes is too small: the quality check needs at least 2500 bytes (one \
         FIPS 140-2 block of 20,000 bits)"
    );
}

#[test]
fn all_zeros_fail() {
    let report = analyze(&[0; KIB_64]).unwrap();
    // Every point is (0, 0), inside: pi = 4. One value only: chi-square enormous, serial
    // correlation undefined. Every block fails every FIPS test.
    assert_eq!(
        failed_checks(&report),
        checks(&[
            Check::MonteCarloPi,
            Check::ChiSquareUneven,
            Check::SerialCorrelation,
            Check::Fips140_2
        ])
    );
    assert!(
        reason(&report, Check::MonteCarloPi)
            .starts_with("Monte Carlo pi estimate 4.000000 is 0.858407 from π (27.32%)")
    );
    assert!(
        reason(&report, Check::ChiSquareUneven)
            .starts_with("chi-square 16711680.00 (255 degrees of freedom) has p-value 0.000e0")
    );
    assert_eq!(
        reason(&report, Check::SerialCorrelation),
        "serial correlation is undefined: all 65536 bytes are equal"
    );
    assert_eq!(
        reason(&report, Check::Fips140_2),
        format!(
            "FIPS 140-2: 26 of 26 blocks failed (monobit 26, poker 26, runs 26, long run 26), more \
             than the {} that random data exceeds with probability 1e-6",
            fips_max_failed_blocks(26)
        )
    );
}

#[test]
fn a_stuck_byte_fails() {
    let report = analyze(&[0xa5; KIB_64]).unwrap();
    // As all zeros, except that 0xa5 has four ones: the monobit test passes and the long-run
    // test too (0xa5a5 has no run longer than 2). (0xa5a5a5, 0xa5a5a5) is inside the circle.
    assert_eq!(
        failed_checks(&report),
        checks(&[
            Check::MonteCarloPi,
            Check::ChiSquareUneven,
            Check::SerialCorrelation,
            Check::Fips140_2
        ])
    );
    assert_eq!(report.pi.estimate, 4.0);
    let fips = report.fips140_2;
    assert_eq!((fips.monobit_failures, fips.poker_failures, fips.long_run_failures), (0, 26, 0));
    assert!(
        reason(&report, Check::Fips140_2)
            .contains("26 of 26 blocks failed (monobit 0, poker 26, runs 26, long run 0)")
    );
}

#[test]
fn a_counting_sequence_fails() {
    let report = analyze(&repeated(&(0..=255).collect::<Vec<u8>>(), KIB_64)).unwrap();
    // Every value exactly 256 times: chi-square 0, too even. Each byte predicts the next:
    // serial correlation near 1. The two coordinates of a point are nearly equal, so points lie
    // on the diagonal and about 71% of them are inside: pi near 2.8. Within a block the 16
    // nibble values are almost equally frequent: poker X below 2.16 in most blocks (18 of 26:
    // in the others, the 196 bytes of a block beyond its 9 whole cycles tip it over).
    assert_eq!(
        failed_checks(&report),
        checks(&[
            Check::MonteCarloPi,
            Check::ChiSquareTooEven,
            Check::SerialCorrelation,
            Check::Fips140_2
        ])
    );
    assert!(reason(&report, Check::ChiSquareTooEven).starts_with(
        "chi-square 0.00 (255 degrees of freedom) has lower-tail probability 0.000e0, below 1e-6"
    ));
    assert!(report.serial_correlation.coefficient.unwrap() > 0.95);
    assert!((report.pi.estimate - 2.83).abs() < 0.05, "{:?}", report.pi);
    let fips = report.fips140_2;
    assert!(fips.poker_failures > fips.blocks / 2, "{fips:?}");
}

#[test]
fn a_one_percent_bit_bias_fails_at_one_mebibyte() {
    let report = analyze(&biased(51, MIB, 0.51)).unwrap();
    // Bytes with more ones are more frequent (0xff 1.02⁸ ≈ 1.17 times as often as it should):
    // chi-square 3521. Each 20,000-bit block expects 10,200 ones, about one standard deviation
    // from the monobit bound: 48 of the 419 blocks fail (the bound is 6). Coordinates lean to
    // the high end of the square, so fewer points fall inside: pi 3.082, 15 standard errors
    // low. The bits are independent: the serial correlation stays near 0 and passes.
    assert_eq!(
        failed_checks(&report),
        checks(&[Check::MonteCarloPi, Check::ChiSquareUneven, Check::Fips140_2])
    );
    assert!(report.chi_square.p_value < 1e-100, "{:?}", report.chi_square);
    let fips = report.fips140_2;
    assert_eq!(fips.blocks, 419);
    assert_eq!((fips.blocks_failed, fips.monobit_failures), (48, 48), "{fips:?}");
    assert_eq!(fips_max_failed_blocks(419), 6);
}

#[test]
fn a_short_repeating_pattern_fails() {
    let pattern = SplitMix64::new(16).bytes(16);
    let report = analyze(&repeated(&pattern, KIB_64)).unwrap();
    // At most 16 values, each 4096 times or more: chi-square enormous. Eight distinct points:
    // the estimate is a multiple of 0.5. Each block repeats 128 bits: its nibble counts are
    // multiples of 156 or so, and poker fails.
    assert!(report.verdict.failed(Check::ChiSquareUneven), "{report:#?}");
    assert!(report.verdict.failed(Check::MonteCarloPi), "{report:#?}");
    assert!(report.verdict.failed(Check::Fips140_2), "{report:#?}");
    assert_eq!(report.pi.estimate * 2.0, (report.pi.estimate * 2.0).round());
}

#[test]
fn a_replayed_buffer_fails() {
    // A source stuck replaying its last 4 KiB of good output. Each block looks random (the
    // FIPS tests pass), but each value occurs 256 times as often as in 4 KiB: chi-square about
    // 256 · 255.
    let buffer = os_random(4096);
    let report = analyze(&repeated(&buffer, MIB)).unwrap();
    assert!(report.verdict.failed(Check::ChiSquareUneven), "{report:#?}");
    assert!(report.chi_square.statistic > 20_000.0, "{:?}", report.chi_square);
}
