//! The reconnect rule of every Entropy Diode stream reader (clients/README.md, "The reconnect
//! rule"): after a transport failure, open a new stream for the bytes still owed, each attempt
//! bounded by [`StreamOptions::attempt_timeout`], with jittered exponential backoff between
//! attempts, for at most [`StreamOptions::reconnect_budget`] from the failure (zero: forever).
//! The budget starts again once bytes flow.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;

/// How a [`crate::RandomStream`] asks for bytes and how it reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Bytes per message, 1..=1048576 (0: the gateway's default, 16 KiB).
    pub chunk_bytes: u32,
    /// How long after a failure the reader keeps trying; [`Duration::ZERO`] for no limit.
    pub reconnect_budget: Duration,
    /// How long one new stream may take to deliver its first message, connecting included.
    pub attempt_timeout: Duration,
    /// How long a flowing stream may go without a message before it counts as broken.
    pub stall_timeout: Duration,
    /// The first delay between attempts; it doubles up to `max_backoff`.
    pub initial_backoff: Duration,
    /// The longest delay between attempts.
    pub max_backoff: Duration,
}

impl Default for StreamOptions {
    /// 64 KiB messages, 30 s budget, 2 s per attempt, 10 s stall, 50 ms..1 s backoff.
    fn default() -> Self {
        Self {
            chunk_bytes: 64 << 10,
            reconnect_budget: Duration::from_secs(30),
            attempt_timeout: Duration::from_secs(2),
            stall_timeout: Duration::from_secs(10),
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(1),
        }
    }
}

impl StreamOptions {
    /// These options with `chunk_bytes` per message.
    pub fn chunk_bytes(self, chunk_bytes: u32) -> Self {
        Self { chunk_bytes, ..self }
    }

    /// These options with a reconnect budget (zero: keep trying forever).
    pub fn reconnect_budget(self, budget: Duration) -> Self {
        Self { reconnect_budget: budget, ..self }
    }

    /// Checks the bounds, naming the field.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if self.chunk_bytes > 1 << 20 {
            return bad(format!("chunk_bytes is {}, must be 0..=1048576", self.chunk_bytes));
        }
        for (name, d) in [
            ("attempt_timeout", self.attempt_timeout),
            ("stall_timeout", self.stall_timeout),
            ("initial_backoff", self.initial_backoff),
        ] {
            if d.is_zero() {
                return bad(format!("{name} must be positive"));
            }
        }
        if self.max_backoff < self.initial_backoff {
            return bad("max_backoff must be at least initial_backoff".into());
        }
        Ok(())
    }
}

/// One outage: when it began, how many attempts failed since, and the failure to report if it
/// outlasts the budget. `E` is the failure (a `tonic::Status` in the reader), so that this file
/// knows nothing of gRPC and its tests compare plain values.
#[derive(Debug)]
pub(crate) struct Outage<E> {
    since: Instant,
    failures: u32,
    last: Option<E>,
}

/// What to do after a failed attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next<E> {
    /// Sleep this long, then try again.
    RetryAfter(Duration),
    /// The budget is spent: give up after this long of trying, reporting `last`.
    GiveUp { tried: Duration, failures: u32, last: E },
}

impl<E> Outage<E> {
    pub(crate) fn begin(now: Instant) -> Self {
        Self { since: now, failures: 0, last: None }
    }

    /// Records a failed attempt at `now`, which ended with `failure`; `timed_out_after` is how
    /// long it had waited when it ended because its first message did not come in time (`None`
    /// for any other ending). `jitter` in [0, 1] picks the delay within the upper half of the
    /// current ceiling.
    pub(crate) fn failed(
        &mut self,
        options: &StreamOptions,
        now: Instant,
        jitter: f64,
        failure: E,
        timed_out_after: Option<Duration>,
    ) -> Next<E> {
        // An attempt that only the budget's end made shorter than the attempt timeout, timing
        // out, says nothing about the gateway: the failure before it (the gateway's answer)
        // stays the one to report. Without one before it, the timeout is all there is to say.
        let clamped = timed_out_after.is_some_and(|waited| waited < options.attempt_timeout);
        let last = match self.last.take() {
            Some(earlier) if clamped => earlier,
            _ => failure,
        };
        let spent = now.saturating_duration_since(self.since);
        let budget = options.reconnect_budget;
        if !budget.is_zero() && spent >= budget {
            return Next::GiveUp { tried: spent, failures: self.failures, last };
        }
        self.last = Some(last);
        let ceiling = options
            .initial_backoff
            .saturating_mul(1 << self.failures.min(20))
            .min(options.max_backoff);
        self.failures += 1;
        let mut delay = ceiling / 2 + ceiling.mul_f64(jitter.clamp(0.0, 1.0) / 2.0);
        if !budget.is_zero() {
            delay = delay.min(budget - spent);
        }
        Next::RetryAfter(delay)
    }

