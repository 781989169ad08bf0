//! Request conversion: raw bytes decoded as each public request message and run through the
//! EntropyService handlers (validation, sampling, encoding) against a real pool.
//!
//! The first input byte picks the message (low 3 bits) and what the pool is filled with (next
//! 2 bits: pseudo-random, all 0xFF, all 0x00, or a counter); the rest is the protobuf
//! encoding. The pool holds exactly what a valid request of that size needs (more for integers,
//! whose draws may be rejected), so every outcome is predictable enough to check:
//!
//! - no panic, no hang (a stream ends when its client leaves);
//! - every error is INVALID_ARGUMENT and its message starts with a field of the request, except
//!   UNAVAILABLE for integers when rejection sampling ran the pool dry, and FAILED_PRECONDITION
//!   naming `receipt` and `receipts_dir` for a call that asks for a receipt (the rig keeps no
//!   receipt log: it is refused before anything is drawn);
//! - bytes come out in pool order, each once: GetRandom returns exactly the first `num_bytes`
//!   put in (raw, hex or base64), a stream returns the pool in order;
//! - integers lie in `[min, max]`, floats in `[0, 1)`, UUIDs are version 4; counts as asked;
//! - the pool's counters balance after every call: ingested = served + level + discarded.
//!
//! A request asking for DRBG output (`construction` 2 or 3) gets the output of an instance
//! seeded from the pool instead of the pool's bytes: the rig adds [`SEED_BUDGET`] bytes for its
//! seeds, the values are checked as above (sizes, ranges, versions) but not against the pool's
//! order, the response's provenance must say DRBG, and the pool must have given seeds only:
//! 48 bytes, and 32 per reseed.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use entropy_gateway::domain::auth::{KeyGrant, Scope};
use entropy_gateway::domain::ingest::Ingest;
use entropy_gateway::domain::ingest::keys::MacKeys;
use entropy_gateway::domain::ingest::verify::VerifyPolicy;
use entropy_gateway::domain::pool::{ChunkOrigin, Kinds, Pool};
use entropy_gateway::domain::quota::{KeyQuota, Limits};
use entropy_gateway::domain::readiness::Readiness;
use entropy_gateway::grpc::entropy_service::EntropyApi;
use entropy_gateway::grpc::stream_random::DEFAULT_STREAM_CHUNK_BYTES;
use entropy_proto::v1::entropy_service_server::EntropyService;
use entropy_proto::v1::{
    GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetStatusRequest, GetUuidsRequest,
    StreamRandomRequest,
};
use prost::Message;
use tokio_stream::StreamExt as _;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::{Code, Request, Status};

/// Largest GetRandom (the gateway's bound).
const MAX_RANDOM: usize = 1 << 20;
/// Largest stream chunk (the gateway's bound).
const MAX_CHUNK: usize = 1 << 20;
/// Stream messages read before the client leaves.
const STREAM_MESSAGES: usize = 3;
/// Pool bytes added for a DRBG request's seeds: its instance's 48, and 32 for each of up to 128
/// reseeds (prediction resistance reseeds before every 64 KiB request: 16 for a 1 MiB call, 80
/// for a stream's three 1 MiB messages and the two it may draw ahead).
const SEED_BUDGET: usize = 48 + 128 * 32;

/// Whether a request's `construction` asks for DRBG output.
fn drbg(construction: i32) -> bool {
    matches!(construction, 2 | 3)
}

/// Pool bytes a request needs besides what it is served: its seeds, when it asks for DRBG.
fn seeds_for(construction: i32) -> usize {
    if drbg(construction) { SEED_BUDGET } else { 0 }
}

/// After a DRBG call: the response says DRBG, and the pool gave seeds only.
fn drbg_checks(
    rig: &Rig,
    provenance: Option<&entropy_proto::v1::DrawProvenance>,
    construction: i32,
) {
    if let Some(p) = provenance {
        assert_eq!(p.construction, construction, "{p:?}");
        assert!(p.drbg.is_some(), "{p:?}");
    }
    let kept = rig.pool.stats().kept();
    assert!(kept == 0 || (kept >= 48 && (kept - 48) % 32 == 0), "the pool gave {kept} bytes");
}

/// Which message the input holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// GetRandomRequest.
    Random,
    /// StreamRandomRequest.
    Stream,
    /// GetIntegersRequest.
    Integers,
    /// GetFloatsRequest.
    Floats,
    /// GetUuidsRequest.
    Uuids,
    /// GetStatusRequest.
    Status,
}

impl Kind {
    /// Every kind, in selector order.
    pub const ALL: [Kind; 6] =
        [Self::Random, Self::Stream, Self::Integers, Self::Floats, Self::Uuids, Self::Status];

