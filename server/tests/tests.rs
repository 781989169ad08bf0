//! Integration tests of the gateway: real servers on 127.0.0.1:0, real gRPC clients.
//! One test binary for the crate (STYLE.md); the modules under `it/` group the cases.

// Test harness code panics on setup failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod it;
