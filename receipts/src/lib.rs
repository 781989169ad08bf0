//! Verifiable draws: signed receipts, an append-only log of them, and the offline verifier
//! (issue 32). A library with no transport code: the gateway wires it in, the CLI and auditors
//! verify with it. The encodings are specified in docs/receipts.md, with test vectors in
//! `receipts/testdata/vectors.json`.
//!
//! Layout, one concept per file:
//! - `encoding`: the canonical binary encoding's primitives;
//! - `receipt`: the receipt, its fields (the proto's provenance vocabulary) and canonical bytes;
//! - `commitment`: the salted commitment to the served values (never the values themselves);
//! - `signing`: the Ed25519 key, its file formats and its key id;
//! - `merkle`: RFC 9162 tree hashing, inclusion and consistency proofs and their verification;
//! - `head`: signed tree heads;
//! - `record`: the log file's framing, torn-tail rules, and a read-only reader for auditors;
//! - `log`: the crash-safe append-only log (fsync policy, serials, proofs from disk);
//! - `verify`: the offline checks and the audit listing of one key's draws;
//! - `error`: the error enums.

pub mod commitment;
pub mod encoding;
pub mod error;
pub mod head;
pub mod log;
pub mod merkle;
pub mod receipt;
pub mod record;
pub mod signing;
pub mod verify;

pub use commitment::{Commitment, Salt, ServedValues};
pub use error::{DecodeError, InvalidField, KeyError, LogError, SignError, VerifyError};
pub use head::{SignedTreeHead, TreeHead};
pub use log::{Appended, LogConfig, ReceiptLog, Recovery, SyncPolicy};
pub use merkle::Hash;
pub use receipt::{
    ChunkRef, Construction, DrbgLabel, DrbgMechanism, KeyNameDigest, Provenance, Receipt, Request,
    Rpc, SignedReceipt, SourceKind,
};
pub use record::LogReader;
pub use signing::{KeyId, PublicKey, ReceiptSigner, Signature};
