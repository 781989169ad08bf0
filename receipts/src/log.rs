//! The append-only receipt log on disk: an RFC 9162 Merkle tree whose leaves are signed receipts,
//! crash-safe, with signed tree heads and the proofs an auditor asks for.
//!
//! Files in the log's directory:
//! - `receipts.log`, the truth: the records (framing and torn-tail rules in `record.rs`);
//! - `leaves.bin`, the leaf hashes (32 bytes each, in order), derived from `receipts.log` and
//!   checked against it (and repaired) at every open, so it is never fsynced.
//!
//! **Serials.** A receipt's serial is its leaf index, assigned under the log's lock: the next
//! serial is always the number of records in `receipts.log`. A receipt is *acknowledged* when
//! [`ReceiptLog::append_with`] returns it, which is after the fsync that made it durable; only
//! then may the gateway hand it (and the draw) to the caller. So no acknowledged receipt is ever
//! lost, and no acknowledged serial is ever given to another receipt (the log has at least
//! serial + 1 records from then on). A receipt that was written but not yet acknowledged when
//! the process died either survives (its bytes reached the file) or is cut off as a torn tail;
//! in that second case its serial goes to the next receipt, which is sound because nobody ever
//! saw the first one: it never left the process.
//!
//! **Fsync policy** ([`SyncPolicy`]): `EveryAppend` writes the record and calls `fdatasync`
//! under the lock, one fsync per receipt. `Group` is group commit: each append writes its record
//! under the lock and then waits until an fsync that started after its write has finished; the
//! first waiter with no fsync in flight runs one (outside the lock) for every record written so
//! far, and the others ride on it. Both acknowledge a receipt only after its fsync: they differ
//! in throughput with concurrent appenders, not in what is promised. A failed write or fsync
//! fails the log ([`LogError::Failed`]) until it is reopened: after a failed fsync the page
//! cache's state is unknown, so retrying could acknowledge bytes that are not on disk.
//!
//! **Proofs.** Leaf hashes live in `leaves.bin`; in memory the log keeps every perfect subtree
//! of 2^6 = 64 leaves or more (about one byte per receipt) and the leaves of the last
//! incomplete group of 64. A perfect subtree below 64 leaves is hashed from at most 64 leaf
//! hashes read from `leaves.bin`, so a proof costs O(log n) small reads. Heads and proofs only
//! cover acknowledged receipts.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{InvalidField, LogError, SignError};
use crate::head::{SignedTreeHead, TreeHead};
use crate::merkle::{self, Hash, Subtrees};
use crate::receipt::SignedReceipt;
use crate::record::{self, FRAME_LEN, HEADER_LEN, LOG_FILE, MAGIC, MAX_RECORD_LEN, Scanner, Step};
use crate::signing::{KeyId, ReceiptSigner};

/// The leaf hash file's name.
pub const LEAVES_FILE: &str = "leaves.bin";
/// Perfect subtrees of 2^CACHE_LEVEL leaves and more are kept in memory.
const CACHE_LEVEL: u32 = 6;
const GROUP: usize = 1 << CACHE_LEVEL;

/// When an append is made durable before it is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// One `fdatasync` per append, under the log's lock.
    EveryAppend,
    /// Group commit: concurrent appends share one `fdatasync`; each is acknowledged after an
    /// fsync that covers it.
    Group,
}

/// How to open a log.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// The log's directory (created if missing).
    pub dir: PathBuf,
    /// The fsync policy.
    pub sync: SyncPolicy,
}

/// What opening found and repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// Receipts in the log.
    pub receipts: u64,
    /// Bytes of a torn tail cut off `receipts.log` (0: none).
    pub truncated_bytes: u64,
    /// Leaf hashes rewritten in `leaves.bin` (missing or not matching `receipts.log`).
    pub leaves_rewritten: u64,
}

/// An acknowledged append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The receipt's serial, which is its leaf index.
    pub serial: u64,
    /// Its leaf hash.
    pub leaf_hash: Hash,
    /// The signed receipt, for the caller.
    pub receipt: SignedReceipt,
}

