//! The ingest path: verify a published chunk, refuse replays, store it in the pool.
//!
//! [`Ingest::publish`] is the one door into the pool. Dev mode's in-process publisher and remote
//! collectors both come through it (over gRPC), so the checks cannot be skipped.
//!
//! A chunk is stored at most once: within a run the replay window ([`replay`]) refuses a
//! second copy; across restarts the lease ([`lease`]) does, by its start rule, and so it is
//! made to cover each chunk on disk before the chunk reaches the pool.

pub(crate) mod counters;
pub mod keys;
pub mod lease;
pub(crate) mod provenance;
pub mod replay;
pub(crate) mod source;
pub mod verify;

use entropy_ops::clock::unix_ms_now;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use entropy_proto::v1::PublishRequest;
use tokio::time::Instant;

use self::counters::IngestCounters;
use self::keys::MacKeys;
use self::lease::{Lease, WriteFailed};
use self::provenance::{Provenance, SourceRecord};
use self::replay::{ReplayError, ReplayGuard};
use self::source::SourceKind;
use self::verify::{VerifyError, VerifyPolicy};
use crate::domain::log_safety::escape;
use crate::domain::pool::{ChunkOrigin, Kinds, Pool, PoolFull};

/// Why a chunk was not stored. Nothing of it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngestError {
    /// It failed verification.
    #[error(transparent)]
    Invalid(#[from] VerifyError),
    /// It was stored before, or is too old to tell.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The pool has no room for it.
    #[error(transparent)]
    PoolFull(#[from] PoolFull),
    /// It is dated past the lease, and the lease could not be moved to cover it on disk.
    #[error(transparent)]
    Unrecorded(#[from] WriteFailed),
}

impl IngestError {
    /// A short, stable label for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Invalid(e) => e.reason(),
            Self::Replay(ReplayError::Duplicate { .. }) => "replay",
            Self::Replay(ReplayError::TooOld { .. }) => "replay_window",
            Self::Replay(ReplayError::TableFull(_)) => "replay_table_full",
            Self::PoolFull(_) => "pool_full",
            Self::Unrecorded(_) => "lease_write",
        }
    }

    /// True when the chunk's MAC verified (it was refused for its time, its address, as a
    /// replay or for room): its sender holds a MAC key.
    pub fn authenticated(&self) -> bool {
        !matches!(
            self,
            Self::Invalid(
                VerifyError::Malformed { .. }
                    | VerifyError::UnknownKey
                    | VerifyError::CrcMismatch
                    | VerifyError::BadMac
            )
        )
    }
}

/// Ingest counters since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IngestStats {
    /// Chunks stored.
    pub chunks_accepted: u64,
    /// Chunks refused by verification or as replays.
    pub chunks_rejected: u64,
    /// Chunks refused only because the pool was full (to be sent again).
    pub chunks_deferred: u64,
    /// When the last chunk was stored (Unix ms), if any was.
    pub last_accept_unix_ms: Option<i64>,
}

/// The last chunk refused for a reason other than a full pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The reason's label, as in metrics (`stale`, `future`, `bad_mac`, ...).
    pub reason: &'static str,
    /// What was wrong, escaped for logs and probes.
    pub message: String,
    /// When it was refused (Unix ms).
    pub at_unix_ms: i64,
}

/// Verifies chunks and stores the good ones in the pool.
#[derive(Debug)]
pub struct Ingest {
    pool: Arc<Pool>,
    keys: MacKeys,
    policy: VerifyPolicy,
    /// Covers, on disk, every chunk stored: what a restarted gateway refuses.
    lease: Lease,
    /// Held across the replay check, the pool put and the replay record, so two copies of one
    /// chunk racing each other cannot both be stored.
    replay: Mutex<ReplayGuard>,
    provenance: Mutex<Provenance>,
    counters: IngestCounters,
    last_accept_unix_ms: AtomicI64,
    /// When a chunk last arrived that was stored or deferred for a full pool (starts at the
    /// gateway's start): a collector was alive and signing then.
    last_arrival_unix_ms: AtomicI64,
    /// The last refusal that was not a full pool; cleared when a chunk is stored.
    last_refusal: Mutex<Option<Refusal>>,
}

