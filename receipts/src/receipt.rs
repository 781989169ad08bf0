//! The receipt: what the gateway states, and signs, about one draw, and its canonical bytes.
//!
//! A receipt names the draw (serial, time, gateway, a digest of the key's name, the RPC and its
//! parameters), where its bytes came from (the provenance the response carries, in the proto's
//! vocabulary: `DrawProvenance`, `Construction`, `DrbgLabel`) and a commitment to the values
//! served, never the values. Its canonical encoding (docs/receipts.md, "Receipt") is the one
//! byte string the signature covers and the log's leaf holds: [`Receipt::encode`] writes it and
//! [`Receipt::decode`] accepts exactly the strings `encode` can write, so a receipt has one
//! encoding and one leaf hash.
//!
//! Bounds are checked where a receipt is built ([`Receipt::validate`], called by the signer) and
//! where one is decoded, with the same constants.

use sha2::{Digest as _, Sha256};

use crate::commitment::Commitment;
use crate::encoding::{Reader, Writer};
use crate::error::{DecodeError, InvalidField};
use crate::signing::{KeyId, SIGNATURE_LEN, Signature};

/// Domain tag at the start of a receipt's canonical bytes (and so of what is signed).
pub const RECEIPT_TAG: &str = "entropy-diode/receipt/v1";
/// Domain tag of a key name's digest.
pub const KEY_NAME_TAG: &str = "entropy-diode/key-name/v1";

/// Longest gateway id and collector id, in bytes (as the gateway's config allows).
pub const MAX_ID_BYTES: usize = 64;
/// Most collectors one receipt's provenance lists.
pub const MAX_COLLECTORS: usize = 64;
/// Most source kinds in a set (there are three).
pub const MAX_KINDS: usize = 3;

/// A SHA-256 digest of a key's name: who drew, without the name in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyNameDigest(pub [u8; 32]);

impl KeyNameDigest {
    /// SHA-256(tag || name), the tag encoded as everywhere (length byte, ASCII).
    pub fn of(key_name: &str) -> Self {
        let mut h = Sha256::new();
        h.update(crate::encoding::tag_prefix(KEY_NAME_TAG));
        h.update(KEY_NAME_TAG.as_bytes());
        h.update(key_name.as_bytes());
        Self(h.finalize().into())
    }
}

/// A kind of entropy source (the proto's `SourceKind`, same numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    /// A quantum random number generator.
    Quantum = 1,
    /// A non-quantum hardware noise source.
    Hardware = 2,
    /// The operating system's CSPRNG.
    Os = 3,
}

impl SourceKind {
    fn from_u8(v: u8, field: &'static str) -> Result<Self, DecodeError> {
        match v {
            1 => Ok(Self::Quantum),
            2 => Ok(Self::Hardware),
            3 => Ok(Self::Os),
            _ => Err(DecodeError::BadValue { field, value: u64::from(v) }),
        }
    }
}

/// The RPC a draw answered and its parameters (the proto's request fields that shape the values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rpc {
    /// `GetRandom`: `num_bytes` bytes.
    GetRandom {
        /// Bytes asked for.
        num_bytes: u32,
    },
    /// One message of a `StreamRandom` stream: the stream's parameters and this message's place.
    StreamRandom {
        /// The stream's `chunk_bytes`.
        chunk_bytes: u32,
        /// The stream's `total_bytes` (0: unbounded).
        total_bytes: u64,
        /// Bytes the stream served before this message.
        offset_bytes: u64,
        /// Bytes in this message.
        message_bytes: u32,
    },
    /// `GetIntegers`: `count` integers in `min..=max`.
    GetIntegers {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
        /// How many.
        count: u32,
    },
    /// `GetFloats`: `count` doubles in [0, 1).
    GetFloats {
        /// How many.
        count: u32,
    },
    /// `GetUuids`: `count` version-4 UUIDs.
    GetUuids {
        /// How many.
        count: u32,
    },
}

