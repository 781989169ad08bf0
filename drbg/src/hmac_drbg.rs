//! The HMAC_DRBG mechanism, SP 800-90A Rev. 1 §10.1.2, with HMAC-SHA-256.
//!
//! The working state is K and V (32 bytes each) and a reseed counter. Every operation is the
//! spec's `HMAC_DRBG_Update` around its inputs:
//!
//! ```text
//! update(provided_data):  K = HMAC(K, V || 0x00 || provided_data);  V = HMAC(K, V)
//!                         if provided_data is not empty:
//!                             K = HMAC(K, V || 0x01 || provided_data);  V = HMAC(K, V)
//! instantiate(e, n, p):   K = 0x00…00;  V = 0x01…01;  update(e || n || p);  counter = 1
//! reseed(e, a):           update(e || a);  counter = 1
//! generate(len, a):       refuse if counter > reseed_interval
//!                         if a is not empty: update(a)
//!                         out = V1 || V2 || … truncated to len, where each Vi = V = HMAC(K, V)
//!                         update(a);  counter += 1
//! ```
//!
//! An empty byte string is the spec's Null: the spec's "if provided_data = Null" and "if
//! additional_input ≠ Null" are tests for emptiness here. Concatenated inputs are fed to the MAC
//! piece by piece, never copied into one buffer.
//!
//! Every check runs before the state is touched, so a refused call changes nothing. K and V are
//! wiped when the instance is dropped, the instance cannot be cloned (two copies would emit the
//! same stream), and `Debug` shows only the counter and the interval.

use std::fmt;

use hmac::digest::FixedOutput;
use hmac::digest::array::Array;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{DrbgError, Input};
use crate::limits::{
    OUTLEN_BYTES, ReseedInterval, check_entropy_input, check_max_len, check_nonce, check_request,
};

type HmacSha256 = Hmac<Sha256>;

/// An HMAC_DRBG instance with HMAC-SHA-256 at 256-bit security strength.
///
/// It cannot be cloned: a copy would produce the same output as the original.
///
/// ```compile_fail
/// fn needs_clone<T: Clone>() {}
/// needs_clone::<entropy_drbg::HmacDrbg>();
/// ```
pub struct HmacDrbg {
    /// K, the HMAC key of the working state.
    key: [u8; OUTLEN_BYTES],
    /// V, the chaining value of the working state.
    value: [u8; OUTLEN_BYTES],
    /// Generate calls since the last seeding, plus one (the spec's `reseed_counter`).
    reseed_counter: u64,
    reseed_interval: ReseedInterval,
}

impl HmacDrbg {
    /// Instantiates with the spec's maximum reseed interval (2^48 generate calls).
    ///
    /// `entropy_input` must be at least 32 bytes and carry at least 256 bits of entropy. The
    /// `nonce` must be at least 16 bytes, unless `entropy_input` is at least 48 bytes and
    /// includes the nonce's share, in which case the nonce may be shorter or empty. The
    /// `personalization` string may be empty. No input may exceed 2^35 bits.
    pub fn instantiate(
        entropy_input: &[u8],
        nonce: &[u8],
        personalization: &[u8],
    ) -> Result<Self, DrbgError> {
        Self::instantiate_with_reseed_interval(
            entropy_input,
            nonce,
            personalization,
            ReseedInterval::MAX,
        )
    }

    /// Instantiates as [`instantiate`](Self::instantiate) does, refusing to generate after
    /// `reseed_interval` generate calls without a reseed.
    pub fn instantiate_with_reseed_interval(
        entropy_input: &[u8],
        nonce: &[u8],
        personalization: &[u8],
        reseed_interval: ReseedInterval,
    ) -> Result<Self, DrbgError> {
        check_entropy_input(entropy_input.len())?;
        check_nonce(nonce.len(), entropy_input.len())?;
        check_max_len(Input::PersonalizationString, personalization.len())?;

        let mut drbg = Self {
            key: [0x00; OUTLEN_BYTES],
            value: [0x01; OUTLEN_BYTES],
            reseed_counter: 1,
            reseed_interval,
        };
        drbg.update(&[entropy_input, nonce, personalization]);
        Ok(drbg)
    }

    /// Reseeds with fresh `entropy_input` (at least 32 bytes, at least 256 bits of entropy) and
    /// optional `additional_input`, and restarts the count towards the reseed interval.
    pub fn reseed(
        &mut self,
        entropy_input: &[u8],
        additional_input: &[u8],
    ) -> Result<(), DrbgError> {
        check_entropy_input(entropy_input.len())?;
        check_max_len(Input::AdditionalInput, additional_input.len())?;

        self.update(&[entropy_input, additional_input]);
        self.reseed_counter = 1;
        Ok(())
    }

