//! HMAC_DRBG as NIST SP 800-90A Rev. 1 §10.1.2 specifies it, with SHA-256 and a security
//! strength of 256 bits: the deterministic half of a future quantum-seeded generator, which will
//! seed and reseed it with bytes from the gateway's quantum pool. Nothing here knows where the
//! seed comes from; the caller hands in entropy input and this crate stretches it.
//!
//! # Why HMAC_DRBG and not CTR_DRBG
//!
//! - **Inputs of any length, without a derivation function.** HMAC_DRBG absorbs the seed
//!   material through HMAC, so entropy input, nonce, personalization and additional input can
//!   be of any length up to the spec's 2^35 bits. CTR_DRBG without a derivation function needs
//!   full-entropy input of exactly `seedlen` bits (384 for AES-256); with the block-cipher
//!   derivation function it takes any length, but that function is the most intricate part of
//!   SP 800-90A and one more thing to get right.
//! - **Small.** The whole mechanism is one `update` function and two HMAC loops: easy to read
//!   against the spec, and checked here against every SHA-256 case of NIST's CAVP vectors.
//! - **Built on what the project already uses.** RustCrypto's `hmac` and `sha2` sign and verify
//!   chunks in `entropy-proto`; no block cipher enters the dependency graph.
//! - **Well analysed.** Its generate and update steps have published security proofs under
//!   the assumption that HMAC is a PRF (Hirose, ICISC 2008), and a machine-checked proof of an
//!   implementation (Ye et al., "Verified correctness and security of mbedTLS HMAC-DRBG", CCS
//!   2017). RFC 6979's deterministic ECDSA nonces are built on it, and OpenSSL and Botan ship it.
//!
//! # Prediction resistance
//!
//! There is no separate prediction-resistance path: prediction resistance is a caller reseeding
//! with fresh entropy input before each [`HmacDrbg::generate`] (SP 800-90A §9.3.1 step 7 does
//! exactly that: reseed with the additional input, then generate with none). The CAVP tests
//! (`tests/cavp.rs`) drive the `PredictionResistance = True` cases that way.
//!
//! Layout:
//! - [`hmac_drbg`]: the working state, `update`, instantiate, reseed and generate.
//! - [`limits`]: the SP 800-90A bounds at 256-bit strength and the checks that enforce them.
//! - [`error`]: [`DrbgError`], one variant per bound, each message naming it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod hmac_drbg;
pub mod limits;

pub use error::{DrbgError, Input};
pub use hmac_drbg::HmacDrbg;
pub use limits::ReseedInterval;