/// The request: the RPC and the source kinds it accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The RPC and its parameters.
    pub rpc: Rpc,
    /// The request's `accept_kinds` as a set, ascending (empty: the default, any kind).
    pub accept_kinds: Vec<SourceKind>,
}

/// One chunk as its collector signed it (the proto's `ChunkRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    /// The collector that signed it (1..=64 bytes).
    pub collector_id: String,
    /// The collector's run.
    pub epoch: u64,
    /// The chunk's sequence number in that run.
    pub sequence: u64,
    /// When the collector signed it (Unix ms, its clock).
    pub signed_at_unix_ms: i64,
}

/// The SP 800-90A mechanism of a DRBG construction (the proto's `DrbgMechanism`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrbgMechanism {
    /// CTR_DRBG with AES-256 and the derivation function.
    CtrDrbgAes256 = 1,
}

/// The DRBG instance that made a response's bytes (the proto's `DrbgLabel`; its
/// `prediction_resistance` is the construction's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrbgLabel {
    /// The mechanism.
    pub mechanism: DrbgMechanism,
    /// Security strength in bits.
    pub security_strength_bits: u32,
    /// The instance's random id (the proto's 32 hex digits, as 16 bytes).
    pub instance_id: [u8; 16],
    /// Reseeds since instantiation.
    pub reseed_count: u64,
    /// Bytes produced since the last seeding, before this response's.
    pub bytes_since_reseed: u64,
    /// Raw pool bytes drawn to seed the instance so far.
    pub seed_bytes: u64,
}

/// How the bytes were made (the proto's `Construction`, same numbers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Construction {
    /// Pool bytes as delivered.
    Raw,
    /// A DRBG instance of the call's own.
    Drbg(DrbgLabel),
    /// As `Drbg`, reseeding before every generate request.
    DrbgPredictionResistant(DrbgLabel),
}

/// Where the bytes came from (the proto's `DrawProvenance`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// Kinds of the contributing sources, ascending, 1..=3.
    pub kinds: Vec<SourceKind>,
    /// Whether any chunk mixed two or more sources.
    pub mixed: bool,
    /// The collectors, in the order first served (1..=64 of them).
    pub collector_ids: Vec<String>,
    /// The chunk of the first byte.
    pub first_chunk: ChunkRef,
    /// The chunk of the last byte.
    pub last_chunk: ChunkRef,
    /// How many chunks.
    pub chunk_count: u32,
    /// Age of the oldest byte in the pool, ms.
    pub oldest_byte_age_ms: u64,
    /// How the bytes were made.
    pub construction: Construction,
}

/// What the gateway states about one draw. Signed as its canonical encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The receipt's number: its leaf index in the gateway's log (see `log.rs`).
    pub serial: u64,
    /// When the draw was served (Unix ms, the gateway's clock).
    pub issued_at_unix_ms: i64,
    /// The gateway's id (1..=64 bytes).
    pub gateway_id: String,
    /// Who drew: the digest of the key's name.
    pub key_name_digest: KeyNameDigest,
    /// What was asked.
    pub request: Request,
    /// Where the bytes came from.
    pub provenance: Provenance,
    /// The commitment to the served values.
    pub commitment: Commitment,
    /// The signing key's id.
    pub key_id: KeyId,
}

/// A receipt with its signature: what a caller gets and what the log's leaf holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedReceipt {
    /// The receipt.
    pub receipt: Receipt,
    /// Its canonical bytes (what the signature covers).
    encoded: Vec<u8>,
    /// Ed25519 over `encoded`.
    pub signature: Signature,
}

impl SignedReceipt {
    /// Pairs a receipt with a signature over its canonical bytes (checked by `verify.rs`, not
    /// here: this is how a signer and a decoder assemble one).
    pub(crate) fn new(receipt: Receipt, encoded: Vec<u8>, signature: Signature) -> Self {
        Self { receipt, encoded, signature }
    }

