//! Properties over arbitrary samples of at least the minimum size: the statistics stay in
//! their ranges, the counts add up, and nothing panics, whatever the bytes.

use entropy_quality::fips140_2::{BLOCK_BYTES, BlockStats};
use entropy_quality::{MIN_SAMPLE_BYTES, analyze};
use proptest::prelude::*;

/// Arbitrary bytes, or bytes from a small alphabet, or a short pattern repeated: the low-entropy
/// corners (constant data, undefined correlation, chi-square 0) are where ranges break.
fn sample() -> impl Strategy<Value = Vec<u8>> {
    let len = MIN_SAMPLE_BYTES..4 * BLOCK_BYTES + 7;
    prop_oneof![
        prop::collection::vec(any::<u8>(), len.clone()),
        (prop::collection::vec(any::<u8>(), 1..4), len.clone()).prop_flat_map(|(alphabet, len)| {
            prop::collection::vec(prop::sample::select(alphabet), len)
        }),
        (prop::collection::vec(any::<u8>(), 1..40), len).prop_map(|(pattern, len)| pattern
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn statistics_stay_in_range(sample in sample()) {
        let report = analyze(&sample).unwrap();
        prop_assert!((0.0..=8.0).contains(&report.shannon_entropy), "{}", report.shannon_entropy);
        let min = report.min_entropy;
        prop_assert!((0.0..=8.0).contains(&min.bits_per_byte), "{min:?}");
        let shannon = report.shannon_entropy;
        prop_assert!(min.bits_per_byte <= shannon + 1e-9, "{min:?} {shannon}");
        prop_assert!(min.p_hat <= min.p_upper && min.p_upper <= 1.0, "{min:?}");
        let chi = report.chi_square;
        prop_assert!((0.0..=1.0).contains(&chi.p_value), "{chi:?}");
        prop_assert!((0.0..=1.0).contains(&chi.lower_tail), "{chi:?}");
        prop_assert!(chi.statistic >= 0.0, "{chi:?}");
        prop_assert!((0.0..=255.0).contains(&report.mean));
        if let Some(r) = report.serial_correlation.coefficient {
            prop_assert!((-1.0 - 1e-12..=1.0 + 1e-12).contains(&r), "{r}");
        }
        let pi = report.pi;
        prop_assert_eq!(pi.points, (sample.len() / 6) as u64);
        prop_assert!(pi.inside <= pi.points);
        prop_assert!((0.0..=4.0).contains(&pi.estimate));
        prop_assert_eq!(report.verdict.passed(), report.verdict.failures.is_empty());
    }

    #[test]
    fn fips_counts_add_up(sample in sample()) {
        let fips = analyze(&sample).unwrap().fips140_2;
        prop_assert_eq!(fips.blocks, (sample.len() / BLOCK_BYTES) as u64);
        let per_test = [
            fips.monobit_failures,
            fips.poker_failures,
            fips.runs_failures,
            fips.long_run_failures,
        ];
        prop_assert!(per_test.iter().all(|&n| n <= fips.blocks_failed), "{fips:?}");
        prop_assert!(fips.blocks_failed <= per_test.iter().sum::<u64>(), "{fips:?}");
        prop_assert!(fips.blocks_failed <= fips.blocks);

        // Block by block: the failures add up to the summary, and within a block the ones are
        // the ones of the runs of ones, whose lengths (1 to 5, then 6 or more) bound them.
        let (blocks, _) = sample.as_chunks::<BLOCK_BYTES>();
        let mut failed = 0;
        for block in blocks {
            let stats = BlockStats::of(block);
            failed += u64::from(stats.outcome().failed());
            let [zeros, ones] = stats.runs;
            let short_ones: u32 = ones[..5].iter().zip(1..).map(|(n, len)| n * len).sum();
            prop_assert!(short_ones + 6 * ones[5] <= stats.ones, "{stats:?}");
            let short_zeros: u32 = zeros[..5].iter().zip(1..).map(|(n, len)| n * len).sum();
            prop_assert!(short_zeros + 6 * zeros[5] <= 20_000 - stats.ones, "{stats:?}");
            // Runs of zeros and of ones alternate.
            let (zero_runs, one_runs) = (zeros.iter().sum::<u32>(), ones.iter().sum::<u32>());
            prop_assert!(zero_runs.abs_diff(one_runs) <= 1, "{stats:?}");
        }
        prop_assert_eq!(failed, fips.blocks_failed);
    }
}
