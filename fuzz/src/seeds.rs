//! The seed corpus, built from the same types the gateway uses (never hand-typed bytes).
//! `cargo run --release --example gen_corpus` writes it to `corpus/<target>/`.

use arbitrary::Unstructured;
use entropy_proto::v1::{
    Encoding, GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetStatusRequest,
    GetUuidsRequest, Mixing, SourceHealth, SourceKind, SourceReport, StreamRandomRequest,
};
use prost::Message;

use crate::ingest::{self, NOW, WINDOW_MS};
use crate::requests::Kind;

/// Seeds for `ingest_bytes`: valid signed chunks and near misses, protobuf-encoded.
pub fn ingest_bytes() -> Seeds {
    let xor = |r: &mut entropy_proto::v1::PublishRequest| {
        r.mixing = Mixing::Xor as i32;
        r.sources.push(SourceReport {
            name: "qrng".into(),
            kind: SourceKind::Quantum as i32,
            health: SourceHealth::Healthy as i32,
            contributed: true,
        });
    };
    let chunks = [
        ("valid", ingest::signed(|_| {})),
        ("valid-xor", ingest::signed(xor)),
        ("valid-other-sequence", ingest::signed(|r| r.sequence = 1_000_000)),
        ("edge-of-window", ingest::signed(|r| r.timestamp_unix_ms = NOW - WINDOW_MS)),
        ("stale", ingest::signed(|r| r.timestamp_unix_ms = NOW - WINDOW_MS - 1)),
        ("max-size", ingest::signed(|r| r.data = vec![7; ingest::MAX_CHUNK_BYTES])),
        ("unknown-key", ingest::signed(|r| r.key_id = "nobody".into())),
        ("quarantined", ingest::signed(|r| r.sources[0].health = SourceHealth::Quarantined as i32)),
    ];
    chunks.into_iter().map(|(name, c)| (name.to_owned(), c.encode_to_vec())).collect()
}

/// Seeds for `requests`: one selector byte, then a valid (or edge) request message.
pub fn requests() -> Seeds {
    let mut out = Vec::new();
    let mut add = |name: &str, kind: Kind, fill: u8, body: Vec<u8>| {
        let mut bytes = vec![kind.selector(fill)];
        bytes.extend(body);
        out.push((name.to_owned(), bytes));
    };
    let random = |n, e: Encoding| GetRandomRequest { num_bytes: n, encoding: e as i32, ..Default::default() };
    add("random-32", Kind::Random, 0, random(32, Encoding::Unspecified).encode_to_vec());
    add("random-hex", Kind::Random, 3, random(100, Encoding::Hex).encode_to_vec());
    add("random-base64", Kind::Random, 0, random(7, Encoding::Base64).encode_to_vec());
    add("random-max", Kind::Random, 2, random(1 << 20, Encoding::Unspecified).encode_to_vec());
    let stream = |chunk, total| StreamRandomRequest { chunk_bytes: chunk, total_bytes: total, ..Default::default() };
    add("stream-total", Kind::Stream, 0, stream(1000, 2500).encode_to_vec());
    add("stream-default-chunk", Kind::Stream, 3, stream(0, 100).encode_to_vec());
    add("stream-endless", Kind::Stream, 1, stream(64, 0).encode_to_vec());
    let ints = |min, max, count| GetIntegersRequest { min, max, count, ..Default::default() };
    add("ints-dice", Kind::Integers, 0, ints(1, 6, 10).encode_to_vec());
    add("ints-full-range", Kind::Integers, 1, ints(i64::MIN, i64::MAX, 3).encode_to_vec());
    add("ints-half-rejected", Kind::Integers, 1, ints(-1, i64::MAX, 5).encode_to_vec());
    add("ints-constant", Kind::Integers, 0, ints(-5, -5, 4).encode_to_vec());
    add("floats", Kind::Floats, 1, GetFloatsRequest { count: 5, ..Default::default() }.encode_to_vec());
    add("uuids", Kind::Uuids, 0, GetUuidsRequest { count: 3, ..Default::default() }.encode_to_vec());
    add("status", Kind::Status, 0, GetStatusRequest {}.encode_to_vec());
    // DRBG constructions (2; 3 with prediction resistance) and one value no construction has.
    let drbg_random = |n, construction| GetRandomRequest { num_bytes: n, construction, ..Default::default() };
    add("random-drbg", Kind::Random, 0, drbg_random(100, 2).encode_to_vec());
    add("random-drbg-pr-max", Kind::Random, 2, drbg_random(1 << 20, 3).encode_to_vec());
    add("random-construction-unknown", Kind::Random, 2, drbg_random(1 << 20, 26).encode_to_vec());
    let drbg_stream = StreamRandomRequest { chunk_bytes: 1000, total_bytes: 2500, construction: 3, ..Default::default() };
    add("stream-drbg-pr", Kind::Stream, 0, drbg_stream.encode_to_vec());
    let drbg_ints = GetIntegersRequest { min: 1, max: 6, count: 10, construction: 2, ..Default::default() };
    add("ints-drbg", Kind::Integers, 0, drbg_ints.encode_to_vec());
    out
}

/// Seeds for `ingest_chunks`: pseudo-random byte strings (a fixed xorshift), kept when the
/// scenario `arbitrary` reads from them gets at least one chunk accepted, so the fuzzer starts
/// past the MAC.
pub fn ingest_chunks() -> Seeds {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seeds = Vec::new();
    let mut best = 0;
    for _ in 0..200_000 {
        let len = 64 + (next() % 448) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let Ok(scenario) = Unstructured::new(&bytes).arbitrary::<ingest::Scenario>() else {
            continue;
        };
        let accepted = ingest::chunks(&scenario);
        if accepted > best {
            best = accepted;
            seeds.push((format!("accepts-{accepted}"), bytes));
            if seeds.len() == 6 {
                break;
            }
        }
    }
    assert!(!seeds.is_empty(), "no generated scenario got a chunk accepted");
    seeds
}

/// Seeds for `metadata`.
pub fn metadata() -> Seeds {
    use crate::metadata::{Headers, SECRET};
    let bearer = format!("Bearer {SECRET}").into_bytes();
    let seeds = [
        ("bearer", Headers { authorization: Some(bearer.clone()), ..Default::default() }),
        ("api-key", Headers { api_key: Some(SECRET.into()), ..Default::default() }),
        (
            "bearer-and-timeout",
            Headers {
                authorization: Some(bearer),
                timeout: Some(b"250m".into()),
                ..Default::default()
            },
        ),
        ("wrong-key", Headers { api_key: Some(b"nope".into()), ..Default::default() }),
    ];
    seeds.into_iter().map(|(name, h)| (name.to_owned(), h.to_bytes())).collect()
}

/// Named inputs of one target.
pub type Seeds = Vec<(String, Vec<u8>)>;

/// Every target's seeds, by target name.
pub fn all() -> Vec<(&'static str, Seeds)> {
    vec![
        ("ingest_bytes", ingest_bytes()),
        ("ingest_chunks", ingest_chunks()),
        ("requests", requests()),
        ("metadata", metadata()),
    ]
}