impl Ingest {
    /// An ingest path into `pool`, accepting chunks under `keys`, with its lease in memory
    /// (from `policy.accepts_from_unix_ms`): nothing of it survives the process.
    pub fn new(pool: Arc<Pool>, keys: MacKeys, policy: VerifyPolicy, max_streams: usize) -> Self {
        let replay = ReplayGuard::new(max_streams, policy.freshness_window);
        Self {
            pool,
            keys,
            lease: Lease::in_memory(policy.accepts_from_unix_ms),
            replay: Mutex::new(replay),
            provenance: Mutex::new(Provenance::default()),
            counters: IngestCounters::default(),
            last_accept_unix_ms: AtomicI64::new(i64::MIN),
            last_arrival_unix_ms: AtomicI64::new(policy.started_unix_ms),
            last_refusal: Mutex::new(None),
            policy,
        }
    }

    /// Keeps its lease in `lease` (opened from `state_dir`), whose start rule then decides
    /// which chunks this run accepts: only those dated after every chunk an earlier run stored.
    pub(crate) fn with_lease(mut self, lease: Lease) -> Self {
        self.policy.accepts_from_unix_ms = lease.accepts_from_unix_ms();
        self.lease = lease;
        self
    }

    /// The start rule in force: chunks dated before this (Unix ms) are refused.
    pub fn accepts_from_unix_ms(&self) -> i64 {
        self.policy.accepts_from_unix_ms
    }

    /// Verifies `req` and stores its data, now. May wait for the lease to be written to disk
    /// (about once a second): call it from a blocking thread, not an async worker.
    pub fn publish(&self, req: PublishRequest) -> Result<usize, IngestError> {
        self.publish_at(req, unix_ms_now(), Instant::now())
    }

    /// Verifies `req` and stores its data, with the clock given (for tests).
    pub fn publish_at(
        &self,
        req: PublishRequest,
        now_unix_ms: i64,
        now: Instant,
    ) -> Result<usize, IngestError> {
        let data_len = req.data.len();
        let result = self.admit(req, now_unix_ms, now);
        match &result {
            Ok(_) => {
                self.last_accept_unix_ms.fetch_max(now_unix_ms, Ordering::Relaxed);
                self.last_arrival_unix_ms.fetch_max(now_unix_ms, Ordering::Relaxed);
                let mut last = lock(&self.last_refusal);
                if last.is_some() {
                    *last = None;
                }
            }
            Err(e) => {
                if matches!(e, IngestError::PoolFull(_)) {
                    self.last_arrival_unix_ms.fetch_max(now_unix_ms, Ordering::Relaxed);
                } else {
                    *lock(&self.last_refusal) = Some(Refusal {
                        reason: e.reason(),
                        message: escape(&e.to_string()),
                        at_unix_ms: now_unix_ms,
                    });
                }
                self.counters.refused(e.reason(), data_len);
            }
        }
        result
    }

    fn admit(
        &self,
        req: PublishRequest,
        now_unix_ms: i64,
        now: Instant,
    ) -> Result<usize, IngestError> {
        // The expensive part (CRC + HMAC over up to a MiB) runs outside any lock.
        let chunk = verify::verify(req, &self.keys, &self.policy, now_unix_ms)?;
        // On disk before the chunk can reach the pool, and so a caller: after a crash right
        // after the put, the next run still refuses it. (Outside the replay lock: a write may
        // take milliseconds, and a chunk then refused as a replay only moved it early.)
        self.lease.cover(chunk.timestamp_unix_ms)?;
        let len = chunk.data.len();
        lock(&self.replay).accept((&chunk.stream, chunk.sequence), now, || {
            self.pool.put(&chunk.data, Arc::new(origin_of(&chunk))).map_err(IngestError::from)
        })?;
        lock(&self.provenance).record(&chunk.stream.0, chunk.mixing, &chunk.sources, len, now);
        self.counters.stored(&chunk.stream.0, len);
        Ok(len)
    }

    /// Counters since start.
    pub fn stats(&self) -> IngestStats {
        let last = self.last_accept_unix_ms.load(Ordering::Relaxed);
        let (mut rejected, mut deferred) = (0, 0);
        for r in self.counters.refused_for() {
            match r.reason {
                "pool_full" => deferred += r.chunks,
                _ => rejected += r.chunks,
            }
        }
        IngestStats {
            chunks_accepted: self.counters.stored_by().iter().map(|s| s.chunks).sum(),
            chunks_rejected: rejected,
            chunks_deferred: deferred,
            last_accept_unix_ms: (last != i64::MIN).then_some(last),
        }
    }

    /// The per-collector and per-reason counters behind [`Ingest::stats`], for `/metrics`.
    pub fn counters(&self) -> &IngestCounters {
        &self.counters
    }

    /// When a chunk last arrived that was stored or deferred (Unix ms); the gateway's start
    /// time until one does.
    pub(crate) fn last_arrival_unix_ms(&self) -> i64 {
        self.last_arrival_unix_ms.load(Ordering::Relaxed)
    }