    /// The selector byte for this kind with pool fill `fill` (0..4).
    pub fn selector(self, fill: u8) -> u8 {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0) as u8;
        i | ((fill & 3) << 3)
    }
}

/// What the pool is filled with.
fn fill(pattern: u8, n: usize, seed: &[u8]) -> Vec<u8> {
    match pattern & 3 {
        0 => {
            // xorshift64* from the input: any byte values, deterministic per input.
            let mut x = seed.iter().fold(0x9E37_79B9_7F4A_7C15u64, |a, b| {
                (a ^ u64::from(*b)).wrapping_mul(0x100_0000_01B3)
            }) | 1;
            (0..n)
                .map(|_| {
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
                })
                .collect()
        }
        1 => vec![0xFF; n],
        2 => vec![0x00; n],
        _ => (0..n).map(|i| i as u8).collect(),
    }
}

/// The service under test, its pool, and what was put in.
struct Rig {
    api: EntropyApi,
    pool: Arc<Pool>,
    tracker: TaskTracker,
    put: Vec<u8>,
}

impl Rig {
    fn new(bytes: Vec<u8>) -> Self {
        let pool = Arc::new(Pool::new(bytes.len().max(MAX_RANDOM)));
        let origin = Arc::new(ChunkOrigin {
            collector: "fuzz".into(),
            epoch: 1,
            sequence: 0,
            signed_at_unix_ms: 0,
            kinds: Kinds::OS,
            mixed: false,
        });
        if let Err(e) = pool.put(&bytes, origin) {
            panic!("harness pool too small: {e}");
        }
        let policy = VerifyPolicy {
            max_chunk_bytes: 1024,
            freshness_window: Duration::from_secs(60),
            max_future_skew: Duration::from_secs(2),
            started_unix_ms: 0,
            accepts_from_unix_ms: 2_000,
            gateway_id: "fuzz-gw".into(),
        };
        let ingest = Arc::new(Ingest::new(pool.clone(), MacKeys::default(), policy, 1));
        let readiness = Arc::new(Readiness::new(pool.clone(), 0));
        let tracker = TaskTracker::new();
        let api = EntropyApi::new(
            pool.clone(),
            ingest,
            readiness,
            Duration::ZERO,
            CancellationToken::new(),
            tracker.clone(),
        );
        Self { api, pool, tracker, put: bytes }
    }

    fn check_balance(&self) {
        let s = self.pool.stats();
        assert_eq!(
            s.ingested_total,
            s.kept() + s.level as u64 + s.discarded_total,
            "pool accounting: {s:?}"
        );
    }

    /// Bytes served so far must be the first bytes put in.
    fn served(&self) -> &[u8] {
        &self.put[..self.pool.stats().kept() as usize]
    }
}

/// What a transport does when it has sent a response: counts its bytes as served.
fn delivered<T>(mut response: tonic::Response<T>) -> tonic::Response<T> {
    entropy_gateway::grpc::delivery::delivered_in_process(&mut response);
    response
}

/// An authenticated request with an unlimited key holding every scope.
fn request<T>(message: T) -> Request<T> {
    let grant = KeyGrant {
        name: "fuzz".into(),
        scopes: vec![Scope::EntropyRead, Scope::StatusRead, Scope::EntropyDrbg],
        quota: Arc::new(KeyQuota::new(Limits::default())),
    };
    let mut req = Request::new(message);
    req.extensions_mut().insert(Arc::new(grant));
    req
}

/// Whether `accept_kinds` lets the rig's OS bytes through: `None` when an entry is not a
/// known kind (INVALID_ARGUMENT), `Some(false)` when the call accepts other kinds only
/// (FAILED_PRECONDITION: the pool holds OS bytes only).
fn accepts_os(kinds: &[i32]) -> Option<bool> {
    if kinds.iter().any(|&k| !(1..=3).contains(&k)) {
        return None;
    }
    Some(kinds.is_empty() || kinds.contains(&3))
}

/// Checks a refusal: FAILED_PRECONDITION when the call asked for a receipt (`receipt`: the rig
/// keeps no receipt log) or accepts no kind the pool holds, else INVALID_ARGUMENT naming one of
/// `fields` (or `accept_kinds`, `construction`, `receipt`) first. Nothing is consumed.
fn refused(status: &Status, kinds: &[i32], (fields, receipt): (&[&str], bool), rig: &Rig) {
    if status.code() == Code::FailedPrecondition && status.message().starts_with("receipt:") {
        assert!(receipt, "{status:?}");
        assert!(status.message().contains("receipts_dir"), "{status:?}");
    } else if status.code() == Code::FailedPrecondition {
        assert_eq!(accepts_os(kinds), Some(false), "{status:?}");
        assert!(status.message().contains("the pool holds"), "{status:?}");
    } else {
        let mut named = fields.to_vec();
        named.extend(["accept_kinds", "construction"]);
        if receipt {
            named.push("receipt");
        }
        invalid_argument(status, &named);
    }
    assert_eq!(rig.pool.stats().kept(), 0, "a refused call consumes nothing");
}

