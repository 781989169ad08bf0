//! Chunk verification: `PublishRequest`s through `Ingest::publish_at`, the path every chunk
//! takes (bounds, key id, CRC32C, HMAC, freshness, replay, pool).
//!
//! Invariants checked on every call ([`Harness::publish`]):
//! - no panic, and every error maps to a gRPC status;
//! - accepted => the key id names a gateway key, the MAC verifies under that key, the CRC32C
//!   matches, the timestamp is within the freshness window and not before the gateway started,
//!   and the pool grew by exactly the chunk's length;
//! - the same signed chunk is accepted at most once, whatever the clocks do; the same
//!   (collector id, epoch, sequence) signed again (only a key holder can) is accepted again
//!   only after the replay guard may forget the stream (2 windows + `FORGET_MARGIN`);
//! - refused => the pool did not change;
//! - the ingest counters add up to the calls made.
//!
//! [`chunks`] adds what only a structured input can check: a chunk changed after signing, or
//! signed with another key than its key id names, is never accepted; and a well-formed, fresh,
//! correctly signed chunk is accepted unless the replay guard or a full pool says why not.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arbitrary::Arbitrary;
use entropy_gateway::domain::ingest::keys::MacKeys;
use entropy_gateway::domain::ingest::replay::{FORGET_MARGIN, ReplayError};
use entropy_gateway::domain::ingest::verify::VerifyPolicy;
use entropy_gateway::domain::ingest::{Ingest, IngestError};
use entropy_gateway::domain::pool::Pool;
use entropy_proto::signing::{chunk_mac, verify_chunk_mac};
use entropy_proto::v1::{Mixing, PublishRequest, SourceHealth, SourceKind, SourceReport};
use entropy_testkit::chunk::Signer as Fixture;
use prost::Message;
use tokio::time::Instant;
use tonic::Code;

/// The gateway's main chunk key.
pub const KEY: [u8; 32] = [0x42; 32];
/// Its id.
pub const KEY_ID: &str = "fuzz-key";
/// A second key the gateway also accepts (so "signed with the other key" is reachable).
pub const OTHER_KEY: [u8; 32] = [0x17; 32];
/// Its id.
pub const OTHER_KEY_ID: &str = "other-key";
/// The wall clock at the start of every run (Unix ms).
pub const NOW: i64 = 1_800_000_000_000;
/// The freshness window.
pub const WINDOW_MS: i64 = 60_000;
/// When the gateway started: an hour before [`NOW`].
pub const STARTED: i64 = NOW - 3_600_000;
/// How far ahead of the clock a timestamp may be (`max_future_skew_ms`); chunks are accepted
/// from `STARTED + SKEW_MS` on.
pub const SKEW_MS: i64 = 2_000;
/// The harness gateway's id: chunks are sealed for it.
pub const GATEWAY_ID: &str = "fuzz-gw";
/// Largest chunk accepted (small, so the fuzzer reaches the bound).
pub const MAX_CHUNK_BYTES: usize = 2048;
/// Pool capacity: room for a few chunks, so "pool full" is reachable.
pub const POOL_BYTES: usize = 6144;
/// Collector epochs the replay guard tracks (small, so "table full" is reachable).
pub const MAX_STREAMS: usize = 4;

fn keys() -> MacKeys {
    let mut keys = MacKeys::default();
    for (id, key) in [(KEY_ID, KEY), (OTHER_KEY_ID, OTHER_KEY)] {
        if let Err(e) = keys.insert(id, key.to_vec()) {
            panic!("harness key {id} refused: {e}");
        }
    }
    keys
}

fn policy() -> VerifyPolicy {
    VerifyPolicy {
        max_chunk_bytes: MAX_CHUNK_BYTES,
        freshness_window: Duration::from_millis(WINDOW_MS as u64),
        max_future_skew: Duration::from_millis(SKEW_MS as u64),
        started_unix_ms: STARTED,
        accepts_from_unix_ms: STARTED + SKEW_MS,
        gateway_id: GATEWAY_ID.into(),
    }
}

/// A fresh gateway ingest path and the model the invariants are checked against.
pub struct Harness {
    pool: Arc<Pool>,
    ingest: Ingest,
    keys: MacKeys,
    /// Wall clock (Unix ms) and the monotonic clock, advanced together.
    now_ms: i64,
    base: Instant,
    /// Every (collector id, epoch, sequence) accepted so far: when (wall clock) and which
    /// signed chunk.
    accepted: HashMap<(String, u64, u64), (i64, PublishRequest)>,
    /// How many chunks were accepted.
    accepted_total: u64,
    calls: u64,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// An empty pool, the two keys, the clock at [`NOW`].
    pub fn new() -> Self {
        let pool = Arc::new(Pool::new(POOL_BYTES));
        let ingest = Ingest::new(pool.clone(), keys(), policy(), MAX_STREAMS);
        Self {
            pool,
            ingest,
            keys: keys(),
            now_ms: NOW,
            base: Instant::now(),
            accepted: HashMap::new(),
            accepted_total: 0,
            calls: 0,
        }
    }

