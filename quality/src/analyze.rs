//! The analysis of one sample: a single pass over its bytes, and the [`Report`] it yields.
//!
//! The sample is read once, in pieces of 15,000 bytes; each piece is small enough to stay in
//! the L1 data cache while the byte counts, the serial-correlation pairs, the pi points and the
//! FIPS blocks take their turn at it. A piece holds whole pi groups and whole FIPS blocks, so
//! neither carries a partial group from one piece to the next (they could: each accepts pieces
//! of any length). No work is per bit and nothing is allocated per byte.

use thiserror::Error;

use crate::chi_square::ChiSquare;
use crate::counts::ByteCounts;
use crate::entropy::{MinEntropy, shannon_bits_per_byte};
use crate::fips140_2::{BLOCK_BYTES, Fips140_2, FipsBlocks};
use crate::pi::{GROUP_BYTES, MonteCarloPi, PiPoints};
use crate::serial::{SerialCorrelation, SerialPairs};
use crate::verdict::Verdict;

/// The smallest sample analyzed: one FIPS 140-2 block of 20,000 bits. Below it no FIPS test
/// runs, and the other statistics have too little data for their bounds to mean much.
pub const MIN_SAMPLE_BYTES: usize = BLOCK_BYTES;

/// Bytes read per piece of the single pass: 15,000, six FIPS blocks and 2,500 pi groups.
const PIECE_BYTES: usize = 6 * BLOCK_BYTES;
const _: () =
    assert!(PIECE_BYTES.is_multiple_of(GROUP_BYTES) && PIECE_BYTES.is_multiple_of(BLOCK_BYTES));

/// A sample shorter than [`MIN_SAMPLE_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error(
    "a sample of {bytes} bytes is too small: the quality check needs at least {min_bytes} bytes \
     (one FIPS 140-2 block of 20,000 bits)"
)]
pub struct TooSmall {
    /// The sample's length.
    pub bytes: usize,
    /// [`MIN_SAMPLE_BYTES`].
    pub min_bytes: usize,
}

/// Everything measured on one sample, and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The sample's length.
    pub bytes: u64,
    /// The arithmetic mean of the bytes (127.5 for random data).
    pub mean: f64,
    /// Shannon entropy of the byte frequencies, in bits per byte (at most 8).
    pub shannon_entropy: f64,
    /// The SP 800-90B most-common-value min-entropy estimate.
    pub min_entropy: MinEntropy,
    /// The chi-square test over the 256 byte values.
    pub chi_square: ChiSquare,
    /// The Monte Carlo estimate of pi.
    pub pi: MonteCarloPi,
    /// The serial correlation of successive bytes.
    pub serial_correlation: SerialCorrelation,
    /// The FIPS 140-2 tests over the sample's whole 20,000-bit blocks.
    pub fips140_2: Fips140_2,
    /// Pass or fail, with the reasons.
    pub verdict: Verdict,
}

/// Measures `sample` and judges it.
pub fn analyze(sample: &[u8]) -> Result<Report, TooSmall> {
    check_size(sample)?;
    let mut counts = ByteCounts::default();
    let mut pairs = SerialPairs::default();
    let mut points = PiPoints::default();
    let mut blocks = FipsBlocks::default();
    for piece in sample.chunks(PIECE_BYTES) {
        counts.add(piece);
        pairs.add(piece);
        points.add(piece);
        blocks.add(piece);
    }

    let chi_square = ChiSquare::of(&counts);
    let pi = points.finish();
    let serial_correlation = pairs.finish(&counts);
    let fips140_2 = blocks.summary;
    let verdict = Verdict::of(&pi, &chi_square, &serial_correlation, &fips140_2);
    Ok(Report {
        bytes: counts.total(),
        mean: counts.mean(),
        shannon_entropy: shannon_bits_per_byte(&counts),
        min_entropy: MinEntropy::of(&counts),
        chi_square,
        pi,
        serial_correlation,
        fips140_2,
        verdict,
    })
}

/// The Monte Carlo pi test alone, on a reference sample: the gateway runs it on as many bytes
/// of the OS generator as it analyzed of the source, so that the two estimates and their
/// errors can be read side by side. The same minimum size applies, so the two are comparable.
pub fn reference_pi(reference: &[u8]) -> Result<MonteCarloPi, TooSmall> {
    check_size(reference)?;
    Ok(MonteCarloPi::of(reference))
}

fn check_size(sample: &[u8]) -> Result<(), TooSmall> {
    if sample.len() < MIN_SAMPLE_BYTES {
        return Err(TooSmall { bytes: sample.len(), min_bytes: MIN_SAMPLE_BYTES });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_small_names_the_minimum() {
        let error = analyze(&[0; MIN_SAMPLE_BYTES - 1]).unwrap_err();
        assert_eq!(error, TooSmall { bytes: 2499, min_bytes: 2500 });
        assert!(error.to_string().contains("at least 2500 bytes"), "{error}");
        assert_eq!(reference_pi(&[]).unwrap_err().bytes, 0);
        assert!(analyze(&[0; MIN_SAMPLE_BYTES]).is_ok());
    }

    #[test]
    fn the_pass_agrees_with_each_statistic_computed_alone() {
        // Pieces end mid-way through a FIPS block and a pi group: 40,003 bytes.
        let sample: Vec<u8> =
            (0u64..40_003).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8).collect();
        let report = analyze(&sample).unwrap();
        assert_eq!(report.pi, MonteCarloPi::of(&sample));
        assert_eq!(report.serial_correlation, SerialCorrelation::of(&sample));
        assert_eq!(report.fips140_2, Fips140_2::of(&sample));
        assert_eq!(report.fips140_2.blocks, 16);
        assert_eq!(report.chi_square, ChiSquare::of(&ByteCounts::of(&sample)));
        assert_eq!(report.bytes, 40_003);
    }
}
