//! How often uniformly random data crosses the verdict's bounds: the FIPS 140-2 per-block rate
//! the failed-block bound rests on (`FIPS_BLOCK_FAILURE_RATE`), and, at the minimum sample
//! size where the normal and chi-square approximations are weakest, the tails of the other
//! statistics at bounds loose enough for their rates to be measured.
//!
//! Ignored by default: they draw 2.5 GiB and 1 GiB of OS random data. Run them in release mode:
//!
//!     nice -n 19 cargo test --release -p entropy-quality --test tests -- --ignored --nocapture
//!
//! Their output is quoted in quality/src/verdict.rs and quality/README.md.

use entropy_quality::fips140_2::BLOCK_BYTES;
use entropy_quality::verdict::FIPS_BLOCK_FAILURE_RATE;
use entropy_quality::{Fips140_2, MIN_SAMPLE_BYTES, analyze};

use super::sources::os_random;

/// Blocks drawn: enough that the rates below are known to a few percent.
const BLOCKS: u64 = 1 << 20;

/// The exact per-block rates of the two tests that have one (see `verdict.rs`).
const MONOBIT_RATE: f64 = 1.035e-4;
const LONG_RUN_RATE: f64 = 2.976e-4;

#[test]
#[ignore = "2.5 GiB of OS random data; run in release mode"]
fn fips_block_failure_rate() {
    const BLOCKS_PER_DRAW: u64 = 4096;
    let mut total = Fips140_2::default();
    for _ in 0..BLOCKS / BLOCKS_PER_DRAW {
        let part = Fips140_2::of(&os_random(BLOCKS_PER_DRAW as usize * BLOCK_BYTES));
        total.blocks += part.blocks;
        total.monobit_failures += part.monobit_failures;
        total.poker_failures += part.poker_failures;
        total.runs_failures += part.runs_failures;
        total.long_run_failures += part.long_run_failures;
        total.blocks_failed += part.blocks_failed;
    }
    let rate = |failures: u64| failures as f64 / total.blocks as f64;
    println!(
        "{} blocks: any test {:.3e}, monobit {:.3e}, poker {:.3e}, runs {:.3e}, long run {:.3e}",
        total.blocks,
        rate(total.blocks_failed),
        rate(total.monobit_failures),
        rate(total.poker_failures),
        rate(total.runs_failures),
        rate(total.long_run_failures),
    );
    // Each count is binomial; 5 standard deviations of slack for the checks against theory.
    let within = |failures: u64, expected: f64| {
        let mean = expected * total.blocks as f64;
        (failures as f64 - mean).abs() <= 5.0 * mean.sqrt()
    };
    assert!(within(total.monobit_failures, MONOBIT_RATE), "{total:?}");
    assert!(within(total.long_run_failures, LONG_RUN_RATE), "{total:?}");
    let upper =
        rate(total.blocks_failed) + 5.0 * (rate(total.blocks_failed) / total.blocks as f64).sqrt();
    assert!(upper <= FIPS_BLOCK_FAILURE_RATE, "{total:?}: the constant is too small");
}

/// Samples of the minimum size drawn.
const SAMPLES: u64 = 400_000;

#[test]
#[ignore = "1 GiB of OS random data; run in release mode"]
fn tails_at_the_minimum_size() {
    let (mut pi_3, mut pi_4, mut serial_3, mut serial_4, mut uneven, mut even) = (0, 0, 0, 0, 0, 0);
    const SAMPLES_PER_DRAW: u64 = 4000;
    for _ in 0..SAMPLES / SAMPLES_PER_DRAW {
        let bytes = os_random(SAMPLES_PER_DRAW as usize * MIN_SAMPLE_BYTES);
        for sample in bytes.chunks(MIN_SAMPLE_BYTES) {
            let report = analyze(sample).unwrap();
            let pi = report.pi.standard_errors_off();
            let serial = &report.serial_correlation;
            let serial = serial.coefficient.unwrap().abs() / serial.standard_error();
            pi_3 += u64::from(pi > 3.0);
            pi_4 += u64::from(pi > 4.0);
            serial_3 += u64::from(serial > 3.0);
            serial_4 += u64::from(serial > 4.0);
            uneven += u64::from(report.chi_square.p_value < 1e-3);
            even += u64::from(report.chi_square.lower_tail < 1e-3);
        }
    }
    let rate = |n: u64| n as f64 / SAMPLES as f64;
    println!(
        "{SAMPLES} samples of {MIN_SAMPLE_BYTES} bytes: pi beyond 3 standard errors {:.2e}, \
         beyond 4 {:.2e}; serial correlation beyond 3 {:.2e}, beyond 4 {:.2e}; chi-square \
         upper tail below 1e-3 {:.2e}, lower tail below 1e-3 {:.2e} (normal: 2.70e-3, 6.33e-5)",
        rate(pi_3),
        rate(pi_4),
        rate(serial_3),
        rate(serial_4),
        rate(uneven),
        rate(even),
    );
    // Each count against its nominal rate, with 5 standard deviations of slack.
    let near = |count: u64, nominal: f64| {
        let mean = nominal * SAMPLES as f64;
        (count as f64 - mean).abs() <= 5.0 * mean.sqrt()
    };
    assert!(near(pi_3, 2.70e-3) && near(serial_3, 2.70e-3));
    assert!(near(uneven, 1e-3) && near(even, 1e-3));
}
