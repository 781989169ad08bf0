//! The crate's errors, one enum per boundary: decoding bytes, checking evidence, loading keys,
//! and the on-disk log. Each variant names what was wrong; none carries a key or a value.

use std::path::PathBuf;

/// Bytes that are not the canonical encoding of the expected structure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes end inside a field.
    #[error("truncated: the bytes end inside `{field}`")]
    Truncated {
        /// The field being read.
        field: &'static str,
    },
    /// The domain tag is not the one this structure starts with.
    #[error("wrong domain tag: expected \"{expected}\"")]
    WrongTag {
        /// The tag expected.
        expected: &'static str,
    },
    /// A value outside the field's closed set (an enum, a boolean).
    #[error("`{field}` has the value {value}, which no encoder writes")]
    BadValue {
        /// The field.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// A string or list length outside its field's bounds.
    #[error("`{field}` has length {len}, outside {min}..={max}")]
    Length {
        /// The field.
        field: &'static str,
        /// The length found.
        len: usize,
        /// The smallest length allowed.
        min: usize,
        /// The largest length allowed.
        max: usize,
    },
    /// A string that is not UTF-8.
    #[error("`{field}` is not UTF-8")]
    NotUtf8 {
        /// The field.
        field: &'static str,
    },
    /// A set that is not in strictly ascending order (so it has one encoding only).
    #[error("`{field}` is not strictly ascending")]
    NotAscending {
        /// The field.
        field: &'static str,
    },
    /// Bytes after the last field.
    #[error("{count} bytes after the last field")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
}

/// A field value that a receipt cannot hold (caught when the receipt is built or decoded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {problem}")]
pub struct InvalidField {
    /// The field.
    pub field: &'static str,
    /// What is wrong, with the bound.
    pub problem: String,
}

/// Evidence that does not check out. Every variant means: do not trust this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The bytes do not decode.
    #[error("malformed: {0}")]
    Malformed(#[from] DecodeError),
    /// Signed under another key than the one given.
    #[error("key id mismatch: signed under another key than the one given")]
    WrongKey,
    /// The Ed25519 signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// The values and salt do not open the commitment.
    #[error("the values and salt do not open the receipt's commitment")]
    CommitmentMismatch,
    /// An inclusion or consistency proof does not verify.
    #[error("proof does not verify: {0}")]
    BadProof(&'static str),
    /// The receipt's serial is not the leaf index the proof is for.
    #[error("the receipt's serial {serial} is not the proof's leaf index {index}")]
    SerialNotIndex {
        /// The receipt's serial.
        serial: u64,
        /// The proof's leaf index.
        index: u64,
    },
    /// A log read for an audit is not the log a signed head commits to.
    #[error("log does not match: {0}")]
    LogMismatch(String),
}

/// A signing or public key that cannot be loaded or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file's contents are not a key of the expected form.
    #[error("{path}: {problem}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A secret key file that others than its owner may read.
    #[error("{path}: mode {mode:o} lets group or others read the signing key; chmod 600 it")]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// A signing request the signer refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The receipt names another key id than the signer's.
    #[error("the receipt names key id {receipt} but the signer's is {signer}")]
    KeyIdMismatch {
        /// The receipt's key id (hex).
        receipt: String,
        /// The signer's key id (hex).
        signer: String,
    },
    /// The receipt's fields break a bound.
    #[error("invalid receipt: {0}")]
    Invalid(#[from] InvalidField),
}

/// The on-disk log failed.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A file operation failed. After a failed write or fsync the log refuses further appends
    /// (see [`LogError::Failed`]): reopen it, which truncates whatever was half written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Another process (or another handle in this one) holds the log.
    #[error("{0}: locked by another process; one writer per log")]
    Locked(PathBuf),
    /// The log's bytes are damaged somewhere other than a torn tail.
    #[error("{path}: corrupt at byte {offset}: {problem}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// What.
        problem: String,
    },
    /// An earlier write or fsync failed, so what is on disk past the last acknowledged receipt is
    /// unknown; nothing more is appended until the log is reopened.
    #[error("an earlier write or fsync failed; reopen the log")]
    Failed,
    /// The receipt handed to the log is not the one for the serial it was given.
    #[error("the receipt's serial {got} is not the serial {expected} the log assigned")]
    WrongSerial {
        /// The serial the log assigned.
        expected: u64,
        /// The receipt's.
        got: u64,
    },
    /// Signing the receipt failed (nothing was appended).
    #[error("signing: {0}")]
    Sign(#[from] SignError),
    /// A proof or head was asked for a size the log does not have (yet).
    #[error("asked for {what} {asked}, but the log has {size} acknowledged receipts")]
    OutOfRange {
        /// What was asked for.
        what: &'static str,
        /// The value asked.
        asked: u64,
        /// The log's acknowledged size.
        size: u64,
    },
}
