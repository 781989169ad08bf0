//! Per-key quotas: requests per second, bytes per second, concurrent streams, and the bytes
//! drawn for the key that the transport has not yet taken.
//!
//! Token buckets (GCRA, from `governor`) hold each key's request and byte allowances. A unary
//! call is admitted or refused before any byte is drawn, and a refusal says when to retry.
//! A stream is metered as it flows: before each chunk it waits for that many byte tokens, so a
//! 10 MB/s key streams at ~10 MB/s instead of being refused.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota};

use crate::domain::allowance::Account;

/// A key's limits as configured; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Calls per second (unary calls and stream opens), with a burst of one second's worth.
    pub requests_per_second: Option<NonZeroU32>,
    /// Bytes per second drawn from the pool, with a burst of one second's worth (at least
    /// 1 MiB, so the largest single request always fits).
    pub bytes_per_second: Option<NonZeroU32>,
    /// Bytes per second of DRBG output, with a burst as `bytes_per_second`'s (its seeds count
    /// against `bytes_per_second`).
    pub drbg_bytes_per_second: Option<NonZeroU32>,
    /// Streams open at once.
    pub max_streams: Option<usize>,
    /// Bytes drawn for the key and not yet handed to the transport (a client that does not
    /// read holds them); `None` is [`DEFAULT_MAX_UNDELIVERED_BYTES`]. Never unlimited.
    pub max_undelivered_bytes: Option<usize>,
}

/// The default cap on a key's drawn-but-undelivered bytes.
pub(crate) const DEFAULT_MAX_UNDELIVERED_BYTES: usize = 32 << 20;
/// The smallest cap: the largest single draw (a 1 MiB request or stream message) must fit.
pub(crate) const MIN_MAX_UNDELIVERED_BYTES: usize = 1 << 20;

impl Limits {
    /// The cap on drawn-but-undelivered bytes in force.
    pub(crate) fn undelivered_cap(&self) -> usize {
        self.max_undelivered_bytes.unwrap_or(DEFAULT_MAX_UNDELIVERED_BYTES)
    }
}

/// Why a call was refused by its key's quota.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaError {
    /// Too many calls per second.
    #[error("request rate limit of {limit}/s reached; retry in {} ms", retry_after.as_millis())]
    Requests {
        /// The configured limit.
        limit: u32,
        /// When a retry can succeed.
        retry_after: Duration,
    },
    /// Too many bytes per second.
    #[error("{rate} of {limit} B/s reached; retry in {} ms", retry_after.as_millis())]
    Bytes {
        /// Pool bytes or DRBG output.
        rate: ByteRate,
        /// The configured limit.
        limit: u32,
        /// When a retry can succeed.
        retry_after: Duration,
    },
    /// Too many streams open at once.
    #[error("at most {limit} streams may be open at once for this key")]
    Streams {
        /// The configured limit.
        limit: usize,
    },
    /// More bytes at once than the key's byte burst: never admissible, waiting does not help.
    #[error(
        "{wanted} bytes at once exceed this key's byte burst of {burst} ({setting} {limit}, \
         burst at least 1 MiB): ask for at most {burst} bytes",
        setting = rate.setting()
    )]
    Burst {
        /// Pool bytes or DRBG output.
        rate: ByteRate,
        /// The configured rate.
        limit: u32,
        /// The burst: the most bytes the key may draw at once.
        burst: u32,
        /// What was asked for.
        wanted: usize,
    },
}

/// Which byte rate a [`QuotaError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRate {
    /// Bytes drawn from the pool (`bytes_per_second`).
    Pool,
    /// DRBG output (`drbg_bytes_per_second`).
    Drbg,
}

impl ByteRate {
    /// The keys-file setting of the rate.
    pub fn setting(self) -> &'static str {
        match self {
            Self::Pool => "bytes_per_second",
            Self::Drbg => "drbg_bytes_per_second",
        }
    }
}

impl std::fmt::Display for ByteRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Pool => "byte rate limit",
            Self::Drbg => "DRBG byte rate limit",
        })
    }
}

impl QuotaError {
    /// How long to wait before retrying, when waiting helps.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Requests { retry_after, .. } | Self::Bytes { retry_after, .. } => {
                Some(*retry_after)
            }
            Self::Streams { .. } | Self::Burst { .. } => None,
        }
    }
}

/// The live quota state of one key.
#[derive(Debug)]
pub struct KeyQuota {
    limits: Limits,
    requests: Option<DefaultDirectRateLimiter>,
    bytes: Option<DefaultDirectRateLimiter>,
    drbg_bytes: Option<DefaultDirectRateLimiter>,
    open_streams: Arc<AtomicUsize>,
    /// Bytes drawn for the key and not yet delivered (`max_undelivered_bytes`).
    undelivered: Account,
}

/// Burst floor of the byte bucket: the largest request (1 MiB) must always be admissible.
const MIN_BYTE_BURST: u32 = 1 << 20;

