//! The specification's test vectors (docs/receipts.md, "Test vectors"): generated here from a
//! fixed key, fixed salts and fixed draws, and compared with the committed
//! `receipts/testdata/vectors.json`, so the file is what this implementation produces. A second
//! test checks the committed file with the verifier and with SHA-256 by hand, so it is valid
//! evidence too. To regenerate after a deliberate change of the encoding:
//!
//!     ENTROPY_RECEIPTS_WRITE_VECTORS=1 cargo test -p entropy-receipts --test it vectors

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use entropy_receipts::merkle::{self, MemoryTree};
use entropy_receipts::verify::{open_commitment, verify_consistency, verify_inclusion};
use entropy_receipts::{
    Commitment, Construction, DrbgLabel, DrbgMechanism, KeyNameDigest, PublicKey, ReceiptSigner,
    Rpc, Salt, ServedValues, SignedReceipt, SignedTreeHead, SourceKind, TreeHead,
};

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/vectors.json");

enum Values {
    Bytes(Vec<u8>),
    Integers(Vec<i64>),
    Floats(Vec<f64>),
    Uuids(Vec<[u8; 16]>),
}

impl Values {
    fn served(&self) -> ServedValues<'_> {
        match self {
            Self::Bytes(v) => ServedValues::Bytes(v),
            Self::Integers(v) => ServedValues::Integers(v),
            Self::Floats(v) => ServedValues::Floats(v),
            Self::Uuids(v) => ServedValues::Uuids(v),
        }
    }

    fn json(&self) -> Value {
        match self {
            Self::Bytes(v) => json!({ "kind": "bytes", "hex": hex::encode(v) }),
            Self::Integers(v) => json!({ "kind": "integers", "values": v }),
            Self::Floats(v) => json!({
                "kind": "floats",
                "values": v,
                "bits_hex": v.iter().map(|f| format!("{:016x}", f.to_bits())).collect::<Vec<_>>(),
            }),
            Self::Uuids(v) => {
                json!({ "kind": "uuids", "hex": v.iter().map(hex::encode).collect::<Vec<_>>() })
            }
        }
    }

    /// The commitment's preimage after tag and salt, written out from the specification.
    fn preimage(&self) -> Vec<u8> {
        let (kind, count, body): (u8, usize, Vec<u8>) = match self {
            Self::Bytes(v) => (1, v.len(), v.clone()),
            Self::Integers(v) => (2, v.len(), v.iter().flat_map(|x| x.to_be_bytes()).collect()),
            Self::Floats(v) => {
                (3, v.len(), v.iter().flat_map(|x| x.to_bits().to_be_bytes()).collect())
            }
            Self::Uuids(v) => (4, v.len(), v.concat()),
        };
        let mut out = vec![kind];
        out.extend_from_slice(&(count as u64).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }
}

fn ok<T>(r: Result<T, std::convert::Infallible>) -> T {
    r.unwrap_or_else(|e| match e {})
}

fn seed() -> [u8; 32] {
    std::array::from_fn(|i| i as u8)
}

fn salt(i: u8) -> Salt {
    Salt(std::array::from_fn(|j| i.wrapping_mul(0x40).wrapping_add(j as u8)))
}

fn generate() -> Value {
    let signer = ReceiptSigner::from_seed(&seed());
    let draws: Vec<(&str, Rpc, Values, Construction)> = vec![
        (
            "lottery-operator",
            Rpc::GetIntegers { min: 1, max: 49, count: 6 },
            Values::Integers(vec![3, 11, 19, 27, 38, 45]),
            Construction::Raw,
        ),
        (
            "key-ceremony",
            Rpc::GetRandom { num_bytes: 16 },
            Values::Bytes((0u8..16).collect()),
            Construction::Drbg(DrbgLabel {
                mechanism: DrbgMechanism::CtrDrbgAes256,
                security_strength_bits: 256,
                instance_id: std::array::from_fn(|i| 0xa0 + i as u8),
                reseed_count: 2,
                bytes_since_reseed: 4096,
                seed_bytes: 96,
            }),
        ),
        (
            "trial-randomizer",
            Rpc::GetFloats { count: 3 },
            Values::Floats(vec![0.0, 0.25, 0.5078125]),
            Construction::Raw,
        ),
        (
            "lottery-operator",
            Rpc::GetUuids { count: 1 },
            Values::Uuids(vec![[
                0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x80, 1, 2, 3, 4, 5, 6, 7,
            ]]),
            Construction::Raw,
        ),
    ];

    let mut tree = MemoryTree::default();
    let mut out_draws = Vec::new();
    for (i, (key, rpc, values, construction)) in draws.into_iter().enumerate() {
        let salt = salt(i as u8);
        let commitment = Commitment::commit(values.served(), &salt);
        let mut r = crate::receipt(&signer, i as u64, key, rpc, commitment);
        r.provenance.construction = construction;
        if i == 2 {
            r.provenance.kinds = vec![SourceKind::Quantum, SourceKind::Os];
            r.provenance.mixed = true;
            r.request.accept_kinds = vec![];
        }
        let signed = signer.sign(r).unwrap();
        let bytes = signed.to_bytes();
        tree.leaves.push(merkle::leaf_hash(&bytes));
        out_draws.push(json!({
            "serial": i,
            "key_name": key,
            "key_name_digest": hex::encode(KeyNameDigest::of(key).0),
            "values": values.json(),
            "values_encoding": hex::encode(values.preimage()),
            "salt": hex::encode(salt.0),
            "commitment": hex::encode(commitment.0),
            "receipt": hex::encode(signed.receipt_bytes()),
            "signature": hex::encode(signed.signature.0),
            "signed_receipt": hex::encode(&bytes),
            "leaf_hash": hex::encode(merkle::leaf_hash(&bytes)),
        }));
    }
    let head = |size: u64, ts: i64| {
        let root: merkle::Hash = ok(merkle::root(&tree, size));
        let sth =
            TreeHead { size, root, timestamp_unix_ms: ts, key_id: signer.key_id() }.sign(&signer);
        json!({
            "size": size,
            "root": hex::encode(root),
            "timestamp_unix_ms": ts,
            "tree_head": hex::encode(sth.head.encode()),
            "signed_tree_head": hex::encode(sth.to_bytes()),
        })
    };
    let proofs = |p: Vec<merkle::Hash>| p.iter().map(hex::encode).collect::<Vec<_>>();
    json!({
        "description": "entropy-diode receipts v1 test vectors (docs/receipts.md). Generated by receipts/tests/it/vectors.rs; all byte strings are lowercase hex.",
        "signing_key_seed": hex::encode(seed()),
        "public_key": hex::encode(signer.public_key().to_bytes()),
        "key_id": hex::encode(signer.key_id().0),
        "draws": out_draws,
        "tree_heads": [head(2, 1_795_000_000_100), head(4, 1_795_000_000_200)],
        "inclusion_proofs": (0..4u64).map(|i| json!({
            "serial": i, "tree_size": 4, "proof": proofs(ok(merkle::inclusion_proof(&tree, i, 4))),
        })).collect::<Vec<_>>(),
        "consistency_proofs": [json!({
            "old_size": 2, "new_size": 4, "proof": proofs(ok(merkle::consistency_proof(&tree, 2, 4))),
        })],
    })
}