    /// The receipt's canonical bytes.
    pub fn receipt_bytes(&self) -> &[u8] {
        &self.encoded
    }

    /// The signed receipt's bytes: the receipt's canonical bytes, then the 64-byte signature.
    /// This is a log leaf's data.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded.len() + SIGNATURE_LEN);
        out.extend_from_slice(&self.encoded);
        out.extend_from_slice(&self.signature.0);
        out
    }

    /// Parses [`SignedReceipt::to_bytes`]'s output (the signature is not checked here).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let split = bytes
            .len()
            .checked_sub(SIGNATURE_LEN)
            .ok_or(DecodeError::Truncated { field: "signature" })?;
        let (encoded, sig) = bytes.split_at(split);
        let receipt = Receipt::decode(encoded)?;
        let mut s = [0u8; SIGNATURE_LEN];
        s.copy_from_slice(sig);
        Ok(Self { receipt, encoded: encoded.to_vec(), signature: Signature(s) })
    }
}

fn invalid(field: &'static str, problem: impl Into<String>) -> InvalidField {
    InvalidField { field, problem: problem.into() }
}

fn check_id(field: &'static str, id: &str) -> Result<(), InvalidField> {
    if id.is_empty() || id.len() > MAX_ID_BYTES {
        return Err(invalid(field, format!("has {} bytes; must be 1..={MAX_ID_BYTES}", id.len())));
    }
    Ok(())
}

fn check_kinds(field: &'static str, kinds: &[SourceKind], min: usize) -> Result<(), InvalidField> {
    if kinds.len() < min || kinds.len() > MAX_KINDS {
        return Err(invalid(
            field,
            format!("has {} kinds; must be {min}..={MAX_KINDS}", kinds.len()),
        ));
    }
    if kinds.windows(2).any(|w| w[0] >= w[1]) {
        return Err(invalid(field, "must be strictly ascending (a set, in enum order)"));
    }
    Ok(())
}

impl Receipt {
    /// Checks every bound the encoding relies on (the decoder checks the same ones).
    pub fn validate(&self) -> Result<(), InvalidField> {
        check_id("gateway_id", &self.gateway_id)?;
        check_kinds("request.accept_kinds", &self.request.accept_kinds, 0)?;
        if let Rpc::GetIntegers { min, max, .. } = self.request.rpc
            && min > max
        {
            return Err(invalid("request.min", format!("{min} is above max {max}")));
        }
        let p = &self.provenance;
        check_kinds("provenance.kinds", &p.kinds, 1)?;
        if p.collector_ids.is_empty() || p.collector_ids.len() > MAX_COLLECTORS {
            return Err(invalid(
                "provenance.collector_ids",
                format!("has {} ids; must be 1..={MAX_COLLECTORS}", p.collector_ids.len()),
            ));
        }
        for id in &p.collector_ids {
            check_id("provenance.collector_ids", id)?;
        }
        check_id("provenance.first_chunk.collector_id", &p.first_chunk.collector_id)?;
        check_id("provenance.last_chunk.collector_id", &p.last_chunk.collector_id)?;
        Ok(())
    }

    /// The canonical bytes (docs/receipts.md, "Receipt"). Call [`Receipt::validate`] first: a
    /// receipt that breaks a bound encodes to bytes that [`Receipt::decode`] refuses.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.tag(RECEIPT_TAG);
        w.u64(self.serial);
        w.i64(self.issued_at_unix_ms);
        w.str(&self.gateway_id);
        w.array(&self.key_name_digest.0);
        encode_request(&mut w, &self.request);
        encode_provenance(&mut w, &self.provenance);
        w.array(&self.commitment.0);
        w.array(&self.key_id.0);
        w.into_bytes()
    }

    /// Parses canonical bytes; refuses every other byte string.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        r.tag(RECEIPT_TAG)?;
        let receipt = Self {
            serial: r.u64("serial")?,
            issued_at_unix_ms: r.i64("issued_at_unix_ms")?,
            gateway_id: r.str("gateway_id", 1, MAX_ID_BYTES)?,
            key_name_digest: KeyNameDigest(r.array("key_name_digest")?),
            request: decode_request(&mut r)?,
            provenance: decode_provenance(&mut r)?,
            commitment: Commitment(r.array("commitment")?),
            key_id: KeyId(r.array("key_id")?),
        };
        r.finish()?;
        Ok(receipt)
    }
}

