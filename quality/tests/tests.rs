//! Integration tests of the quality analysis: cross-checks with `ent` and `rngtest` on committed
//! samples, verdicts on good and broken sources, and properties over arbitrary input.
//! One test binary for the crate (STYLE.md); the modules under `it/` group the cases.

// Test harness code panics on setup failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod it;
