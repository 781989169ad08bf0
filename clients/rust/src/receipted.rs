//! Draws with their signed receipts (docs/receipts.md), and the checks of one draw: the values
//! as served, the receipt and its salt, checked against the gateway's public key with the
//! `entropy-receipts` verifier ([`crate::receipts`]).
//!
//! ```no_run
//! # async fn demo(client: entropy_diode_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use entropy_diode_client::receipts::PublicKey;
//! let key = PublicKey::from_file("gateway-receipts.pub".as_ref())?;
//! let draw = client.get_integers_with_receipt(1, 49, 6).await?;
//! let receipt = draw.verify(&key)?; // key id, signature, serial, commitment, request
//! println!("serial {}: {:?}", receipt.receipt.serial, draw.values);
//! std::fs::write("draw.json", draw.to_draw_file().to_json())?; // for an auditor
//! # Ok(()) }
//! ```

use entropy_proto::v1 as proto;
use entropy_receipts::commitment::SALT_LEN;
use entropy_receipts::{PublicKey, Rpc, Salt, ServedValues, SignedReceipt, VerifyError, verify};

use crate::draw_file::DrawFile;
use crate::error::Error;

/// A draw's receipt as the gateway sent it: the signed receipt's bytes (the receipt's canonical
/// bytes, then its Ed25519 signature), the salt that opens its commitment, and its serial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawReceipt {
    /// The signed receipt's bytes: leaf `serial` of the gateway's log.
    pub signed_receipt: Vec<u8>,
    /// The commitment's salt (32 bytes, this draw's only; wiped when dropped).
    pub salt: Salt,
    /// The receipt's serial as the response states it (checked against the signed bytes by
    /// [`verify_draw`]).
    pub serial: u64,
}

/// Values and where they came from, with the draw's receipt.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipted<T> {
    /// The values as served.
    pub values: T,
    /// The source kinds, collectors and chunks behind them.
    pub provenance: Option<proto::DrawProvenance>,
    /// The receipt.
    pub receipt: DrawReceipt,
}

/// The values of one draw, owned, as a draw file holds them.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// `GetRandom`'s bytes (before any text encoding).
    Bytes(Vec<u8>),
    /// `GetIntegers`' values.
    Integers(Vec<i64>),
    /// `GetFloats`' values.
    Floats(Vec<f64>),
    /// `GetUuids`' values.
    Uuids(Vec<uuid::Uuid>),
}

impl Values {
    /// The kind as the draw file spells it: `bytes`, `integers`, `floats` or `uuids`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Bytes(_) => "bytes",
            Self::Integers(_) => "integers",
            Self::Floats(_) => "floats",
            Self::Uuids(_) => "uuids",
        }
    }

    /// How many values (bytes for `Bytes`).
    pub fn len(&self) -> usize {
        match self {
            Self::Bytes(v) => v.len(),
            Self::Integers(v) => v.len(),
            Self::Floats(v) => v.len(),
            Self::Uuids(v) => v.len(),
        }
    }

    /// No values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the values as the commitment encodes them.
    pub fn with_served<R>(&self, f: impl FnOnce(ServedValues<'_>) -> R) -> R {
        match self {
            Self::Bytes(v) => f(ServedValues::Bytes(v)),
            Self::Integers(v) => f(ServedValues::Integers(v)),
            Self::Floats(v) => f(ServedValues::Floats(v)),
            Self::Uuids(v) => {
                let bytes: Vec<[u8; 16]> = v.iter().map(|u| *u.as_bytes()).collect();
                f(ServedValues::Uuids(&bytes))
            }
        }
    }
}

impl From<Vec<u8>> for Values {
    fn from(v: Vec<u8>) -> Self {
        Self::Bytes(v)
    }
}

impl From<Vec<i64>> for Values {
    fn from(v: Vec<i64>) -> Self {
        Self::Integers(v)
    }
}

impl From<Vec<f64>> for Values {
    fn from(v: Vec<f64>) -> Self {
        Self::Floats(v)
    }
}

impl From<Vec<uuid::Uuid>> for Values {
    fn from(v: Vec<uuid::Uuid>) -> Self {
        Self::Uuids(v)
    }
}

impl<T: Clone + Into<Values>> Receipted<T> {
    /// Checks the draw against the gateway's public key: key id, signature, serial,
    /// commitment (these values and the salt open it) and request (the values are what the
    /// signed request asked for). Returns the signed receipt.
    pub fn verify(&self, key: &PublicKey) -> Result<SignedReceipt, Refused> {
        verify_draw(&self.receipt, &self.values.clone().into(), key)
    }

    /// The draw file (format `entropy-diode/draw/v1`) holding these values and this receipt,
    /// without an inclusion proof.
    pub fn to_draw_file(&self) -> DrawFile {
        DrawFile {
            receipt: self.receipt.clone(),
            values: self.values.clone().into(),
            inclusion: None,
        }
    }
}