/// The writer of one log directory. One per directory (an exclusive lock on `receipts.log`).
pub struct ReceiptLog {
    dir: PathBuf,
    policy: SyncPolicy,
    state: Mutex<State>,
    synced_cv: Condvar,
    /// A second handle on `receipts.log` for group commit's fsync outside the lock.
    sync_handle: File,
    /// A handle on `leaves.bin` for positioned reads.
    leaves_reader: File,
}

struct State {
    log: File,
    leaves: File,
    /// Records written to `receipts.log` (the next serial).
    written: u64,
    /// Records known durable: acknowledged or about to be.
    synced: u64,
    syncing: bool,
    failed: bool,
    cache: NodeCache,
    /// The offset in `receipts.log` where the next record goes.
    end: u64,
    /// The offset of record `i * GROUP`, for each `i`: where a listing starts reading.
    checkpoints: Vec<u64>,
}

/// Perfect subtrees of `GROUP` leaves and more, and the leaves after the last full group.
#[derive(Debug, Default)]
struct NodeCache {
    /// levels[j][i]: the perfect subtree of 2^(CACHE_LEVEL + j) leaves starting at i << that.
    levels: Vec<Vec<Hash>>,
    tail: Vec<Hash>,
}

impl NodeCache {
    fn push(&mut self, leaf: Hash) {
        self.tail.push(leaf);
        if self.tail.len() == GROUP {
            let node = merkle::perfect_of(&self.tail);
            self.tail.clear();
            self.push_node(0, node);
        }
    }

    fn push_node(&mut self, level: usize, node: Hash) {
        if self.levels.len() == level {
            self.levels.push(Vec::new());
        }
        let nodes = &mut self.levels[level];
        nodes.push(node);
        if nodes.len().is_multiple_of(2) {
            let parent = merkle::node_hash(&nodes[nodes.len() - 2], &nodes[nodes.len() - 1]);
            self.push_node(level + 1, parent);
        }
    }
}

/// The tree as the log holds it, for `merkle`'s proofs.
struct View<'a> {
    cache: &'a NodeCache,
    leaves: &'a File,
    written: u64,
}

impl Subtrees for View<'_> {
    type Error = std::io::Error;

    fn perfect(&self, start: u64, level: u32) -> std::io::Result<Hash> {
        if level >= CACHE_LEVEL {
            let j = (level - CACHE_LEVEL) as usize;
            return Ok(self.cache.levels[j][(start >> level) as usize]);
        }
        let count = 1usize << level;
        let tail_start = self.written - self.cache.tail.len() as u64;
        if start >= tail_start {
            let i = (start - tail_start) as usize;
            return Ok(merkle::perfect_of(&self.cache.tail[i..i + count]));
        }
        let mut buf = vec![0u8; count * 32];
        self.leaves.read_exact_at(&mut buf, start * 32)?;
        let leaves: Vec<Hash> = buf
            .chunks_exact(32)
            .map(|c| {
                let mut h = [0u8; 32];
                h.copy_from_slice(c);
                h
            })
            .collect();
        Ok(merkle::perfect_of(&leaves))
    }
}

