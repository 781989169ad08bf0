//! The bounds SP 800-90A Rev. 1 sets on HMAC_DRBG (Table 2 of §10.1) and on CTR_DRBG with a
//! derivation function (Table 3 of §10.2.1) at this crate's one security strength, 256 bits,
//! and the checks that enforce them. The two tables agree on every bound this crate enforces
//! (for CTR_DRBG with AES-256 and a 128-bit counter, `max_number_of_bits_per_request` is
//! min(B, 2^19) with B far above 2^19), so both mechanisms share these constants; CTR_DRBG's
//! derivation function adds one of its own, [`MAX_DF_INPUT_BYTES`]. They live apart from the
//! mechanisms so that each bound is written once, in bytes, next to where the spec states it.
//!
//! Every length bound of the spec is in bits; inputs here are byte strings, so each constant is
//! the spec's bound divided by 8, and its doc gives the bound in bits.

use crate::error::{DrbgError, Input};

/// The security strength this crate instantiates at, in bits: that of SHA-256 and of AES-256,
/// per SP 800-57.
pub const SECURITY_STRENGTH_BITS: usize = 256;

/// Output length of the HMAC (`outlen`), in bytes: the size of HMAC_DRBG's K and V.
pub const OUTLEN_BYTES: usize = 32;

/// The fewest bytes of entropy input for instantiate and reseed: `security_strength` (256
/// bits). The caller vouches that these bytes carry at least 256 bits of entropy.
pub const MIN_ENTROPY_INPUT_BYTES: usize = SECURITY_STRENGTH_BITS / 8;

/// The fewest bytes of a separate nonce: `security_strength / 2` (128 bits, §8.6.7).
pub const MIN_NONCE_BYTES: usize = SECURITY_STRENGTH_BITS / 16;

/// With an entropy input of at least this many bytes (3/2 × `security_strength`, 384 bits) the
/// nonce may be shorter than [`MIN_NONCE_BYTES`] or empty: the caller has drawn the nonce's 128
/// bits from the entropy source in the same call, as part of the entropy input.
pub const MIN_COMBINED_ENTROPY_INPUT_BYTES: usize = MIN_ENTROPY_INPUT_BYTES + MIN_NONCE_BYTES;

/// The most bytes of any one input (entropy input, nonce, personalization string, additional
/// input): 2^35 bits. SP 800-90A bounds entropy input, personalization and additional input at
/// 2^35 bits for HMAC_DRBG and for CTR_DRBG with a derivation function; the nonce is part of
/// the same seed material, so it gets the same.
pub const MAX_INPUT_BYTES: u64 = 1 << (35 - 3);

/// The most bytes CTR_DRBG's derivation function takes in one call: 2^32 − 1. Block_Cipher_df
/// (§10.3.2 step 2) writes the length of its input string, in bytes, as a 32-bit integer L, so
/// the seed material it derives from (entropy input, nonce and personalization string together
/// at instantiate; entropy input and additional input at reseed; additional input at generate)
/// must fit that field. One byte short of [`MAX_INPUT_BYTES`], and it bounds the concatenation.
pub const MAX_DF_INPUT_BYTES: u64 = u32::MAX as u64;

/// The most bytes one generate call returns: `max_number_of_bits_per_request`, 2^19 bits.
pub const MAX_BYTES_PER_REQUEST: usize = 1 << (19 - 3);

/// The most generate calls between two seedings: `reseed_interval` at most 2^48.
pub const MAX_RESEED_INTERVAL: u64 = 1 << 48;

/// How many generate calls an instance answers between seedings, from 1 to
/// [`MAX_RESEED_INTERVAL`]. Once that many calls have been answered since instantiate or the
/// last reseed, [`CtrDrbg::generate`](crate::CtrDrbg::generate) and
/// [`HmacDrbg::generate`](crate::HmacDrbg::generate) refuse with
/// [`DrbgError::ReseedRequired`] until the caller reseeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReseedInterval(u64);

impl ReseedInterval {
    /// The spec's maximum, 2^48 requests: the default.
    pub const MAX: Self = Self(MAX_RESEED_INTERVAL);

    /// An interval of `requests` generate calls, or [`DrbgError::InvalidReseedInterval`] if it
    /// is 0 or above 2^48.
    pub fn new(requests: u64) -> Result<Self, DrbgError> {
        if (1..=MAX_RESEED_INTERVAL).contains(&requests) {
            Ok(Self(requests))
        } else {
            Err(DrbgError::InvalidReseedInterval { requests })
        }
    }

    /// The number of generate calls allowed between seedings.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl Default for ReseedInterval {
    fn default() -> Self {
        Self::MAX
    }
}

/// Refuses an input longer than [`MAX_INPUT_BYTES`].
pub(crate) fn check_max_len(input: Input, len: usize) -> Result<(), DrbgError> {
    // On a target whose usize cannot hold 2^32, no slice can be over the bound.
    let over = usize::try_from(MAX_INPUT_BYTES).is_ok_and(|max| len > max);
    if over { Err(DrbgError::InputTooLong { input, len }) } else { Ok(()) }
}

/// Refuses entropy input shorter than [`MIN_ENTROPY_INPUT_BYTES`] or longer than
/// [`MAX_INPUT_BYTES`].
pub(crate) fn check_entropy_input(len: usize) -> Result<(), DrbgError> {
    if len < MIN_ENTROPY_INPUT_BYTES {
        return Err(DrbgError::EntropyInputTooShort { len });
    }
    check_max_len(Input::EntropyInput, len)
}

