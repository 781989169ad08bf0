//! Offline verification: what a caller, an auditor or a third party checks, with nothing but the
//! gateway's public key and the evidence (no connection to the gateway).
//!
//! - [`verify_receipt`]: the receipt is signed by this key (and well-formed);
//! - [`open_commitment`]: these values and salt are what the receipt committed to;
//! - [`verify_inclusion`]: the receipt is leaf `serial` of the log a signed head commits to;
//! - [`verify_consistency`]: a later signed head extends an earlier one (nothing rewritten);
//! - [`audit_key`]: from a copy of the log that matches a signed head, every receipt one key
//!   drew in a range of serials, each signature checked, so a redraw shows up as a second entry.

use std::ops::Range;

use crate::commitment::{Salt, ServedValues};
use crate::error::VerifyError;
use crate::head::SignedTreeHead;
use crate::merkle::{self, Hash, MemoryTree};
use crate::receipt::{KeyNameDigest, Receipt, SignedReceipt};
use crate::record::LogReader;
use crate::signing::PublicKey;

/// Checks that `signed` is signed by `key` (key id and Ed25519 signature over its canonical
/// bytes) and returns the receipt.
pub fn verify_receipt<'a>(
    signed: &'a SignedReceipt,
    key: &PublicKey,
) -> Result<&'a Receipt, VerifyError> {
    if signed.receipt.key_id != key.key_id() {
        return Err(VerifyError::WrongKey);
    }
    key.verify_bytes(signed.receipt_bytes(), &signed.signature)?;
    Ok(&signed.receipt)
}

/// Parses a signed receipt's bytes (as served, or as a log leaf) and checks it.
pub fn verify_receipt_bytes(bytes: &[u8], key: &PublicKey) -> Result<SignedReceipt, VerifyError> {
    let signed = SignedReceipt::from_bytes(bytes)?;
    verify_receipt(&signed, key)?;
    Ok(signed)
}

/// Checks that `values` and `salt` open the receipt's commitment.
pub fn open_commitment(
    receipt: &Receipt,
    values: ServedValues<'_>,
    salt: &Salt,
) -> Result<(), VerifyError> {
    receipt.commitment.open(values, salt)
}

/// Checks that `signed` (verified under `key`) is leaf `serial` of the tree `head` (verified under
/// `key`) commits to, by `proof`.
pub fn verify_inclusion(
    signed: &SignedReceipt,
    proof: &[Hash],
    head: &SignedTreeHead,
    key: &PublicKey,
) -> Result<(), VerifyError> {
    let receipt = verify_receipt(signed, key)?;
    let head = head.verify(key)?;
    let leaf = merkle::leaf_hash(&signed.to_bytes());
    merkle::verify_inclusion(receipt.serial, head.size, &leaf, proof, &head.root)
        .map_err(VerifyError::BadProof)
}

/// Checks that `new` extends `old` (both verified under `key`) by `proof`.
pub fn verify_consistency(
    old: &SignedTreeHead,
    new: &SignedTreeHead,
    proof: &[Hash],
    key: &PublicKey,
) -> Result<(), VerifyError> {
    let (old, new) = (old.verify(key)?, new.verify(key)?);
    merkle::verify_consistency(old.size, new.size, &old.root, &new.root, proof)
        .map_err(VerifyError::BadProof)
}

/// One receipt of an audit listing.
#[derive(Debug, Clone)]
pub struct AuditEntry {
    /// Its serial (= leaf index).
    pub serial: u64,
    /// The receipt, its signature checked.
    pub receipt: SignedReceipt,
}

/// Lists every receipt of the key with `key_name_digest` whose serial is in `serials`, from a
/// copy of a log that `head` (verified under `key`) commits to. Checks every receipt's signature
/// in the first `head.size` records and that their tree's root is `head.root`: so the listing
/// comes from the log the gateway signed, and a draw the key made in that range cannot be
/// missing from it. Records past `head.size` (appended since) are not read.
pub fn audit_key(
    log: LogReader,
    head: &SignedTreeHead,
    key: &PublicKey,
    key_name_digest: &KeyNameDigest,
    serials: Range<u64>,
) -> Result<Vec<AuditEntry>, VerifyError> {
    let size = head.head.size;
    let records = log.take(usize::try_from(size).unwrap_or(usize::MAX)).map(|item| {
        item.map(|(_, signed)| signed).map_err(|e| VerifyError::LogMismatch(e.to_string()))
    });
    audit(records, head, key, key_name_digest, serials)
}

/// [`audit_key`] over signed receipts' bytes listed in serial order from 0 (as the gateway's
/// `ListReceipts` pages give them) instead of a copy of the log: the same checks (every
/// signature, serials dense from 0, the recomputed root is the head's), the same listing.
pub fn audit_listing<I>(
    listing: I,
    head: &SignedTreeHead,
    key: &PublicKey,
    key_name_digest: &KeyNameDigest,
    serials: Range<u64>,
) -> Result<Vec<AuditEntry>, VerifyError>
where
    I: IntoIterator<Item = Vec<u8>>,
{
    let size = usize::try_from(head.head.size).unwrap_or(usize::MAX);
    let records = listing
        .into_iter()
        .take(size)
        .map(|bytes| SignedReceipt::from_bytes(&bytes).map_err(VerifyError::from));
    audit(records, head, key, key_name_digest, serials)
}

/// The audit's core: `records` are leaves 0, 1, ... of the log `head` commits to.
fn audit(
    records: impl Iterator<Item = Result<SignedReceipt, VerifyError>>,
    head: &SignedTreeHead,
    key: &PublicKey,
    key_name_digest: &KeyNameDigest,
    serials: Range<u64>,
) -> Result<Vec<AuditEntry>, VerifyError> {
    let head = head.verify(key)?;
    let mut tree = MemoryTree::default();
    let mut listed = Vec::new();
    for (index, signed) in records.enumerate() {
        let signed = signed?;
        let serial = index as u64;
        verify_receipt(&signed, key)?;
        if signed.receipt.serial != serial {
            return Err(VerifyError::LogMismatch(format!(
                "leaf {serial} holds the receipt with serial {}",
                signed.receipt.serial
            )));
        }
        tree.leaves.push(merkle::leaf_hash(&signed.to_bytes()));
        if signed.receipt.key_name_digest == *key_name_digest && serials.contains(&serial) {
            listed.push(AuditEntry { serial, receipt: signed });
        }
    }
    let read = tree.leaves.len() as u64;
    if read != head.size {
        return Err(VerifyError::LogMismatch(format!(
            "the log holds {read} receipts; the head commits to {}",
            head.size
        )));
    }
    let root = merkle::root(&tree, head.size).unwrap_or_else(|e| match e {});
    if root != head.root {
        return Err(VerifyError::LogMismatch("the log's root is not the head's".into()));
    }
    Ok(listed)
}
