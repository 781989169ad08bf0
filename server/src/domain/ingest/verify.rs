//! Chunk verification: parse a `PublishRequest` into a [`VerifiedChunk`] or say why not.
//!
//! Checks run cheapest first, and nothing an unauthenticated sender controls is trusted before
//! the MAC: field bounds, key id, CRC32C, MAC (constant time), then the destination gateway and
//! freshness. Replay is checked by the caller against shared state ([`super::replay`]),
//! atomically with storing.
//!
//! **Stored at most once across gateways and restarts.** The MAC covers `gateway_id`, so a
//! chunk sealed for one gateway is refused by every other that shares the MAC keys. Within one
//! gateway, the replay window remembers (collector, epoch, sequence) for as long as a chunk
//! could be fresh; across a restart it is gone, so timestamps cover it: every chunk a run
//! stores is dated at or before its lease ([`super::lease`], kept on disk), and a run accepts
//! only chunks dated after the lease it found at start ([`VerifyPolicy::accepts_from_unix_ms`]).
//! Without a lease on disk (a new state) it accepts chunks dated from its start plus
//! `max_future_skew` on, as a run could store chunks at most that far ahead of its clock.

use std::time::Duration;

use entropy_proto::signing::{MAC_LEN, verify_chunk_mac};
use entropy_proto::v1::PublishRequest;

use super::keys::{MAX_KEY_ID_BYTES, MacKeys};
use super::replay::StreamId;
use super::source::{Mixing, SourceHealth, SourceKind, Unknown};
use crate::domain::secret::SecretBytes;

/// Longest collector id and source name, in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 64;
/// Most sources one chunk may report.
pub(crate) const MAX_SOURCES: usize = 32;

/// Bounds and clock reference for verification.
#[derive(Debug, Clone)]
pub struct VerifyPolicy {
    /// Largest accepted `data`, in bytes.
    pub max_chunk_bytes: usize,
    /// How old a timestamp may be.
    pub freshness_window: Duration,
    /// How far ahead of the clock a timestamp may be.
    pub max_future_skew: Duration,
    /// When this gateway started (Unix ms).
    pub started_unix_ms: i64,
    /// The start rule: chunks dated before this (Unix ms) are refused, as an earlier run may
    /// have stored them. Just after the lease an earlier run left on disk, or, with none, the
    /// start plus `max_future_skew` ([`super::lease::Lease::accepts_from_unix_ms`]).
    pub accepts_from_unix_ms: i64,
    /// This gateway's id: chunks sealed for another are refused.
    pub gateway_id: String,
}

/// A chunk whose every field, MAC and timestamp checked out (replay aside).
#[derive(Debug)]
pub struct VerifiedChunk {
    /// (collector id, epoch).
    pub stream: StreamId,
    /// Sequence within the epoch.
    pub sequence: u64,
    /// When it was signed (Unix ms).
    pub timestamp_unix_ms: i64,
    /// How its sources were mixed.
    pub mixing: Mixing,
    /// Every source the collector reported, contributing or not.
    pub sources: Vec<SourceReport>,
    /// The entropy. Wiped when dropped.
    pub data: SecretBytes,
}

/// One reported source, with its enums parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceReport {
    /// Name within its collector.
    pub name: String,
    /// Kind of source.
    pub kind: SourceKind,
    /// Health when the chunk was mixed.
    pub health: SourceHealth,
    /// Whether it went into the chunk's data.
    pub contributed: bool,
}

/// Why a chunk failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A field is missing, malformed or out of bounds.
    #[error("{field}: {problem}")]
    Malformed {
        /// The field, as named in the .proto.
        field: &'static str,
        /// What is wrong, with the bound.
        problem: String,
    },
    /// The key id is not one the gateway accepts.
    #[error("unknown key_id")]
    UnknownKey,
    /// The CRC32C does not match the data.
    #[error("crc32c does not match data")]
    CrcMismatch,
    /// The MAC does not match.
    #[error("mac does not verify")]
    BadMac,
    /// Dated before this gateway accepts chunks: an earlier run may have stored it.
    #[error(
        "chunk is dated {early_ms} ms before this gateway accepts chunks (after the lease its \
         earlier runs left in state_dir, or with none its start plus max_future_skew_ms): an \
         earlier run may have stored it, and nothing was stored now. If no send of this chunk \
         (any seal of its sequence) had an unknown outcome, seal it again with a fresh \
         timestamp and send that; otherwise drop it"
    )]
    SignedBeforeStart {
        /// How much too early.
        early_ms: i64,
    },
    /// Sealed for another gateway.
    #[error("chunk is addressed to gateway {addressed:?}, this is gateway {this:?}")]
    WrongGateway {
        /// The chunk's `gateway_id`.
        addressed: String,
        /// This gateway's.
        this: String,
    },
    /// Timestamp older than the freshness window.
    #[error("chunk is stale: signed {age_ms} ms ago, window is {window_ms} ms")]
    Stale {
        /// How old it is.
        age_ms: i64,
        /// The window.
        window_ms: u128,
    },
    /// Timestamp further ahead than `max_future_skew`.
    #[error(
        "chunk is from the future: signed {ahead_ms} ms ahead, at most {window_ms} ms \
         (max_future_skew_ms) allowed"
    )]
    Future {
        /// How far ahead it is.
        ahead_ms: i64,
        /// The window.
        window_ms: u128,
    },
}

