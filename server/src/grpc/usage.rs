//! GetUsage: the calling key's limits and what is left of each, as the wire's
//! `GetUsageResponse`.
//!
//! The grant comes from the call's own authenticated key ([`super::auth`]); the request names
//! no key, so a key can read no usage but its own. Reading takes nothing
//! ([`crate::domain::quota::KeyQuota::usage`]); durations go out rounded up to whole
//! milliseconds, so a client that waits `next_refill_ms` finds the unit there.

use std::time::Duration;

use entropy_proto::v1::{GetUsageResponse, HeldUsage, RateUsage};

use crate::domain::auth::KeyGrant;
use crate::domain::quota::{Held, Usage};

/// The usage of `grant`'s key, now.
pub(crate) fn of(grant: &KeyGrant) -> GetUsageResponse {
    let Usage { requests, bytes, drbg_bytes, streams, undelivered_bytes } = grant.quota.usage();
    GetUsageResponse {
        key_name: grant.name.clone(),
        requests: Some(rate(requests)),
        bytes: Some(rate(bytes)),
        drbg_bytes: Some(rate(drbg_bytes)),
        streams: Some(held(streams)),
        undelivered_bytes: Some(held(undelivered_bytes)),
    }
}

fn rate(usage: Option<crate::domain::quota::RateUsage>) -> RateUsage {
    match usage {
        None => RateUsage { unlimited: true, ..RateUsage::default() },
        Some(usage) => RateUsage {
            unlimited: false,
            per_second: usage.per_second.into(),
            burst: usage.level.burst.into(),
            remaining: usage.level.available.into(),
            next_refill_ms: ms_up(usage.level.next_in),
            full_in_ms: ms_up(usage.level.full_in),
        },
    }
}

fn held(usage: Held) -> HeldUsage {
    let wide = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    HeldUsage {
        unlimited: usage.limit.is_none(),
        limit: usage.limit.map_or(0, wide),
        in_use: wide(usage.in_use),
        remaining: usage.remaining().map_or(0, wide),
    }
}

/// `d` in whole milliseconds, rounded up: 1 ns is 1 ms, not 0 (which would say "now").
fn ms_up(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_up_to_whole_milliseconds() {
        assert_eq!(ms_up(Duration::ZERO), 0);
        assert_eq!(ms_up(Duration::from_nanos(1)), 1);
        assert_eq!(ms_up(Duration::from_millis(250)), 250);
        assert_eq!(ms_up(Duration::from_micros(250_001)), 251);
    }
}