const RPC_GET_RANDOM: u8 = 1;
const RPC_STREAM_RANDOM: u8 = 2;
const RPC_GET_INTEGERS: u8 = 3;
const RPC_GET_FLOATS: u8 = 4;
const RPC_GET_UUIDS: u8 = 5;

fn encode_request(w: &mut Writer, req: &Request) {
    match req.rpc {
        Rpc::GetRandom { num_bytes } => {
            w.u8(RPC_GET_RANDOM);
            w.u32(num_bytes);
        }
        Rpc::StreamRandom { chunk_bytes, total_bytes, offset_bytes, message_bytes } => {
            w.u8(RPC_STREAM_RANDOM);
            w.u32(chunk_bytes);
            w.u64(total_bytes);
            w.u64(offset_bytes);
            w.u32(message_bytes);
        }
        Rpc::GetIntegers { min, max, count } => {
            w.u8(RPC_GET_INTEGERS);
            w.i64(min);
            w.i64(max);
            w.u32(count);
        }
        Rpc::GetFloats { count } => {
            w.u8(RPC_GET_FLOATS);
            w.u32(count);
        }
        Rpc::GetUuids { count } => {
            w.u8(RPC_GET_UUIDS);
            w.u32(count);
        }
    }
    encode_kinds(w, &req.accept_kinds);
}

fn decode_request(r: &mut Reader<'_>) -> Result<Request, DecodeError> {
    let rpc = match r.u8("request.rpc")? {
        RPC_GET_RANDOM => Rpc::GetRandom { num_bytes: r.u32("request.num_bytes")? },
        RPC_STREAM_RANDOM => Rpc::StreamRandom {
            chunk_bytes: r.u32("request.chunk_bytes")?,
            total_bytes: r.u64("request.total_bytes")?,
            offset_bytes: r.u64("request.offset_bytes")?,
            message_bytes: r.u32("request.message_bytes")?,
        },
        RPC_GET_INTEGERS => {
            let min = r.i64("request.min")?;
            let max = r.i64("request.max")?;
            if min > max {
                return Err(DecodeError::NotAscending { field: "request.min..=max" });
            }
            Rpc::GetIntegers { min, max, count: r.u32("request.count")? }
        }
        RPC_GET_FLOATS => Rpc::GetFloats { count: r.u32("request.count")? },
        RPC_GET_UUIDS => Rpc::GetUuids { count: r.u32("request.count")? },
        other => {
            return Err(DecodeError::BadValue { field: "request.rpc", value: u64::from(other) });
        }
    };
    let accept_kinds = decode_kinds(r, "request.accept_kinds", 0)?;
    Ok(Request { rpc, accept_kinds })
}

fn encode_kinds(w: &mut Writer, kinds: &[SourceKind]) {
    w.count(kinds.len());
    for k in kinds {
        w.u8(*k as u8);
    }
}

fn decode_kinds(
    r: &mut Reader<'_>,
    field: &'static str,
    min: usize,
) -> Result<Vec<SourceKind>, DecodeError> {
    let n = r.count(field, MAX_KINDS)?;
    if n < min {
        return Err(DecodeError::Length { field, len: n, min, max: MAX_KINDS });
    }
    let mut kinds = Vec::with_capacity(n);
    for _ in 0..n {
        let k = SourceKind::from_u8(r.u8(field)?, field)?;
        if kinds.last().is_some_and(|last| *last >= k) {
            return Err(DecodeError::NotAscending { field });
        }
        kinds.push(k);
    }
    Ok(kinds)
}