    /// The wall clock now (Unix ms).
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// Moves both clocks forward.
    pub fn advance(&mut self, ms: u32) {
        self.now_ms += i64::from(ms);
    }

    /// Takes up to `n` bytes out of the pool, as a client would.
    pub fn take(&mut self, n: usize) {
        let n = n.min(self.pool.level());
        if let Ok(bytes) = self.pool.try_take(n) {
            assert_eq!(bytes.len(), n);
        }
    }

    /// Whether `(collector, epoch, sequence)` of `req` was accepted before.
    pub fn was_accepted(&self, req: &PublishRequest) -> bool {
        self.accepted.contains_key(&(req.collector_id.clone(), req.epoch, req.sequence))
    }

    /// Publishes `req` and checks every invariant of the module doc.
    pub fn publish(&mut self, req: &PublishRequest) -> Result<usize, IngestError> {
        let level = self.pool.level();
        let instant = self.base + Duration::from_millis((self.now_ms - NOW) as u64);
        let result = self.ingest.publish_at(req.clone(), self.now_ms, instant);
        self.calls += 1;
        match &result {
            Ok(len) => {
                assert_eq!(*len, req.data.len(), "accepted length is the chunk's");
                let key = self.keys.get(&req.key_id).expect("accepted => key id is known");
                assert!(verify_chunk_mac(key, req), "accepted => MAC verifies under key_id");
                assert_eq!(crc32c::crc32c(&req.data), req.crc32c, "accepted => CRC matches");
                let age = self.now_ms - req.timestamp_unix_ms;
                assert!(age <= WINDOW_MS && -age <= SKEW_MS, "accepted => fresh (age {age} ms)");
                assert!(
                    req.timestamp_unix_ms >= STARTED + SKEW_MS,
                    "accepted => dated from the start plus the skew on"
                );
                assert_eq!(req.gateway_id, GATEWAY_ID, "accepted => addressed to this gateway");
                let id = (req.collector_id.clone(), req.epoch, req.sequence);
                if let Some((when, before)) = self.accepted.insert(id, (self.now_ms, req.clone())) {
                    // The same signed chunk: never twice. The same (collector, epoch, sequence)
                    // signed again (only a key holder can; an honest collector never does)
                    // only once the replay guard may have forgotten the stream.
                    assert!(before != *req, "the same chunk was accepted twice: {req:?}");
                    let forget_ms = 2 * WINDOW_MS + FORGET_MARGIN.as_millis() as i64;
                    assert!(
                        self.now_ms - when >= forget_ms,
                        "sequence accepted twice within {forget_ms} ms ({} ms): {req:?}",
                        self.now_ms - when
                    );
                }
                self.accepted_total += 1;
                assert_eq!(self.pool.level(), level + len, "the pool grew by the chunk");
            }
            Err(e) => {
                assert_eq!(self.pool.level(), level, "a refused chunk stored nothing: {e}");
                if let IngestError::Replay(ReplayError::Duplicate { .. }) = e {
                    assert!(self.was_accepted(req), "duplicate of a chunk never accepted");
                }
                let status = tonic::Status::from(e.clone());
                assert!(
                    matches!(
                        status.code(),
                        Code::InvalidArgument
                            | Code::Unauthenticated
                            | Code::FailedPrecondition
                            | Code::AlreadyExists
                            | Code::ResourceExhausted
                    ),
                    "unexpected status {status:?} for {e:?}"
                );
                assert!(!status.message().is_empty());
                assert!(!e.reason().is_empty());
            }
        }
        let stats = self.ingest.stats();
        assert_eq!(
            stats.chunks_accepted + stats.chunks_rejected + stats.chunks_deferred,
            self.calls,
            "every call is counted once"
        );
        assert_eq!(stats.chunks_accepted, self.accepted_total);
        result
    }
}

/// Raw bytes, decoded as a `PublishRequest` and published twice: the second time it must not
/// be accepted.
pub fn bytes(data: &[u8]) {
    let _ = publish_twice(data);
}