impl VerifyError {
    /// A short, stable label for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Malformed { .. } => "malformed",
            Self::UnknownKey => "unknown_key",
            Self::CrcMismatch => "crc_mismatch",
            Self::BadMac => "bad_mac",
            Self::SignedBeforeStart { .. } => "before_start",
            Self::WrongGateway { .. } => "wrong_gateway",
            Self::Stale { .. } => "stale",
            Self::Future { .. } => "future",
        }
    }
}

fn malformed(field: &'static str, problem: impl Into<String>) -> VerifyError {
    VerifyError::Malformed { field, problem: problem.into() }
}

/// Verifies `req` against `keys` and `policy` at time `now_unix_ms`.
pub fn verify(
    req: PublishRequest,
    keys: &MacKeys,
    policy: &VerifyPolicy,
    now_unix_ms: i64,
) -> Result<VerifiedChunk, VerifyError> {
    check_name("collector_id", &req.collector_id, MAX_NAME_BYTES)?;
    check_name("gateway_id", &req.gateway_id, MAX_NAME_BYTES)?;
    check_name("key_id", &req.key_id, MAX_KEY_ID_BYTES)?;
    if req.data.is_empty() || req.data.len() > policy.max_chunk_bytes {
        return Err(malformed(
            "data",
            format!("{} bytes, must be 1..={}", req.data.len(), policy.max_chunk_bytes),
        ));
    }
    if req.mac.len() != MAC_LEN {
        return Err(malformed("mac", format!("{} bytes, must be {MAC_LEN}", req.mac.len())));
    }
    let mixing = parse_enum::<Mixing>("mixing", req.mixing)?;
    let sources = parse_sources(&req)?;
    check_mixing(mixing, &sources)?;

    let key = keys.get(&req.key_id).ok_or(VerifyError::UnknownKey)?;
    if crc32c::crc32c(&req.data) != req.crc32c {
        return Err(VerifyError::CrcMismatch);
    }
    if !verify_chunk_mac(key, &req) {
        return Err(VerifyError::BadMac);
    }

    if req.gateway_id != policy.gateway_id {
        return Err(VerifyError::WrongGateway {
            addressed: req.gateway_id,
            this: policy.gateway_id.clone(),
        });
    }
    check_freshness(req.timestamp_unix_ms, policy, now_unix_ms)?;
    Ok(VerifiedChunk {
        stream: (req.collector_id, req.epoch),
        sequence: req.sequence,
        timestamp_unix_ms: req.timestamp_unix_ms,
        mixing,
        sources,
        data: SecretBytes::new(req.data),
    })
}

fn check_name(field: &'static str, value: &str, max: usize) -> Result<(), VerifyError> {
    if value.is_empty() || value.len() > max {
        return Err(malformed(field, format!("{} bytes, must be 1..={max}", value.len())));
    }
    if value.chars().any(char::is_control) {
        return Err(malformed(field, "must not contain control characters"));
    }
    Ok(())
}

/// Parses a wire enum number into the gateway's word for it, refusing unknown values and the
/// UNSPECIFIED zero.
fn parse_enum<E: TryFrom<i32, Error = Unknown>>(
    field: &'static str,
    value: i32,
) -> Result<E, VerifyError> {
    E::try_from(value).map_err(|Unknown(value)| {
        malformed(field, format!("{value} is not a valid, specified value"))
    })
}

fn parse_sources(req: &PublishRequest) -> Result<Vec<SourceReport>, VerifyError> {
    if req.sources.is_empty() || req.sources.len() > MAX_SOURCES {
        return Err(malformed(
            "sources",
            format!("{} entries, must be 1..={MAX_SOURCES}", req.sources.len()),
        ));
    }
    let mut out = Vec::with_capacity(req.sources.len());
    for s in &req.sources {
        check_name("sources.name", &s.name, MAX_NAME_BYTES)?;
        if out.iter().any(|o: &SourceReport| o.name == s.name) {
            return Err(malformed("sources.name", format!("{:?} is reported twice", s.name)));
        }
        let health = parse_enum::<SourceHealth>("sources.health", s.health)?;
        if s.contributed && health != SourceHealth::Healthy {
            return Err(malformed(
                "sources.contributed",
                format!("source {:?} contributed while not healthy", s.name),
            ));
        }
        out.push(SourceReport {
            name: s.name.clone(),
            kind: parse_enum("sources.kind", s.kind)?,
            health,
            contributed: s.contributed,
        });
    }
    Ok(out)
}

