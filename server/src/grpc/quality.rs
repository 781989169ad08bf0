//! CheckQuality's report: the `entropy-quality` analysis of a drawn sample, as the wire's
//! `CheckQualityResponse`, with the Monte Carlo pi test run on as many bytes of the OS CSPRNG
//! for comparison.

use entropy_proto::v1::{CheckQualityResponse, Fips1402, MonteCarloPi};
use entropy_quality::{analyze, reference_pi, thresholds};
use tonic::Status;

use super::errors;
use crate::domain::secret::SecretBytes;

/// Analyzes `sample` (at least `MIN_SAMPLE_BYTES`, checked at the edge) and reads as many
/// bytes of the OS CSPRNG for the reference pi. Blocking: a whole call costs ~7 ms of CPU per
/// MiB (bench/results/quality-cost.md).
/// The response's `provenance` is left for the caller to fill.
pub(crate) fn check(sample: &[u8]) -> Result<CheckQualityResponse, Status> {
    let report = analyze(sample).map_err(|e| errors::invalid_request(e.to_string()))?;
    let mut os = vec![0u8; sample.len()];
    getrandom::fill(&mut os).map_err(|e| errors::internal("CheckQuality's OS reference", &e))?;
    let os = SecretBytes::new(os);
    let reference =
        reference_pi(&os).map_err(|e| errors::internal("CheckQuality's reference pi", &e))?;
    let fips = &report.fips140_2;
    Ok(CheckQualityResponse {
        sample_bytes: report.bytes,
        provenance: None,
        shannon_entropy_bits_per_byte: report.shannon_entropy,
        min_entropy_bits_per_byte: report.min_entropy.bits_per_byte,
        chi_square: report.chi_square.statistic,
        chi_square_p_value: report.chi_square.p_value,
        mean: report.mean,
        serial_correlation: report.serial_correlation.coefficient,
        pi: Some(pi_to_pb(&report.pi)),
        pi_os_reference: Some(pi_to_pb(&reference)),
        fips140_2: Some(Fips1402 {
            blocks: fips.blocks,
            monobit_failures: fips.monobit_failures,
            poker_failures: fips.poker_failures,
            runs_failures: fips.runs_failures,
            long_run_failures: fips.long_run_failures,
            blocks_failed: fips.blocks_failed,
        }),
        passed: report.verdict.passed(),
        failures: report.verdict.failures.iter().map(ToString::to_string).collect(),
        thresholds: thresholds(&report.pi, &report.serial_correlation, fips),
    })
}

fn pi_to_pb(pi: &entropy_quality::MonteCarloPi) -> MonteCarloPi {
    MonteCarloPi {
        estimate: pi.estimate,
        error: pi.estimate - std::f64::consts::PI,
        standard_error: pi.standard_error,
        points: pi.points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_bytes_pass_and_a_biased_sample_fails_with_its_reasons() {
        let mut good = vec![0u8; 64 << 10];
        getrandom::fill(&mut good).expect("OS RNG");
        let report = check(&good).expect("analyzed");
        assert!(report.passed, "{:?}", report.failures);
        assert_eq!(report.sample_bytes, 64 << 10);
        let (pi, os) = (report.pi.expect("pi"), report.pi_os_reference.expect("reference"));
        assert_eq!(pi.points, os.points, "the reference uses as many bytes");
        assert!(os.error.abs() < 5.0 * os.standard_error, "{os:?}");
        assert_eq!(report.fips140_2.expect("fips").blocks, 26);
        assert_eq!(report.thresholds.len(), 5);

        // Every byte's top bit cleared: a source stuck at half its range.
        let biased: Vec<u8> = good.iter().map(|b| b & 0x7f).collect();
        let report = check(&biased).expect("analyzed");
        assert!(!report.passed);
        assert!(
            report.failures.iter().any(|f| f.starts_with("chi-square")),
            "{:?}",
            report.failures
        );
        assert!(
            report.failures.iter().any(|f| f.starts_with("FIPS 140-2")),
            "{:?}",
            report.failures
        );
        assert!((report.mean - 63.5).abs() < 1.0, "{}", report.mean);
    }
}