#[test]
fn committed_vectors_are_what_this_implementation_generates() {
    let generated = generate();
    if std::env::var_os("ENTROPY_RECEIPTS_WRITE_VECTORS").is_some() {
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        std::fs::write(PATH, text).unwrap();
    }
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    // Compared as JSON values (key order aside); on a difference, name the first section.
    for section in [
        "signing_key_seed",
        "public_key",
        "key_id",
        "draws",
        "tree_heads",
        "inclusion_proofs",
        "consistency_proofs",
    ] {
        assert!(
            committed[section] == generated[section],
            "{section} differs from {PATH}; regenerate with ENTROPY_RECEIPTS_WRITE_VECTORS=1 only for a deliberate change of the encoding"
        );
    }
    assert_eq!(committed, generated);
}

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

fn hash(v: &Value) -> merkle::Hash {
    unhex(v).try_into().unwrap()
}

#[test]
fn committed_vectors_verify() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    let pk = PublicKey::from_bytes(&hash(&v["public_key"])).unwrap();
    assert_eq!(pk.key_id().0.to_vec(), unhex(&v["key_id"]));
    let heads: Vec<SignedTreeHead> = v["tree_heads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| SignedTreeHead::from_bytes(&unhex(&h["signed_tree_head"])).unwrap())
        .collect();
    let draws = v["draws"].as_array().unwrap();
    for (d, p) in draws.iter().zip(v["inclusion_proofs"].as_array().unwrap()) {
        let signed = SignedReceipt::from_bytes(&unhex(&d["signed_receipt"])).unwrap();
        // The commitment by hand: SHA-256(len(tag) || tag || salt || values_encoding).
        let mut pre = vec![27u8];
        pre.extend_from_slice(b"entropy-diode/commitment/v1");
        pre.extend_from_slice(&unhex(&d["salt"]));
        pre.extend_from_slice(&unhex(&d["values_encoding"]));
        assert_eq!(Sha256::digest(&pre).to_vec(), unhex(&d["commitment"]));
        assert_eq!(signed.receipt.commitment.0.to_vec(), unhex(&d["commitment"]));
        let salt = Salt(hash(&d["salt"]));
        let values = &d["values"];
        let opened = match values["kind"].as_str().unwrap() {
            "integers" => {
                let ints: Vec<i64> = values["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_i64().unwrap())
                    .collect();
                open_commitment(&signed.receipt, ServedValues::Integers(&ints), &salt)
            }
            "bytes" => {
                open_commitment(&signed.receipt, ServedValues::Bytes(&unhex(&values["hex"])), &salt)
            }
            "floats" => {
                // By their bits, as specified (decimal text is for people).
                let f: Vec<f64> = values["bits_hex"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| f64::from_bits(u64::from_str_radix(x.as_str().unwrap(), 16).unwrap()))
                    .collect();
                open_commitment(&signed.receipt, ServedValues::Floats(&f), &salt)
            }
            _ => {
                let u: Vec<[u8; 16]> = values["hex"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| unhex(x).try_into().unwrap())
                    .collect();
                open_commitment(&signed.receipt, ServedValues::Uuids(&u), &salt)
            }
        };
        opened.unwrap();
        let proof: Vec<merkle::Hash> = p["proof"].as_array().unwrap().iter().map(hash).collect();
        verify_inclusion(&signed, &proof, &heads[1], &pk).unwrap();
    }
    let c = &v["consistency_proofs"][0];
    let proof: Vec<merkle::Hash> = c["proof"].as_array().unwrap().iter().map(hash).collect();
    verify_consistency(&heads[0], &heads[1], &proof, &pk).unwrap();
}