/// A check of a draw's evidence, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The draw file parses, in the format `entropy-diode/draw/v1`, with no unknown field.
    DrawFile,
    /// The receipt names the given public key's id.
    KeyId,
    /// The Ed25519 signature over the receipt's canonical bytes verifies (and they decode).
    Signature,
    /// The serial stated beside the receipt is the signed one.
    Serial,
    /// The values and the salt open the receipt's commitment.
    Commitment,
    /// The values are what the signed request asked for (kind, count, range).
    Request,
    /// The receipt is leaf `serial` of the tree a signed head (under the same key) commits to.
    Inclusion,
    /// The receipt's key-name digest is the digest of the name given.
    KeyName,
    /// A signed tree head's key id and signature.
    SignedHead,
    /// A newer signed head extends an older one.
    Consistency,
    /// A copy of the log is the one a signed head commits to.
    Log,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::DrawFile => "draw file",
            Self::KeyId => "key id",
            Self::Signature => "signature",
            Self::Serial => "serial",
            Self::Commitment => "commitment",
            Self::Request => "request",
            Self::Inclusion => "inclusion",
            Self::KeyName => "key name",
            Self::SignedHead => "signed head",
            Self::Consistency => "consistency",
            Self::Log => "log",
        })
    }
}

/// Evidence that does not check out: which check refused it and why. Do not trust the draw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{check}: {reason}")]
pub struct Refused {
    /// The check that failed.
    pub check: Check,
    /// Why.
    pub reason: String,
}

impl Refused {
    pub(crate) fn new(check: Check, reason: impl Into<String>) -> Self {
        Self { check, reason: reason.into() }
    }
}

/// The checks of one draw (see [`Receipted::verify`]), with the `entropy-receipts` verifier.
pub fn verify_draw(
    receipt: &DrawReceipt,
    values: &Values,
    key: &PublicKey,
) -> Result<SignedReceipt, Refused> {
    let signed = verify::verify_receipt_bytes(&receipt.signed_receipt, key).map_err(|e| {
        let check = if e == VerifyError::WrongKey { Check::KeyId } else { Check::Signature };
        Refused::new(check, e.to_string())
    })?;
    let r = &signed.receipt;
    if r.serial != receipt.serial {
        return Err(Refused::new(
            Check::Serial,
            format!(
                "the file states serial {} but the signed receipt's is {}",
                receipt.serial, r.serial
            ),
        ));
    }
    values
        .with_served(|served| verify::open_commitment(r, served, &receipt.salt))
        .map_err(|e| Refused::new(Check::Commitment, e.to_string()))?;
    check_request(&r.request.rpc, values).map_err(|why| Refused::new(Check::Request, why))?;
    Ok(signed)
}

/// The values are of the kind, count and range the signed request asked for.
fn check_request(rpc: &Rpc, values: &Values) -> Result<(), String> {
    let count = |want: u64, got: usize| {
        if got as u64 == want {
            Ok(())
        } else {
            Err(format!("the request asked for {want} but the draw holds {got}"))
        }
    };
    match (rpc, values) {
        (Rpc::GetRandom { num_bytes }, Values::Bytes(b)) => count(u64::from(*num_bytes), b.len()),
        (Rpc::StreamRandom { message_bytes, .. }, Values::Bytes(b)) => {
            count(u64::from(*message_bytes), b.len())
        }
        (Rpc::GetIntegers { min, max, count: n }, Values::Integers(v)) => {
            count(u64::from(*n), v.len())?;
            match v.iter().position(|x| !(min..=max).contains(&x)) {
                Some(i) => {
                    Err(format!("value {i} ({}) is outside the request's {min}..={max}", v[i]))
                }
                None => Ok(()),
            }
        }
        (Rpc::GetFloats { count: n }, Values::Floats(v)) => {
            count(u64::from(*n), v.len())?;
            match v.iter().position(|x| !(0.0..1.0).contains(x)) {
                Some(i) => Err(format!("value {i} ({}) is outside [0, 1)", v[i])),
                None => Ok(()),
            }
        }
        (Rpc::GetUuids { count: n }, Values::Uuids(v)) => count(u64::from(*n), v.len()),
        (rpc, values) => Err(format!(
            "the receipt is for {} but the draw holds {}",
            rpc_name(rpc),
            values.kind()
        )),
    }
}

/// The RPC's name as the proto spells it.
pub fn rpc_name(rpc: &Rpc) -> &'static str {
    match rpc {
        Rpc::GetRandom { .. } => "GetRandom",
        Rpc::StreamRandom { .. } => "StreamRandom",
        Rpc::GetIntegers { .. } => "GetIntegers",
        Rpc::GetFloats { .. } => "GetFloats",
        Rpc::GetUuids { .. } => "GetUuids",
    }
}

/// The response's receipt, asked for: a response without one is a gateway that does not know
/// the `receipt` field (it predates receipts), which must not pass for a receipted draw.
pub(crate) fn receipt_of(receipt: Option<proto::DrawReceipt>) -> Result<DrawReceipt, Error> {
    let internal = |message: String| Error::Other { code: tonic::Code::Internal, message };
    let Some(r) = receipt else {
        return Err(Error::Other {
            code: tonic::Code::Unimplemented,
            message: "asked for a receipt, the gateway sent none (a gateway without receipts?)"
                .into(),
        });
    };
    let salt: [u8; SALT_LEN] = r.salt.as_slice().try_into().map_err(|_| {
        internal(format!("the gateway sent a salt of {} bytes; salts are {SALT_LEN}", r.salt.len()))
    })?;
    Ok(DrawReceipt { signed_receipt: r.signed_receipt, salt: Salt(salt), serial: r.serial })
}