/// Decodes `data` and publishes it twice to a fresh harness; checks that it was not accepted
/// twice, and returns the first outcome (`None` when `data` does not decode).
pub fn publish_twice(data: &[u8]) -> Option<Result<usize, IngestError>> {
    let req = PublishRequest::decode(data).ok()?;
    let mut h = Harness::new();
    let first = h.publish(&req);
    let second = h.publish(&req);
    assert!(!(first.is_ok() && second.is_ok()), "a chunk was accepted twice");
    Some(first)
}

/// A chunk the gateway should accept as it is: one healthy source, fresh, signed with
/// [`KEY`] (the shared fixture of `entropy-testkit`). `edit` runs before signing.
pub fn signed(edit: impl FnOnce(&mut PublishRequest)) -> PublishRequest {
    let signer = Fixture {
        collector_id: "collector-1",
        gateway_id: GATEWAY_ID,
        key_id: KEY_ID,
        key: &KEY,
    };
    signer.signed(NOW, vec![0xA5; 64], |req| {
        req.epoch = 7;
        edit(req);
    })
}

/// A sequence of operations on one gateway ingest path.
#[derive(Debug, Arbitrary)]
pub struct Scenario {
    /// At most [`MAX_OPS`] are run.
    pub ops: Vec<Op>,
}

/// Most operations run per input.
pub const MAX_OPS: usize = 48;

/// One step.
#[derive(Debug, Arbitrary)]
pub enum Op {
    /// Build, sign, maybe tamper with, and publish a chunk.
    Publish(ChunkSpec),
    /// Send the `n`th published chunk again, unchanged.
    Resend(u8),
    /// Move the clocks forward by up to about 3.4 freshness windows.
    Advance(u16),
    /// Draw bytes from the pool.
    Take(u16),
}

/// How a chunk is built.
#[derive(Debug, Arbitrary)]
pub struct ChunkSpec {
    /// Which collector id.
    pub collector: Name,
    /// Epoch (small values collide on purpose).
    pub epoch: Small,
    /// Sequence.
    pub sequence: Small,
    /// Timestamp relative to now, in 4 ms steps (about ±2 freshness windows).
    pub timestamp_offset: i16,
    /// Shape of the sources and mixing fields.
    pub shape: Shape,
    /// Data length (taken modulo a little over the bound) and fill byte.
    pub data_len: u16,
    /// The byte the data is filled with.
    pub data_byte: u8,
    /// Which key id the chunk names.
    pub key_id: KeyIdChoice,
    /// Which key actually signs it.
    pub signer: Signer,
    /// What is changed after signing.
    pub tamper: Tamper,
}

/// A name from a small set, or any string.
#[derive(Debug, Arbitrary)]
pub enum Name {
    /// One of a few valid names.
    Known(u8),
    /// Anything.
    Any(String),
}

impl Name {
    fn get(&self) -> String {
        match self {
            Self::Known(i) => format!("collector-{}", i % 3),
            Self::Any(s) => s.clone(),
        }
    }
}

/// A number drawn from a small range (to collide) or any u64.
#[derive(Debug, Arbitrary)]
pub enum Small {
    /// 0..=7.
    Tiny(u8),
    /// Any u16 (crosses the 1024-sequence replay window).
    Mid(u16),
    /// Anything.
    Any(u64),
}

impl Small {
    fn get(&self) -> u64 {
        match self {
            Self::Tiny(n) => u64::from(n % 8),
            Self::Mid(n) => u64::from(*n),
            Self::Any(n) => *n,
        }
    }
}

/// Sources and mixing.
#[derive(Debug, Arbitrary)]
pub enum Shape {
    /// One healthy OS source, mixing NONE: always well formed.
    Single,
    /// Two healthy contributing sources, XOR: always well formed.
    Xor,
    /// Anything.
    Custom {
        /// Raw mixing value.
        mixing: i32,
        /// Raw sources.
        sources: Vec<(Name, i32, i32, bool)>,
    },
}

impl Shape {
    fn well_formed(&self) -> bool {
        !matches!(self, Self::Custom { .. })
    }

    fn apply(&self, req: &mut PublishRequest) {
        let healthy = |name: &str, kind: SourceKind| SourceReport {
            name: name.into(),
            kind: kind as i32,
            health: SourceHealth::Healthy as i32,
            contributed: true,
        };
        match self {
            Self::Single => {
                req.mixing = Mixing::None as i32;
                req.sources = vec![healthy("os", SourceKind::Os)];
            }
            Self::Xor => {
                req.mixing = Mixing::Xor as i32;
                req.sources =
                    vec![healthy("qrng", SourceKind::Quantum), healthy("os", SourceKind::Os)];
            }
            Self::Custom { mixing, sources } => {
                req.mixing = *mixing;
                req.sources = sources
                    .iter()
                    .take(40)
                    .map(|(name, kind, health, contributed)| SourceReport {
                        name: name.get(),
                        kind: *kind,
                        health: *health,
                        contributed: *contributed,
                    })
                    .collect();
            }
        }
    }
}

