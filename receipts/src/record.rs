//! The log file's framing, and reading it back: what `log.rs` recovers from at open and what an
//! auditor reads a copy of (with [`LogReader`], read-only).
//!
//! `receipts.log` is an 8-byte header ("EDRLOG", 0x00, version 0x01) and then records, each
//! `u32 length || u32 crc32c || payload`, big-endian, where the payload is one signed receipt's
//! bytes (`SignedReceipt::to_bytes`, the leaf's data) and the checksum is CRC-32C over the length's
//! four bytes and the payload. Record i is leaf i, and its receipt's serial is i.
//!
//! What a crash can leave: appends only ever add bytes at the end, one `write` per record, so a
//! crash damages at most the records written after the last completed fsync: a partial record
//! (its length runs past the end of the file), or, after a power loss, a record whose bytes did
//! not all reach the disk (checksum mismatch). Both are a *torn tail*: the scanner stops there
//! and the writer truncates it. Damage anywhere else (a record that fails its checksum with a good
//! record after it, or a checksummed record that does not decode) is *corruption*: the log refuses
//! to open, because truncating would throw acknowledged receipts away.

use std::fs::File;
use std::io::{BufReader, Read, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::LogError;
use crate::receipt::SignedReceipt;

/// The first 8 bytes of `receipts.log`.
pub const MAGIC: &[u8; 8] = b"EDRLOG\x00\x01";
/// The header's length.
pub const HEADER_LEN: u64 = MAGIC.len() as u64;
/// The largest payload a record may have (a signed receipt is a few hundred bytes; its bounds
/// keep it under 6 KiB).
pub const MAX_RECORD_LEN: u32 = 64 * 1024;
/// Bytes before a record's payload.
pub const FRAME_LEN: u64 = 8;
/// The log file's name in its directory.
pub const LOG_FILE: &str = "receipts.log";

/// The record for `payload` (at most [`MAX_RECORD_LEN`] bytes: the caller checks).
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX).to_be_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&len), payload);
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// One step of a scan.
#[derive(Debug)]
pub enum Step {
    /// A whole, checksummed record.
    Record {
        /// Its first byte's offset.
        offset: u64,
        /// Its payload.
        payload: Vec<u8>,
    },
    /// The end of the file, after a whole record.
    End,
    /// A torn tail starting at `offset` (everything from there to the end of the file).
    Torn {
        /// Where the tail starts.
        offset: u64,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Damage that is not a torn tail.
    Corrupt {
        /// Where.
        offset: u64,
        /// What.
        why: String,
    },
}

/// Reads records front to back (after the header).
pub struct Scanner {
    r: BufReader<File>,
    offset: u64,
    file_len: u64,
}

impl Scanner {
    /// Checks the header of `file` (of length `file_len`) and starts after it.
    pub fn new(mut file: File, file_len: u64, path: &Path) -> Result<Self, LogError> {
        // A cloned handle shares its file position with the original: start from the top.
        file.seek(SeekFrom::Start(0))
            .map_err(|source| LogError::Io { path: path.to_owned(), source })?;
        let mut r = BufReader::with_capacity(1 << 20, file);
        let mut magic = [0u8; 8];
        if file_len < HEADER_LEN || r.read_exact(&mut magic).is_err() || &magic != MAGIC {
            return Err(LogError::Corrupt {
                path: path.to_owned(),
                offset: 0,
                problem: "not a receipt log (bad header)".into(),
            });
        }
        Ok(Self { r, offset: HEADER_LEN, file_len })
    }

