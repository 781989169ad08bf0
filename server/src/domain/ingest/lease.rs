//! The ingest lease: a time, kept on disk, at or before which every chunk this gateway ever
//! stored is dated, so that no restart, whatever its config, stores a chunk twice.
//!
//! Why it exists: the replay window ([`super::replay`]) lives in memory and is gone after a
//! restart. A restarted gateway must refuse every chunk an earlier run may have stored; it
//! cannot know which chunks those were, but it can know a time they were all dated at or
//! before. The lease is that time, `accepted_until_unix_ms`, in `<state_dir>/ingest-lease`:
//!
//! - **Before** a chunk dated after the lease enters the pool, the lease moves to the chunk's
//!   time plus [`LEASE_MARGIN_MS`] and is made durable: written to a new file, fsynced, renamed
//!   over the old one, and the directory fsynced. No chunk reaches the pool (so no caller)
//!   before a lease covering it is on disk. The margin makes writes rare: at most one per
//!   margin of chunk time, however many chunks arrive.
//! - **At start** a gateway accepts only chunks dated after the lease it reads, so a chunk
//!   stored by any earlier run is refused (`before_start`) after any restart, whatever
//!   `max_future_skew_ms` was then or is now.
//! - **No file** (a new `state_dir`, or the file deleted): nothing is known of earlier runs, so
//!   the gateway falls back to the rule that needs no memory, chunks dated from its start plus
//!   `max_future_skew_ms` on, and writes that as its lease. That is safe when the previous run,
//!   if any, stopped at least its own `max_future_skew_ms` + [`LEASE_MARGIN_MS`] before
//!   (docs/operations.md, "The ingest state").
//!
//! Why the chunk's time plus a margin, and not the clock plus `max_future_skew_ms` (which
//! would also cover every chunk the run could accept): the lease stays as tight as the chunks
//! really stored, so after a restart fresh chunks are refused for at most about the margin
//! (plus however far ahead the last stored chunk was dated), not the skew plus the margin; the
//! write rate is the same, one per margin of chunk time.
//!
//! Crash safety: the rename is atomic, so the file holds the old lease or the new one, whole,
//! and both cover every chunk stored so far. A CRC32C line catches anything else (a torn copy
//! on a filesystem without atomic rename, a bad disk, a hand edit): a file that does not parse
//! stops the gateway at start instead of being guessed at. An exclusive lock on
//! `ingest-lease.lock` keeps two processes from sharing, and so shrinking, one lease.
//!
//! Concurrency: one write at a time (a mutex held across it). A publish whose chunk the lease
//! covers reads an atomic and never waits; one it does not cover waits for the write in
//! progress and then sees its bound, or writes the next one. Writes block:
//! [`super::Ingest::publish`] runs on a blocking thread (`grpc/ingest_service.rs`), never on
//! an async worker.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// The start rule without a lease (a new state): chunks dated from `started_unix_ms` plus
/// `max_future_skew` on, as a run stores chunks dated at most that far ahead of its clock.
/// Enough only if an earlier run, if any, had no larger skew or stopped long enough ago: what
/// the lease is for.
pub(crate) fn new_state_accepts_from(started_unix_ms: i64, max_future_skew: Duration) -> i64 {
    let skew_ms = i64::try_from(max_future_skew.as_millis()).unwrap_or(i64::MAX);
    started_unix_ms.saturating_add(skew_ms)
}

/// The lease's file name in `state_dir`.
pub const LEASE_FILE: &str = "ingest-lease";
/// The file a new lease is written to before it is renamed over [`LEASE_FILE`].
pub(crate) const TEMP_FILE: &str = "ingest-lease.tmp";
/// The file held locked (`flock`) while a gateway uses the directory.
pub(crate) const LOCK_FILE: &str = "ingest-lease.lock";
/// How far past a chunk's time the lease is moved: the most chunk time between two writes.
pub const LEASE_MARGIN_MS: i64 = 1_000;

const HEADER: &str = "entropy-gateway ingest lease v1";
const BOUND_KEY: &str = "accepted_until_unix_ms ";
const CRC_KEY: &str = "crc32c ";

/// Why the lease in `state_dir` cannot be used; the gateway does not start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The directory cannot be created or opened.
    #[error("{}: cannot create or open the directory: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Another process holds the directory's lock.
    #[error(
        "{}: in use by another gateway process (it holds this lock); one state_dir per \
         gateway process",
        path.display()
    )]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// The lease file exists but cannot be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The lease file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The lease file does not parse or fails its checksum.
    #[error(
        "{}: not a valid ingest lease ({problem}). It records up to when earlier runs may \
         have stored chunks, so the gateway will not guess: delete it to start a new state, \
         after the wait docs/operations.md gives (\"The ingest state\"); an older copy is \
         not safe to restore",
        path.display()
    )]
    Corrupt {
        /// The lease file.
        path: PathBuf,
        /// What is wrong with it.
        problem: Malformed,
    },
    /// The lease cannot be written (the directory is not writable, or the disk is full).
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file being written.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// A chunk not covered by the lease could not be stored: moving the lease failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the ingest lease in state_dir could not be made durable ({kind})")]
pub struct WriteFailed {
    /// The I/O error's kind (the full error is logged once when writes start failing).
    pub kind: io::ErrorKind,
}

