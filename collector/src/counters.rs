//! What the collector counts per source, counted once: the pipeline bumps these atomics as it
//! reads and tests; `Pipeline::sources` and the `/metrics` page (at scrape time) both read them,
//! in the breakdown each needs.

use std::sync::atomic::{AtomicU64, Ordering};

use entropy_health::HealthTest;

use crate::source::SanityCheck;

/// One source's counters since start.
#[derive(Debug, Default)]
pub struct SourceCounters {
    bytes_read: AtomicU64,
    bytes_used: AtomicU64,
    unreachable: AtomicU64,
    /// Health test failures by [`HealthTest::ALL`] index, while the source was healthy.
    failed_healthy: [AtomicU64; HealthTest::ALL.len()],
    /// The same while it was proving itself (a start-up or recovery test).
    failed_proving: [AtomicU64; HealthTest::ALL.len()],
    /// Sanity check failures by [`SanityCheck::index`].
    insane: [AtomicU64; SanityCheck::LABELS.len()],
}

/// A snapshot of [`SourceCounters`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceCounts {
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes that went into published chunks.
    pub bytes_used: u64,
    /// Reads that found the source unreachable.
    pub unreachable: u64,
    /// Health test failures by [`HealthTest::ALL`] index while healthy.
    pub failed_healthy: [u64; HealthTest::ALL.len()],
    /// Health test failures by [`HealthTest::ALL`] index during a start-up or recovery test.
    pub failed_proving: [u64; HealthTest::ALL.len()],
    /// Sanity check failures by [`SanityCheck::index`].
    pub insane: [u64; SanityCheck::LABELS.len()],
}

impl SourceCounts {
    /// Reads that failed: sanity check failures and unreachable reads.
    pub fn fetch_errors(&self) -> u64 {
        self.insane.iter().sum::<u64>() + self.unreachable
    }
}

impl SourceCounters {
    /// `n` bytes were read.
    pub fn read(&self, n: usize) {
        self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `n` bytes went into a chunk.
    pub fn used(&self, n: usize) {
        self.bytes_used.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A read found the source unreachable.
    pub fn unreachable(&self) {
        self.unreachable.fetch_add(1, Ordering::Relaxed);
    }

    /// `test` failed, during a start-up or recovery test when `proving`.
    pub fn health_failed(&self, test: HealthTest, proving: bool) {
        let row = if proving { &self.failed_proving } else { &self.failed_healthy };
        row[test as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A sanity check failed.
    pub fn insane(&self, check: &SanityCheck) {
        self.insane[check.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn snapshot(&self) -> SourceCounts {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SourceCounts {
            bytes_read: load(&self.bytes_read),
            bytes_used: load(&self.bytes_used),
            unreachable: load(&self.unreachable),
            failed_healthy: self.failed_healthy.each_ref().map(load),
            failed_proving: self.failed_proving.each_ref().map(load),
            insane: self.insane.each_ref().map(load),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_lands_in_its_one_cell() {
        let c = SourceCounters::default();
        c.read(10);
        c.used(4);
        c.unreachable();
        c.health_failed(HealthTest::AdaptiveProportion, false);
        c.health_failed(HealthTest::AdaptiveProportion, true);
        c.insane(&SanityCheck::Html);
        let s = c.snapshot();
        assert_eq!((s.bytes_read, s.bytes_used, s.unreachable), (10, 4, 1));
        assert_eq!(s.failed_healthy, [0, 1, 0, 0]);
        assert_eq!(s.failed_proving, [0, 1, 0, 0]);
        assert_eq!(s.insane, [0, 1, 0, 0, 0]);
        assert_eq!(s.fetch_errors(), 2);
    }
}