    /// Fills `out` (at most 65,536 bytes, 2^19 bits) with output, mixing in the optional
    /// `additional_input` first and after.
    ///
    /// Refuses with [`DrbgError::ReseedRequired`] once the reseed interval's generate calls have
    /// been answered since the last seeding. For prediction resistance, call
    /// [`reseed`](Self::reseed) with fresh entropy (and the additional input) before each call
    /// and pass empty additional input here, as SP 800-90A §9.3.1 does.
    pub fn generate(&mut self, out: &mut [u8], additional_input: &[u8]) -> Result<(), DrbgError> {
        check_request(out.len())?;
        check_max_len(Input::AdditionalInput, additional_input.len())?;
        if self.reseed_counter > self.reseed_interval.get() {
            return Err(DrbgError::ReseedRequired { interval: self.reseed_interval.get() });
        }

        if !additional_input.is_empty() {
            self.update(&[additional_input]);
        }
        for block in out.chunks_mut(OUTLEN_BYTES) {
            self.next_value();
            block.copy_from_slice(&self.value[..block.len()]);
        }
        self.update(&[additional_input]);
        // Cannot overflow: the counter is at most the interval (2^48) here.
        self.reseed_counter += 1;
        Ok(())
    }

    /// The spec's `reseed_counter`: 1 after instantiate or reseed, one more after each answered
    /// generate call. Generate refuses once it exceeds the reseed interval.
    pub fn reseed_counter(&self) -> u64 {
        self.reseed_counter
    }

    /// The number of generate calls this instance answers between seedings.
    pub fn reseed_interval(&self) -> ReseedInterval {
        self.reseed_interval
    }

    /// `HMAC_DRBG_Update` with `provided_data` given as the pieces of its concatenation; all
    /// pieces empty is the spec's Null.
    fn update(&mut self, provided_data: &[&[u8]]) {
        self.next_key(0x00, provided_data);
        self.next_value();
        if provided_data.iter().all(|piece| piece.is_empty()) {
            return;
        }
        self.next_key(0x01, provided_data);
        self.next_value();
    }

    /// K = HMAC(K, V || separator || provided_data).
    fn next_key(&mut self, separator: u8, provided_data: &[&[u8]]) {
        let mut mac = self.mac();
        mac.update(&self.value);
        mac.update(&[separator]);
        for piece in provided_data {
            mac.update(piece);
        }
        // Straight into K: no intermediate copy of the new key is left behind.
        mac.finalize_into(Array::cast_from_core_mut(&mut self.key));
    }

    /// V = HMAC(K, V).
    fn next_value(&mut self) {
        let mut mac = self.mac();
        mac.update(&self.value);
        mac.finalize_into(Array::cast_from_core_mut(&mut self.value));
    }

    /// HMAC-SHA-256 keyed with K. With the `zeroize` features of hmac and sha2 (Cargo.toml),
    /// its keyed state is wiped when it is dropped.
    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length (RFC 2104 hashes a long one and pads a short one), and
        // hmac's `new_from_slice` never fails; K is 32 bytes in any case.
        HmacSha256::new_from_slice(&self.key).expect("HMAC accepts a key of any length")
    }
}

impl Drop for HmacDrbg {
    fn drop(&mut self) {
        self.key.zeroize();
        self.value.zeroize();
    }
}

impl ZeroizeOnDrop for HmacDrbg {}

impl fmt::Debug for HmacDrbg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // K and V are the secret; the counter and interval are all a log needs.
        f.debug_struct("HmacDrbg")
            .field("reseed_counter", &self.reseed_counter)
            .field("reseed_interval", &self.reseed_interval.get())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTROPY: [u8; 32] = [0x11; 32];
    const NONCE: [u8; 16] = [0x22; 16];

    fn drbg() -> HmacDrbg {
        HmacDrbg::instantiate(&ENTROPY, &NONCE, b"entropy-drbg unit test").unwrap()
    }

    crate::contract::mechanism_contract!(crate::HmacDrbg);

    #[test]
    fn debug_shows_no_key_material() {
        let drbg = drbg();
        let shown = format!("{drbg:?}");
        assert_eq!(shown, "HmacDrbg { reseed_counter: 1, reseed_interval: 281474976710656, .. }");
        let pretty = format!("{drbg:#?}");
        for secret in [&drbg.key, &drbg.value] {
            let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
            for text in [&shown, &pretty] {
                assert!(!text.contains(&hex));
                assert!(!text.contains(&format!("{secret:?}")));
            }
        }
    }
}
