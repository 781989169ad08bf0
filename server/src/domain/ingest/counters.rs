//! What the ingest path counts, counted once: chunks and bytes stored per collector, and
//! chunks and bytes refused per reason. `GetStatus` and `/metrics` both read these (the metrics
//! at scrape time, as they read the pool), so the two can never disagree.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The `reason` of a chunk that was not stored: every [`super::IngestError::reason`].
pub(crate) const REJECT_REASONS: &[&str] = &[
    "malformed",
    "unknown_key",
    "crc_mismatch",
    "bad_mac",
    "before_start",
    "wrong_gateway",
    "stale",
    "future",
    "replay",
    "replay_window",
    "replay_table_full",
    "pool_full",
    "lease_write",
];

/// Counters since start.
#[derive(Debug, Default)]
pub struct IngestCounters {
    /// Chunks and bytes refused, by index in [`REJECT_REASONS`].
    refused: [(AtomicU64, AtomicU64); REJECT_REASONS.len()],
    /// Chunks and bytes stored, by collector id. Bounded: only a chunk that verified (so one
    /// signed by a holder of a MAC key) adds a collector.
    stored: Mutex<HashMap<String, (u64, u64)>>,
}

/// One collector's stored chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredBy {
    /// Its collector id (signed).
    pub collector: String,
    /// Chunks stored.
    pub chunks: u64,
    /// Their data bytes.
    pub bytes: u64,
}

/// One reason's refused chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefusedFor {
    /// One of [`REJECT_REASONS`].
    pub reason: &'static str,
    /// Chunks refused for it.
    pub chunks: u64,
    /// Their data bytes.
    pub bytes: u64,
}

impl IngestCounters {
    /// A chunk of `bytes` from `collector` was stored.
    pub fn stored(&self, collector: &str, bytes: usize) {
        let mut stored = self.stored.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = match stored.get_mut(collector) {
            Some(entry) => entry,
            None => stored.entry(collector.to_owned()).or_default(),
        };
        entry.0 += 1;
        entry.1 += bytes as u64;
    }

    /// A chunk of `bytes` was refused for `reason` (one of [`REJECT_REASONS`]; others are a
    /// bug and counted nowhere, which the reason-list test catches).
    pub fn refused(&self, reason: &str, bytes: usize) {
        if let Some(i) = REJECT_REASONS.iter().position(|r| *r == reason) {
            self.refused[i].0.fetch_add(1, Ordering::Relaxed);
            self.refused[i].1.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }

    /// Stored chunks by collector, in no particular order.
    pub(crate) fn stored_by(&self) -> Vec<StoredBy> {
        let stored = self.stored.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        stored
            .iter()
            .map(|(collector, &(chunks, bytes))| StoredBy {
                collector: collector.clone(),
                chunks,
                bytes,
            })
            .collect()
    }

    /// Refused chunks for every reason, zeros included.
    pub(crate) fn refused_for(&self) -> Vec<RefusedFor> {
        REJECT_REASONS
            .iter()
            .zip(&self.refused)
            .map(|(reason, (chunks, bytes))| RefusedFor {
                reason,
                chunks: chunks.load(Ordering::Relaxed),
                bytes: bytes.load(Ordering::Relaxed),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_by_collector_and_reason() {
        let c = IngestCounters::default();
        c.stored("a", 10);
        c.stored("a", 5);
        c.stored("b", 1);
        c.refused("stale", 7);
        c.refused("not-a-reason", 7);
        let mut by = c.stored_by();
        by.sort_by(|x, y| x.collector.cmp(&y.collector));
        assert_eq!((by[0].chunks, by[0].bytes, by[1].chunks), (2, 15, 1));
        let refused = c.refused_for();
        assert_eq!(refused.len(), REJECT_REASONS.len());
        let stale = refused.iter().find(|r| r.reason == "stale").expect("listed");
        assert_eq!((stale.chunks, stale.bytes), (1, 7));
        assert_eq!(refused.iter().map(|r| r.chunks).sum::<u64>(), 1, "unknown reasons ignored");
    }
}
