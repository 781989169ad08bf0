//! Signed tree heads: the gateway's signed statement "my log had `size` receipts, with this
//! root, at this time". Two heads of one log are consistent exactly when a consistency proof
//! between them verifies; an auditor who sees two heads that are not has proof the log was
//! rewritten.
//!
//! Canonical bytes (docs/receipts.md, "Tree head"): tag "entropy-diode/tree-head/v1", u64 size,
//! the 32-byte root, i64 timestamp (Unix ms), the 32-byte key id. The signature is Ed25519 over
//! those bytes; a signed head's bytes are those bytes followed by the 64-byte signature.

use crate::encoding::{Reader, Writer};
use crate::error::{DecodeError, VerifyError};
use crate::merkle::Hash;
use crate::signing::{KeyId, PublicKey, ReceiptSigner, SIGNATURE_LEN, Signature};

/// Domain tag of a tree head.
pub const TREE_HEAD_TAG: &str = "entropy-diode/tree-head/v1";

/// A tree head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeHead {
    /// Receipts in the tree.
    pub size: u64,
    /// The RFC 9162 root of the first `size` leaves.
    pub root: Hash,
    /// When the head was signed (Unix ms, the gateway's clock).
    pub timestamp_unix_ms: i64,
    /// The signing key's id.
    pub key_id: KeyId,
}

impl TreeHead {
    /// The canonical bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.tag(TREE_HEAD_TAG);
        w.u64(self.size);
        w.array(&self.root);
        w.i64(self.timestamp_unix_ms);
        w.array(&self.key_id.0);
        w.into_bytes()
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.tag(TREE_HEAD_TAG)?;
        Ok(Self {
            size: r.u64("size")?,
            root: r.array("root")?,
            timestamp_unix_ms: r.i64("timestamp_unix_ms")?,
            key_id: KeyId(r.array("key_id")?),
        })
    }

    /// Signs the head (its key id becomes the signer's).
    pub fn sign(mut self, signer: &ReceiptSigner) -> SignedTreeHead {
        self.key_id = signer.key_id();
        let signature = signer.sign_bytes(&self.encode());
        SignedTreeHead { head: self, signature }
    }
}

/// A tree head and its signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedTreeHead {
    /// The head.
    pub head: TreeHead,
    /// Ed25519 over the head's canonical bytes.
    pub signature: Signature,
}

impl SignedTreeHead {
    /// The head's canonical bytes and the 64-byte signature.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.head.encode();
        out.extend_from_slice(&self.signature.0);
        out
    }

    /// Parses [`SignedTreeHead::to_bytes`]'s output (the signature is not checked here).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let head = TreeHead::decode(&mut r)?;
        let signature = Signature(r.array::<SIGNATURE_LEN>("signature")?);
        r.finish()?;
        Ok(Self { head, signature })
    }

    /// Checks the key id and the signature.
    pub fn verify(&self, key: &PublicKey) -> Result<&TreeHead, VerifyError> {
        if self.head.key_id != key.key_id() {
            return Err(VerifyError::WrongKey);
        }
        key.verify_bytes(&self.head.encode(), &self.signature)?;
        Ok(&self.head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_heads_verify_round_trip_and_refuse_tampering() {
        let signer = ReceiptSigner::from_seed(&[3; 32]);
        let head =
            TreeHead { size: 5, root: [9; 32], timestamp_unix_ms: 1, key_id: KeyId([0; 32]) };
        let sth = head.sign(&signer);
        assert_eq!(sth.verify(signer.public_key()).unwrap().size, 5);
        let bytes = sth.to_bytes();
        assert_eq!(SignedTreeHead::from_bytes(&bytes).unwrap(), sth);

        // Every single-bit flip anywhere in the bytes is refused: by the decoder or the check.
        for bit in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let refused = match SignedTreeHead::from_bytes(&bad) {
                Err(_) => true,
                Ok(h) => h.verify(signer.public_key()).is_err(),
            };
            assert!(refused, "bit {bit} flipped and still accepted");
        }
        let other = ReceiptSigner::from_seed(&[4; 32]);
        assert_eq!(sth.verify(other.public_key()), Err(VerifyError::WrongKey));
    }
}