impl ReceiptLog {
    /// Opens (or creates) the log in `config.dir`: takes its lock, checks every record, cuts off
    /// a torn tail, repairs `leaves.bin`, and rebuilds the subtree cache. Reads the whole log
    /// once (see bench/README.md, "Receipts", for the time per million receipts).
    pub fn open(config: &LogConfig) -> Result<(Self, Recovery), LogError> {
        let dir = &config.dir;
        let log_path = dir.join(LOG_FILE);
        let leaves_path = dir.join(LEAVES_FILE);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| LogError::Io { path: path.clone(), source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)
            .map_err(io(&log_path))?;
        match log.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(LogError::Locked(log_path)),
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&log_path)(e)),
        }
        let mut len = log.metadata().map_err(io(&log_path))?.len();
        if len == 0 {
            log.write_all(MAGIC).map_err(io(&log_path))?;
            log.sync_all().map_err(io(&log_path))?;
            File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
            len = HEADER_LEN;
        }

        let mut leaves = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&leaves_path)
            .map_err(io(&leaves_path))?;
        let leaves_len = leaves.metadata().map_err(io(&leaves_path))?.len();
        let stored_leaves = leaves_len / 32;
        let mut stored = std::io::BufReader::with_capacity(1 << 16, &leaves);

        let scan_handle = log.try_clone().map_err(io(&log_path))?;
        let mut scanner = Scanner::new(scan_handle, len, &log_path)?;
        let mut cache = NodeCache::default();
        let mut checkpoints = Vec::new();
        let mut count = 0u64;
        let mut rewrite_from: Option<u64> = None;
        let mut rewrite: Vec<Hash> = Vec::new();
        let end = loop {
            match scanner.next_step().map_err(io(&log_path))? {
                Step::Record { offset, payload } => {
                    record::receipt_at(&log_path, offset, count, &payload)?;
                    if count.is_multiple_of(GROUP as u64) {
                        checkpoints.push(offset);
                    }
                    let leaf = merkle::leaf_hash(&payload);
                    if rewrite_from.is_none() {
                        let mut h = [0u8; 32];
                        let matches =
                            count < stored_leaves && stored.read_exact(&mut h).is_ok() && h == leaf;
                        if !matches {
                            rewrite_from = Some(count);
                        }
                    }
                    if rewrite_from.is_some() {
                        rewrite.push(leaf);
                    }
                    cache.push(leaf);
                    count += 1;
                }
                Step::End => break len,
                Step::Torn { offset, .. } => break offset,
                Step::Corrupt { offset, why } => {
                    return Err(LogError::Corrupt { path: log_path, offset, problem: why });
                }
            }
        };
        drop(stored);

        let truncated_bytes = len - end;
        if truncated_bytes > 0 {
            log.set_len(end).map_err(io(&log_path))?;
            log.sync_all().map_err(io(&log_path))?;
        }
        log.seek(SeekFrom::Start(end)).map_err(io(&log_path))?;

        let keep = rewrite_from.unwrap_or(count);
        if leaves_len != count * 32 || rewrite_from.is_some() {
            leaves.set_len(keep * 32).map_err(io(&leaves_path))?;
            leaves.seek(SeekFrom::Start(keep * 32)).map_err(io(&leaves_path))?;
            leaves.write_all(rewrite.as_flattened()).map_err(io(&leaves_path))?;
        } else {
            leaves.seek(SeekFrom::End(0)).map_err(io(&leaves_path))?;
        }

        let sync_handle = log.try_clone().map_err(io(&log_path))?;
        let leaves_reader = leaves.try_clone().map_err(io(&leaves_path))?;
        let recovery =
            Recovery { receipts: count, truncated_bytes, leaves_rewritten: rewrite.len() as u64 };
        let state = State {
            log,
            leaves,
            written: count,
            synced: count,
            syncing: false,
            failed: false,
            cache,
            end,
            checkpoints,
        };
        Ok((
            Self {
                dir: dir.clone(),
                policy: config.sync,
                state: Mutex::new(state),
                synced_cv: Condvar::new(),
                sync_handle,
                leaves_reader,
            },
            recovery,
        ))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves at worst a written, unacknowledged record: the
        // same as a crash, which reopening handles. So a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(LOG_FILE)
    }

    /// Appends one receipt. `sign` gets the serial the log assigns and returns the receipt with
    /// that serial, signed (it runs under the log's lock, so serials are dense and in order).
    /// Returns once the receipt is durable under the policy: only then may it be served.
    pub fn append_with<F>(&self, sign: F) -> Result<Appended, LogError>
    where
        F: FnOnce(u64) -> Result<SignedReceipt, SignError>,
    {
        let mut st = self.lock();
        if st.failed {
            return Err(LogError::Failed);
        }
        let serial = st.written;
        let signed = sign(serial)?;
        if signed.receipt.serial != serial {
            return Err(LogError::WrongSerial { expected: serial, got: signed.receipt.serial });
        }
        let payload = signed.to_bytes();
        if payload.len() > MAX_RECORD_LEN as usize {
            return Err(LogError::Sign(SignError::Invalid(InvalidField {
                field: "receipt",
                problem: format!("encodes to {} bytes, above {MAX_RECORD_LEN}", payload.len()),
            })));
        }
        let leaf_hash = merkle::leaf_hash(&payload);
        let framed = record::frame(&payload);
        let offset = st.end;
        if let Err(source) = st.log.write_all(&framed) {
            st.failed = true;
            return Err(LogError::Io { path: self.log_path(), source });
        }
        if let Err(source) = st.leaves.write_all(&leaf_hash) {
            st.failed = true;
            return Err(LogError::Io { path: self.dir.join(LEAVES_FILE), source });
        }
        if st.written.is_multiple_of(GROUP as u64) {
            st.checkpoints.push(offset);
        }
        st.end += framed.len() as u64;
        st.written += 1;
        st.cache.push(leaf_hash);

        match self.policy {
            SyncPolicy::EveryAppend => {
                if let Err(source) = st.log.sync_data() {
                    st.failed = true;
                    return Err(LogError::Io { path: self.log_path(), source });
                }
                st.synced = st.written;
            }
            SyncPolicy::Group => {
                while st.synced <= serial {
                    if st.failed {
                        return Err(LogError::Failed);
                    }
                    if st.syncing {
                        st = self
                            .synced_cv
                            .wait(st)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        continue;
                    }
                    st.syncing = true;
                    let target = st.written;
                    drop(st);
                    let result = self.sync_handle.sync_data();
                    st = self.lock();
                    st.syncing = false;
                    match result {
                        Ok(()) => st.synced = st.synced.max(target),
                        Err(source) => {
                            st.failed = true;
                            self.synced_cv.notify_all();
                            return Err(LogError::Io { path: self.log_path(), source });
                        }
                    }
                    self.synced_cv.notify_all();
                }
            }
        }
        Ok(Appended { serial, leaf_hash, receipt: signed })
    }

    /// Whether an append can be tried now: `Err(LogError::Failed)` once a write or an fsync
    /// has failed (until the log is reopened). A caller checks this before it draws, so that
    /// a draw whose receipt cannot be written is refused before anything is consumed; an
    /// append can still fail after the check (an I/O error in between).
    pub fn check_writable(&self) -> Result<(), LogError> {
        if self.lock().failed { Err(LogError::Failed) } else { Ok(()) }
    }

    /// The signed receipts' bytes from serial `start` on, in order: at most `max_count` of
    /// them, and no more once `max_bytes` are listed (at least one, when there is one), never
    /// past `size` (at most the acknowledged receipts). Each record's checksum is checked.
    /// Reads at most `GROUP - 1` records before `start` (from the nearest checkpoint).
    pub fn read_signed(
        &self,
        start: u64,
        size: u64,
        (max_count, max_bytes): (usize, usize),
    ) -> Result<Vec<Vec<u8>>, LogError> {
        let st = self.lock();
        Self::check_size("tree size", size, st.synced)?;
        Self::check_size("start serial", start, size)?;
        if start == size {
            return Ok(Vec::new());
        }
        let group = start / GROUP as u64;
        let mut offset = st.checkpoints[usize::try_from(group).unwrap_or(usize::MAX)];
        drop(st);
        let path = self.log_path();
        let io = |source| LogError::Io { path: path.clone(), source };
        let corrupt = |offset, problem| LogError::Corrupt { path: path.clone(), offset, problem };
        let mut out = Vec::new();
        let mut listed = 0usize;
        let mut index = group * GROUP as u64;
        while index < size && out.len() < max_count {
            let mut frame = [0u8; FRAME_LEN as usize];
            self.sync_handle.read_exact_at(&mut frame, offset).map_err(io)?;
            let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let crc = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
            if len > MAX_RECORD_LEN {
                return Err(corrupt(offset, format!("record {index}: length {len}")));
            }
            let next = offset + FRAME_LEN + u64::from(len);
            if index >= start {
                if !out.is_empty() && listed + len as usize > max_bytes {
                    break;
                }
                let mut payload = vec![0u8; len as usize];
                self.sync_handle.read_exact_at(&mut payload, offset + FRAME_LEN).map_err(io)?;
                if record::checksum(len, &payload) != crc {
                    return Err(corrupt(offset, format!("record {index}: checksum mismatch")));
                }
                listed += payload.len();
                out.push(payload);
            }
            offset = next;
            index += 1;
        }
        Ok(out)
    }

    /// Acknowledged receipts.
    pub fn size(&self) -> u64 {
        self.lock().synced
    }

    fn view<'a>(&'a self, st: &'a State) -> View<'a> {
        View { cache: &st.cache, leaves: &self.leaves_reader, written: st.written }
    }

    fn check_size(what: &'static str, asked: u64, size: u64) -> Result<(), LogError> {
        if asked > size { Err(LogError::OutOfRange { what, asked, size }) } else { Ok(()) }
    }

    fn leaves_io(&self) -> impl Fn(std::io::Error) -> LogError + '_ {
        move |source| LogError::Io { path: self.dir.join(LEAVES_FILE), source }
    }

    /// The root of the first `size` acknowledged receipts.
    pub fn root(&self, size: u64) -> Result<Hash, LogError> {
        let st = self.lock();
        Self::check_size("tree size", size, st.synced)?;
        merkle::root(&self.view(&st), size).map_err(self.leaves_io())
    }

    /// A signed head of the whole acknowledged log, timestamped `now_unix_ms`.
    pub fn signed_head(
        &self,
        signer: &ReceiptSigner,
        now_unix_ms: i64,
    ) -> Result<SignedTreeHead, LogError> {
        let st = self.lock();
        let size = st.synced;
        let root = merkle::root(&self.view(&st), size).map_err(self.leaves_io())?;
        drop(st);
        Ok(TreeHead { size, root, timestamp_unix_ms: now_unix_ms, key_id: KeyId([0; 32]) }
            .sign(signer))
    }

    /// The inclusion proof of leaf `index` in the tree of the first `size` receipts.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, LogError> {
        let st = self.lock();
        Self::check_size("tree size", size, st.synced)?;
        if index >= size {
            return Err(LogError::OutOfRange { what: "leaf index", asked: index, size });
        }
        merkle::inclusion_proof(&self.view(&st), index, size).map_err(self.leaves_io())
    }

    /// The consistency proof between the trees of the first `old` and `new` receipts.
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>, LogError> {
        let st = self.lock();
        Self::check_size("tree size", new, st.synced)?;
        Self::check_size("old tree size", old, new)?;
        merkle::consistency_proof(&self.view(&st), old, new).map_err(self.leaves_io())
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Bytes of `receipts.log` per record of a `payload_len`-byte signed receipt, and of
/// `leaves.bin`: what one receipt costs on disk.
pub const fn bytes_per_receipt(payload_len: u64) -> u64 {
    FRAME_LEN + payload_len + 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::MemoryTree;
    use crate::receipt::tests::sample;

    fn ok<T>(r: Result<T, std::convert::Infallible>) -> T {
        r.unwrap_or_else(|e| match e {})
    }

    fn signer() -> ReceiptSigner {
        ReceiptSigner::from_seed(&[5; 32])
    }

    fn append(log: &ReceiptLog, s: &ReceiptSigner) -> Appended {
        log.append_with(|serial| {
            let mut r = sample(serial);
            r.key_id = s.key_id();
            s.sign(r)
        })
        .unwrap()
    }

    fn open(dir: &Path, sync: SyncPolicy) -> (ReceiptLog, Recovery) {
        ReceiptLog::open(&LogConfig { dir: dir.to_owned(), sync }).unwrap()
    }

    #[test]
    fn proofs_match_the_reference_tree_across_cache_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path(), SyncPolicy::Group);
        let s = signer();
        let mut mem = MemoryTree::default();
        for _ in 0..300 {
            mem.leaves.push(append(&log, &s).leaf_hash);
        }
        for n in [1u64, 2, 63, 64, 65, 127, 128, 129, 200, 256, 299, 300] {
            assert_eq!(log.root(n).unwrap(), ok(merkle::root(&mem, n)), "root {n}");
            for m in [0, n / 3, n / 2, n - 1] {
                assert_eq!(
                    log.inclusion_proof(m, n).unwrap(),
                    ok(merkle::inclusion_proof(&mem, m, n))
                );
                assert_eq!(
                    log.consistency_proof(m, n).unwrap(),
                    ok(merkle::consistency_proof(&mem, m, n))
                );
            }
        }
        assert!(matches!(log.root(301), Err(LogError::OutOfRange { .. })));
        assert!(matches!(log.inclusion_proof(5, 5), Err(LogError::OutOfRange { .. })));

        // Reopened: the same tree, from disk.
        drop(log);
        let (log, rec) = open(dir.path(), SyncPolicy::EveryAppend);
        assert_eq!(rec, Recovery { receipts: 300, truncated_bytes: 0, leaves_rewritten: 0 });
        assert_eq!(log.root(300).unwrap(), ok(merkle::root(&mem, 300)));
        assert_eq!(log.inclusion_proof(7, 300).unwrap(), ok(merkle::inclusion_proof(&mem, 7, 300)));
        assert_eq!(append(&log, &s).serial, 300);
    }

    #[test]
    fn one_writer_per_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (_log, _) = open(dir.path(), SyncPolicy::Group);
        assert!(matches!(
            ReceiptLog::open(&LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::Group }),
            Err(LogError::Locked(_))
        ));
    }

    #[test]
    fn a_receipt_for_another_serial_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path(), SyncPolicy::EveryAppend);
        let s = signer();
        let err = log
            .append_with(|serial| {
                let mut r = sample(serial + 1);
                r.key_id = s.key_id();
                s.sign(r)
            })
            .unwrap_err();
        assert!(matches!(err, LogError::WrongSerial { expected: 0, got: 1 }));
        assert!(matches!(log.append_with(|_| s.sign(sample(0))), Err(LogError::Sign(_))));
        assert_eq!(log.size(), 0);
        assert_eq!(append(&log, &s).serial, 0);
    }

    #[test]
    fn torn_tails_are_cut_and_leaves_repaired_but_corruption_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = signer();
        {
            let (log, _) = open(dir.path(), SyncPolicy::EveryAppend);
            for _ in 0..5 {
                append(&log, &s);
            }
        }
        let log_path = dir.path().join(LOG_FILE);
        let leaves_path = dir.path().join(LEAVES_FILE);
        let full = std::fs::read(&log_path).unwrap();
        let record_len = (full.len() as u64 - HEADER_LEN) / 5;

        // Half a record at the end, and a leaves file missing its last two entries.
        let mut torn = full.clone();
        torn.extend_from_slice(&full[HEADER_LEN as usize..][..(record_len / 2) as usize]);
        std::fs::write(&log_path, &torn).unwrap();
        let leaves = std::fs::read(&leaves_path).unwrap();
        std::fs::write(&leaves_path, &leaves[..3 * 32 + 7]).unwrap();
        let (log, rec) = open(dir.path(), SyncPolicy::EveryAppend);
        assert_eq!(rec.receipts, 5);
        assert_eq!(rec.truncated_bytes, record_len / 2);
        assert_eq!(rec.leaves_rewritten, 2);
        assert_eq!(std::fs::read(&log_path).unwrap(), full);
        assert_eq!(std::fs::read(&leaves_path).unwrap(), leaves);
        drop(log);

        // The last record's checksum broken: a torn tail (it held no acknowledged receipt).
        let mut bad_last = full.clone();
        let n = bad_last.len();
        bad_last[n - 1] ^= 1;
        std::fs::write(&log_path, &bad_last).unwrap();
        let (log, rec) = open(dir.path(), SyncPolicy::EveryAppend);
        assert_eq!((rec.receipts, rec.truncated_bytes), (4, record_len));
        drop(log);

        // A record in the middle broken, with good ones after it: corruption, nothing cut.
        let mut bad_mid = full.clone();
        bad_mid[(HEADER_LEN + record_len + 20) as usize] ^= 1;
        std::fs::write(&log_path, &bad_mid).unwrap();
        assert!(matches!(
            ReceiptLog::open(&LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::Group }),
            Err(LogError::Corrupt { .. })
        ));
        assert_eq!(std::fs::read(&log_path).unwrap(), bad_mid);

        // A leaf hash that does not match its record is rewritten from the record.
        std::fs::write(&log_path, &full).unwrap();
        let mut bad_leaves = leaves.clone();
        bad_leaves[40] ^= 1;
        std::fs::write(&leaves_path, &bad_leaves).unwrap();
        let (_log, rec) = open(dir.path(), SyncPolicy::Group);
        assert_eq!(rec.leaves_rewritten, 4);
        assert_eq!(std::fs::read(&leaves_path).unwrap(), leaves);
    }

    #[test]
    fn group_commit_serves_concurrent_appenders_densely() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path(), SyncPolicy::Group);
        let s = signer();
        let serials: Vec<u64> = std::thread::scope(|scope| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| (0..50).map(|_| append(&log, &s).serial).collect::<Vec<_>>())
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = serials.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..200).collect::<Vec<_>>());
        assert_eq!(log.size(), 200);
    }
}