fn encode_chunk(w: &mut Writer, c: &ChunkRef) {
    w.str(&c.collector_id);
    w.u64(c.epoch);
    w.u64(c.sequence);
    w.i64(c.signed_at_unix_ms);
}

fn decode_chunk(r: &mut Reader<'_>, field: &'static str) -> Result<ChunkRef, DecodeError> {
    Ok(ChunkRef {
        collector_id: r.str(field, 1, MAX_ID_BYTES)?,
        epoch: r.u64(field)?,
        sequence: r.u64(field)?,
        signed_at_unix_ms: r.i64(field)?,
    })
}

const CONSTRUCTION_RAW: u8 = 1;
const CONSTRUCTION_DRBG: u8 = 2;
const CONSTRUCTION_DRBG_PR: u8 = 3;

fn encode_provenance(w: &mut Writer, p: &Provenance) {
    encode_kinds(w, &p.kinds);
    w.bool(p.mixed);
    w.count(p.collector_ids.len());
    for id in &p.collector_ids {
        w.str(id);
    }
    encode_chunk(w, &p.first_chunk);
    encode_chunk(w, &p.last_chunk);
    w.u32(p.chunk_count);
    w.u64(p.oldest_byte_age_ms);
    let label = match &p.construction {
        Construction::Raw => {
            w.u8(CONSTRUCTION_RAW);
            None
        }
        Construction::Drbg(l) => {
            w.u8(CONSTRUCTION_DRBG);
            Some(l)
        }
        Construction::DrbgPredictionResistant(l) => {
            w.u8(CONSTRUCTION_DRBG_PR);
            Some(l)
        }
    };
    if let Some(l) = label {
        w.u8(l.mechanism as u8);
        w.u32(l.security_strength_bits);
        w.array(&l.instance_id);
        w.u64(l.reseed_count);
        w.u64(l.bytes_since_reseed);
        w.u64(l.seed_bytes);
    }
}

fn decode_label(r: &mut Reader<'_>) -> Result<DrbgLabel, DecodeError> {
    let mechanism = match r.u8("provenance.drbg.mechanism")? {
        1 => DrbgMechanism::CtrDrbgAes256,
        other => {
            return Err(DecodeError::BadValue {
                field: "provenance.drbg.mechanism",
                value: u64::from(other),
            });
        }
    };
    Ok(DrbgLabel {
        mechanism,
        security_strength_bits: r.u32("provenance.drbg.security_strength_bits")?,
        instance_id: r.array("provenance.drbg.instance_id")?,
        reseed_count: r.u64("provenance.drbg.reseed_count")?,
        bytes_since_reseed: r.u64("provenance.drbg.bytes_since_reseed")?,
        seed_bytes: r.u64("provenance.drbg.seed_bytes")?,
    })
}