/// The ingest lease: on disk ([`Lease::open`]) or, for dev mode and tests, in memory.
#[derive(Debug)]
pub struct Lease {
    /// Every chunk stored so far is dated at or before this, and the file (if any) says so.
    /// Only grows, and only after the file does.
    durable: AtomicI64,
    /// What this run accepts from (the start rule): the lease read at open, plus 1 ms.
    accepts_from: i64,
    /// True when no lease file existed at open.
    is_new: bool,
    /// The file, locked while a write is in progress (one at a time); `None` in memory.
    file: Mutex<Option<LeaseFile>>,
    /// Durable writes since open (for tests: extension only when needed).
    writes: AtomicU64,
    /// True while writes fail, so the failure and the recovery are logged once each.
    failing: AtomicBool,
}

/// The lease's directory, held open and locked.
#[derive(Debug)]
struct LeaseFile {
    dir: File,
    path: PathBuf,
    temp: PathBuf,
    /// Holds the `flock` for as long as the lease lives.
    _lock: File,
}

impl Lease {
    /// A lease kept in memory, accepting chunks dated from `accepts_from_unix_ms` on: for dev
    /// mode (its MAC key is new at every start, so no chunk of an earlier run verifies) and
    /// tests. Nothing survives the process.
    pub(crate) fn in_memory(accepts_from_unix_ms: i64) -> Self {
        Self::with(accepts_from_unix_ms.saturating_sub(1), true, None)
    }

    /// Opens (creating if needed) the lease in `dir` for a gateway starting now with
    /// `max_future_skew`; see [`Lease::open_at`].
    pub fn open(dir: &Path, max_future_skew: Duration) -> Result<Self, OpenError> {
        Self::open_at(dir, entropy_ops::clock::unix_ms_now(), max_future_skew)
    }

    /// Opens the lease in `dir` for a gateway starting at `now_unix_ms`: creates the directory
    /// if missing, locks it, reads the lease (none: a new state, from `now_unix_ms` plus
    /// `max_future_skew`) and writes it back, so a directory that cannot be written fails here,
    /// before anything is bound, rather than at the first chunk.
    pub(crate) fn open_at(
        dir: &Path,
        now_unix_ms: i64,
        max_future_skew: Duration,
    ) -> Result<Self, OpenError> {
        let dir_error = |source| OpenError::Dir { dir: dir.to_owned(), source };
        fs::create_dir_all(dir).map_err(dir_error)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| OpenError::Write { path: lock_path.clone(), source })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(OpenError::Locked { path: lock_path }),
            Err(TryLockError::Error(source)) => {
                return Err(OpenError::Write { path: lock_path, source });
            }
        }
        let path = dir.join(LEASE_FILE);
        let persisted = match fs::read(&path) {
            Ok(bytes) => Some(
                decode(&bytes)
                    .map_err(|problem| OpenError::Corrupt { path: path.clone(), problem })?,
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(source) => return Err(OpenError::Read { path, source }),
        };
        let (until, is_new) = match persisted {
            Some(until) => (until, false),
            // `until` is the last time this run refuses.
            None => (new_state_accepts_from(now_unix_ms, max_future_skew).saturating_sub(1), true),
        };
        let file = LeaseFile {
            dir: File::open(dir).map_err(dir_error)?,
            temp: dir.join(TEMP_FILE),
            path,
            _lock: lock,
        };
        file.write(until).map_err(|(path, source)| OpenError::Write { path, source })?;
        Ok(Self::with(until, is_new, Some(file)))
    }

    fn with(until: i64, is_new: bool, file: Option<LeaseFile>) -> Self {
        Self {
            durable: AtomicI64::new(until),
            accepts_from: until.saturating_add(1),
            is_new,
            file: Mutex::new(file),
            writes: AtomicU64::new(0),
            failing: AtomicBool::new(false),
        }
    }

    /// The start rule: this run accepts only chunks dated at or after this (Unix ms).
    pub fn accepts_from_unix_ms(&self) -> i64 {
        self.accepts_from
    }

    /// True when no lease was on disk at open (a new state, or one kept in memory).
    pub(crate) fn is_new(&self) -> bool {
        self.is_new
    }

    #[cfg(test)]
    /// The lease now: every chunk stored so far is dated at or before it (Unix ms).
    pub(crate) fn accepted_until_unix_ms(&self) -> i64 {
        self.durable.load(Ordering::Acquire)
    }

    /// The lease file, unless the lease is kept in memory.
    pub fn path(&self) -> Option<PathBuf> {
        lock(&self.file).as_ref().map(|f| f.path.clone())
    }

    /// Makes sure the durable lease covers a chunk dated `timestamp_unix_ms`, moving it (and
    /// waiting for the write) if it does not. Call before the chunk can reach the pool; on an
    /// error the chunk must not be stored.
    pub fn cover(&self, timestamp_unix_ms: i64) -> Result<(), WriteFailed> {
        if timestamp_unix_ms <= self.durable.load(Ordering::Acquire) {
            return Ok(());
        }
        let file = lock(&self.file);
        // Another publish may have moved it while this one waited for the lock.
        if timestamp_unix_ms <= self.durable.load(Ordering::Acquire) {
            return Ok(());
        }
        let until = timestamp_unix_ms.saturating_add(LEASE_MARGIN_MS);
        if let Some(file) = file.as_ref() {
            if let Err((path, e)) = file.write(until) {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::error!(
                        path = %path.display(),
                        "cannot write the ingest lease, refusing chunks past it until it can \
                         be written: {e}"
                    );
                }
                return Err(WriteFailed { kind: e.kind() });
            }
            if self.failing.swap(false, Ordering::Relaxed) {
                tracing::info!("the ingest lease is written again");
            }
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
        // Published only once the file holds it: a chunk admitted on this value is on disk.
        self.durable.store(until, Ordering::Release);
        Ok(())
    }
}

