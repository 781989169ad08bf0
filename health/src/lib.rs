//! Continuous health tests on an entropy source's raw output, before anything uses it: the
//! collector runs them on every source before mixing, and a host feeder runs the same tests on
//! what it feeds the kernel. Pure computation: no I/O, nothing async, nothing of ours.
//!
//! A [`HealthMonitor`] per source takes each batch of bytes and returns a [`Verdict`]: use the
//! batch, or discard it (start-up test running, a test failed, recovery running). Its
//! [`State`] and counters are for the caller to report; which [`HealthTest`] failed is in the
//! verdict.
//!
//! # The tests
//!
//! NIST SP 800-90B section 4.4, on bytes (8-bit samples), with cutoffs computed from the
//! source's claimed min-entropy per byte `H` and the false-alarm probability `α = 2^-a`
//! (`a = alpha_log2`, default 40, so a fast source does not raise a false alarm every few
//! seconds):
//!
//! - **Repetition count test** (4.4.1): fails when one value repeats `C` times in a row, with
//!   `C = 1 + ceil(a / H)`. A run of `C` equal bytes has probability at most `2^-H(C-1) ≤ α`.
//! - **Adaptive proportion test** (4.4.2): in each window of `W = 512` bytes, counts how often
//!   the window's first byte occurs (itself included) and fails at `C` occurrences, `C` the
//!   smallest count with `P(1 + Binomial(W - 1, 2^-H) ≥ C) ≤ α`.
//!
//! These catch gross failures (a stuck or nearly stuck source). Two supplementary tests, with
//! cutoffs from the same `H` and `α`, catch what they let through at realistic claims:
//!
//! - **Bit proportion test**: in each window of 20,000 bits, fails when the count of ones (or
//!   zeros) exceeds `n·p + z·sqrt(n·p·(1-p))`, where `p = 2^(-H/8)` is the largest per-bit bias
//!   consistent with the claim and `z` the normal quantile for `α`. A 60/40 bit bias (about 5.9
//!   bits per byte) fails it at once at `H = 7`.
//! - **Block repetition test**: fails when an aligned 16-byte word equals one of the previous
//!   4,096 words (64 KiB). For a source meeting its claim, a collision within the window has
//!   probability about `4096² / 2 · 2^-16H` (≈ 2^-89 at `H = 7`, far below α). A source that
//!   replays a block fails once the repeat realigns with the word grid: at once for a period
//!   that is a multiple of 16 bytes up to 64 KiB (a replayed response), and within 16 periods
//!   for any period up to 4 KiB.
//!
//! # States
//!
//! A source starts in [`State::Starting`]: its first [`STARTUP_BYTES`] bytes (≥ 1024 samples,
//! and a full bit window) must pass every test before anything it produces is used. A failure
//! at any time moves it to [`State::Quarantined`] and discards the data being tested; a
//! quarantined source must pass a fresh start-up test to become [`State::Healthy`] again, and
//! each recovery is counted.
//!
//! # Layout
//!
//! - `cutoffs.rs`: [`Cutoffs`], each test's cutoff from the claimed min-entropy and `α`.
//! - `monitor.rs`: [`HealthMonitor`], the tests' running state over a source's bytes (a fast
//!   path over 256-byte blocks that gives exactly what the byte loop gives), start-up and
//!   quarantine; its [`Verdict`] on each batch.
//! - here: the constants of the tests, [`HealthTest`] and [`State`].

mod cutoffs;
mod monitor;

pub use cutoffs::Cutoffs;
pub use monitor::{HealthMonitor, Verdict};

/// Bytes a source must pass before its output is used (after start and after quarantine).
pub const STARTUP_BYTES: usize = 4096;
/// Adaptive proportion test window, in bytes (800-90B: 512 for non-binary samples).
pub const APT_WINDOW: usize = 512;
/// Bit proportion test window, in bits.
pub const BIT_WINDOW_BITS: usize = 20_000;
/// Block repetition test word size, in bytes.
pub const BLOCK_WORD_BYTES: usize = 16;
/// Block repetition test window, in words (64 KiB).
pub const BLOCK_WINDOW_WORDS: usize = 4096;

/// Which test failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthTest {
    /// Repetition count test (800-90B 4.4.1).
    RepetitionCount,
    /// Adaptive proportion test (800-90B 4.4.2).
    AdaptiveProportion,
    /// Bit proportion test (supplementary).
    BitProportion,
    /// Block repetition test (supplementary).
    BlockRepetition,
}

impl HealthTest {
    /// Every test, in the order of their discriminants.
    pub const ALL: [Self; 4] = [
        Self::RepetitionCount,
        Self::AdaptiveProportion,
        Self::BitProportion,
        Self::BlockRepetition,
    ];

    /// A stable label for logs and metrics.
    pub fn label(self) -> &'static str {
        match self {
            Self::RepetitionCount => "repetition_count",
            Self::AdaptiveProportion => "adaptive_proportion",
            Self::BitProportion => "bit_proportion",
            Self::BlockRepetition => "block_repetition",
        }
    }
}

/// Where a monitored source stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Passed its start-up test and every test since: its output may be used.
    Healthy,
    /// Running its first start-up test; its output is discarded.
    Starting,
    /// Failed a test (or was quarantined by the caller); its output is discarded until it
    /// passes a fresh start-up test.
    Quarantined,
}