fn decode_provenance(r: &mut Reader<'_>) -> Result<Provenance, DecodeError> {
    let kinds = decode_kinds(r, "provenance.kinds", 1)?;
    let mixed = r.bool("provenance.mixed")?;
    let n = r.count("provenance.collector_ids", MAX_COLLECTORS)?;
    if n == 0 {
        return Err(DecodeError::Length {
            field: "provenance.collector_ids",
            len: 0,
            min: 1,
            max: MAX_COLLECTORS,
        });
    }
    let mut collector_ids = Vec::with_capacity(n);
    for _ in 0..n {
        collector_ids.push(r.str("provenance.collector_ids", 1, MAX_ID_BYTES)?);
    }
    let first_chunk = decode_chunk(r, "provenance.first_chunk")?;
    let last_chunk = decode_chunk(r, "provenance.last_chunk")?;
    let chunk_count = r.u32("provenance.chunk_count")?;
    let oldest_byte_age_ms = r.u64("provenance.oldest_byte_age_ms")?;
    let construction = match r.u8("provenance.construction")? {
        CONSTRUCTION_RAW => Construction::Raw,
        CONSTRUCTION_DRBG => Construction::Drbg(decode_label(r)?),
        CONSTRUCTION_DRBG_PR => Construction::DrbgPredictionResistant(decode_label(r)?),
        other => {
            return Err(DecodeError::BadValue {
                field: "provenance.construction",
                value: u64::from(other),
            });
        }
    };
    Ok(Provenance {
        kinds,
        mixed,
        collector_ids,
        first_chunk,
        last_chunk,
        chunk_count,
        oldest_byte_age_ms,
        construction,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A receipt with every field set, for tests across the crate.
    pub(crate) fn sample(serial: u64) -> Receipt {
        Receipt {
            serial,
            issued_at_unix_ms: 1_795_000_000_000,
            gateway_id: "gw-a".into(),
            key_name_digest: KeyNameDigest::of("lottery-operator"),
            request: Request {
                rpc: Rpc::GetIntegers { min: 1, max: 49, count: 6 },
                accept_kinds: vec![SourceKind::Quantum],
            },
            provenance: Provenance {
                kinds: vec![SourceKind::Quantum, SourceKind::Os],
                mixed: true,
                collector_ids: vec!["col-1".into(), "col-2".into()],
                first_chunk: ChunkRef {
                    collector_id: "col-1".into(),
                    epoch: 7,
                    sequence: 100,
                    signed_at_unix_ms: 1_794_999_999_000,
                },
                last_chunk: ChunkRef {
                    collector_id: "col-2".into(),
                    epoch: 9,
                    sequence: 3,
                    signed_at_unix_ms: 1_794_999_999_500,
                },
                chunk_count: 2,
                oldest_byte_age_ms: 1000,
                construction: Construction::Raw,
            },
            commitment: Commitment([0xcc; 32]),
            key_id: KeyId([0x11; 32]),
        }
    }

    fn kinds() -> impl Strategy<Value = Vec<SourceKind>> {
        (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(q, h, o)| {
            let mut v = Vec::new();
            if q {
                v.push(SourceKind::Quantum);
            }
            if h {
                v.push(SourceKind::Hardware);
            }
            if o {
                v.push(SourceKind::Os);
            }
            v
        })
    }

    fn rpc() -> impl Strategy<Value = Rpc> {
        prop_oneof![
            any::<u32>().prop_map(|num_bytes| Rpc::GetRandom { num_bytes }),
            (any::<u32>(), any::<u64>(), any::<u64>(), any::<u32>()).prop_map(|(c, t, o, m)| {
                Rpc::StreamRandom {
                    chunk_bytes: c,
                    total_bytes: t,
                    offset_bytes: o,
                    message_bytes: m,
                }
            }),
            (any::<i64>(), any::<i64>(), any::<u32>()).prop_map(|(a, b, count)| {
                Rpc::GetIntegers { min: a.min(b), max: a.max(b), count }
            }),
            any::<u32>().prop_map(|count| Rpc::GetFloats { count }),
            any::<u32>().prop_map(|count| Rpc::GetUuids { count }),
        ]
    }

    fn construction() -> impl Strategy<Value = Construction> {
        let label = (any::<u32>(), any::<[u8; 16]>(), any::<u64>(), any::<u64>(), any::<u64>())
            .prop_map(|(s, id, r, b, seed)| DrbgLabel {
                mechanism: DrbgMechanism::CtrDrbgAes256,
                security_strength_bits: s,
                instance_id: id,
                reseed_count: r,
                bytes_since_reseed: b,
                seed_bytes: seed,
            });
        prop_oneof![
            Just(Construction::Raw),
            label.clone().prop_map(Construction::Drbg),
            label.prop_map(Construction::DrbgPredictionResistant),
        ]
    }

    prop_compose! {
        pub(crate) fn arb_receipt()(
            serial in any::<u64>(), at in any::<i64>(), gw in "[a-z0-9é-]{1,16}",
            rpc in rpc(), accept in kinds(), kinds in kinds(), mixed in any::<bool>(),
            cols in proptest::collection::vec("[a-z0-9]{1,64}", 1..4),
            e in any::<u64>(), s in any::<u64>(), n in any::<u32>(), age in any::<u64>(),
            construction in construction(), commitment in any::<[u8; 32]>(),
        ) -> Receipt {
            let mut r = sample(serial);
            r.issued_at_unix_ms = at;
            r.gateway_id = gw;
            r.request = Request { rpc, accept_kinds: accept };
            r.provenance.kinds = if kinds.is_empty() { vec![SourceKind::Hardware] } else { kinds };
            r.provenance.mixed = mixed;
            r.provenance.first_chunk.collector_id = cols[0].clone();
            r.provenance.first_chunk.epoch = e;
            r.provenance.last_chunk.sequence = s;
            r.provenance.collector_ids = cols;
            r.provenance.chunk_count = n;
            r.provenance.oldest_byte_age_ms = age;
            r.provenance.construction = construction;
            r.commitment = Commitment(commitment);
            r
        }
    }

    proptest! {
        /// Every valid receipt round-trips, and its bytes are the only ones that decode to it.
        #[test]
        fn round_trips_canonically(r in arb_receipt()) {
            r.validate().unwrap();
            let bytes = r.encode();
            let back = Receipt::decode(&bytes).unwrap();
            prop_assert_eq!(&back, &r);
            prop_assert_eq!(back.encode(), bytes);
        }

        /// Any strict prefix, and any extension, is refused.
        #[test]
        fn prefixes_and_extensions_are_refused(r in arb_receipt(), cut in any::<prop::sample::Index>()) {
            let bytes = r.encode();
            let at = cut.index(bytes.len());
            prop_assert!(Receipt::decode(&bytes[..at]).is_err());
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(Receipt::decode(&longer).is_err());
        }
    }

    #[test]
    fn bounds_are_refused_at_build_and_at_decode() {
        let mut r = sample(1);
        r.gateway_id = "x".repeat(MAX_ID_BYTES + 1);
        assert_eq!(r.validate().unwrap_err().field, "gateway_id");
        assert!(matches!(
            Receipt::decode(&r.encode()),
            Err(DecodeError::Length { field: "gateway_id", .. })
        ));

        let mut r = sample(1);
        r.provenance.kinds = vec![SourceKind::Os, SourceKind::Quantum];
        assert_eq!(r.validate().unwrap_err().field, "provenance.kinds");
        assert!(matches!(
            Receipt::decode(&r.encode()),
            Err(DecodeError::NotAscending { field: "provenance.kinds" })
        ));

        let mut r = sample(1);
        r.request.rpc = Rpc::GetIntegers { min: 5, max: 4, count: 1 };
        assert_eq!(r.validate().unwrap_err().field, "request.min");
        assert!(Receipt::decode(&r.encode()).is_err());

        let mut r = sample(1);
        r.provenance.collector_ids.clear();
        assert_eq!(r.validate().unwrap_err().field, "provenance.collector_ids");
        assert!(Receipt::decode(&r.encode()).is_err());
    }

    #[test]
    fn key_name_digest_is_domain_separated_sha256() {
        // SHA-256 of "\x19entropy-diode/key-name/v1" || "alice", computed independently with
        // `printf '\x19entropy-diode/key-name/v1alice' | sha256sum`.
        let d = KeyNameDigest::of("alice");
        let mut h = Sha256::new();
        h.update(b"\x19entropy-diode/key-name/v1alice");
        assert_eq!(d.0, <[u8; 32]>::from(h.finalize()));
        assert_ne!(d, KeyNameDigest::of("alicf"));
    }
}
