//! entropy-receipts' integration tests, one binary: known Merkle vectors, end-to-end
//! verification and tampering, the kill -9 crash test, the no-value scan, and the spec's vectors.

// Test code: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ct_vectors;
mod end_to_end;
mod kill9;
mod listing;
mod no_values;
mod vectors;

use entropy_receipts::{
    ChunkRef, Commitment, Construction, KeyNameDigest, Provenance, Receipt, ReceiptSigner, Request,
    Rpc, SourceKind,
};

/// A receipt for `serial` by `key_name`, committing to `commitment`, signed-to-be by `signer`.
pub fn receipt(
    signer: &ReceiptSigner,
    serial: u64,
    key_name: &str,
    rpc: Rpc,
    commitment: Commitment,
) -> Receipt {
    Receipt {
        serial,
        issued_at_unix_ms: 1_795_000_000_000 + serial as i64,
        gateway_id: "gw-test".into(),
        key_name_digest: KeyNameDigest::of(key_name),
        request: Request { rpc, accept_kinds: vec![SourceKind::Quantum] },
        provenance: Provenance {
            kinds: vec![SourceKind::Quantum],
            mixed: false,
            collector_ids: vec!["col-a".into()],
            first_chunk: chunk(10),
            last_chunk: chunk(11),
            chunk_count: 2,
            oldest_byte_age_ms: 250,
            construction: Construction::Raw,
        },
        commitment,
        key_id: signer.key_id(),
    }
}

/// A chunk of collector "col-a" in run 1.
pub fn chunk(sequence: u64) -> ChunkRef {
    ChunkRef {
        collector_id: "col-a".into(),
        epoch: 1,
        sequence,
        signed_at_unix_ms: 1_794_999_990_000 + sequence as i64,
    }
}
