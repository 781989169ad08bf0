//! The statistics `ent` also computes, against what `ent` printed for the same file.
//!
//! The file is `data/ent_sample.bin`, 64 KiB from `data/make_fixtures.py`. Run once by hand with
//! Debian's `ent` 1.2debian-3:
//!
//! ```text
//! $ ent quality/tests/data/ent_sample.bin
//! Entropy = 7.997042 bits per byte.
//!
//! Optimum compression would reduce the size
//! of this 65536 byte file by 0 percent.
//!
//! Chi square distribution for 65536 samples is 269.12, and randomly
//! would exceed this value 26.00 percent of the times.
//!
//! Arithmetic mean value of data bytes is 127.4060 (127.5 = random).
//! Monte Carlo value for Pi is 3.154367332 (error 0.41 percent).
//! Serial correlation coefficient is -0.006184 (totally uncorrelated = 0.0).
//!
//! $ ent -t quality/tests/data/ent_sample.bin
//! 0,File-bytes,Entropy,Chi-square,Mean,Monte-Carlo-Pi,Serial-Correlation
//! 1,65536,7.997042,269.117188,127.405960,3.154367,-0.006184
//! ```
//!
//! Each value is compared at the precision `ent` printed it (the terse line has more digits for
//! the chi-square statistic and the mean), as the same `printf`-style rounding of our number.

use entropy_quality::analyze;

const SAMPLE: &[u8] = include_bytes!("../data/ent_sample.bin");

#[test]
fn matches_what_ent_printed() {
    let report = analyze(SAMPLE).unwrap();
    assert_eq!(report.bytes, 65_536);
    assert_eq!(format!("{:.6}", report.shannon_entropy), "7.997042");
    assert_eq!(format!("{:.6}", report.chi_square.statistic), "269.117188");
    assert_eq!(format!("{:.6}", report.mean), "127.405960");
    assert_eq!(format!("{:.9}", report.pi.estimate), "3.154367332");
    assert_eq!(format!("{:.2}", report.pi.error_percent), "0.41");
    let serial = report.serial_correlation.coefficient.unwrap();
    assert_eq!(format!("{serial:.6}"), "-0.006184");
}

/// `ent`'s percentage comes from its own chi-square approximation (`pochisq`, after Perlman);
/// ours from the regularized gamma function. They agree to the two decimals it prints.
#[test]
fn chi_square_p_value_matches_ents_percentage() {
    let report = analyze(SAMPLE).unwrap();
    assert_eq!(format!("{:.2}", 100.0 * report.chi_square.p_value), "26.00");
}
