//! The client's deadline, from the `grpc-timeout` header.
//!
//! tonic's server wraps every call in a timer from the same header and, when it fires, answers
//! CANCELLED. Our waits stop [`MARGIN`] earlier, so the caller gets the status the contract
//! promises (DEADLINE_EXCEEDED, nothing consumed) rather than tonic's.

use std::time::Duration;

use tokio::time::Instant;
use tonic::metadata::MetadataMap;

/// How much earlier than the client's deadline we give up waiting.
pub(crate) const MARGIN: Duration = Duration::from_millis(10);

/// When the client's deadline passes (minus [`MARGIN`]), if it set one.
pub fn client_deadline(metadata: &MetadataMap, now: Instant) -> Option<Instant> {
    let value = metadata.get("grpc-timeout")?.to_str().ok()?;
    let timeout = parse_grpc_timeout(value)?;
    Some(now + timeout.saturating_sub(MARGIN))
}

/// Parses a `grpc-timeout` value: up to 8 digits and a unit (H M S m u n), per the gRPC
/// over HTTP/2 spec.
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    // `split_at` would panic inside a multi-byte last character.
    let (digits, unit) = value.split_at_checked(value.len() - 1)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Which limit ended a wait, so the caller can pick the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// The client's deadline.
    Client,
    /// The server's maximum wait.
    Server,
}

/// The earlier of the client's deadline and the server's maximum wait, and which one it is.
pub(crate) fn wait_until(
    client: Option<Instant>,
    server_max: Duration,
    now: Instant,
) -> (Instant, Limit) {
    let server = now + server_max;
    match client {
        Some(c) if c <= server => (c, Limit::Client),
        _ => (server, Limit::Server),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit_and_refuses_garbage() {
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("2M"), Some(Duration::from_secs(120)));
        assert_eq!(parse_grpc_timeout("3S"), Some(Duration::from_secs(3)));
        assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_grpc_timeout("99999999u"), Some(Duration::from_micros(99_999_999)));
        assert_eq!(parse_grpc_timeout("5n"), Some(Duration::from_nanos(5)));
        // "1é": found by fuzzing (`fuzz/`, target `metadata`), panicked before.
        for bad in ["", "m", "10", "10x", "-1m", "123456789m", "1.5S", " 1S", "1é", "9\u{c482}"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_earlier_limit_wins() {
        let now = Instant::now();
        let soon = Some(now + Duration::from_millis(5));
        assert_eq!(wait_until(soon, Duration::from_secs(2), now).1, Limit::Client);
        let late = Some(now + Duration::from_secs(5));
        assert_eq!(wait_until(late, Duration::from_secs(2), now).1, Limit::Server);
        assert_eq!(wait_until(None, Duration::from_secs(2), now).1, Limit::Server);
    }
}
