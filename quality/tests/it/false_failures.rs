//! How often uniformly random data fails the FIPS 140-2 block tests: the per-block rate the
//! verdict's failed-block bound rests on (`FIPS_BLOCK_FAILURE_RATE`).
//!
//! Ignored by default: it draws 2.5 GiB of OS random data. Run it in release mode:
//!
//!     nice -n 19 cargo test --release -p entropy-quality --test tests -- --ignored --nocapture fips_block_failure_rate
//!
//! Its output is quoted in quality/README.md.

use entropy_quality::Fips140_2;
use entropy_quality::fips140_2::BLOCK_BYTES;
use entropy_quality::verdict::FIPS_BLOCK_FAILURE_RATE;

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