    /// How long the next attempt may take: the attempt timeout, or what is left of the budget.
    pub(crate) fn attempt_timeout(&self, options: &StreamOptions, now: Instant) -> Duration {
        let budget = options.reconnect_budget;
        if budget.is_zero() {
            return options.attempt_timeout;
        }
        let left = budget.saturating_sub(now.saturating_duration_since(self.since));
        options.attempt_timeout.min(left).max(Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_the_upper_half_and_stops_at_the_budget() {
        let options = StreamOptions::default();
        let t0 = Instant::now();
        let mut outage = Outage::begin(t0);
        let mut failed = |at, jitter| outage.failed(&options, at, jitter, "unavailable", None);
        let ms = Duration::from_millis;
        // Ceilings 50, 100, 200, 400, 800, 1000, 1000 ms; jitter 0 gives half, 1 the ceiling.
        assert_eq!(failed(t0, 0.0), Next::RetryAfter(ms(25)));
        assert_eq!(failed(t0, 1.0), Next::RetryAfter(ms(100)));
        for want in [ms(100), ms(200), ms(400), ms(500), ms(500)] {
            assert_eq!(failed(t0, 0.0), Next::RetryAfter(want));
        }
        // The last delay never runs past the budget, and then it gives up.
        assert_eq!(failed(t0 + ms(29_900), 1.0), Next::RetryAfter(ms(100)));
        assert_eq!(
            failed(t0 + ms(30_000), 0.5),
            Next::GiveUp { tried: ms(30_000), failures: 8, last: "unavailable" }
        );
        assert_eq!(outage.attempt_timeout(&options, t0 + ms(29_500)), ms(500));
        assert_eq!(outage.attempt_timeout(&options, t0), ms(2_000));
    }

    #[test]
    fn giving_up_reports_the_gateways_answer_not_a_timeout_the_budget_cut_short() {
        // The gateway answers UNAVAILABLE; the next attempt gets only what is left of the budget
        // (a millisecond) and times out locally. That says nothing about the gateway, so giving
        // up reports UNAVAILABLE (CI saw DEADLINE_EXCEEDED here on a busy machine).
        let ms = Duration::from_millis;
        let options = StreamOptions {
            reconnect_budget: ms(500),
            attempt_timeout: ms(5_000),
            ..Default::default()
        };
        let t0 = Instant::now();
        let mut outage = Outage::begin(t0);
        let answer = "UNAVAILABLE: gateway restarting";
        assert!(matches!(outage.failed(&options, t0, 0.0, answer, None), Next::RetryAfter(_)));
        let waited = outage.attempt_timeout(&options, t0 + ms(499));
        assert_eq!(waited, ms(1));
        assert_eq!(
            outage.failed(&options, t0 + ms(500), 0.0, "DEADLINE_EXCEEDED", Some(waited)),
            Next::GiveUp { tried: ms(500), failures: 1, last: answer }
        );
    }

    #[test]
    fn a_timeout_is_reported_when_it_is_all_there_was_or_when_the_attempt_had_its_whole_time() {
        let ms = Duration::from_millis;
        let options = StreamOptions {
            reconnect_budget: ms(500),
            attempt_timeout: ms(200),
            ..Default::default()
        };
        let t0 = Instant::now();
        // No answer before the cut-short attempt: its timeout is all there is to say.
        let mut outage = Outage::begin(t0);
        assert_eq!(
            outage.failed(&options, t0 + ms(500), 0.0, "cut short", Some(ms(1))),
            Next::GiveUp { tried: ms(500), failures: 0, last: "cut short" }
        );
        // An attempt that had its whole attempt timeout did reach the gateway's silence.
        let mut outage = Outage::begin(t0);
        assert!(matches!(
            outage.failed(&options, t0, 0.0, "unavailable", None),
            Next::RetryAfter(_)
        ));
        assert_eq!(
            outage.failed(&options, t0 + ms(500), 0.0, "silent", Some(ms(200))),
            Next::GiveUp { tried: ms(500), failures: 1, last: "silent" }
        );
    }

    #[test]
    fn a_zero_budget_never_gives_up() {
        let options = StreamOptions::default().reconnect_budget(Duration::ZERO);
        let t0 = Instant::now();
        let mut outage = Outage::begin(t0);
        let day = Duration::from_secs(86_400);
        assert_eq!(
            outage.failed(&options, t0 + day, 1.0, "unavailable", None),
            Next::RetryAfter(Duration::from_millis(50))
        );
        assert_eq!(outage.attempt_timeout(&options, t0 + day), options.attempt_timeout);
    }

    #[test]
    fn options_out_of_bounds_are_named() {
        let bad = StreamOptions { chunk_bytes: (1 << 20) + 1, ..Default::default() };
        assert!(bad.check().unwrap_err().to_string().contains("chunk_bytes"));
        let bad = StreamOptions { stall_timeout: Duration::ZERO, ..Default::default() };
        assert!(bad.check().unwrap_err().to_string().contains("stall_timeout"));
        let bad = StreamOptions { max_backoff: Duration::from_millis(1), ..Default::default() };
        assert!(bad.check().unwrap_err().to_string().contains("max_backoff"));
        StreamOptions::default().check().expect("defaults are valid");
    }
}
