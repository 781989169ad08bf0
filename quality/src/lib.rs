//! Statistics on a sample of random bytes, and a verdict on them: the domain logic behind the
//! gateway's quality check, which draws bytes it will never serve and reports how random they
//! look. Nothing here knows about gRPC; the gateway converts a [`Report`] into its reply.
//!
//! The statistics are the ones operators already know from `ent` (entropy, chi-square, mean,
//! Monte Carlo pi, serial correlation) and `rngtest` (the FIPS 140-2 block tests), plus NIST
//! SP 800-90B's most-common-value min-entropy estimate. They are computed as those tools compute
//! them, so their output can be set side by side with ours (the integration tests do).
//!
//! The verdict is sized to the sample: each bound is a number of standard errors, or a tail
//! probability, for the sample's own length, so that uniformly random data of any length fails
//! with probability below [`verdict::FALSE_FAILURE_BUDGET`] per call while a biased, stuck or
//! repeating source fails clearly.
//!
//! Layout:
//! - [`analyze()`](analyze()): the one pass over the sample and the [`Report`] it returns.
//! - [`counts`]: byte-value counts, from which the chi-square, entropies and mean derive.
//! - [`chi_square`]: the chi-square statistic over 256 byte values and its two tail
//!   probabilities.
//! - [`entropy`]: Shannon entropy and the SP 800-90B most-common-value min-entropy.
//! - [`pi`]: the Monte Carlo estimate of pi from 24-bit coordinate pairs.
//! - [`serial`]: the serial correlation coefficient of successive bytes.
//! - [`fips140_2`]: the FIPS 140-2 monobit, poker, runs and long-run tests per 20,000-bit block;
//!   its `runs` module counts the runs from a table, four bits at a time.
//! - [`verdict`]: the thresholds and the list of failed checks with their reasons.

pub mod analyze;
pub mod chi_square;
pub mod counts;
pub mod entropy;
pub mod fips140_2;
pub mod pi;
pub mod serial;
pub mod verdict;

pub use analyze::{MIN_SAMPLE_BYTES, Report, TooSmall, analyze, reference_pi};
pub use chi_square::ChiSquare;
pub use entropy::MinEntropy;
pub use fips140_2::Fips140_2;
pub use pi::MonteCarloPi;
pub use serial::SerialCorrelation;
pub use verdict::{Check, Failure, Verdict, thresholds};
