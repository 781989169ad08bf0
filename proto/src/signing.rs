//! The canonical chunk encoding and its HMAC-SHA256, shared by signers and verifiers.
//!
//! The encoding is specified on `PublishRequest` in `proto/entropy/v1/ingest.proto`; this file
//! is its only implementation in Rust, so a collector and a gateway cannot disagree on it. It is
//! fed to the MAC piece by piece: the data (up to a MiB) is never copied.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::v1::PublishRequest;

/// Domain separator that starts every encoding.
pub const DOMAIN: &[u8; 16] = b"entropy.v1.chunk";

/// Length of a MAC in bytes.
pub const MAC_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// Computes the MAC of `chunk` (every field but `mac`) under `key`.
pub fn chunk_mac(key: &[u8], chunk: &PublishRequest) -> [u8; MAC_LEN] {
    let mut mac = keyed(key);
    feed(&mut mac, chunk);
    mac.finalize().into_bytes().into()
}

/// Sets `chunk.crc32c` from its data and `chunk.mac` under `key`: the chunk as a collector
/// publishes it (tools and test fixtures; the collector computes the CRC once and may MAC a
/// chunk again for another gateway, so it calls [`chunk_mac`] itself).
pub fn seal(key: &[u8], chunk: &mut PublishRequest) {
    chunk.crc32c = crc32c::crc32c(&chunk.data);
    chunk.mac = chunk_mac(key, chunk).to_vec();
}

/// Checks `chunk.mac` against the MAC under `key`, in constant time.
pub fn verify_chunk_mac(key: &[u8], chunk: &PublishRequest) -> bool {
    let mut mac = keyed(key);
    feed(&mut mac, chunk);
    // `verify_slice` compares in constant time and rejects a wrong length.
    mac.verify_slice(&chunk.mac).is_ok()
}

fn keyed(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length (long keys are hashed first), so this cannot fail.
    #[allow(clippy::expect_used)]
    HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length")
}

fn feed(mac: &mut HmacSha256, c: &PublishRequest) {
    mac.update(DOMAIN);
    put_str(mac, &c.collector_id);
    put_str(mac, &c.gateway_id);
    mac.update(&c.epoch.to_be_bytes());
    mac.update(&c.sequence.to_be_bytes());
    mac.update(&c.timestamp_unix_ms.to_be_bytes());
    put_enum(mac, c.mixing);
    put_len32(mac, c.sources.len());
    for s in &c.sources {
        put_str(mac, &s.name);
        put_enum(mac, s.kind);
        put_enum(mac, s.health);
        mac.update(&[u8::from(s.contributed)]);
    }
    put_str(mac, &c.key_id);
    mac.update(&c.crc32c.to_be_bytes());
    mac.update(&(c.data.len() as u64).to_be_bytes());
    mac.update(&c.data);
}

fn put_str(mac: &mut HmacSha256, s: &str) {
    put_len32(mac, s.len());
    mac.update(s.as_bytes());
}

fn put_len32(mac: &mut HmacSha256, len: usize) {
    // Lengths that do not fit u32 saturate: such a field is far past every bound the gateway
    // enforces, so the chunk is rejected before or after the MAC anyway.
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    mac.update(&len.to_be_bytes());
}

