//! The gateway's lifetime totals of bytes that left the pool for callers: served (written to a
//! caller's socket), discarded (drawn for a caller that never got them), tested (drawn as
//! CheckQuality samples) and DRBG seeds (drawn to seed an instance, wiped once used); and of the
//! DRBG output served, apart from pool bytes. Each is counted once, where the event happens
//! ([`crate::grpc::delivery`] settles every draw as one or the other), and only grows; GetStatus
//! and the metrics read them here.

use std::sync::atomic::{AtomicU64, Ordering};

/// Served, discarded and tested bytes since the gateway started.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    served: AtomicU64,
    discarded: AtomicU64,
    tested: AtomicU64,
    drbg_served: AtomicU64,
    drbg_seeds: AtomicU64,
}

impl Totals {
    /// Bytes written to a caller's socket.
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Bytes drawn for callers that never got them (wiped where we held them).
    pub(crate) fn discarded(&self) -> u64 {
        self.discarded.load(Ordering::Relaxed)
    }

    /// Bytes drawn as CheckQuality samples, tested and wiped.
    pub(crate) fn quality_tested(&self) -> u64 {
        self.tested.load(Ordering::Relaxed)
    }

    /// Counts `n` bytes written to a caller's socket.
    pub(crate) fn count_served(&self, n: usize) {
        self.served.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts `n` drawn bytes that no caller got.
    pub(crate) fn count_discarded(&self, n: usize) {
        self.discarded.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts `n` bytes tested by CheckQuality.
    pub(crate) fn count_tested(&self, n: usize) {
        self.tested.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// DRBG output written to callers' sockets (not counted in [`Self::served`]).
    pub(crate) fn drbg_served(&self) -> u64 {
        self.drbg_served.load(Ordering::Relaxed)
    }

    /// Pool bytes drawn to seed DRBG instances.
    pub(crate) fn drbg_seeds(&self) -> u64 {
        self.drbg_seeds.load(Ordering::Relaxed)
    }

    /// Counts `n` bytes of DRBG output written to a caller's socket.
    pub(crate) fn count_drbg_served(&self, n: usize) {
        self.drbg_served.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts `n` pool bytes used as a DRBG seed.
    pub(crate) fn count_drbg_seed(&self, n: usize) {
        self.drbg_seeds.fetch_add(n as u64, Ordering::Relaxed);
    }
}