impl LeaseFile {
    /// Replaces the lease file with one holding `until`, durably: a crash at any point leaves
    /// the old file or the new one, whole. On error, says which path failed.
    fn write(&self, until: i64) -> Result<(), (PathBuf, io::Error)> {
        let at = |path: &Path| {
            let path = path.to_owned();
            move |e| (path, e)
        };
        // A temporary file a crash left behind: removed (not followed, were it a symlink) and
        // created anew.
        match fs::remove_file(&self.temp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err((self.temp.clone(), e)),
            _ => {}
        }
        let mut temp = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.temp)
            .map_err(at(&self.temp))?;
        temp.write_all(encode(until).as_bytes()).map_err(at(&self.temp))?;
        // The bytes are on disk before the name points at them.
        temp.sync_all().map_err(at(&self.temp))?;
        fs::rename(&self.temp, &self.path).map_err(at(&self.path))?;
        // And the rename itself is on disk before any chunk relies on it.
        self.dir.sync_all().map_err(at(&self.path))
    }
}

/// The file's text: a header, the lease, and the CRC32C of the two lines before it.
fn encode(until: i64) -> String {
    let body = format!("{HEADER}\n{BOUND_KEY}{until}\n");
    let crc = crc32c::crc32c(body.as_bytes());
    format!("{body}{CRC_KEY}{crc:08x}\n")
}

/// What is wrong with a lease file's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// Not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// Not three lines.
    #[error("{0} lines, expected 3")]
    Lines(usize),
    /// The first line is not the header.
    #[error("line 1 is not {HEADER:?}")]
    Header,
    /// A line is not its `key=value`.
    #[error("line {line} is not `{key}<value>`")]
    Field {
        /// Which line (from 1).
        line: usize,
        /// The key it should start with.
        key: &'static str,
    },
    /// The checksum does not match the lines before it.
    #[error("its crc32c does not match (torn, truncated or edited)")]
    Checksum,
    /// The lease is not a number.
    #[error("{0:?} is not a time in Unix ms")]
    Time(String),
}

/// Parses [`encode`]'s text, and nothing else.
fn decode(bytes: &[u8]) -> Result<i64, Malformed> {
    let text = std::str::from_utf8(bytes).map_err(|_| Malformed::NotUtf8)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let [header, bound, crc] = lines[..] else {
        return Err(Malformed::Lines(lines.len()));
    };
    if header != format!("{HEADER}\n") {
        return Err(Malformed::Header);
    }
    fn value<'a>(line: usize, key: &'static str, text: &'a str) -> Result<&'a str, Malformed> {
        text.strip_prefix(key)
            .and_then(|v| v.strip_suffix('\n'))
            .ok_or(Malformed::Field { line, key })
    }
    let until = value(2, BOUND_KEY, bound)?;
    let crc = value(3, CRC_KEY, crc)?;
    let body_len = header.len() + bound.len();
    let expected = crc32c::crc32c(&bytes[..body_len]);
    if crc.len() != 8 || u32::from_str_radix(crc, 16) != Ok(expected) {
        return Err(Malformed::Checksum);
    }
    until.parse().map_err(|_| Malformed::Time(until.to_owned()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The only critical section writes a file and publishes the bound after it: a panic
    // inside leaves the old bound, which still covers everything stored.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
