//! The draw file (`entropy-diode/draw/v1`, docs/receipts.md): one draw's values as served,
//! its receipt and salt, and optionally an inclusion proof against a signed tree head. What
//! `entropy bytes|int|float|uuid --receipt FILE` writes and `entropy receipt verify` checks; the
//! Python library reads and writes the same JSON.
//!
//! ```json
//! {
//!   "format": "entropy-diode/draw/v1",
//!   "receipt": {"signed_receipt": "<hex>", "salt": "<hex>", "serial": 7},
//!   "values": {"kind": "integers", "values": [3, 11, 19, 27, 38, 45]},
//!   "inclusion": {"signed_tree_head": "<hex>", "hashes": ["<hex>", "..."]}
//! }
//! ```
//!
//! `values` is `{"kind": "bytes", "hex": ...}`, `{"kind": "integers"|"floats", "values": [...]}`
//! or `{"kind": "uuids", "values": ["8-4-4-4-12 lowercase", ...]}`. Unknown keys anywhere are
//! refused: a verifier that skips fields it does not know can be shown a file that means
//! something other than what it checked. Floats are parsed exactly (serde_json's
//! `float_roundtrip`): the commitment covers their bits.

use entropy_receipts::merkle::Hash;
use entropy_receipts::{PublicKey, Salt, SignedReceipt, SignedTreeHead, TreeHead, verify};
use serde::{Deserialize, Serialize};

use crate::receipted::{Check, DrawReceipt, Refused, Values, verify_draw};

/// The `format` of a draw file.
pub const FORMAT: &str = "entropy-diode/draw/v1";

/// One draw, as a draw file holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawFile {
    /// The receipt and its salt.
    pub receipt: DrawReceipt,
    /// The values as served.
    pub values: Values,
    /// An inclusion proof of the receipt in a signed head (added by `entropy receipt prove`).
    pub inclusion: Option<Inclusion>,
}

/// An inclusion proof: a signed tree head and the RFC 9162 path of the receipt's leaf in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inclusion {
    /// The signed tree head's bytes.
    pub signed_tree_head: Vec<u8>,
    /// The inclusion path, nearest the leaf first.
    pub hashes: Vec<Hash>,
}

