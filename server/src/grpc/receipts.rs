//! Receipts on the unary draws (issue 32): whether a call gets one, the check before anything
//! is drawn, and the receipt issued (signed, durable in the log) before the answer is sent.
//!
//! The order a receipted draw follows, so that a draw whose receipt cannot be written is not
//! served: (1) [`plan`], before drawing: a gateway without a log refuses (FAILED_PRECONDITION),
//! a failed log refuses (UNAVAILABLE), nothing drawn; (2) the draw, as any; (3) [`Plan::issue`]:
//! the commitment over the exact values of the response and the log append (an fsync), off
//! the async workers; (4) only on success, the answer. When (3) fails, the draw's bytes are
//! wiped unserved (counted as discarded): the pool cannot take bytes back once a receipt for
//! them may be on disk, and every byte still goes to one caller at most.

use std::sync::Arc;

use entropy_proto::v1 as pb;
use entropy_proto::v1::{DrawProvenance, DrawReceipt};
use entropy_receipts::{
    ChunkRef, Construction, DrbgLabel, DrbgMechanism, Provenance, Request, Rpc, ServedValues,
    SourceKind,
};
use tonic::Status;

use super::errors;
use super::observe::Failure;
use crate::domain::auth::{KeyGrant, Scope};
use crate::domain::receipts::Notary;

/// Wire bytes a `DrawReceipt` adds to a response, at most: a signed receipt of the largest
/// provenance the gateway writes (64 collector ids of 64 bytes, two chunk references, a DRBG
/// label) is under 5 KiB, with its salt and serial (`receipts_fit_their_wire_bound` checks).
pub(crate) const RECEIPT_WIRE_BYTES: usize = 6 << 10;

/// Receipts being signed and appended at once in the process, each on a blocking thread that
/// waits for the log's fsync; the others wait for a turn, holding what they drew (on their
/// allowances). 64 leave group commit many appends to share each fsync and bound the threads.
pub(crate) const MAX_APPENDS_IN_FLIGHT: usize = 64;
static APPEND_TURNS: tokio::sync::Semaphore =
    tokio::sync::Semaphore::const_new(MAX_APPENDS_IN_FLIGHT);

/// A receipted draw's receipt-to-be: the notary and what the receipt will say of the request.
#[derive(Debug)]
pub(crate) struct Plan {
    notary: Arc<Notary>,
    key_name: String,
    request: Request,
}

/// Whether a call by `grant` that `asked` (its `receipt` field) gets a receipt, and if so its
/// plan: refused before anything is drawn when the gateway keeps no log or the log cannot
/// take appends.
pub(crate) fn plan(
    notary: Option<&Arc<Notary>>,
    grant: &KeyGrant,
    asked: bool,
    (rpc, accept_kinds): (Rpc, &[i32]),
) -> Result<Option<Plan>, Failure> {
    if !asked && !grant.allows(Scope::EntropyReceipts) {
        return Ok(None);
    }
    let Some(notary) = notary else {
        let why = if asked {
            "receipt: this gateway keeps no receipt log (receipts_dir is not set); nothing drawn"
                .to_owned()
        } else {
            format!(
                "key {:?} holds entropy:receipts (a receipt with every draw), and this gateway \
                 keeps no receipt log (receipts_dir is not set); nothing drawn",
                grant.name
            )
        };
        return Err(Status::failed_precondition(why).into());
    };
    notary.check_writable().map_err(|e| {
        Status::unavailable(format!(
            "the receipt log cannot take receipts ({e}); nothing drawn: retry on another gateway"
        ))
    })?;
    let mut kinds: Vec<SourceKind> = accept_kinds.iter().filter_map(|&k| source_kind(k)).collect();
    kinds.sort_unstable();
    kinds.dedup();
    Ok(Some(Plan {
        notary: notary.clone(),
        key_name: grant.name.clone(),
        request: Request { rpc, accept_kinds: kinds },
    }))
}