    /// The next step. I/O errors are the caller's to report.
    pub fn next_step(&mut self) -> std::io::Result<Step> {
        let offset = self.offset;
        let remaining = self.file_len - offset;
        if remaining == 0 {
            return Ok(Step::End);
        }
        if remaining < FRAME_LEN {
            return Ok(Step::Torn { offset, why: "a partial record header" });
        }
        let (len, crc) = self.read_frame()?;
        if len == 0 || len > MAX_RECORD_LEN {
            // A length no writer writes: garbage at the tail, or a flipped bit we cannot step
            // over (no way to find the next record), so treated as the tail.
            return Ok(Step::Torn { offset, why: "a record length out of bounds" });
        }
        if remaining - FRAME_LEN < u64::from(len) {
            return Ok(Step::Torn { offset, why: "a record that runs past the end of the file" });
        }
        let payload = self.read_payload(len)?;
        if checksum(len, &payload) != crc {
            // A good record right after this one means the damage is not at the tail.
            let next = offset + FRAME_LEN + u64::from(len);
            self.offset = next;
            if self.file_len - next >= FRAME_LEN {
                let (len2, crc2) = self.read_frame()?;
                if len2 > 0
                    && len2 <= MAX_RECORD_LEN
                    && self.file_len - next - FRAME_LEN >= u64::from(len2)
                    && checksum(len2, &self.read_payload(len2)?) == crc2
                {
                    return Ok(Step::Corrupt {
                        offset,
                        why: "a record fails its checksum and a good record follows".into(),
                    });
                }
            }
            return Ok(Step::Torn { offset, why: "a record that fails its checksum" });
        }
        self.offset = offset + FRAME_LEN + u64::from(len);
        Ok(Step::Record { offset, payload })
    }

    fn read_frame(&mut self) -> std::io::Result<(u32, u32)> {
        let mut h = [0u8; 8];
        self.r.read_exact(&mut h)?;
        Ok((
            u32::from_be_bytes([h[0], h[1], h[2], h[3]]),
            u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
        ))
    }

    fn read_payload(&mut self, len: u32) -> std::io::Result<Vec<u8>> {
        let mut payload = vec![0u8; len as usize];
        self.r.read_exact(&mut payload)?;
        Ok(payload)
    }
}

/// The CRC-32C of a record: over its length's 4 bytes and its payload.
pub(crate) fn checksum(len: u32, payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&len.to_be_bytes()), payload)
}

/// Decodes a record's payload as the receipt for leaf `index`: a checksummed record that does
/// not decode, or whose serial is not its index, is corruption.
pub fn receipt_at(
    path: &Path,
    offset: u64,
    index: u64,
    payload: &[u8],
) -> Result<SignedReceipt, LogError> {
    let corrupt = |problem: String| LogError::Corrupt { path: path.to_owned(), offset, problem };
    let signed =
        SignedReceipt::from_bytes(payload).map_err(|e| corrupt(format!("record {index}: {e}")))?;
    if signed.receipt.serial != index {
        return Err(corrupt(format!(
            "record {index} holds serial {}; serials are leaf indexes",
            signed.receipt.serial
        )));
    }
    Ok(signed)
}

/// A read-only pass over a log directory's receipts, for auditors and tools: no lock taken,
/// nothing truncated. A torn tail ends the pass (see [`LogReader::torn_tail`]).
pub struct LogReader {
    path: PathBuf,
    scanner: Scanner,
    index: u64,
    torn: Option<u64>,
    done: bool,
}

impl LogReader {
    /// Opens `dir/receipts.log`.
    pub fn open(dir: &Path) -> Result<Self, LogError> {
        let path = dir.join(LOG_FILE);
        let io = |source| LogError::Io { path: path.clone(), source };
        let file = File::open(&path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let scanner = Scanner::new(file, len, &path)?;
        Ok(Self { path, scanner, index: 0, torn: None, done: false })
    }

    /// Where a torn tail started, once the pass has reached it (a log being written, or one
    /// copied after a crash, may end in one: it holds no acknowledged receipt).
    pub fn torn_tail(&self) -> Option<u64> {
        self.torn
    }
}

impl Iterator for LogReader {
    type Item = Result<(u64, SignedReceipt), LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = match self.scanner.next_step() {
            Ok(s) => s,
            Err(source) => {
                self.done = true;
                return Some(Err(LogError::Io { path: self.path.clone(), source }));
            }
        };
        match step {
            Step::Record { offset, payload } => {
                let index = self.index;
                self.index += 1;
                let r = receipt_at(&self.path, offset, index, &payload).map(|s| (index, s));
                if r.is_err() {
                    self.done = true;
                }
                Some(r)
            }
            Step::End => {
                self.done = true;
                None
            }
            Step::Torn { offset, .. } => {
                self.done = true;
                self.torn = Some(offset);
                None
            }
            Step::Corrupt { offset, why } => {
                self.done = true;
                Some(Err(LogError::Corrupt { path: self.path.clone(), offset, problem: why }))
            }
        }
    }
}
