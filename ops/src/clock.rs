//! The wall clock as the wire carries it: milliseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch now. A clock set before 1970 reads as 0 (the epoch):
/// every freshness check then refuses, which is the safe side.
pub fn unix_ms_now() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