impl Plan {
    /// Issues the receipt of a draw of `values` (seen as [`ServedValues`] by `view`) from
    /// `provenance`, on a blocking thread (it waits for the log's fsync). Returns the values
    /// with the receipt, or the status to answer instead: then the draw is not answered and
    /// its values are dropped here (the drawn bytes wiped, counted as discarded by their
    /// undelivered dues when the caller drops them).
    pub(crate) async fn issue<V: Send + 'static>(
        self,
        provenance: Option<&DrawProvenance>,
        values: V,
        view: fn(&V) -> ServedValues<'_>,
    ) -> Result<(V, DrawReceipt), Status> {
        let provenance = match provenance.map(receipt_provenance) {
            Some(Ok(p)) => p,
            Some(Err(why)) => return Err(errors::internal("a receipt", &why)),
            None => return Err(errors::internal("a receipt", &"a draw with no provenance")),
        };
        let _turn = APPEND_TURNS.acquire().await.map_err(|e| errors::internal("a receipt", &e))?;
        let now = entropy_ops::clock::unix_ms_now();
        let joined = tokio::task::spawn_blocking(move || {
            let issued =
                self.notary.issue(&self.key_name, (self.request, provenance), view(&values), now);
            issued.map(|issued| (values, issued))
        })
        .await
        .map_err(|e| errors::internal("a receipt", &e))?;
        match joined {
            Ok((values, issued)) => {
                let receipt = DrawReceipt {
                    serial: issued.receipt.receipt.serial,
                    signed_receipt: issued.receipt.to_bytes(),
                    salt: issued.salt.0.to_vec(),
                };
                Ok((values, receipt))
            }
            Err(e) => {
                tracing::error!(error = %e, "a receipt could not be written: its draw is not served");
                Err(Status::unavailable(format!(
                    "{e}; the draw was not served (its bytes are wiped): retry on another gateway"
                )))
            }
        }
    }
}

/// `SourceKind` of the wire's number (validated requests hold only known ones).
fn source_kind(k: i32) -> Option<SourceKind> {
    match pb::SourceKind::try_from(k).ok()? {
        pb::SourceKind::Quantum => Some(SourceKind::Quantum),
        pb::SourceKind::Hardware => Some(SourceKind::Hardware),
        pb::SourceKind::Os => Some(SourceKind::Os),
        pb::SourceKind::Unspecified => None,
    }
}

/// The receipt's provenance of the wire's (the same facts, in the receipt's types).
fn receipt_provenance(p: &DrawProvenance) -> Result<Provenance, String> {
    let chunk = |c: Option<&pb::ChunkRef>, field: &str| -> Result<ChunkRef, String> {
        let c = c.ok_or_else(|| format!("provenance without {field}"))?;
        Ok(ChunkRef {
            collector_id: c.collector_id.clone(),
            epoch: c.epoch,
            sequence: c.sequence,
            signed_at_unix_ms: c.signed_at_unix_ms,
        })
    };
    let mut kinds = Vec::with_capacity(p.kinds.len());
    for &k in &p.kinds {
        kinds.push(source_kind(k).ok_or_else(|| format!("provenance kind {k}"))?);
    }
    let label = |d: Option<&pb::DrbgLabel>| -> Result<DrbgLabel, String> {
        let d = d.ok_or("a DRBG construction without its label")?;
        let mut instance_id = [0u8; 16];
        hex::decode_to_slice(&d.instance_id, &mut instance_id)
            .map_err(|e| format!("DRBG instance id {:?}: {e}", d.instance_id))?;
        Ok(DrbgLabel {
            mechanism: DrbgMechanism::CtrDrbgAes256,
            security_strength_bits: d.security_strength_bits,
            instance_id,
            reseed_count: d.reseed_count,
            bytes_since_reseed: d.bytes_since_reseed,
            seed_bytes: d.seed_bytes,
        })
    };
    let construction = match pb::Construction::try_from(p.construction) {
        Ok(pb::Construction::Raw) => Construction::Raw,
        Ok(pb::Construction::Drbg) => Construction::Drbg(label(p.drbg.as_ref())?),
        Ok(pb::Construction::DrbgPredictionResistant) => {
            Construction::DrbgPredictionResistant(label(p.drbg.as_ref())?)
        }
        _ => return Err(format!("provenance construction {}", p.construction)),
    };
    Ok(Provenance {
        kinds,
        mixed: p.mixed,
        collector_ids: p.collector_ids.clone(),
        first_chunk: chunk(p.first_chunk.as_ref(), "first_chunk")?,
        last_chunk: chunk(p.last_chunk.as_ref(), "last_chunk")?,
        chunk_count: p.chunk_count,
        oldest_byte_age_ms: p.oldest_byte_age_ms,
        construction,
    })
}

