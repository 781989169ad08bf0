//! Per-key quotas: requests per second, bytes per second, concurrent streams, and the bytes
//! drawn for the key that the transport has not yet taken.
//!
//! Token buckets (GCRA, from `governor`) hold each key's request and byte allowances. A unary
//! call is admitted or refused before any byte is drawn, and a refusal says when to retry.
//! A stream is metered as it flows: before each chunk it waits for that many byte tokens, so a
//! 10 MB/s key streams at ~10 MB/s instead of being refused.
//!
//! [`KeyQuota::usage`] reads all of it for the key's holder (GetUsage) without taking anything:
//! the buckets are read as [`crate::domain::bucket`] explains, the counts are loaded.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use governor::Quota;

use crate::domain::allowance::Account;
use crate::domain::bucket::{Bucket, Level, Refusal};

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
    requests: Option<Bucket>,
    bytes: Option<Bucket>,
    drbg_bytes: Option<Bucket>,
    open_streams: Arc<AtomicUsize>,
    /// Bytes drawn for the key and not yet delivered (`max_undelivered_bytes`).
    undelivered: Account,
}

/// Burst floor of the byte bucket: the largest request (1 MiB) must always be admissible.
const MIN_BYTE_BURST: u32 = 1 << 20;

impl KeyQuota {
    /// Fresh buckets for `limits`.
    pub fn new(limits: Limits) -> Self {
        let requests = limits.requests_per_second.map(|r| Bucket::new(Quota::per_second(r)));
        let byte_bucket = |b: NonZeroU32| {
            let burst = NonZeroU32::new(b.get().max(MIN_BYTE_BURST)).unwrap_or(b);
            Bucket::new(Quota::per_second(b).allow_burst(burst))
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
        bucket.take(NonZeroU32::MIN).map_err(|refusal| QuotaError::Requests {
            limit: limit.get(),
            retry_after: match refusal {
                Refusal::Wait(wait) => wait,
                // A burst is at least one call.
                Refusal::OverBurst => Duration::from_secs(1),
            },
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

    fn bucket(&self, rate: ByteRate) -> (Option<&Bucket>, Option<NonZeroU32>) {
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
        match bucket.take(cells) {
            Ok(()) => Ok(()),
            Err(Refusal::Wait(retry_after)) => {
                Err(QuotaError::Bytes { rate, limit: limit.get(), retry_after })
            }
            // More than the burst: never admissible at once (a CheckQuality sample of up to
            // 4 MiB for a key whose burst is 1 MiB): say so, rather than "retry" for ever.
            Err(Refusal::OverBurst) => Err(QuotaError::Burst {
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
            // Chunks are at most 1 MiB, within the burst, so this is never refused for good.
            bucket.take_when_ready(cells).await;
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

    /// Streams open now.
    pub(crate) fn open_streams(&self) -> usize {
        self.open_streams.load(Ordering::Acquire)
    }

    /// Every limit of the key with what is left of it now, taking nothing: no token of any
    /// bucket, no stream slot, no undelivered byte. A few atomic loads and, per rate limit, at
    /// most three readings of its bucket.
    pub fn usage(&self) -> Usage {
        let rate = |bucket: Option<&Bucket>, limit: Option<NonZeroU32>| match (bucket, limit) {
            (Some(bucket), Some(limit)) => {
                Some(RateUsage { per_second: limit.get(), level: bucket.level() })
            }
            _ => None,
        };
        let undelivered = &self.undelivered;
        Usage {
            requests: rate(self.requests.as_ref(), self.limits.requests_per_second),
            bytes: rate(self.bytes.as_ref(), self.limits.bytes_per_second),
            drbg_bytes: rate(self.drbg_bytes.as_ref(), self.limits.drbg_bytes_per_second),
            streams: Held { limit: self.limits.max_streams, in_use: self.open_streams() },
            undelivered_bytes: Held { limit: Some(undelivered.cap()), in_use: undelivered.held() },
        }
    }
}

/// A key's limits and what is left of each, as of one reading ([`KeyQuota::usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// `requests_per_second`; `None`: unlimited.
    pub requests: Option<RateUsage>,
    /// `bytes_per_second`; `None`: unlimited.
    pub bytes: Option<RateUsage>,
    /// `drbg_bytes_per_second`; `None`: unlimited.
    pub drbg_bytes: Option<RateUsage>,
    /// `max_streams`: streams open now.
    pub streams: Held,
    /// `max_undelivered_bytes`: bytes drawn for the key and not yet taken by the transport.
    pub undelivered_bytes: Held,
}

/// A rate limit: its rate, and its bucket now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateUsage {
    /// Units refilled per second.
    pub per_second: u32,
    /// The bucket: burst, units available, when the next comes back, when it is full.
    pub level: Level,
}

/// A limit on what the key holds at once: units come back when the key lets them go, not
/// over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The most the key may hold; `None`: unlimited.
    pub limit: Option<usize>,
    /// What it holds now.
    pub in_use: usize,
}

impl Held {
    /// What the key may still take now (`None`: unlimited).
    pub fn remaining(&self) -> Option<usize> {
        self.limit.map(|limit| limit.saturating_sub(self.in_use))
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

    #[tokio::test(start_paused = true)]
    async fn usage_reads_every_limit_takes_nothing_and_follows_the_clock() {
        let q = KeyQuota::new(Limits {
            requests_per_second: nz(10),
            bytes_per_second: nz(1_000_000),
            max_streams: Some(3),
            max_undelivered_bytes: Some(2 << 20),
            ..Limits::default()
        });
        let ms = Duration::from_millis;
        let full = |burst| Level { burst, available: burst, next_in: ms(0), full_in: ms(0) };
        let fresh = Usage {
            requests: Some(RateUsage { per_second: 10, level: full(10) }),
            // The burst is at least 1 MiB.
            bytes: Some(RateUsage { per_second: 1_000_000, level: full(1 << 20) }),
            drbg_bytes: None,
            streams: Held { limit: Some(3), in_use: 0 },
            undelivered_bytes: Held { limit: Some(2 << 20), in_use: 0 },
        };
        for _ in 0..100 {
            assert_eq!(q.usage(), fresh, "reading takes nothing");
        }
        q.admit_request().expect("a call");
        q.admit_bytes(250_000).expect("a quarter of a second's worth");
        let _stream = q.open_stream().expect("a stream");
        let _held = q.undelivered().try_hold(1000).expect("room");
        let used = q.usage();
        assert_eq!(
            used.requests.map(|r| r.level),
            Some(Level { burst: 10, available: 9, next_in: ms(100), full_in: ms(100) })
        );
        assert_eq!(
            used.bytes.map(|r| r.level),
            Some(Level {
                burst: 1 << 20,
                available: (1 << 20) - 250_000,
                next_in: Duration::from_micros(1),
                full_in: ms(250)
            }),
            "a byte comes back every microsecond"
        );
        assert_eq!((used.streams.in_use, used.streams.remaining()), (1, Some(2)));
        assert_eq!(used.undelivered_bytes.remaining(), Some((2 << 20) - 1000));
        assert_eq!(q.usage(), used, "reading takes nothing");
        tokio::time::advance(ms(125)).await;
        let later = q.usage();
        assert_eq!(later.requests.map(|r| r.level), Some(full(10)));
        assert_eq!(
            later.bytes.map(|r| (r.level.available, r.level.full_in)),
            Some(((1 << 20) - 125_000, ms(125))),
            "an eighth of a second refills an eighth of the rate"
        );
    }

    #[test]
    fn an_unlimited_key_reads_as_unlimited_but_for_its_undelivered_cap() {
        let q = KeyQuota::new(Limits::default());
        let _stream = q.open_stream().expect("no limit");
        let usage = q.usage();
        assert_eq!((usage.requests, usage.bytes, usage.drbg_bytes), (None, None, None));
        assert_eq!(usage.streams, Held { limit: None, in_use: 1 });
        assert_eq!(usage.streams.remaining(), None);
        assert_eq!(usage.undelivered_bytes.limit, Some(DEFAULT_MAX_UNDELIVERED_BYTES));
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