/// What a draw file's checks established (see [`DrawFile::verify`]).
#[derive(Debug, Clone)]
pub struct Verified {
    /// The receipt, its signature checked and its commitment opened by the file's values.
    pub receipt: SignedReceipt,
    /// The head the receipt was proven included in, when the file has a proof.
    pub head: Option<TreeHead>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJson {
    format: String,
    receipt: ReceiptJson,
    values: ValuesJson,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    inclusion: Option<InclusionJson>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReceiptJson {
    signed_receipt: String,
    salt: String,
    serial: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum ValuesJson {
    Bytes { hex: String },
    Integers { values: Vec<i64> },
    Floats { values: Vec<f64> },
    Uuids { values: Vec<String> },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InclusionJson {
    signed_tree_head: String,
    hashes: Vec<String>,
}

fn unhex(field: &str, text: &str) -> Result<Vec<u8>, String> {
    hex::decode(text).map_err(|e| format!("`{field}` is not hex: {e}"))
}

fn unhex_n<const N: usize>(field: &str, text: &str) -> Result<[u8; N], String> {
    let bytes = unhex(field, text)?;
    bytes
        .as_slice()
        .try_into()
        .map_err(|_| format!("`{field}` holds {} bytes; it must hold {N}", bytes.len()))
}

impl DrawFile {
    /// Parses a draw file's JSON, refusing unknown keys, another format, and malformed fields
    /// (the error names the field).
    pub fn parse(text: &str) -> Result<Self, Refused> {
        let bad = |why: String| Refused::new(Check::DrawFile, why);
        // Through a `Value` first: serde would also read a struct from a JSON array, which is
        // not this format; every structure of the file must be an object.
        let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        for (name, value) in [
            ("the file", Some(&doc)),
            ("`receipt`", doc.get("receipt")),
            ("`values`", doc.get("values")),
            ("`inclusion`", doc.get("inclusion").filter(|v| !v.is_null())),
        ] {
            if value.is_some_and(|v| !v.is_object()) {
                return Err(bad(format!("{name} must be a JSON object")));
            }
        }
        // From the text, not the `Value`: a `Value` keeps the last of duplicate keys, while the
        // derived reader refuses a key given twice (one reader must not see what another
        // overlooked).
        let file: FileJson = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        if file.format != FORMAT {
            return Err(bad(format!("`format` is {:?}; this reads {FORMAT:?}", file.format)));
        }
        let receipt = DrawReceipt {
            signed_receipt: unhex("receipt.signed_receipt", &file.receipt.signed_receipt)
                .map_err(bad)?,
            salt: Salt(unhex_n("receipt.salt", &file.receipt.salt).map_err(bad)?),
            serial: file.receipt.serial,
        };
        let values = match file.values {
            ValuesJson::Bytes { hex } => Values::Bytes(unhex("values.hex", &hex).map_err(bad)?),
            ValuesJson::Integers { values } => Values::Integers(values),
            ValuesJson::Floats { values } => Values::Floats(values),
            ValuesJson::Uuids { values } => Values::Uuids(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, text)| {
                        uuid::Uuid::try_parse(text)
                            .ok()
                            .filter(|u| u.hyphenated().to_string() == *text)
                            .ok_or_else(|| {
                                bad(format!(
                                    "`values.values[{i}]` is {text:?}, not a UUID written \
                                     8-4-4-4-12 in lowercase hex"
                                ))
                            })
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        let inclusion = match file.inclusion {
            None => None,
            Some(inc) => Some(Inclusion {
                signed_tree_head: unhex("inclusion.signed_tree_head", &inc.signed_tree_head)
                    .map_err(bad)?,
                hashes: inc
                    .hashes
                    .iter()
                    .enumerate()
                    .map(|(i, h)| unhex_n(&format!("inclusion.hashes[{i}]"), h).map_err(bad))
                    .collect::<Result<_, _>>()?,
            }),
        };
        Ok(Self { receipt, values, inclusion })
    }

    /// The file's JSON (pretty, lowercase hex, a final newline).
    pub fn to_json(&self) -> String {
        let values = match &self.values {
            Values::Bytes(b) => ValuesJson::Bytes { hex: hex::encode(b) },
            Values::Integers(v) => ValuesJson::Integers { values: v.clone() },
            Values::Floats(v) => ValuesJson::Floats { values: v.clone() },
            Values::Uuids(v) => {
                ValuesJson::Uuids { values: v.iter().map(|u| u.hyphenated().to_string()).collect() }
            }
        };
        let file = FileJson {
            format: FORMAT.into(),
            receipt: ReceiptJson {
                signed_receipt: hex::encode(&self.receipt.signed_receipt),
                salt: hex::encode(self.receipt.salt.0),
                serial: self.receipt.serial,
            },
            values,
            inclusion: self.inclusion.as_ref().map(|inc| InclusionJson {
                signed_tree_head: hex::encode(&inc.signed_tree_head),
                hashes: inc.hashes.iter().map(hex::encode).collect(),
            }),
        };
        // Serializing these plain structs cannot fail (no maps with non-string keys, and the
        // floats a gateway serves are finite); a NaN would be written as null and refused on
        // reading.
        let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Every check, offline, with the gateway's public key: key id, signature, serial,
    /// commitment and request ([`verify_draw`]), then, when the file has an inclusion proof,
    /// the head's key id and signature and the proof ([`Check::Inclusion`]).
    pub fn verify(&self, key: &PublicKey) -> Result<Verified, Refused> {
        let receipt = verify_draw(&self.receipt, &self.values, key)?;
        let head = match &self.inclusion {
            None => None,
            Some(inc) => Some(verify_inclusion(&receipt, inc, key)?),
        };
        Ok(Verified { receipt, head })
    }
}

/// Checks an inclusion proof of `receipt` (already verified) against its signed head.
pub fn verify_inclusion(
    receipt: &SignedReceipt,
    inclusion: &Inclusion,
    key: &PublicKey,
) -> Result<TreeHead, Refused> {
    let refuse = |why: String| Refused::new(Check::Inclusion, why);
    let head = SignedTreeHead::from_bytes(&inclusion.signed_tree_head)
        .map_err(|e| refuse(format!("the signed tree head: {e}")))?;
    verify::verify_inclusion(receipt, &inclusion.hashes, &head, key).map_err(|e| {
        refuse(format!(
            "leaf {} of the head of size {}: {e}",
            receipt.receipt.serial, head.head.size
        ))
    })?;
    Ok(head.head)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn vectors() -> serde_json::Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../receipts/testdata/vectors.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn key(v: &serde_json::Value) -> PublicKey {
        let bytes: [u8; 32] =
            hex::decode(v["public_key"].as_str().unwrap()).unwrap().try_into().unwrap();
        PublicKey::from_bytes(&bytes).unwrap()
    }

    /// The draw file of vector draw `i`, as a caller would have written it (the values as the
    /// vectors hold them; floats by their bits).
    fn file_of(v: &serde_json::Value, i: usize) -> DrawFile {
        let d = &v["draws"][i];
        let s = |k: &str| d[k].as_str().unwrap();
        let values = match s_kind(d) {
            "bytes" => Values::Bytes(hex::decode(d["values"]["hex"].as_str().unwrap()).unwrap()),
            "integers" => Values::Integers(
                d["values"]["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_i64().unwrap())
                    .collect(),
            ),
            "floats" => Values::Floats(
                d["values"]["bits_hex"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| f64::from_bits(u64::from_str_radix(b.as_str().unwrap(), 16).unwrap()))
                    .collect(),
            ),
            "uuids" => Values::Uuids(
                d["values"]["hex"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| {
                        uuid::Uuid::from_slice(&hex::decode(h.as_str().unwrap()).unwrap()).unwrap()
                    })
                    .collect(),
            ),
            other => panic!("{other}"),
        };
        DrawFile {
            receipt: DrawReceipt {
                signed_receipt: hex::decode(s("signed_receipt")).unwrap(),
                salt: Salt(hex::decode(s("salt")).unwrap().try_into().unwrap()),
                serial: d["serial"].as_u64().unwrap(),
            },
            values,
            inclusion: None,
        }
    }

    fn s_kind(d: &serde_json::Value) -> &str {
        d["values"]["kind"].as_str().unwrap()
    }

    fn with_inclusion(v: &serde_json::Value, mut file: DrawFile) -> DrawFile {
        let head4 = v["tree_heads"].as_array().unwrap().iter().find(|h| h["size"] == 4).unwrap();
        let proof = v["inclusion_proofs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["serial"] == file.receipt.serial && p["tree_size"] == 4)
            .unwrap();
        file.inclusion = Some(Inclusion {
            signed_tree_head: hex::decode(head4["signed_tree_head"].as_str().unwrap()).unwrap(),
            hashes: proof["proof"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| hex::decode(h.as_str().unwrap()).unwrap().try_into().unwrap())
                .collect(),
        });
        file
    }

    #[test]
    fn every_vector_draw_verifies_round_trips_and_proves_inclusion() {
        let v = vectors();
        let key = key(&v);
        for i in 0..v["draws"].as_array().unwrap().len() {
            let file = with_inclusion(&v, file_of(&v, i));
            let verified = file.verify(&key).unwrap_or_else(|e| panic!("draw {i}: {e}"));
            assert_eq!(verified.receipt.receipt.serial, i as u64);
            assert_eq!(verified.head.unwrap().size, 4);
            // The JSON reads back to the same draw, floats bit for bit.
            let again = DrawFile::parse(&file.to_json()).unwrap();
            assert_eq!(again, file, "draw {i}");
            if let Values::Floats(f) = &again.values {
                let bits: Vec<u64> = f.iter().map(|x| x.to_bits()).collect();
                let want: Vec<u64> = v["draws"][i]["values"]["bits_hex"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| u64::from_str_radix(b.as_str().unwrap(), 16).unwrap())
                    .collect();
                assert_eq!(bits, want);
            }
        }
    }

    #[test]
    fn floats_are_read_exactly() {
        // Shortest round-trip texts whose 17-digit significands a best-effort parser can miss.
        let v = vectors();
        let mut file = file_of(&v, 2);
        let hard = [0.30000000000000004, 0.9999999999999999, 2.2250738585072014e-308, 0.1];
        file.values = Values::Floats(hard.to_vec());
        let Values::Floats(read) = DrawFile::parse(&file.to_json()).unwrap().values else {
            panic!("not floats")
        };
        for (a, b) in read.iter().zip(hard) {
            assert_eq!(a.to_bits(), b.to_bits());
        }
        // Every one of 20,000 values k / 2^53 (what a gateway serves) reads back bit for bit.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let served: Vec<f64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect();
        file.values = Values::Floats(served.clone());
        let Values::Floats(read) = DrawFile::parse(&file.to_json()).unwrap().values else {
            panic!("not floats")
        };
        assert!(read.iter().zip(&served).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    #[test]
    fn tampering_is_refused_naming_the_check() {
        let v = vectors();
        let key = key(&v);
        let good = with_inclusion(&v, file_of(&v, 0));
        let check = |f: &DrawFile| f.verify(&key).map(|_| ()).map_err(|e| e.check);

        let mut f = good.clone();
        let Values::Integers(ref mut vals) = f.values else { panic!() };
        vals[0] += 1;
        assert_eq!(check(&f), Err(Check::Commitment));

        let mut f = good.clone();
        f.receipt.salt.0[5] ^= 1;
        assert_eq!(check(&f), Err(Check::Commitment));

        // One byte of the signed receipt: the signature refuses it (or the decoder).
        for at in [40, good.receipt.signed_receipt.len() / 2, good.receipt.signed_receipt.len() - 1]
        {
            let mut f = good.clone();
            f.receipt.signed_receipt[at] ^= 0x01;
            assert!(matches!(check(&f), Err(Check::Signature | Check::KeyId)), "byte {at}");
        }
        let mut f = good.clone();
        f.receipt.serial = 3;
        assert_eq!(check(&f), Err(Check::Serial));

        let other = entropy_receipts::ReceiptSigner::from_seed(&[9; 32]);
        assert_eq!(good.verify(other.public_key()).unwrap_err().check, Check::KeyId);

        let mut f = good.clone();
        f.inclusion.as_mut().unwrap().hashes[0][0] ^= 1;
        assert_eq!(check(&f), Err(Check::Inclusion));
        let mut f = good.clone();
        let sth = &mut f.inclusion.as_mut().unwrap().signed_tree_head;
        let last = sth.len() - 1;
        sth[last] ^= 1;
        assert_eq!(check(&f), Err(Check::Inclusion));

        // Values of another kind than the signed request's (with a matching commitment would
        // need a second preimage; the kind check comes after the commitment, so here the
        // commitment refuses first).
        let mut f = good.clone();
        f.values = Values::Bytes(vec![3, 11, 19, 27, 38, 45]);
        assert_eq!(check(&f), Err(Check::Commitment));
        assert_eq!(check(&good), Ok(()));
    }

    #[test]
    fn malformed_files_are_refused_naming_the_field() {
        let v = vectors();
        let good: serde_json::Value =
            serde_json::from_str(&with_inclusion(&v, file_of(&v, 0)).to_json()).unwrap();
        let refuse = |doc: serde_json::Value, what: &str| {
            let e = DrawFile::parse(&doc.to_string()).unwrap_err();
            assert_eq!(e.check, Check::DrawFile);
            assert!(e.reason.contains(what), "{what}: {}", e.reason);
        };
        let mut d = good.clone();
        d["extra"] = 1.into();
        refuse(d, "unknown field `extra`");
        let mut d = good.clone();
        d["receipt"]["note"] = "x".into();
        refuse(d, "unknown field `note`");
        let mut d = good.clone();
        d["values"]["note"] = "x".into();
        refuse(d, "unknown field `note`");
        let mut d = good.clone();
        d["inclusion"]["note"] = "x".into();
        refuse(d, "unknown field `note`");
        let mut d = good.clone();
        d["format"] = "entropy-diode/draw/v2".into();
        refuse(d, "`format`");
        let mut d = good.clone();
        d["receipt"]["salt"] = "00".into();
        refuse(d, "`receipt.salt` holds 1 bytes");
        let mut d = good.clone();
        d["receipt"]["signed_receipt"] = "zz".into();
        refuse(d, "`receipt.signed_receipt` is not hex");
        let mut d = good.clone();
        d["values"] = serde_json::json!({"kind": "dice", "values": [1]});
        refuse(d, "unknown variant `dice`");
        let mut d = good.clone();
        d["values"] = serde_json::json!({"kind": "integers", "values": [1.5]});
        refuse(d, "invalid type");
        let mut d = good.clone();
        d["values"] =
            serde_json::json!({"kind": "uuids", "values": ["123456789ABC4DEF8001020304050607"]});
        refuse(d, "`values.values[0]`");
        let mut d = good.clone();
        d["inclusion"]["hashes"][1] = "abcd".into();
        refuse(d, "`inclusion.hashes[1]` holds 2 bytes");
        refuse(serde_json::json!([]), "the file must be a JSON object");
        // A key given twice, at each level: refused (a reader keeping the first and one keeping
        // the last would check different draws).
        let text = good.to_string();
        for (key, dup) in [
            ("\"format\":", "\"format\":\"entropy-diode/draw/v1\",\"format\":"),
            ("\"serial\":", "\"serial\":1,\"serial\":"),
            ("\"kind\":", "\"kind\":\"bytes\",\"kind\":"),
            ("\"values\":[", "\"values\":[1],\"values\":["),
        ] {
            assert!(text.contains(key), "{key}");
            let e = DrawFile::parse(&text.replacen(key, dup, 1)).unwrap_err();
            assert!(e.reason.contains("duplicate field"), "{key}: {}", e.reason);
        }
        let mut d = good.clone();
        d["receipt"] = serde_json::json!([good["receipt"]["signed_receipt"], "00", 0]);
        refuse(d, "`receipt` must be a JSON object");
        let mut d = good.clone();
        d.as_object_mut().unwrap().remove("receipt");
        refuse(d, "missing field `receipt`");
    }
}