/// The key id a chunk names.
#[derive(Debug, Arbitrary)]
pub enum KeyIdChoice {
    /// [`KEY_ID`].
    Main,
    /// [`OTHER_KEY_ID`].
    Other,
    /// Anything (almost always unknown).
    Any(String),
}

/// Who signs.
#[derive(Debug, Arbitrary)]
pub enum Signer {
    /// The key the key id names (if it names one).
    Right,
    /// The key the key id does not name.
    Wrong,
    /// Arbitrary MAC bytes.
    Garbage(Vec<u8>),
}

/// A change after signing. Every one but `None` touches a signed field or the MAC.
#[derive(Debug, Arbitrary)]
pub enum Tamper {
    /// Nothing.
    None,
    /// Flip one bit of the data and fix the CRC (so only the MAC can catch it).
    DataBit(u16),
    /// Flip one bit of the data, leave the CRC.
    DataBitBadCrc(u16),
    /// Add to the sequence.
    Sequence(u64),
    /// Add to the epoch.
    Epoch(u64),
    /// Move the timestamp.
    Timestamp(i64),
    /// Change the collector id.
    Collector(String),
    /// Claim the other key id.
    SwapKeyId,
    /// Drop the last source.
    DropSource,
    /// Flip a source's `contributed`.
    Contributed(u8),
    /// Flip one bit of the MAC.
    MacBit(u8),
}

impl ChunkSpec {
    /// Builds the chunk. Returns it and whether it should be accepted on its merits
    /// (replay and pool aside), or `None` when that is not predicted.
    pub fn build(&self, now_ms: i64) -> (PublishRequest, Option<bool>) {
        let mut req = PublishRequest {
            collector_id: self.collector.get(),
            gateway_id: GATEWAY_ID.into(),
            epoch: self.epoch.get(),
            sequence: self.sequence.get(),
            timestamp_unix_ms: now_ms + i64::from(self.timestamp_offset) * 4,
            data: vec![self.data_byte; usize::from(self.data_len) % (MAX_CHUNK_BYTES + 16)],
            key_id: match &self.key_id {
                KeyIdChoice::Main => KEY_ID.into(),
                KeyIdChoice::Other => OTHER_KEY_ID.into(),
                KeyIdChoice::Any(s) => s.clone(),
            },
            ..Default::default()
        };
        self.shape.apply(&mut req);
        req.crc32c = crc32c::crc32c(&req.data);
        let (named, other) = match req.key_id.as_str() {
            KEY_ID => (Some(KEY), OTHER_KEY),
            OTHER_KEY_ID => (Some(OTHER_KEY), KEY),
            _ => (None, KEY),
        };
        req.mac = match &self.signer {
            Signer::Right => chunk_mac(&named.unwrap_or(KEY), &req).to_vec(),
            Signer::Wrong => chunk_mac(&other, &req).to_vec(),
            Signer::Garbage(mac) => mac.clone(),
        };
        let tampered = self.tamper(&mut req);
        let honest = named.is_some() && matches!(self.signer, Signer::Right) && !tampered;
        let expect = if !honest {
            // Forged or changed after signing: never to be accepted. (Garbage may equal the
            // real MAC only by a 2^-256 chance.)
            Some(false)
        } else if self.shape.well_formed()
            && (1..=MAX_CHUNK_BYTES).contains(&req.data.len())
            && valid_collector(&req.collector_id)
        {
            let age = now_ms - req.timestamp_unix_ms;
            Some(age <= WINDOW_MS && -age <= SKEW_MS && req.timestamp_unix_ms >= STARTED + SKEW_MS)
        } else {
            None
        };
        (req, expect)
    }