/// Checks an error: INVALID_ARGUMENT naming one of `fields` first.
fn invalid_argument(status: &Status, fields: &[&str]) {
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        fields.iter().any(|f| status.message().starts_with(f)),
        "error does not start with a field name ({fields:?}): {:?}",
        status.message()
    );
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let Some(&kind) = Kind::ALL.get(usize::from(selector & 7)) else { return };
    let pattern = (selector >> 3) & 3;
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    runtime.block_on(async {
        match kind {
            Kind::Random => random(body, pattern).await,
            Kind::Stream => stream(body, pattern).await,
            Kind::Integers => integers(body, pattern).await,
            Kind::Floats => floats(body, pattern).await,
            Kind::Uuids => uuids(body, pattern).await,
            Kind::Status => status(body).await,
        }
    });
}

async fn random(body: &[u8], pattern: u8) {
    let Ok(msg) = GetRandomRequest::decode(body) else { return };
    // Valid sizes get exactly their bytes; invalid ones an empty pool.
    let n = msg.num_bytes as usize;
    let n = if n <= MAX_RANDOM { n } else { 0 };
    let rig = Rig::new(fill(pattern, n + seeds_for(msg.construction), body));
    let result = rig.api.get_random(request(msg.clone())).await.map(delivered);
    rig.check_balance();
    match result {
        Ok(resp) => {
            let resp = resp.into_inner();
            let got = match msg.encoding {
                0 => resp.data,
                1 => hex::decode(&resp.text).expect("hex text"),
                2 => base64::engine::general_purpose::STANDARD
                    .decode(&resp.text)
                    .expect("base64 text"),
                e => panic!("encoding {e} was accepted"),
            };
            assert_eq!(got.len(), msg.num_bytes as usize);
            if drbg(msg.construction) {
                drbg_checks(&rig, resp.provenance.as_ref(), msg.construction);
                return;
            }
            assert_eq!(got, rig.served(), "GetRandom serves the pool's bytes in order");
            assert_eq!(rig.pool.level(), 0);
        }
        Err(status) => {
            refused(&status, &msg.accept_kinds, (&["num_bytes", "encoding"], msg.receipt), &rig)
        }
    }
}

async fn stream(body: &[u8], pattern: u8) {
    let Ok(msg) = StreamRandomRequest::decode(body) else { return };
    let chunk = match msg.chunk_bytes as usize {
        0 => DEFAULT_STREAM_CHUNK_BYTES,
        n if n <= MAX_CHUNK => n,
        _ => 0, // refused before anything is drawn
    };
    let room = (chunk * STREAM_MESSAGES) as u64;
    // With a total the pool can cover, the stream must end by itself; otherwise the client
    // reads STREAM_MESSAGES messages and leaves.
    let ends = msg.total_bytes != 0 && msg.total_bytes <= room;
    let filled = if ends { msg.total_bytes } else { room } as usize;
    let rig = Rig::new(fill(pattern, filled + seeds_for(msg.construction), body));
    match rig.api.stream_random(request(msg.clone())).await {
        Ok(resp) => {
            let mut stream = resp.into_inner();
            let mut got = Vec::new();
            let mut messages = 0;
            while ends || messages < STREAM_MESSAGES {
                match stream.next().await {
                    Some(Ok(m)) => {
                        let expected = chunk.min(filled - got.len());
                        assert_eq!(m.data.len(), expected, "message {messages} size");
                        got.extend_from_slice(&m.data);
                        messages += 1;
                    }
                    Some(Err(status)) if status.code() == Code::FailedPrecondition => {
                        // The stream opened; its first draw found no accepted class.
                        assert_eq!(accepts_os(&msg.accept_kinds), Some(false), "{status:?}");
                        assert!(got.is_empty());
                        drop(stream);
                        rig.tracker.close();
                        rig.tracker.wait().await;
                        rig.check_balance();
                        assert_eq!(rig.pool.stats().kept(), 0, "nothing consumed");
                        return;
                    }
                    Some(Err(status)) => panic!("stream failed: {status:?}"),
                    None => break,
                }
            }
            assert_eq!(got.len(), filled, "a stream delivers what was asked, in full");
            drop(stream); // the client leaves
            rig.tracker.close();
            rig.tracker.wait().await; // and the stream's task ends (a hang is a finding)
            rig.check_balance();
            if drbg(msg.construction) {
                drbg_checks(&rig, None, msg.construction);
                return;
            }
            assert_eq!(got, rig.served(), "a stream serves the pool's bytes in order");
        }
        Err(status) => {
            rig.check_balance();
            refused(&status, &msg.accept_kinds, (&["chunk_bytes"], msg.receipt), &rig);
        }
    }
}