    /// The last chunk refused for a reason other than a full pool, unless one was stored since.
    pub(crate) fn last_refusal(&self) -> Option<Refusal> {
        lock(&self.last_refusal).clone()
    }

    /// Every source reported so far, most recent first.
    pub fn sources(&self) -> Vec<SourceRecord> {
        lock(&self.provenance).snapshot()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section leaves its state consistent before anything that could panic.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The pool's record of a verified chunk: who signed it, when, and the kinds of the sources
/// that contributed to its bytes.
fn origin_of(chunk: &verify::VerifiedChunk) -> ChunkOrigin {
    let contributing = chunk.sources.iter().filter(|s| s.contributed);
    ChunkOrigin {
        collector: chunk.stream.0.as_str().into(),
        epoch: chunk.stream.1,
        sequence: chunk.sequence,
        signed_at_unix_ms: chunk.timestamp_unix_ms,
        kinds: contributing.clone().fold(Kinds::default(), |k, s| k.with(kind_of(s.kind))),
        mixed: contributing.count() >= 2,
    }
}

/// A source kind as the pool's class sets spell it.
pub(crate) fn kind_of(kind: SourceKind) -> Kinds {
    match kind {
        SourceKind::Quantum => Kinds::QUANTUM,
        SourceKind::Hardware => Kinds::HARDWARE,
        SourceKind::Os => Kinds::OS,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::verify::tests::{NOW, keys, policy, signed};
    use super::*;

    fn ingest(capacity: usize) -> (Arc<Pool>, Ingest) {
        let pool = Arc::new(Pool::new(capacity));
        (pool.clone(), Ingest::new(pool, keys(), policy(), 16))
    }

    #[test]
    fn accepted_once_then_already_exists() {
        let (pool, ingest) = ingest(1024);
        let req = signed(|_| {});
        assert_eq!(ingest.publish_at(req.clone(), NOW, Instant::now()), Ok(100));
        assert_eq!(
            ingest.publish_at(req, NOW, Instant::now()),
            Err(IngestError::Replay(ReplayError::Duplicate { sequence: 1 }))
        );
        assert_eq!(pool.level(), 100, "the replay stored nothing");
        let stats = ingest.stats();
        assert_eq!((stats.chunks_accepted, stats.chunks_rejected), (1, 1));
    }

    #[test]
    fn a_chunk_refused_for_room_can_be_resent_later() {
        let (pool, ingest) = ingest(150);
        let first = signed(|r| r.sequence = 1);
        let second = signed(|r| r.sequence = 2);
        ingest.publish_at(first, NOW, Instant::now()).expect("fits");
        let full = ingest.publish_at(second.clone(), NOW, Instant::now());
        assert_eq!(full, Err(IngestError::PoolFull(PoolFull { free: 50, needed: 100 })));
        assert_eq!(pool.level(), 100);
        drop(pool.try_take(100).expect("drain"));
        assert_eq!(ingest.publish_at(second, NOW, Instant::now()), Ok(100), "not marked seen");
        let stats = ingest.stats();
        assert_eq!(
            (stats.chunks_accepted, stats.chunks_rejected, stats.chunks_deferred),
            (2, 0, 1),
            "a full pool defers; it does not reject"
        );
    }

    #[test]
    fn the_last_refusal_is_kept_until_a_chunk_is_stored() {
        let (_, ingest) = ingest(150);
        ingest.publish_at(signed(|r| r.sequence = 1), NOW, Instant::now()).expect("fits");
        let full = ingest.publish_at(signed(|r| r.sequence = 2), NOW, Instant::now());
        assert!(matches!(full, Err(IngestError::PoolFull(_))));
        assert_eq!(ingest.last_refusal(), None, "a full pool is not a refusal to explain");
        let ahead = signed(|r| {
            r.sequence = 3;
            r.timestamp_unix_ms = NOW + 300_000;
        });
        let err = ingest.publish_at(ahead, NOW, Instant::now()).expect_err("from the future");
        let refusal = ingest.last_refusal().expect("kept");
        assert_eq!((refusal.reason, refusal.at_unix_ms), ("future", NOW));
        assert_eq!(refusal.message, err.to_string());
        let (_, ingest) = self::ingest(1024);
        let stale = signed(|r| r.timestamp_unix_ms = NOW - 600_000);
        ingest.publish_at(stale, NOW, Instant::now()).expect_err("stale");
        assert_eq!(ingest.last_refusal().map(|r| r.reason), Some("stale"));
        ingest.publish_at(signed(|_| {}), NOW, Instant::now()).expect("ok");
        assert_eq!(ingest.last_refusal(), None, "a stored chunk clears it");
    }

    #[test]
    fn provenance_names_the_sources() {
        let (_, ingest) = ingest(1024);
        ingest.publish_at(signed(|_| {}), NOW, Instant::now()).expect("ok");
        let sources = ingest.sources();
        assert_eq!(sources.len(), 1);
        assert_eq!((sources[0].name.as_str(), sources[0].contributed_bytes), ("os", 100));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Replays from many threads at once: each distinct chunk is stored exactly once,
        /// however many copies race, and the pool holds exactly the distinct chunks' bytes.
        #[test]
        fn racing_copies_are_stored_once(distinct in 1u64..20, copies in 2usize..6) {
            let (pool, ingest) = ingest(1 << 20);
            let ingest = Arc::new(ingest);
            let chunks: Vec<_> = (0..distinct).map(|s| signed(|r| r.sequence = s)).collect();
            let oks = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..copies).map(|_| {
                    let ingest = ingest.clone();
                    let chunks = chunks.clone();
                    scope.spawn(move || {
                        chunks.into_iter()
                            .filter(|c| ingest.publish_at(c.clone(), NOW, Instant::now()).is_ok())
                            .count()
                    })
                }).collect();
                handles.into_iter().map(|h| h.join().expect("thread")).sum::<usize>()
            });
            prop_assert_eq!(oks as u64, distinct);
            prop_assert_eq!(pool.level() as u64, distinct * 100);
        }
    }