impl KeyQuota {
    /// Fresh buckets for `limits`.
    pub fn new(limits: Limits) -> Self {
        let requests =
            limits.requests_per_second.map(|r| governor::RateLimiter::direct(Quota::per_second(r)));
        let byte_bucket = |b: NonZeroU32| {
            let burst = NonZeroU32::new(b.get().max(MIN_BYTE_BURST)).unwrap_or(b);
            governor::RateLimiter::direct(Quota::per_second(b).allow_burst(burst))
        };
        let bytes = limits.bytes_per_second.map(byte_bucket);
        let drbg_bytes = limits.drbg_bytes_per_second.map(byte_bucket);
        let undelivered = Account::new("max_undelivered_bytes", limits.undelivered_cap());
        Self {
            limits,
            requests,
            bytes,
            drbg_bytes,
            open_streams: Arc::new(AtomicUsize::new(0)),
            undelivered,
        }
    }

    /// The state a key continues with when the keys file is reloaded with `limits`: the same
    /// state when its limits are unchanged (a throttled key stays throttled), else fresh buckets
    /// for the new limits that still count the streams the key has open, so a reload never
    /// lifts a stream cap the key is up against.
    pub(crate) fn carry_over(previous: &Arc<KeyQuota>, limits: Limits) -> Arc<KeyQuota> {
        if previous.limits == limits {
            return Arc::clone(previous);
        }
        let mut fresh = Self::new(limits);
        fresh.open_streams = Arc::clone(&previous.open_streams);
        if limits.undelivered_cap() == previous.limits.undelivered_cap() {
            fresh.undelivered = previous.undelivered.clone();
        }
        Arc::new(fresh)
    }

    /// The configured limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Admits one call, or says when to retry.
    pub fn admit_request(&self) -> Result<(), QuotaError> {
        let (Some(bucket), Some(limit)) = (&self.requests, self.limits.requests_per_second) else {
            return Ok(());
        };
        bucket.check().map_err(|not_until| QuotaError::Requests {
            limit: limit.get(),
            retry_after: not_until.wait_time_from(DefaultClock::default().now()),
        })
    }

    /// Admits drawing `n` pool bytes now (all or nothing), or says when to retry.
    pub(crate) fn admit_bytes(&self, n: usize) -> Result<(), QuotaError> {
        self.admit(ByteRate::Pool, n)
    }

    /// Admits `n` bytes of DRBG output now (all or nothing), or says when to retry.
    pub(crate) fn admit_drbg_bytes(&self, n: usize) -> Result<(), QuotaError> {
        self.admit(ByteRate::Drbg, n)
    }

    fn bucket(&self, rate: ByteRate) -> (Option<&DefaultDirectRateLimiter>, Option<NonZeroU32>) {
        match rate {
            ByteRate::Pool => (self.bytes.as_ref(), self.limits.bytes_per_second),
            ByteRate::Drbg => (self.drbg_bytes.as_ref(), self.limits.drbg_bytes_per_second),
        }
    }

    fn admit(&self, rate: ByteRate, n: usize) -> Result<(), QuotaError> {
        let (Some(bucket), Some(limit)) = self.bucket(rate) else {
            return Ok(());
        };
        let Some(cells) = NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)) else {
            return Ok(());
        };
        match bucket.check_n(cells) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(QuotaError::Bytes {
                rate,
                limit: limit.get(),
                retry_after: not_until.wait_time_from(DefaultClock::default().now()),
            }),
            // More than the burst: never admissible at once (a CheckQuality sample of up to
            // 4 MiB for a key whose burst is 1 MiB): say so, rather than "retry" for ever.
            Err(_) => Err(QuotaError::Burst {
                rate,
                limit: limit.get(),
                burst: limit.get().max(MIN_BYTE_BURST),
                wanted: n,
            }),
        }
    }

    /// Waits until `n` pool bytes may be drawn (streams: metered, never refused).
    pub(crate) async fn wait_bytes(&self, n: usize) {
        self.wait(ByteRate::Pool, n).await;
    }

    /// Waits until `n` bytes of DRBG output may be made (streams: metered, never refused).
    pub(crate) async fn wait_drbg_bytes(&self, n: usize) {
        self.wait(ByteRate::Drbg, n).await;
    }

    async fn wait(&self, rate: ByteRate, n: usize) {
        let (Some(bucket), _) = self.bucket(rate) else { return };
        if let Some(cells) = NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)) {
            // Chunks are at most 1 MiB, within the burst, so this cannot be refused.
            let _ = bucket.until_n_ready(cells).await;
        }
    }

    /// Counts a stream as open until the guard drops, or refuses it over the cap.
    pub(crate) fn open_stream(&self) -> Result<StreamSlot, QuotaError> {
        let open = self.open_streams.fetch_add(1, Ordering::AcqRel) + 1;
        let slot = StreamSlot(self.open_streams.clone());
        match self.limits.max_streams {
            Some(limit) if open > limit => Err(QuotaError::Streams { limit }),
            _ => Ok(slot),
        }
    }

    /// The key's allowance for bytes drawn and not yet delivered.
    pub fn undelivered(&self) -> &Account {
        &self.undelivered
    }

    #[cfg(test)]
    /// Streams open now.
    pub(crate) fn open_streams(&self) -> usize {
        self.open_streams.load(Ordering::Acquire)
    }
}

