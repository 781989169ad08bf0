//! Log lines rate-limited per reason: one line per reason per [`INTERVAL`], the next one
//! saying how many were held back. Metrics count every event; the log only samples them, so a
//! peer cannot turn refusals or accept errors into a log flood.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often one reason may be logged.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Lets one line per reason through per [`INTERVAL`].
#[derive(Debug, Default)]
pub struct Throttle {
    reasons: Mutex<HashMap<&'static str, (Instant, u64)>>,
}

impl Throttle {
    /// `Some(n)` when a line for `reason` may be written now, `n` being how many were held
    /// back since the last one; `None` when it is to be held back.
    pub fn allow(&self, reason: &'static str) -> Option<u64> {
        self.allow_at(reason, Instant::now())
    }

    fn allow_at(&self, reason: &'static str, now: Instant) -> Option<u64> {
        let mut reasons = self.reasons.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match reasons.get_mut(reason) {
            Some((last, held)) if now.duration_since(*last) < INTERVAL => {
                *held += 1;
                None
            }
            Some((last, held)) => {
                *last = now;
                Some(std::mem::take(held))
            }
            None => {
                reasons.insert(reason, (now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_reason_per_interval_with_the_count_held_back() {
        let t = Throttle::default();
        let start = Instant::now();
        assert_eq!(t.allow_at("bad_key", start), Some(0));
        for i in 1..=1000 {
            assert_eq!(t.allow_at("bad_key", start + Duration::from_micros(i)), None);
        }
        assert_eq!(t.allow_at("bad_mac", start), Some(0), "reasons are counted apart");
        assert_eq!(t.allow_at("bad_key", start + INTERVAL), Some(1000), "says what it held");
        assert_eq!(t.allow_at("bad_key", start + INTERVAL), None);
    }
}