fn put_enum(mac: &mut HmacSha256, value: i32) {
    // Enum numbers are encoded as u32: negative values (never valid) keep their bit pattern.
    mac.update(&value.cast_unsigned().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::{Mixing, SourceHealth, SourceKind, SourceReport};

    /// The chunk of `proto/testdata/mac_vector.txt`.
    fn vector_chunk() -> PublishRequest {
        PublishRequest {
            collector_id: "collector-a".into(),
            gateway_id: "gateway-1".into(),
            epoch: 0x0123_4567_89ab_cdef,
            sequence: 42,
            timestamp_unix_ms: 1_767_225_600_000,
            mixing: Mixing::Xor as i32,
            sources: vec![
                SourceReport {
                    name: "quantis-a".into(),
                    kind: SourceKind::Quantum as i32,
                    health: SourceHealth::Healthy as i32,
                    contributed: true,
                },
                SourceReport {
                    name: "hwrng".into(),
                    kind: SourceKind::Hardware as i32,
                    health: SourceHealth::Quarantined as i32,
                    contributed: false,
                },
            ],
            data: (0u8..=15).collect(),
            crc32c: 0,
            key_id: "k1".into(),
            mac: Vec::new(),
        }
    }

    fn vector_file() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/mac_vector.txt"))
            .expect("test vector file is checked in")
    }

    fn vector_value(name: &str) -> String {
        vector_file()
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} = ")))
            .unwrap_or_else(|| panic!("{name} in mac_vector.txt"))
            .trim()
            .to_owned()
    }

    #[test]
    fn matches_the_published_test_vector() {
        let mut chunk = vector_chunk();
        chunk.crc32c = u32::from_str_radix(&vector_value("crc32c"), 16).expect("hex crc");
        let key = hex::decode(vector_value("key")).expect("hex key");
        let mac = chunk_mac(&key, &chunk);
        assert_eq!(hex::encode(mac), vector_value("mac"));
        chunk.mac = mac.to_vec();
        assert!(verify_chunk_mac(&key, &chunk));
    }

    #[test]
    fn every_field_is_covered() {
        let key = b"k";
        let base = vector_chunk();
        let reference = chunk_mac(key, &base);
        type Mutation = Box<dyn Fn(&mut PublishRequest)>;
        let mutations: Vec<Mutation> = vec![
            Box::new(|c| c.collector_id.push('x')),
            Box::new(|c| c.gateway_id.push('x')),
            Box::new(|c| c.epoch ^= 1),
            Box::new(|c| c.sequence += 1),
            Box::new(|c| c.timestamp_unix_ms += 1),
            Box::new(|c| c.mixing = Mixing::HkdfSha256 as i32),
            Box::new(|c| {
                c.sources.pop();
            }),
            Box::new(|c| c.sources[0].name.push('x')),
            Box::new(|c| c.sources[0].kind = SourceKind::Os as i32),
            Box::new(|c| c.sources[0].health = SourceHealth::Starting as i32),
            Box::new(|c| c.sources[1].contributed = true),
            Box::new(|c| c.key_id.push('x')),
            Box::new(|c| c.crc32c ^= 1),
            Box::new(|c| c.data[3] ^= 1),
            Box::new(|c| c.data.push(0)),
        ];
        for (i, mutate) in mutations.iter().enumerate() {
            let mut c = base.clone();
            mutate(&mut c);
            assert_ne!(chunk_mac(key, &c), reference, "mutation {i} left the MAC unchanged");
        }
        // The MAC field itself is not an input.
        let mut c = base.clone();
        c.mac = vec![1; 32];
        assert_eq!(chunk_mac(key, &c), reference);
    }

    #[test]
    fn length_prefixes_keep_fields_apart() {
        // Without length prefixes, ("ab","c") and ("a","bc") would encode alike.
        let key = b"k";
        let mut a = vector_chunk();
        let mut b = vector_chunk();
        a.collector_id = "ab".into();
        a.key_id = "c".into();
        b.collector_id = "a".into();
        b.key_id = "bc".into();
        assert_ne!(chunk_mac(key, &a), chunk_mac(key, &b));
    }

    #[test]
    fn wrong_key_or_truncated_mac_fails() {
        let mut c = vector_chunk();
        c.mac = chunk_mac(b"right", &c).to_vec();
        assert!(verify_chunk_mac(b"right", &c));
        assert!(!verify_chunk_mac(b"wrong", &c));
        c.mac.truncate(16);
        assert!(!verify_chunk_mac(b"right", &c));
    }
}
