//! Why a DRBG call was refused. One variant per SP 800-90A bound, each message naming the bound
//! and the value that broke it, so a caller's log says what to change. A refused call leaves the
//! instance as it was (SP 800-90A returns an error status without touching the state).

use std::fmt;

use thiserror::Error;

use crate::limits::{
    MAX_BYTES_PER_REQUEST, MAX_DF_INPUT_BYTES, MAX_INPUT_BYTES, MAX_RESEED_INTERVAL,
    MIN_COMBINED_ENTROPY_INPUT_BYTES, MIN_ENTROPY_INPUT_BYTES, MIN_NONCE_BYTES,
};

/// A refused instantiate, reseed or generate call.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DrbgError {
    /// The entropy input of an instantiate or reseed is shorter than the security strength.
    #[error(
        "entropy input is {len} bytes; SP 800-90A at 256-bit strength needs at least {}",
        MIN_ENTROPY_INPUT_BYTES
    )]
    EntropyInputTooShort {
        /// Length of the entropy input given, in bytes.
        len: usize,
    },

    /// The nonce is shorter than half the security strength and the entropy input does not
    /// carry the nonce's share either.
    #[error(
        "nonce is {len} bytes with {entropy_input_len} bytes of entropy input; SP 800-90A at \
         256-bit strength needs a nonce of at least {} bytes, or at least {} bytes of entropy \
         input that include the nonce's share",
        MIN_NONCE_BYTES,
        MIN_COMBINED_ENTROPY_INPUT_BYTES
    )]
    NonceTooShort {
        /// Length of the nonce given, in bytes.
        len: usize,
        /// Length of the entropy input given with it, in bytes.
        entropy_input_len: usize,
    },

    /// An input is longer than SP 800-90A's 2^35 bits.
    #[error(
        "{input} is {len} bytes; SP 800-90A allows at most 2^35 bits ({} bytes)",
        MAX_INPUT_BYTES
    )]
    InputTooLong {
        /// Which input.
        input: Input,
        /// Its length, in bytes.
        len: usize,
    },

    /// The seed material given to CTR_DRBG's derivation function in one call is longer than
    /// its 32-bit length field can state.
    #[error(
        "derivation function input is {len} bytes; CTR_DRBG's Block_Cipher_df writes its length \
         in 32 bits, so at most {} bytes (entropy input, nonce and personalization string \
         together at instantiate; entropy input and additional input at reseed)",
        MAX_DF_INPUT_BYTES
    )]
    DfInputTooLong {
        /// Length of the seed material, all its pieces together, in bytes.
        len: u64,
    },

    /// A generate call asked for more than `max_number_of_bits_per_request`.
    #[error(
        "request is for {len} bytes; SP 800-90A allows at most 2^19 bits ({} bytes) per generate call",
        MAX_BYTES_PER_REQUEST
    )]
    RequestTooLarge {
        /// Bytes requested.
        len: usize,
    },

    /// A reseed interval outside 1 to 2^48 requests.
    #[error(
        "reseed interval of {requests} requests is out of range; SP 800-90A allows 1 to 2^48 ({})",
        MAX_RESEED_INTERVAL
    )]
    InvalidReseedInterval {
        /// The interval asked for.
        requests: u64,
    },

    /// The instance has answered as many generate calls as its reseed interval allows since it
    /// was last seeded; reseed it with fresh entropy input before generating again.
    #[error(
        "reseed required: {interval} generate calls since the last seeding reached the reseed \
         interval"
    )]
    ReseedRequired {
        /// The instance's reseed interval, in generate calls.
        interval: u64,
    },
}

/// The inputs whose length SP 800-90A bounds, to say which one was too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Input {
    /// Entropy input to instantiate or reseed.
    EntropyInput,
    /// The nonce given to instantiate.
    Nonce,
    /// The personalization string given to instantiate.
    PersonalizationString,
    /// Additional input to reseed or generate.
    AdditionalInput,
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::EntropyInput => "entropy input",
            Self::Nonce => "nonce",
            Self::PersonalizationString => "personalization string",
            Self::AdditionalInput => "additional input",
        })
    }
}
