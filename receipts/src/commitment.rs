//! The commitment to a draw's served values: binding (the gateway cannot later claim other
//! values) and hiding (the receipt and the log tell no one the values), without the gateway
//! keeping them.
//!
//! commitment = SHA-256(tag || salt || values), where the tag is "entropy-diode/commitment/v1"
//! (length byte, ASCII), the salt is 32 fresh random bytes per draw, and `values` is the values'
//! canonical encoding (docs/receipts.md, "Commitment"). The caller gets the salt with the
//! response; the gateway forgets it (it is wiped on drop). Only someone holding the values and
//! the salt can open the commitment, so the caller decides whom to show a draw to. Without the
//! salt, a commitment to a small value space (six numbers out of 49) could be opened by trying
//! every value; with 256 random bits of salt it cannot.
//!
//! The values are fed to SHA-256 straight from the response's buffers: nothing here copies or
//! keeps them.

use sha2::{Digest as _, Sha256};
use zeroize::Zeroize as _;

use crate::encoding::tag_prefix;
use crate::error::VerifyError;

/// Domain tag of a commitment.
pub const COMMITMENT_TAG: &str = "entropy-diode/commitment/v1";
/// Salt length in bytes.
pub const SALT_LEN: usize = 32;

/// A commitment: the SHA-256 digest described above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commitment(pub [u8; 32]);

/// A draw's salt, wiped when dropped. Sent to the caller; never stored by the gateway.
#[derive(Clone, PartialEq, Eq)]
pub struct Salt(pub [u8; SALT_LEN]);

impl Drop for Salt {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl std::fmt::Debug for Salt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Salt(..)")
    }
}

impl Salt {
    /// 32 bytes from the operating system's CSPRNG (not from the pool: the salt hides the values
    /// and must not be something another caller was served).
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut s = [0u8; SALT_LEN];
        getrandom::fill(&mut s)?;
        Ok(Self(s))
    }
}

/// The values one response served, borrowed from the response.
#[derive(Debug, Clone, Copy)]
pub enum ServedValues<'a> {
    /// Bytes (`GetRandom`'s `data`, before any text encoding; one `StreamRandom` message).
    Bytes(&'a [u8]),
    /// `GetIntegers`' values.
    Integers(&'a [i64]),
    /// `GetFloats`' values (by their IEEE 754 bits: -0.0 and 0.0 differ).
    Floats(&'a [f64]),
    /// `GetUuids`' values as their 16 bytes (RFC 9562 byte order).
    Uuids(&'a [[u8; 16]]),
}

const VALUES_BYTES: u8 = 1;
const VALUES_INTEGERS: u8 = 2;
const VALUES_FLOATS: u8 = 3;
const VALUES_UUIDS: u8 = 4;

impl ServedValues<'_> {
    /// Feeds the canonical encoding: a kind byte, a `u64` element count, the elements
    /// (bytes as they are; integers as big-endian i64; floats as big-endian IEEE 754 bits; UUIDs
    /// as 16 bytes each).
    fn feed(&self, h: &mut Sha256) {
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX).to_be_bytes();
        match self {
            Self::Bytes(b) => {
                h.update([VALUES_BYTES]);
                h.update(count(b.len()));
                h.update(b);
            }
            Self::Integers(v) => {
                h.update([VALUES_INTEGERS]);
                h.update(count(v.len()));
                for x in *v {
                    h.update(x.to_be_bytes());
                }
            }
            Self::Floats(v) => {
                h.update([VALUES_FLOATS]);
                h.update(count(v.len()));
                for x in *v {
                    h.update(x.to_bits().to_be_bytes());
                }
            }
            Self::Uuids(v) => {
                h.update([VALUES_UUIDS]);
                h.update(count(v.len()));
                for u in *v {
                    h.update(u);
                }
            }
        }
    }
}

impl Commitment {
    /// Commits to `values` under `salt`.
    pub fn commit(values: ServedValues<'_>, salt: &Salt) -> Self {
        let mut h = Sha256::new();
        h.update(tag_prefix(COMMITMENT_TAG));
        h.update(COMMITMENT_TAG.as_bytes());
        h.update(salt.0);
        values.feed(&mut h);
        Self(h.finalize().into())
    }

    /// Opens the commitment: succeeds when `values` and `salt` are the ones committed to.
    pub fn open(&self, values: ServedValues<'_>, salt: &Salt) -> Result<(), VerifyError> {
        if Self::commit(values, salt) == *self {
            Ok(())
        } else {
            Err(VerifyError::CommitmentMismatch)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn encoding_is_the_specified_one() {
        // The specification's example, hashed by hand: tag, salt, kind 2, count 2, 7 and -1.
        let salt = Salt([0x5a; 32]);
        let mut pre = vec![27u8];
        pre.extend_from_slice(b"entropy-diode/commitment/v1");
        pre.extend_from_slice(&[0x5a; 32]);
        pre.push(2);
        pre.extend_from_slice(&2u64.to_be_bytes());
        pre.extend_from_slice(&7i64.to_be_bytes());
        pre.extend_from_slice(&(-1i64).to_be_bytes());
        let want: [u8; 32] = Sha256::digest(&pre).into();
        assert_eq!(Commitment::commit(ServedValues::Integers(&[7, -1]), &salt).0, want);
    }

    #[test]
    fn kinds_and_float_signs_are_told_apart() {
        let salt = Salt([1; 32]);
        let bytes = Commitment::commit(ServedValues::Bytes(&[0; 16]), &salt);
        let uuid = Commitment::commit(ServedValues::Uuids(&[[0; 16]]), &salt);
        assert_ne!(bytes, uuid);
        let pos = Commitment::commit(ServedValues::Floats(&[0.0]), &salt);
        let neg = Commitment::commit(ServedValues::Floats(&[-0.0]), &salt);
        assert_ne!(pos, neg);
        // An empty byte draw and an empty integer draw differ too.
        assert_ne!(
            Commitment::commit(ServedValues::Bytes(&[]), &salt),
            Commitment::commit(ServedValues::Integers(&[]), &salt)
        );
    }

    #[test]
    fn random_salts_differ() {
        assert_ne!(Salt::random().unwrap(), Salt::random().unwrap());
    }

    proptest! {
        /// Opens with the values and salt committed to; not with one value changed, one more or
        /// one fewer value, or another salt.
        #[test]
        fn opens_only_with_what_was_committed(
            v in proptest::collection::vec(any::<i64>(), 1..20),
            salt in any::<[u8; 32]>(),
            at in any::<prop::sample::Index>(),
            delta in 1i64..,
            bit in 0usize..256,
        ) {
            let salt = Salt(salt);
            let c = Commitment::commit(ServedValues::Integers(&v), &salt);
            prop_assert!(c.open(ServedValues::Integers(&v), &salt).is_ok());

            let mut changed = v.clone();
            let i = at.index(v.len());
            changed[i] = changed[i].wrapping_add(delta);
            prop_assert!(c.open(ServedValues::Integers(&changed), &salt).is_err());
            prop_assert!(c.open(ServedValues::Integers(&v[..v.len() - 1]), &salt).is_err());
            let mut more = v.clone();
            more.push(0);
            prop_assert!(c.open(ServedValues::Integers(&more), &salt).is_err());

            let mut other = salt.clone();
            other.0[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(c.open(ServedValues::Integers(&v), &other).is_err());
        }
    }
}
