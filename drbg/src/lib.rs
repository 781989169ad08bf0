//! Two deterministic random bit generators as NIST SP 800-90A Rev. 1 specifies them, both at a
//! security strength of 256 bits: the deterministic half of a future quantum-seeded generator,
//! which will seed and reseed them with bytes from the gateway's quantum pool. Nothing here
//! knows where the seed comes from; the caller hands in entropy input and this crate stretches
//! it.
//!
//! - [`CtrDrbg`]: CTR_DRBG (§10.2.1) with AES-256 and the block-cipher derivation function
//!   (§10.3.2). **The mechanism the gateway uses** (once this crate is wired in).
//! - [`HmacDrbg`]: HMAC_DRBG (§10.1.2) with HMAC-SHA-256, kept as the reference the decision
//!   was measured against.
//!
//! Both take the same calls ([`instantiate`](CtrDrbg::instantiate),
//! [`reseed`](CtrDrbg::reseed), [`generate`](CtrDrbg::generate)), enforce the same bounds
//! ([`limits`]) before touching their state, refuse with the same [`DrbgError`], wipe their
//! state on drop, cannot be cloned and show no key material in `Debug`. Each is checked against
//! every case of its section of NIST's CAVP vectors (`tests/cavp.rs`).
//!
//! # Why CTR_DRBG with AES-256
//!
//! Throughput. The gateway must generate well over 1 GiB/s on one core. HMAC_DRBG spends at
//! least two SHA-256 compressions on every 32 bytes of output (this implementation, which keys
//! a fresh HMAC per block, four); CTR_DRBG spends one AES-256 block encryption on every 16
//! bytes, and its output blocks, E(K, V+1), E(K, V+2), …, are independent, so [`CtrDrbg`]
//! encrypts them in large batches that the `aes` crate's AES-NI or VAES backend processes in
//! parallel. The measured numbers are in the crate's README (`examples/throughput.rs`).
//!
//! The derivation function is what lets CTR_DRBG take inputs of any length (up to the spec's
//! 2^35 bits): without it, the mechanism needs full-entropy input of exactly `seedlen` bits (384
//! for AES-256) and no nonce. It is the most intricate part of SP 800-90A, so besides the CAVP
//! vectors (which only ever feed it inputs of 32, 48 and 80 bytes) a unit test compares it with
//! a literal, unoptimized transcription of §10.3.2 at every input length from 0 to 80 bytes.
//!
//! # Why HMAC_DRBG stays
//!
//! It was the crate's first mechanism and is the simpler one to read against the spec: one
//! small `update` function over HMAC, with published security proofs (Hirose, ICISC 2008; a
//! machine-checked proof of mbedTLS's implementation, Ye et al., CCS 2017), taking inputs of any
//! length without a derivation function, on the `hmac` and `sha2` crates the project already
//! uses. It stays as a checked alternative and as the baseline of the throughput comparison.
//!
//! # Prediction resistance
//!
//! There is no separate prediction-resistance path in either mechanism: prediction resistance is
//! a caller reseeding with fresh entropy input before each generate call (SP 800-90A §9.3.1 step
//! 7 does exactly that: reseed with the additional input, then generate with none). The CAVP
//! tests (`tests/cavp.rs`) drive the `PredictionResistance = True` cases that way.
//!
//! Layout:
//! - [`ctr_drbg`]: CTR_DRBG's working state, update, derivation function, instantiate, reseed and
//!   generate.
//! - [`hmac_drbg`]: HMAC_DRBG's working state, update, instantiate, reseed and generate.
//! - [`limits`]: the SP 800-90A bounds at 256-bit strength and the checks that enforce them.
//! - [`error`]: [`DrbgError`], one variant per bound, each message naming it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
mod contract;
pub mod ctr_drbg;
pub mod error;
pub mod hmac_drbg;
pub mod limits;

pub use ctr_drbg::CtrDrbg;
pub use error::{DrbgError, Input};
pub use hmac_drbg::HmacDrbg;
pub use limits::ReseedInterval;