    /// One run of a gateway on the lease in `dir`, started at `started` with `skew_ms`.
    fn run_on(dir: &std::path::Path, started: i64, skew_ms: u64) -> Ingest {
        let skew = Duration::from_millis(skew_ms);
        let lease = Lease::open_at(dir, started, skew).expect("lease");
        let policy = VerifyPolicy { max_future_skew: skew, started_unix_ms: started, ..policy() };
        Ingest::new(Arc::new(Pool::new(1 << 20)), keys(), policy, 16).with_lease(lease)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// No chunk is stored by two runs, whatever the skew of each, how long the first ran
        /// and how long the restart takes: run 1 stores what it accepts of chunks dated around
        /// its clock, then run 2 is offered every one of them from its start until they are
        /// stale. (Finding 7: with the start rule alone, a run at a 30 s skew and the next at
        /// 2 s stored a chunk twice.)
        #[test]
        fn no_chunk_is_stored_by_two_runs(
            skew_before in 100u64..=60_000,
            skew_after in 100u64..=60_000,
            offsets in proptest::collection::vec(-2_000i64..=62_000, 1..8),
            uptime in 0i64..=70_000,
            delay in 0i64..=70_000,
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            // Run 1, on the lease an earlier run left: `uptime` after its start, chunk i is
            // offered 100 i ms later, dated `offsets[i]` ahead (past its skew: refused).
            drop(run_on(dir.path(), NOW - 60_000, 100));
            let first = run_on(dir.path(), NOW, skew_before);
            let chunks: Vec<_> = offsets.iter().enumerate().map(|(i, ahead)| {
                let at = NOW + uptime + 100 * i as i64;
                let chunk = signed(|r| {
                    r.sequence = i as u64;
                    r.timestamp_unix_ms = at + ahead;
                });
                (at, chunk)
            }).collect();
            let stored: Vec<bool> = chunks.iter()
                .map(|(at, c)| first.publish_at(c.clone(), *at, Instant::now()).is_ok())
                .collect();
            drop(first);

            let restart = NOW + uptime + 100 * offsets.len() as i64 + delay;
            let second = run_on(dir.path(), restart, skew_after);
            for ((_, chunk), was_stored) in chunks.iter().zip(&stored) {
                let ts = chunk.timestamp_unix_ms;
                let skew = skew_after as i64;
                // Its start, when the chunk comes within the new skew, its own time, and the
                // last moment it is fresh.
                for at in [restart, ts - skew, ts, ts + 60_000] {
                    let at = at.max(restart);
                    let again = second.publish_at(chunk.clone(), at, Instant::now()).is_ok();
                    prop_assert!(
                        !(again && *was_stored),
                        "chunk dated {} stored by both runs (offered again at {})",
                        ts - NOW, at - NOW
                    );
                }
            }
        }
    }

    #[test]
    fn stale_chunks_count_as_rejected() {
        let (_, ingest) = ingest(1024);
        let later = NOW + Duration::from_secs(61).as_millis() as i64;
        let err = ingest.publish_at(signed(|_| {}), later, Instant::now()).unwrap_err();
        assert_eq!(err.reason(), "stale");
        assert_eq!(ingest.stats().chunks_rejected, 1);
    }
}