    /// Applies the tamper; true when it changed anything signed or the MAC.
    fn tamper(&self, req: &mut PublishRequest) -> bool {
        match &self.tamper {
            Tamper::None => false,
            Tamper::DataBit(i) | Tamper::DataBitBadCrc(i) => {
                if req.data.is_empty() {
                    return false;
                }
                let i = usize::from(*i) % (req.data.len() * 8);
                req.data[i / 8] ^= 1 << (i % 8);
                if matches!(self.tamper, Tamper::DataBit(_)) {
                    req.crc32c = crc32c::crc32c(&req.data);
                }
                true
            }
            Tamper::Sequence(d) => bump(&mut req.sequence, *d),
            Tamper::Epoch(d) => bump(&mut req.epoch, *d),
            Tamper::Timestamp(d) => {
                let before = req.timestamp_unix_ms;
                req.timestamp_unix_ms = before.wrapping_add(*d);
                req.timestamp_unix_ms != before
            }
            Tamper::Collector(c) => {
                let changed = *c != req.collector_id;
                req.collector_id = c.clone();
                changed
            }
            Tamper::SwapKeyId => {
                let to = if req.key_id == KEY_ID { OTHER_KEY_ID } else { KEY_ID };
                req.key_id = to.into();
                true
            }
            Tamper::DropSource => req.sources.pop().is_some(),
            Tamper::Contributed(i) => {
                if req.sources.is_empty() {
                    return false;
                }
                let n = req.sources.len();
                let s = &mut req.sources[usize::from(*i) % n];
                s.contributed = !s.contributed;
                true
            }
            Tamper::MacBit(i) => {
                if req.mac.is_empty() {
                    return false;
                }
                let i = usize::from(*i) % (req.mac.len() * 8);
                req.mac[i / 8] ^= 1 << (i % 8);
                true
            }
        }
    }
}

fn bump(field: &mut u64, by: u64) -> bool {
    *field = field.wrapping_add(by);
    by != 0
}

fn valid_collector(id: &str) -> bool {
    (1..=64).contains(&id.len()) && !id.chars().any(char::is_control)
}

/// Runs a [`Scenario`] against one ingest path, checking the invariants of the module doc
/// after every step. Returns how many chunks were accepted.
pub fn chunks(scenario: &Scenario) -> usize {
    let mut h = Harness::new();
    let mut sent: Vec<PublishRequest> = Vec::new();
    for op in scenario.ops.iter().take(MAX_OPS) {
        match op {
            Op::Publish(spec) => {
                let (req, expect) = spec.build(h.now_ms());
                let seen_before = h.was_accepted(&req);
                let result = h.publish(&req);
                match (expect, &result) {
                    (Some(false), Ok(_)) => panic!("forged or stale chunk accepted: {spec:?}"),
                    (Some(true), Err(IngestError::Invalid(e))) => {
                        panic!("an honest, fresh, well-formed chunk failed verification: {e}")
                    }
                    (Some(true), Err(IngestError::Replay(ReplayError::Duplicate { .. }))) => {
                        assert!(seen_before);
                    }
                    _ => {}
                }
                sent.push(req);
            }
            Op::Resend(i) => {
                if sent.is_empty() {
                    continue;
                }
                let req = sent[usize::from(*i) % sent.len()].clone();
                // The harness checks it: the same chunk is never accepted twice.
                let _ = h.publish(&req);
            }
            Op::Advance(ms) => h.advance(u32::from(*ms) * 3),
            Op::Take(n) => h.take(usize::from(*n)),
        }
    }
    h.accepted_total as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_chunk_is_accepted_once() {
        let mut h = Harness::new();
        let req = signed(|_| {});
        assert_eq!(h.publish(&req), Ok(64));
        assert!(matches!(h.publish(&req), Err(IngestError::Replay(_))));
    }

    /// Found by `ingest_chunks`: a chunk signed ahead of the clock is still fresh two windows
    /// after it was accepted, when the replay guard could already forget its stream. (Since
    /// the future is bounded by the skew, not the window, the case is smaller; it stays.)
    #[test]
    fn a_chunk_signed_a_window_ahead_is_not_accepted_again_two_windows_later() {
        let mut h = Harness::new();
        let ahead = signed(|r| r.timestamp_unix_ms = NOW + SKEW_MS);
        assert_eq!(h.publish(&ahead), Ok(64));
        // Fill the replay table, so the next new stream makes it forget the old ones.
        for c in 1..MAX_STREAMS {
            h.publish(&signed(|r| r.collector_id = format!("filler-{c}"))).expect("accepted");
            h.take(64);
        }
        h.take(64);
        h.advance(2 * WINDOW_MS as u32);
        let newcomer = signed(|r| {
            r.collector_id = "newcomer".into();
            r.timestamp_unix_ms = NOW + 2 * WINDOW_MS;
        });
        let _ = h.publish(&newcomer);
        assert!(h.publish(&ahead).is_err(), "the same chunk accepted twice");
    }

    #[test]
    fn raw_bytes_of_a_signed_chunk_reach_the_pool() {
        // Before, this passed when both attempts were refused: it must store the chunk.
        let first = publish_twice(&signed(|_| {}).encode_to_vec());
        assert_eq!(first, Some(Ok(64)), "the chunk was stored once");
    }
}
