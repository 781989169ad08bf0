//! A token bucket (GCRA, governor's) that can also be read without taking anything: how many
//! units it holds now, when the next one comes back, and when it is full again.
//!
//! governor answers only "may these n cells pass now?", and a yes takes them: there is no
//! method that reads a limiter's state. Its `StateInformationMiddleware` reports the burst left,
//! but only as the outcome of a check, that is after a cell was taken. Keeping our own copy of
//! the GCRA arithmetic beside governor's would be two truths that can drift (rounding, the
//! clock's origin, the burst floor). So the reading goes through governor's own decision, by
//! its public extension points:
//!
//! - The limiter is keyed by [`Use`], and its state store ([`ReadableState`]) keeps one
//!   theoretical arrival time (TAT) for both keys. For [`Use::Take`] it stores the TAT a
//!   conforming decision computes, with the compare-and-swap loop of governor's own
//!   `InMemoryState`; for [`Use::Read`] it runs the very same decision on the current TAT and
//!   throws the new TAT away. A reading is thus governor's answer to "would n units conform
//!   now?" from the same state, clock origin and quota, and it never changes the state.
//! - `StateInformationMiddleware` turns a conforming reading of one unit into the units left
//!   after it (so one more is left now); a non-conforming reading of n units says, as
//!   `NotUntil`, when n would conform: for n = one more than is left, when the next unit comes
//!   back; for n = the burst, when the bucket is full again.
//!
//! The clock is tokio's ([`TokioClock`]), so tests drive refills with `tokio::time::pause` and
//! `advance` instead of sleeping, and waiting streams sleep on tokio's timer.

use std::num::{NonZeroU32, NonZeroU64};
use std::ops::Add;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, Reference};
use governor::middleware::StateInformationMiddleware;
use governor::nanos::Nanos;
use governor::state::StateStore;
use governor::{Quota, RateLimiter};

/// What a check on the limiter does with its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Use {
    /// A conforming decision takes its units (stores the new TAT).
    Take,
    /// Only the decision: the state stays as it is.
    Read,
}

/// One TAT (nanoseconds since the limiter's start; 0 before the first take), shared by both
/// [`Use`]s.
#[derive(Debug, Default)]
struct ReadableState(AtomicU64);

impl StateStore for ReadableState {
    type Key = Use;

    fn measure_and_replace<T, F, E>(&self, key: &Use, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let mut previous = self.0.load(Ordering::Acquire);
        loop {
            let (outcome, next) = f(NonZeroU64::new(previous).map(|t| Nanos::from(t.get())))?;
            if *key == Use::Read {
                return Ok(outcome);
            }
            match self.0.compare_exchange_weak(
                previous,
                next.as_u64(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(outcome),
                // Another take came first: decide again on its TAT.
                Err(current) => previous = current,
            }
        }
    }
}

/// governor's time source on tokio's clock (paused and advanced in tests).
#[derive(Debug, Clone, Copy, Default)]
struct TokioClock;

/// A reading of [`TokioClock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Moment(tokio::time::Instant);

impl Add<Nanos> for Moment {
    type Output = Self;

    fn add(self, later: Nanos) -> Self {
        Self(self.0 + Duration::from(later))
    }
}

impl Reference for Moment {
    fn duration_since(&self, earlier: Self) -> Nanos {
        self.0.saturating_duration_since(earlier.0).into()
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        Self(self.0.checked_sub(duration.into()).unwrap_or(self.0))
    }
}

impl Clock for TokioClock {
    type Instant = Moment;

    fn now(&self) -> Moment {
        Moment(tokio::time::Instant::now())
    }
}

/// Why units were not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// They would conform after this wait.
    Wait(Duration),
    /// More than the burst: they never would.
    OverBurst,
}

/// A bucket's state as of a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// The most units the bucket holds (its burst).
    pub burst: u32,
    /// Units that could be taken now.
    pub available: u32,
    /// Until one more unit is available (zero when full).
    pub next_in: Duration,
    /// Until the bucket is full again (zero when full).
    pub full_in: Duration,
}

/// A GCRA token bucket that can be read without taking from it.
#[derive(Debug)]
pub(crate) struct Bucket {
    limiter: RateLimiter<Use, ReadableState, TokioClock, StateInformationMiddleware>,
    burst: NonZeroU32,
}

impl Bucket {
    /// A full bucket for `quota`.
    pub(crate) fn new(quota: Quota) -> Self {
        let limiter = RateLimiter::new(quota, ReadableState::default(), TokioClock);
        Self { limiter, burst: quota.burst_size() }
    }