/// One open stream of a key; closing it (dropping) frees the slot.
#[derive(Debug)]
pub(crate) struct StreamSlot(Arc<AtomicUsize>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nz(n: u32) -> Option<NonZeroU32> {
        NonZeroU32::new(n)
    }

    #[test]
    fn unlimited_admits_everything() {
        let q = KeyQuota::new(Limits::default());
        for _ in 0..10_000 {
            q.admit_request().expect("no limit");
        }
        q.admit_bytes(1 << 20).expect("no limit");
        let _a = q.open_stream().expect("no limit");
    }

    #[test]
    fn request_rate_admits_its_burst_then_says_when() {
        let q = KeyQuota::new(Limits { requests_per_second: nz(5), ..Limits::default() });
        for _ in 0..5 {
            q.admit_request().expect("within the burst");
        }
        match q.admit_request() {
            Err(QuotaError::Requests { limit: 5, retry_after }) => {
                assert!(
                    retry_after > Duration::ZERO && retry_after <= Duration::from_millis(200),
                    "{retry_after:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn more_than_the_burst_at_once_is_refused_for_good_not_retried() {
        let q = KeyQuota::new(Limits { bytes_per_second: nz(1000), ..Limits::default() });
        let err = q.admit_bytes(4 << 20).expect_err("4 MiB exceeds the 1 MiB burst");
        assert_eq!(
            err,
            QuotaError::Burst {
                rate: ByteRate::Pool,
                limit: 1000,
                burst: 1 << 20,
                wanted: 4 << 20
            }
        );
        assert_eq!(err.retry_after(), None, "waiting does not help");
        assert!(err.to_string().contains("ask for at most 1048576 bytes"), "{err}");
        q.admit_bytes(1 << 20).expect("the burst itself still fits");
    }

    #[test]
    fn byte_rate_is_all_or_nothing_and_admits_a_max_request() {
        // 1000 B/s, but the burst floor lets one 1 MiB request through.
        let q = KeyQuota::new(Limits { bytes_per_second: nz(1000), ..Limits::default() });
        q.admit_bytes(1 << 20).expect("the largest request fits the burst");
        let err = q.admit_bytes(10).expect_err("bucket empty");
        assert!(matches!(err, QuotaError::Bytes { limit: 1000, .. }));
        assert!(err.retry_after().is_some_and(|d| d > Duration::ZERO));
    }

    #[test]
    fn streams_are_capped_and_slots_come_back() {
        let q = KeyQuota::new(Limits { max_streams: Some(2), ..Limits::default() });
        let a = q.open_stream().expect("1");
        let _b = q.open_stream().expect("2");
        assert_eq!(
            q.open_stream().expect_err("3").to_string(),
            "at most 2 streams may be open at once for this key"
        );
        assert_eq!(q.open_streams(), 2, "a refused open does not hold a slot");
        drop(a);
        q.open_stream().expect("a slot came back");
    }

    #[test]
    fn the_undelivered_allowance_is_the_keys_setting_and_survives_a_reload() {
        let limits = Limits { max_undelivered_bytes: Some(2 << 20), ..Limits::default() };
        let q = Arc::new(KeyQuota::new(limits));
        assert_eq!(
            (q.undelivered().cap(), q.undelivered().name()),
            (2 << 20, "max_undelivered_bytes")
        );
        let _held = q.undelivered().try_hold(1 << 20).expect("room");
        let faster = Limits { requests_per_second: nz(9), ..limits };
        let carried = KeyQuota::carry_over(&q, faster);
        assert_eq!(carried.undelivered().held(), 1 << 20, "the reload keeps what is held");
        let bigger = Limits { max_undelivered_bytes: Some(4 << 20), ..limits };
        assert_eq!(
            KeyQuota::carry_over(&q, bigger).undelivered().held(),
            0,
            "a new cap starts anew"
        );
    }

    #[tokio::test]
    async fn streams_wait_for_bytes_instead_of_failing() {
        let q = KeyQuota::new(Limits { bytes_per_second: nz(1 << 20), ..Limits::default() });
        q.wait_bytes(1 << 20).await; // the burst
        let started = std::time::Instant::now();
        q.wait_bytes(256 << 10).await; // a quarter second's worth
        assert!(
            started.elapsed() >= Duration::from_millis(150),
            "it waited {:?}",
            started.elapsed()
        );
    }
}