/// Refuses a nonce shorter than [`MIN_NONCE_BYTES`], unless the entropy input of
/// `entropy_input_len` bytes already carries the nonce's share ([`MIN_COMBINED_ENTROPY_INPUT_BYTES`]).
pub(crate) fn check_nonce(len: usize, entropy_input_len: usize) -> Result<(), DrbgError> {
    if len < MIN_NONCE_BYTES && entropy_input_len < MIN_COMBINED_ENTROPY_INPUT_BYTES {
        return Err(DrbgError::NonceTooShort { len, entropy_input_len });
    }
    check_max_len(Input::Nonce, len)
}

/// Refuses derivation-function input (the seed material of one call, given as the lengths of
/// its pieces) longer than [`MAX_DF_INPUT_BYTES`].
pub(crate) fn check_df_input(piece_lens: &[usize]) -> Result<(), DrbgError> {
    // In u64: each piece is at most 2^32 bytes (checked before), so the sum cannot overflow.
    let len = piece_lens.iter().map(|&piece| piece as u64).sum::<u64>();
    if len > MAX_DF_INPUT_BYTES { Err(DrbgError::DfInputTooLong { len }) } else { Ok(()) }
}

/// Refuses a request for more than [`MAX_BYTES_PER_REQUEST`] bytes.
pub(crate) fn check_request(len: usize) -> Result<(), DrbgError> {
    if len > MAX_BYTES_PER_REQUEST { Err(DrbgError::RequestTooLarge { len }) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_the_spec_bounds_in_bytes() {
        assert_eq!(MIN_ENTROPY_INPUT_BYTES * 8, 256);
        assert_eq!(MIN_NONCE_BYTES * 8, 128);
        assert_eq!(MIN_COMBINED_ENTROPY_INPUT_BYTES * 8, 384);
        assert_eq!(MAX_INPUT_BYTES * 8, 1 << 35);
        assert_eq!(MAX_BYTES_PER_REQUEST * 8, 1 << 19);
        assert_eq!(MAX_BYTES_PER_REQUEST, 65_536);
        assert_eq!(MAX_RESEED_INTERVAL, 281_474_976_710_656);
        assert_eq!(MAX_DF_INPUT_BYTES, (1 << 32) - 1);
    }

    #[test]
    fn df_input_bound_is_on_the_sum_of_the_pieces() {
        let max = usize::try_from(MAX_DF_INPUT_BYTES).unwrap();
        assert_eq!(check_df_input(&[max]), Ok(()));
        assert_eq!(check_df_input(&[32, 16, max - 48]), Ok(()));
        // An additional input at the 2^35-bit bound is one byte too long for the df's L.
        assert_eq!(
            check_df_input(&[max + 1]),
            Err(DrbgError::DfInputTooLong { len: MAX_DF_INPUT_BYTES + 1 })
        );
        assert_eq!(
            check_df_input(&[32, 16, max - 47]),
            Err(DrbgError::DfInputTooLong { len: MAX_DF_INPUT_BYTES + 1 })
        );
        assert_eq!(
            DrbgError::DfInputTooLong { len: 1 << 32 }.to_string(),
            "derivation function input is 4294967296 bytes; CTR_DRBG's Block_Cipher_df writes \
             its length in 32 bits, so at most 4294967295 bytes (entropy input, nonce and \
             personalization string together at instantiate; entropy input and additional input \
             at reseed)"
        );
    }

    #[test]
    fn input_length_bound_is_checked_without_allocating_it() {
        // 2^32 bytes is the bound itself; one more is refused. Only the length is passed, so
        // the test needs no 4 GiB buffer.
        let at_bound = usize::try_from(MAX_INPUT_BYTES).unwrap();
        assert_eq!(check_max_len(Input::AdditionalInput, at_bound), Ok(()));
        assert_eq!(
            check_max_len(Input::AdditionalInput, at_bound + 1),
            Err(DrbgError::InputTooLong { input: Input::AdditionalInput, len: at_bound + 1 })
        );
        assert_eq!(
            check_entropy_input(at_bound + 1),
            Err(DrbgError::InputTooLong { input: Input::EntropyInput, len: at_bound + 1 })
        );
        assert_eq!(
            check_nonce(at_bound + 1, 32),
            Err(DrbgError::InputTooLong { input: Input::Nonce, len: at_bound + 1 })
        );
    }

    #[test]
    fn nonce_rule_covers_both_ways_of_supplying_it() {
        // A separate nonce of 128 bits with the minimum entropy input.
        assert_eq!(check_nonce(16, 32), Ok(()));
        assert_eq!(
            check_nonce(15, 32),
            Err(DrbgError::NonceTooShort { len: 15, entropy_input_len: 32 })
        );
        assert_eq!(
            check_nonce(0, 47),
            Err(DrbgError::NonceTooShort { len: 0, entropy_input_len: 47 })
        );
        // No separate nonce: the entropy input carries 384 bits.
        assert_eq!(check_nonce(0, 48), Ok(()));
        assert_eq!(check_nonce(8, 64), Ok(()));
    }

    #[test]
    fn reseed_interval_range_is_one_to_two_to_the_48() {
        assert_eq!(ReseedInterval::new(0), Err(DrbgError::InvalidReseedInterval { requests: 0 }));
        assert_eq!(ReseedInterval::new(1).map(ReseedInterval::get), Ok(1));
        assert_eq!(ReseedInterval::new(MAX_RESEED_INTERVAL), Ok(ReseedInterval::MAX));
        assert_eq!(
            ReseedInterval::new(MAX_RESEED_INTERVAL + 1),
            Err(DrbgError::InvalidReseedInterval { requests: MAX_RESEED_INTERVAL + 1 })
        );
        assert_eq!(ReseedInterval::default(), ReseedInterval::MAX);
    }
}