    /// Takes `n` units now (all or nothing), or says when they would be there.
    pub(crate) fn take(&self, n: NonZeroU32) -> Result<(), Refusal> {
        match self.limiter.check_key_n(&Use::Take, n) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(not_until)) => {
                Err(Refusal::Wait(not_until.wait_time_from(self.limiter.clock().now())))
            }
            Err(_) => Err(Refusal::OverBurst),
        }
    }

    /// Takes `n` units as soon as they are there; `n` over the burst returns at once, taking
    /// nothing (callers ask for at most the burst).
    pub(crate) async fn take_when_ready(&self, n: NonZeroU32) {
        while let Err(Refusal::Wait(wait)) = self.take(n) {
            tokio::time::sleep(wait).await;
        }
    }

    /// When `n` units (at most the burst) would conform, from now; zero if they do now.
    fn ready_in(&self, n: u32) -> Duration {
        let Some(n) = NonZeroU32::new(n.min(self.burst.get())) else { return Duration::ZERO };
        match self.limiter.check_key_n(&Use::Read, n) {
            Ok(Err(not_until)) => not_until.wait_time_from(self.limiter.clock().now()),
            // Conforming (or, not reached since n <= burst, never conforming).
            Ok(Ok(_)) | Err(_) => Duration::ZERO,
        }
    }

    /// What the bucket holds now, taking nothing.
    pub(crate) fn level(&self) -> Level {
        let burst = self.burst.get();
        let available = match self.limiter.check_key(&Use::Read) {
            // The snapshot counts what is left after the one unit read.
            Ok(after_one) => after_one.remaining_burst_capacity().saturating_add(1).min(burst),
            Err(_) => 0,
        };
        if available >= burst {
            return Level { burst, available, next_in: Duration::ZERO, full_in: Duration::ZERO };
        }
        Level {
            burst,
            available,
            next_in: self.ready_in(available + 1),
            full_in: self.ready_in(burst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nz(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).expect("test values are positive")
    }

    #[tokio::test(start_paused = true)]
    async fn a_reading_takes_nothing_and_follows_takes_and_refills() {
        // 10 units a second, burst 10: one unit every 100 ms.
        let bucket = Bucket::new(Quota::per_second(nz(10)));
        let full =
            Level { burst: 10, available: 10, next_in: Duration::ZERO, full_in: Duration::ZERO };
        for _ in 0..1000 {
            assert_eq!(bucket.level(), full, "reading never takes");
        }
        bucket.take(nz(4)).expect("within the burst");
        let ms = Duration::from_millis;
        assert_eq!(
            bucket.level(),
            Level { burst: 10, available: 6, next_in: ms(100), full_in: ms(400) }
        );
        tokio::time::advance(ms(150)).await;
        assert_eq!(
            bucket.level(),
            Level { burst: 10, available: 7, next_in: ms(50), full_in: ms(250) },
            "one unit back after 100 ms, the next 50 ms later"
        );
        bucket.take(nz(7)).expect("all that is left");
        let empty = bucket.level();
        assert_eq!(empty, Level { burst: 10, available: 0, next_in: ms(50), full_in: ms(950) });
        assert_eq!(bucket.take(nz(1)), Err(Refusal::Wait(ms(50))), "take agrees with the reading");
        tokio::time::advance(ms(950)).await;
        assert_eq!(bucket.level(), full);
        assert_eq!(bucket.take(nz(11)), Err(Refusal::OverBurst));
        assert_eq!(bucket.level(), full, "a refusal takes nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_larger_than_the_rate_refills_at_the_rate() {
        // 1000 B/s with a 1 MiB burst: 1 ms a byte.
        let bucket = Bucket::new(Quota::per_second(nz(1000)).allow_burst(nz(1 << 20)));
        bucket.take(nz(1 << 20)).expect("the burst");
        let level = bucket.level();
        assert_eq!((level.available, level.next_in), (0, Duration::from_millis(1)));
        assert_eq!(level.full_in, Duration::from_millis(1 << 20));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(bucket.level().available, 2000);
    }

    #[tokio::test(start_paused = true)]
    async fn take_when_ready_waits_on_the_clock() {
        let bucket = Bucket::new(Quota::per_second(nz(4)));
        bucket.take(nz(4)).expect("the burst");
        let started = tokio::time::Instant::now();
        bucket.take_when_ready(nz(2)).await;
        assert_eq!(started.elapsed(), Duration::from_millis(500));
        assert_eq!(bucket.level().available, 0);
    }
}