#[cfg(test)]
mod tests {
    use entropy_receipts::{
        Commitment, KeyId, KeyNameDigest, Receipt, ReceiptSigner, Salt, SignedReceipt,
    };
    use prost::Message as _;

    use super::*;

    fn largest_provenance() -> DrawProvenance {
        let id = |i: usize| format!("{i:0>64}");
        let chunk = |i: usize| pb::ChunkRef {
            collector_id: id(i),
            epoch: u64::MAX,
            sequence: u64::MAX,
            signed_at_unix_ms: i64::MIN,
        };
        DrawProvenance {
            kinds: vec![1, 2, 3],
            mixed: true,
            collector_ids: (0..64).map(id).collect(),
            first_chunk: Some(chunk(0)),
            last_chunk: Some(chunk(63)),
            chunk_count: u32::MAX,
            oldest_byte_age_ms: u64::MAX,
            construction: pb::Construction::DrbgPredictionResistant as i32,
            drbg: Some(pb::DrbgLabel {
                mechanism: 1,
                security_strength_bits: 256,
                instance_id: "ff".repeat(16),
                reseed_count: u64::MAX,
                bytes_since_reseed: u64::MAX,
                seed_bytes: u64::MAX,
                prediction_resistance: true,
            }),
        }
    }

    /// The largest receipt the gateway can write, as a `DrawReceipt` on the wire, is within
    /// [`RECEIPT_WIRE_BYTES`], the room a receipted response holds for it.
    #[test]
    fn receipts_fit_their_wire_bound() {
        let signer = ReceiptSigner::from_seed(&[7; 32]);
        let provenance = receipt_provenance(&largest_provenance()).unwrap();
        let salt = Salt([1; 32]);
        let receipt = Receipt {
            serial: u64::MAX,
            issued_at_unix_ms: i64::MIN,
            gateway_id: "g".repeat(64),
            key_name_digest: KeyNameDigest::of("k"),
            request: Request {
                rpc: Rpc::GetIntegers { min: i64::MIN, max: i64::MAX, count: u32::MAX },
                accept_kinds: vec![SourceKind::Quantum, SourceKind::Hardware, SourceKind::Os],
            },
            provenance,
            commitment: Commitment::commit(ServedValues::Bytes(&[]), &salt),
            key_id: signer.key_id(),
        };
        let signed: SignedReceipt = signer.sign(receipt).unwrap();
        let wire = DrawReceipt {
            signed_receipt: signed.to_bytes(),
            salt: salt.0.to_vec(),
            serial: u64::MAX,
        };
        // The field's tag and length in the response, too.
        let len = wire.encoded_len() + 1 + 3;
        assert!(len <= RECEIPT_WIRE_BYTES, "a receipt takes {len} wire bytes");
        assert_ne!(signed.receipt.key_id, KeyId([0; 32]));
    }

    #[test]
    fn the_wire_provenance_converts_whole_and_refuses_what_it_cannot_state() {
        let p = receipt_provenance(&largest_provenance()).unwrap();
        assert_eq!(p.collector_ids.len(), 64);
        assert!(
            matches!(p.construction, Construction::DrbgPredictionResistant(ref l) if l.instance_id == [0xff; 16])
        );
        let mut bad = largest_provenance();
        bad.drbg = None;
        assert!(receipt_provenance(&bad).unwrap_err().contains("label"));
        let mut bad = largest_provenance();
        bad.kinds = vec![0];
        assert!(receipt_provenance(&bad).is_err());
        let mut bad = largest_provenance();
        bad.first_chunk = None;
        assert!(receipt_provenance(&bad).unwrap_err().contains("first_chunk"));
    }
}