fn check_mixing(mixing: Mixing, sources: &[SourceReport]) -> Result<(), VerifyError> {
    let contributing = sources.iter().filter(|s| s.contributed).count();
    let ok = match mixing {
        Mixing::None => contributing == 1,
        Mixing::Xor => contributing >= 2,
        Mixing::HkdfSha256 => contributing >= 1,
    };
    if ok {
        Ok(())
    } else {
        Err(malformed(
            "mixing",
            format!(
                "{} with {contributing} contributing sources (NONE needs 1, XOR 2 or more, \
                 HKDF_SHA256 1 or more)",
                mixing.wire_name()
            ),
        ))
    }
}

fn check_freshness(ts: i64, policy: &VerifyPolicy, now: i64) -> Result<(), VerifyError> {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let (window, skew) = (ms(policy.freshness_window), ms(policy.max_future_skew));
    let age = now.saturating_sub(ts);
    if age > window {
        return Err(VerifyError::Stale {
            age_ms: age,
            window_ms: policy.freshness_window.as_millis(),
        });
    }
    if age.saturating_neg() > skew {
        return Err(VerifyError::Future {
            ahead_ms: age.saturating_neg(),
            window_ms: policy.max_future_skew.as_millis(),
        });
    }
    if ts < policy.accepts_from_unix_ms {
        return Err(VerifyError::SignedBeforeStart {
            early_ms: policy.accepts_from_unix_ms.saturating_sub(ts),
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use entropy_testkit::chunk::Signer;

    use super::*;
    use crate::domain::ingest::lease::new_state_accepts_from;

    pub(crate) const KEY: [u8; 32] = [9; 32];
    pub(crate) const NOW: i64 = 1_800_000_000_000;

    pub(crate) fn keys() -> MacKeys {
        let mut keys = MacKeys::default();
        keys.insert("k1", KEY.to_vec()).expect("valid key");
        keys
    }

    pub(crate) fn policy() -> VerifyPolicy {
        VerifyPolicy {
            max_chunk_bytes: 1024,
            freshness_window: Duration::from_secs(60),
            max_future_skew: Duration::from_secs(2),
            started_unix_ms: NOW - 3_600_000,
            accepts_from_unix_ms: new_state_accepts_from(NOW - 3_600_000, Duration::from_secs(2)),
            gateway_id: "gw-1".into(),
        }
    }

    /// A correctly signed chunk (the shared fixture: one healthy OS source); `edit` runs
    /// before signing.
    pub(crate) fn signed(edit: impl FnOnce(&mut PublishRequest)) -> PublishRequest {
        let signer = Signer { collector_id: "c1", gateway_id: "gw-1", key_id: "k1", key: &KEY };
        signer.signed(NOW, vec![0x5A; 100], |req| {
            req.epoch = 11;
            edit(req);
        })
    }

    fn check(req: PublishRequest) -> Result<VerifiedChunk, VerifyError> {
        verify(req, &keys(), &policy(), NOW)
    }

    #[test]
    fn a_good_chunk_verifies() {
        let chunk = check(signed(|_| {})).expect("valid");
        assert_eq!(chunk.stream, ("c1".to_owned(), 11));
        assert_eq!(chunk.data.len(), 100);
        assert_eq!(chunk.sources[0].kind, SourceKind::Os);
    }

    #[test]
    fn tampering_after_signing_is_caught() {
        let mut req = signed(|_| {});
        req.sequence += 1;
        assert_eq!(check(req).unwrap_err(), VerifyError::BadMac);

        let mut req = signed(|_| {});
        req.data[0] ^= 1;
        assert_eq!(check(req).unwrap_err(), VerifyError::CrcMismatch);

        let mut req = signed(|_| {});
        req.data[0] ^= 1;
        req.crc32c = crc32c::crc32c(&req.data); // attacker fixes the CRC too
        assert_eq!(check(req).unwrap_err(), VerifyError::BadMac);

        let mut req = signed(|_| {});
        req.key_id = "k2".into();
        assert_eq!(check(req).unwrap_err(), VerifyError::UnknownKey);
    }

    #[test]
    fn timestamps_outside_the_window_are_refused() {
        let stale = check(signed(|r| r.timestamp_unix_ms = NOW - 60_001)).unwrap_err();
        assert_eq!(stale, VerifyError::Stale { age_ms: 60_001, window_ms: 60_000 });
        // The future is bounded far tighter than the past (max_future_skew, 2 s here).
        let future = check(signed(|r| r.timestamp_unix_ms = NOW + 2_001)).unwrap_err();
        assert_eq!(future, VerifyError::Future { ahead_ms: 2_001, window_ms: 2_000 });
        check(signed(|r| r.timestamp_unix_ms = NOW - 60_000)).expect("edge of the window");
        check(signed(|r| r.timestamp_unix_ms = NOW + 2_000)).expect("edge of the skew");
    }

    #[test]
    fn chunks_dated_before_start_plus_skew_are_refused_even_when_fresh() {
        // A new state (no lease on disk): the start rule is the start plus the skew.
        let starting = |started| VerifyPolicy {
            started_unix_ms: started,
            accepts_from_unix_ms: new_state_accepts_from(started, Duration::from_secs(2)),
            ..policy()
        };
        let p = starting(NOW - 10);
        // Dated after the start but within the skew of it: a previous run could have accepted
        // it (dated up to 2 s ahead of its clock), so this run must not.
        let req = signed(|r| r.timestamp_unix_ms = NOW + 1_500);
        assert_eq!(
            verify(req, &keys(), &p, NOW).unwrap_err(),
            VerifyError::SignedBeforeStart { early_ms: 490 }
        );
        let req = signed(|r| r.timestamp_unix_ms = NOW - 11);
        assert!(matches!(
            verify(req, &keys(), &p, NOW).unwrap_err(),
            VerifyError::SignedBeforeStart { .. }
        ));
        verify(signed(|_| {}), &keys(), &starting(NOW - 2_000), NOW)
            .expect("accepted from start + skew on");
    }

    #[test]
    fn after_a_lease_only_later_chunks_are_accepted_whatever_the_skew() {
        // An earlier run's lease ends at NOW + 25 s (it ran with a 30 s skew); this run's skew
        // is 2 s. Every chunk dated up to the lease is refused, even once it is no longer
        // ahead of the clock; the first millisecond after it is accepted.
        let p = VerifyPolicy { accepts_from_unix_ms: NOW + 25_001, ..policy() };
        let dated = |ts| signed(move |r| r.timestamp_unix_ms = ts);
        let at = |now| verify(dated(NOW + 25_000), &keys(), &p, now).unwrap_err();
        assert_eq!(at(NOW + 23_000), VerifyError::SignedBeforeStart { early_ms: 1 });
        assert_eq!(at(NOW + 40_000), VerifyError::SignedBeforeStart { early_ms: 1 });
        verify(dated(NOW + 25_001), &keys(), &p, NOW + 24_000).expect("after the lease");
    }

    #[test]
    fn a_chunk_for_another_gateway_is_refused_after_its_mac() {
        let req = signed(|r| r.gateway_id = "gw-2".into());
        assert_eq!(
            check(req).unwrap_err(),
            VerifyError::WrongGateway { addressed: "gw-2".into(), this: "gw-1".into() }
        );
        // Readdressing it without the key breaks the MAC instead.
        let mut req = signed(|r| r.gateway_id = "gw-2".into());
        req.gateway_id = "gw-1".into();
        assert_eq!(check(req).unwrap_err(), VerifyError::BadMac);
    }

    #[test]
    fn malformed_fields_name_the_field_and_bound() {
        type Edit = Box<dyn FnOnce(&mut PublishRequest)>;
        let cases: Vec<(&str, Edit)> = vec![
            ("collector_id", Box::new(|r| r.collector_id.clear())),
            ("collector_id", Box::new(|r| r.collector_id = "x".repeat(65))),
            ("key_id", Box::new(|r| r.key_id.clear())),
            ("data", Box::new(|r| r.data.clear())),
            ("data", Box::new(|r| r.data = vec![1; 1025])),
            ("mixing", Box::new(|r| r.mixing = 0)),
            ("mixing", Box::new(|r| r.mixing = 99)),
            ("mixing", Box::new(|r| r.mixing = entropy_proto::v1::Mixing::Xor as i32)),
            ("sources", Box::new(|r| r.sources.clear())),
            ("sources.kind", Box::new(|r| r.sources[0].kind = 0)),
            ("sources.health", Box::new(|r| r.sources[0].health = -3)),
            ("sources.name", Box::new(|r| r.sources[0].name = "a\nb".into())),
            ("sources.name", Box::new(|r| r.sources.push(r.sources[0].clone()))),
            (
                "sources.contributed",
                Box::new(|r| {
                    r.sources[0].health = entropy_proto::v1::SourceHealth::Quarantined as i32;
                }),
            ),
        ];
        for (field, edit) in cases {
            match check(signed(edit)) {
                Err(VerifyError::Malformed { field: f, problem }) => {
                    assert_eq!(f, field, "{problem}");
                }
                other => panic!("expected {field} to be refused, got {other:?}"),
            }
        }
        let mut req = signed(|_| {});
        req.mac.truncate(31);
        assert!(matches!(check(req), Err(VerifyError::Malformed { field: "mac", .. })));
    }
}