async fn integers(body: &[u8], pattern: u8) {
    let Ok(msg) = GetIntegersRequest::decode(body) else { return };
    let span = msg.max.abs_diff(msg.min);
    let k = (u64::BITS - span.leading_zeros()).div_ceil(8) as usize;
    // Twice the bytes of one round (draws are rejected with probability < 1/2), plus slack.
    let n = if msg.count <= 10_000 { msg.count as usize * k * 2 + 64 } else { 0 };
    let n = if drbg(msg.construction) { SEED_BUDGET } else { n };
    let rig = Rig::new(fill(pattern, n, body));
    let result = rig.api.get_integers(request(msg.clone())).await.map(delivered);
    rig.check_balance();
    match result {
        Ok(resp) => {
            let resp = resp.into_inner();
            if drbg(msg.construction) {
                drbg_checks(&rig, resp.provenance.as_ref(), msg.construction);
            }
            let values = resp.values;
            assert_eq!(values.len(), msg.count as usize);
            assert!(msg.min <= msg.max);
            for v in values {
                assert!(msg.min <= v && v <= msg.max, "{v} outside [{}, {}]", msg.min, msg.max);
            }
        }
        Err(status) if status.code() == Code::Unavailable && drbg(msg.construction) => {
            // DRBG rounds need no pool bytes beyond their seeds: only reseeds can run dry.
            drbg_checks(&rig, None, msg.construction);
        }
        Err(status) if status.code() == Code::Unavailable => {
            // Rejection sampling needed more than the pool held: nothing may be consumed.
            assert!(msg.min <= msg.max && (1..=10_000).contains(&msg.count), "{status:?}");
            assert_eq!(rig.pool.stats().kept(), 0, "a failed call consumes nothing");
            assert_eq!(rig.pool.level(), n, "every drawn byte went back");
        }
        Err(status) => refused(&status, &msg.accept_kinds, (&["count", "min"], msg.receipt), &rig),
    }
}

async fn floats(body: &[u8], pattern: u8) {
    let Ok(msg) = GetFloatsRequest::decode(body) else { return };
    let n = if msg.count <= 10_000 { msg.count as usize * 8 } else { 0 };
    let rig = Rig::new(fill(pattern, n + seeds_for(msg.construction), body));
    let result = rig.api.get_floats(request(msg.clone())).await.map(delivered);
    rig.check_balance();
    match result {
        Ok(resp) => {
            let resp = resp.into_inner();
            if drbg(msg.construction) {
                drbg_checks(&rig, resp.provenance.as_ref(), msg.construction);
            }
            let values = resp.values;
            assert_eq!(values.len(), msg.count as usize);
            assert!(values.iter().all(|v| (0.0..1.0).contains(v)), "{values:?}");
        }
        Err(status) => refused(&status, &msg.accept_kinds, (&["count"], msg.receipt), &rig),
    }
}

async fn uuids(body: &[u8], pattern: u8) {
    let Ok(msg) = GetUuidsRequest::decode(body) else { return };
    let n = if msg.count <= 10_000 { msg.count as usize * 16 } else { 0 };
    let rig = Rig::new(fill(pattern, n + seeds_for(msg.construction), body));
    let result = rig.api.get_uuids(request(msg.clone())).await.map(delivered);
    rig.check_balance();
    match result {
        Ok(resp) => {
            let resp = resp.into_inner();
            if drbg(msg.construction) {
                drbg_checks(&rig, resp.provenance.as_ref(), msg.construction);
            }
            let uuids = resp.uuids;
            assert_eq!(uuids.len(), msg.count as usize);
            for u in uuids {
                let parsed = uuid::Uuid::parse_str(&u).expect("a UUID");
                assert_eq!(parsed.get_version_num(), 4, "{u}");
                assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{u}");
            }
        }
        Err(status) => refused(&status, &msg.accept_kinds, (&["count"], msg.receipt), &rig),
    }
}

async fn status(body: &[u8]) {
    let Ok(msg) = GetStatusRequest::decode(body) else { return };
    let rig = Rig::new(fill(0, 64, body));
    let resp = rig.api.get_status(request(msg)).await.expect("GetStatus has no failing input");
    let s = resp.into_inner();
    assert_eq!(s.pool_bytes, 64);
    assert_eq!(s.ingested_bytes_total, 64);
    assert_eq!(s.served_bytes_total, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_runs() {
        for (_, bytes) in crate::seeds::requests() {
            run(&bytes);
        }
    }
}
