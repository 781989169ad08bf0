//! The gateway's receipt log (`ReceiptLogService`): its public key, its signed tree heads,
//! inclusion and consistency proofs, and the listing of every receipt (the `receipts:audit`
//! scope), over a [`crate::Client`]'s connection ([`crate::Client::receipt_log`]).
//!
//! What the gateway serves here is evidence, not truth: check heads and proofs with
//! [`crate::receipts::verify`] against the public key the operator published, not only the
//! one [`ReceiptLog::public_key`] returns. [`ReceiptLog::audit`] does an auditor's whole job:
//! it copies the log up to a signed head into a directory, in the log's own file format, and
//! lists one key's draws from that copy with `entropy_receipts::verify::audit_key` (every
//! signature checked, the copy's root compared with the head's).

use std::io::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use entropy_proto::v1::{
    GetConsistencyProofRequest, GetInclusionProofRequest, GetPublicKeyRequest,
    GetSignedTreeHeadRequest, ListReceiptsRequest,
};
use entropy_receipts::merkle::Hash;
use entropy_receipts::record::{LOG_FILE, MAGIC, frame};
use entropy_receipts::verify::{AuditEntry, audit_key, audit_listing};
use entropy_receipts::{KeyNameDigest, LogReader, PublicKey, SignedTreeHead};

use crate::client::{LogInner, call_within, request_within};
use crate::error::Error;
use crate::receipted::{Check, Refused};

/// The receipt log of one gateway. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct ReceiptLog {
    inner: LogInner,
    target: Arc<str>,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for ReceiptLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiptLog").field("target", &self.target).finish_non_exhaustive()
    }
}

/// The gateway's receipt-signing key, as it serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayKey {
    /// The Ed25519 public key (its key id checked against the one served).
    pub key: PublicKey,
    /// The gateway's id, as in every receipt it signs.
    pub gateway_id: String,
}

/// One page of [`ReceiptLog::list_receipts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptPage {
    /// Signed receipts' bytes, serials `start`, `start + 1`, ...
    pub signed_receipts: Vec<Vec<u8>>,
    /// The serial to ask for next.
    pub next_serial: u64,
    /// The gateway's latest signed head's size when the page was read.
    pub tree_size: u64,
}

/// Why an audit did not produce a listing.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A call failed.
    #[error(transparent)]
    Call(#[from] Error),
    /// Writing or reading the copy of the log failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The evidence does not check out: the head, a receipt, or the copy's root.
    #[error(transparent)]
    Refused(#[from] Refused),
}

fn malformed(what: &str) -> Error {
    Error::Other { code: tonic::Code::Internal, message: format!("the gateway sent {what}") }
}

fn hashes(list: Vec<Vec<u8>>) -> Result<Vec<Hash>, Error> {
    list.into_iter()
        .enumerate()
        .map(|(i, h)| {
            h.as_slice().try_into().map_err(|_| {
                malformed(&format!("a proof whose hash {i} has {} bytes, not 32", h.len()))
            })
        })
        .collect()
}

impl ReceiptLog {
    pub(crate) fn new(inner: LogInner, target: Arc<str>, timeout: Option<Duration>) -> Self {
        Self { inner, target, timeout }
    }

    async fn call<T>(
        &self,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, Error> {
        call_within(&self.target, self.timeout, call).await
    }

    /// The key that signs receipts and heads, and the gateway's id. Compare it with the key the
    /// operator published before trusting anything it verifies.
    pub async fn public_key(&self) -> Result<GatewayKey, Error> {
        let request = request_within(self.timeout, GetPublicKeyRequest {});
        let r = self.call(self.inner.clone().get_public_key(request)).await?;
        let bytes: [u8; 32] = r.public_key.as_slice().try_into().map_err(|_| {
            malformed(&format!("a public key of {} bytes, not 32", r.public_key.len()))
        })?;
        let key = PublicKey::from_bytes(&bytes)
            .map_err(|_| malformed("a public key that is not an Ed25519 point"))?;
        if key.key_id().0.as_slice() != r.key_id.as_slice() {
            return Err(malformed("a key id that is not its public key's"));
        }
        Ok(GatewayKey { key, gateway_id: r.gateway_id })
    }

    /// The latest signed tree head, parsed (its signature is not checked here: see
    /// [`SignedTreeHead::verify`]).
    pub async fn signed_tree_head(&self) -> Result<SignedTreeHead, Error> {
        let request = request_within(self.timeout, GetSignedTreeHeadRequest {});
        let r = self.call(self.inner.clone().get_signed_tree_head(request)).await?;
        let head = SignedTreeHead::from_bytes(&r.signed_tree_head)
            .map_err(|e| malformed(&format!("a signed tree head that does not decode: {e}")))?;
        if head.head.size != r.tree_size {
            return Err(malformed(&format!(
                "tree_size {} beside a signed head of size {}",
                r.tree_size, head.head.size
            )));
        }
        Ok(head)
    }

    /// Polls the signed head (every 200 ms) until it covers receipt `serial` (its size is
    /// above it), for at most `within`. `Unavailable` naming the last size when none does.
    pub async fn wait_for_head(
        &self,
        serial: u64,
        within: Duration,
    ) -> Result<SignedTreeHead, Error> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let head = self.signed_tree_head().await?;
            if head.head.size > serial {
                return Ok(head);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Unavailable(format!(
                    "no signed head covered serial {serial} within {within:?} (the latest has \
                     size {})",
                    head.head.size
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The RFC 9162 inclusion path of receipt `serial` in the tree of `tree_size` receipts.
    pub async fn inclusion_proof(&self, serial: u64, tree_size: u64) -> Result<Vec<Hash>, Error> {
        let request = request_within(self.timeout, GetInclusionProofRequest { serial, tree_size });
        hashes(self.call(self.inner.clone().get_inclusion_proof(request)).await?.hashes)
    }

    /// The RFC 9162 consistency proof from the tree of `old_size` receipts to `new_size`.
    pub async fn consistency_proof(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> Result<Vec<Hash>, Error> {
        let request =
            request_within(self.timeout, GetConsistencyProofRequest { old_size, new_size });
        hashes(self.call(self.inner.clone().get_consistency_proof(request)).await?.hashes)
    }

    /// One page of signed receipts from `start_serial`, at most `max_receipts` (1..=1000; 0:
    /// 1000). Needs the `receipts:audit` scope.
    pub async fn list_receipts(
        &self,
        start_serial: u64,
        max_receipts: u32,
    ) -> Result<ReceiptPage, Error> {
        let request =
            request_within(self.timeout, ListReceiptsRequest { start_serial, max_receipts });
        let r = self.call(self.inner.clone().list_receipts(request)).await?;
        let listed = r.signed_receipts.len() as u64;
        if r.next_serial != start_serial.saturating_add(listed) {
            return Err(malformed(&format!(
                "a page of {listed} receipts from serial {start_serial} whose next serial is {}",
                r.next_serial
            )));
        }
        Ok(ReceiptPage {
            signed_receipts: r.signed_receipts,
            next_serial: r.next_serial,
            tree_size: r.tree_size,
        })
    }

    /// Pages through every receipt with a serial below `tree_size` (a signed head's size), in
    /// order, calling `f(serial, signed receipt bytes)` for each; stops at `f`'s first error.
    /// Needs the `receipts:audit` scope.
    pub async fn each_receipt<E, F>(&self, tree_size: u64, mut f: F) -> Result<(), E>
    where
        E: From<Error>,
        F: FnMut(u64, Vec<u8>) -> Result<(), E>,
    {
        let mut serial = 0;
        while serial < tree_size {
            let page = self.list_receipts(serial, 0).await?;
            if page.signed_receipts.is_empty() {
                return Err(Error::Other {
                    code: tonic::Code::FailedPrecondition,
                    message: format!(
                        "the gateway's listing ends at serial {serial}, below the head's size \
                         {tree_size} (its latest head has size {}: a head of another log?)",
                        page.tree_size
                    ),
                }
                .into());
            }
            for bytes in page.signed_receipts {
                if serial == tree_size {
                    break;
                }
                f(serial, bytes)?;
                serial += 1;
            }
        }
        Ok(())
    }

    /// Every signed receipt below `tree_size`, in serial order (see
    /// [`ReceiptLog::each_receipt`]; a large log is better streamed).
    pub async fn all_receipts(&self, tree_size: u64) -> Result<Vec<Vec<u8>>, Error> {
        let mut all = Vec::new();
        self.each_receipt(tree_size, |_, bytes| {
            all.push(bytes);
            Ok::<_, Error>(())
        })
        .await?;
        Ok(all)
    }

    /// Copies the log's first `tree_size` receipts into `dir/receipts.log`, in the log's own
    /// file format (docs/receipts.md, "The log on disk"), created anew: an existing file is
    /// never overwritten. Returns its path. Needs the `receipts:audit` scope.
    pub async fn copy_log(&self, dir: &Path, tree_size: u64) -> Result<PathBuf, AuditError> {
        let path = dir.join(LOG_FILE);
        let io = |source| AuditError::Io { path: path.clone(), source };
        let file =
            std::fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        out.write_all(MAGIC).map_err(io)?;
        self.each_receipt(tree_size, |_, bytes| out.write_all(&frame(&bytes)).map_err(io)).await?;
        out.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)?;
        Ok(path)
    }

    /// An auditor's listing: checks `head` under `key`, copies the log up to it into `dir`
    /// ([`ReceiptLog::copy_log`]), and lists from that copy the receipts of the key whose
    /// name digests to `key_name_digest` with serials in `serials`, by
    /// `entropy_receipts::verify::audit_key`: every receipt's signature checked, and the
    /// copy's root equal to the head's, so no draw of the key in the range is missing.
    pub async fn audit(
        &self,
        dir: &Path,
        head: &SignedTreeHead,
        key: &PublicKey,
        key_name_digest: &KeyNameDigest,
        serials: Range<u64>,
    ) -> Result<Vec<AuditEntry>, AuditError> {
        let size = head
            .verify(key)
            .map_err(|e| Refused::new(Check::Log, format!("the signed tree head: {e}")))?
            .size;
        self.copy_log(dir, size).await?;
        let reader = LogReader::open(dir).map_err(|e| Refused::new(Check::Log, e.to_string()))?;
        Ok(audit_key(reader, head, key, key_name_digest, serials)
            .map_err(|e| Refused::new(Check::Log, e.to_string()))?)
    }

    /// [`ReceiptLog::audit`] without a copy on disk: the listing up to the head is held in
    /// memory (a few hundred bytes a receipt) and checked by
    /// `entropy_receipts::verify::audit_listing`, the same checks.
    pub async fn audit_in_memory(
        &self,
        head: &SignedTreeHead,
        key: &PublicKey,
        key_name_digest: &KeyNameDigest,
        serials: Range<u64>,
    ) -> Result<Vec<AuditEntry>, AuditError> {
        let size = head
            .verify(key)
            .map_err(|e| Refused::new(Check::Log, format!("the signed tree head: {e}")))?
            .size;
        let listing = self.all_receipts(size).await?;
        Ok(audit_listing(listing, head, key, key_name_digest, serials)
            .map_err(|e| Refused::new(Check::Log, e.to_string()))?)
    }
}

#[cfg(test)]
mod tests {
    //! The client's side of the log against a small `ReceiptLogService` over a real
    //! `entropy_receipts::ReceiptLog`, with pages of 2 receipts so that listing pages. (The
    //! gateway's own service is tested end to end in tests/tests.rs.)
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Mutex;

    use entropy_proto::v1::receipt_log_service_server::{
        ReceiptLogService, ReceiptLogServiceServer,
    };
    use entropy_proto::v1::{
        GetConsistencyProofResponse, GetInclusionProofResponse, GetPublicKeyResponse,
        GetSignedTreeHeadResponse, ListReceiptsResponse,
    };
    use entropy_receipts::{
        ChunkRef, Commitment, Construction, LogConfig, Provenance, Receipt, ReceiptSigner, Request,
        Rpc, Salt, ServedValues, SignedReceipt, SourceKind, SyncPolicy,
    };
    use tonic::{Request as Req, Response, Status};

    use super::*;
    use crate::ClientBuilder;

    struct Fake {
        signer: ReceiptSigner,
        log: entropy_receipts::ReceiptLog,
        leaves: Mutex<Vec<SignedReceipt>>,
    }

    fn status(e: entropy_receipts::LogError) -> Status {
        Status::invalid_argument(e.to_string())
    }

    #[tonic::async_trait]
    impl ReceiptLogService for Fake {
        async fn get_public_key(
            &self,
            _: Req<GetPublicKeyRequest>,
        ) -> Result<Response<GetPublicKeyResponse>, Status> {
            let key = self.signer.public_key();
            Ok(Response::new(GetPublicKeyResponse {
                public_key: key.to_bytes().to_vec(),
                key_id: key.key_id().0.to_vec(),
                gateway_id: "gw-fake".into(),
            }))
        }
        async fn get_signed_tree_head(
            &self,
            _: Req<GetSignedTreeHeadRequest>,
        ) -> Result<Response<GetSignedTreeHeadResponse>, Status> {
            let head = self.log.signed_head(&self.signer, 1_800_000_000_000).map_err(status)?;
            Ok(Response::new(GetSignedTreeHeadResponse {
                signed_tree_head: head.to_bytes(),
                tree_size: head.head.size,
            }))
        }
        async fn get_inclusion_proof(
            &self,
            r: Req<GetInclusionProofRequest>,
        ) -> Result<Response<GetInclusionProofResponse>, Status> {
            let r = r.into_inner();
            let proof = self.log.inclusion_proof(r.serial, r.tree_size).map_err(status)?;
            Ok(Response::new(GetInclusionProofResponse {
                hashes: proof.iter().map(|h| h.to_vec()).collect(),
            }))
        }
        async fn get_consistency_proof(
            &self,
            r: Req<GetConsistencyProofRequest>,
        ) -> Result<Response<GetConsistencyProofResponse>, Status> {
            let r = r.into_inner();
            let proof = self.log.consistency_proof(r.old_size, r.new_size).map_err(status)?;
            Ok(Response::new(GetConsistencyProofResponse {
                hashes: proof.iter().map(|h| h.to_vec()).collect(),
            }))
        }
        async fn list_receipts(
            &self,
            r: Req<ListReceiptsRequest>,
        ) -> Result<Response<ListReceiptsResponse>, Status> {
            let start = r.into_inner().start_serial;
            let leaves = self.leaves.lock().unwrap();
            let end = (start + 2).min(leaves.len() as u64).max(start);
            Ok(Response::new(ListReceiptsResponse {
                signed_receipts: (start..end).map(|s| leaves[s as usize].to_bytes()).collect(),
                next_serial: end,
                tree_size: leaves.len() as u64,
            }))
        }
    }

    fn receipt(serial: u64, key_name: &str, signer: &ReceiptSigner) -> SignedReceipt {
        let chunk = ChunkRef {
            collector_id: "col".into(),
            epoch: 1,
            sequence: serial,
            signed_at_unix_ms: 1_800_000_000_000,
        };
        let values = [1i64, 2, 3];
        signer
            .sign(Receipt {
                serial,
                issued_at_unix_ms: 1_800_000_000_000 + serial as i64,
                gateway_id: "gw-fake".into(),
                key_name_digest: KeyNameDigest::of(key_name),
                request: Request {
                    rpc: Rpc::GetIntegers { min: 1, max: 3, count: 3 },
                    accept_kinds: vec![],
                },
                provenance: Provenance {
                    kinds: vec![SourceKind::Os],
                    mixed: false,
                    collector_ids: vec!["col".into()],
                    first_chunk: chunk.clone(),
                    last_chunk: chunk,
                    chunk_count: 1,
                    oldest_byte_age_ms: 0,
                    construction: Construction::Raw,
                },
                commitment: Commitment::commit(ServedValues::Integers(&values), &Salt([7; 32])),
                key_id: signer.key_id(),
            })
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_client_pages_proves_and_audits() {
        let dir = tempfile::tempdir().unwrap();
        let signer = ReceiptSigner::from_seed(&[5; 32]);
        let (log, _) = entropy_receipts::ReceiptLog::open(&LogConfig {
            dir: dir.path().join("log"),
            sync: SyncPolicy::Group,
        })
        .unwrap();
        let mut leaves = Vec::new();
        // Seven receipts: "lottery" draws serials 1, 4 (a redraw) and 6.
        for s in 0..7u64 {
            let name = if [1, 4, 6].contains(&s) { "lottery" } else { "other" };
            let appended = log.append_with(|serial| Ok(receipt(serial, name, &signer))).unwrap();
            assert_eq!(appended.serial, s);
            leaves.push(appended.receipt);
        }
        let key = signer.public_key().clone();
        let fake = Fake { signer, log, leaves: Mutex::new(leaves) };
        let incoming =
            tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = incoming.local_addr().unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(ReceiptLogServiceServer::new(fake))
                .serve_with_incoming(incoming),
        );
        let client = ClientBuilder::new(format!("http://{addr}"), "k").connect().await.unwrap();
        let log = client.receipt_log();

        assert_eq!(log.public_key().await.unwrap().key, key);
        let head = log.wait_for_head(6, Duration::from_secs(5)).await.unwrap();
        assert_eq!(head.verify(&key).unwrap().size, 7);
        let r = log.wait_for_head(7, Duration::from_millis(300)).await.unwrap_err();
        assert!(r.to_string().contains("no signed head covered serial 7"), "{r}");

        // Pages of two: every receipt, in order, and only up to the size asked.
        let all = log.all_receipts(7).await.unwrap();
        assert_eq!(all.len(), 7);
        let five = log.all_receipts(5).await.unwrap();
        assert_eq!(five, all[..5]);
        for (i, bytes) in all.iter().enumerate() {
            let signed = entropy_receipts::verify::verify_receipt_bytes(bytes, &key).unwrap();
            let proof = log.inclusion_proof(i as u64, 7).await.unwrap();
            entropy_receipts::verify::verify_inclusion(&signed, &proof, &head, &key).unwrap();
        }
        // A size past the listing: refused, not a short list.
        let e = log.all_receipts(9).await.unwrap_err();
        assert!(e.to_string().contains("listing ends at serial 7"), "{e}");

        // The audit, of the whole log and of a range; a head of another key is refused.
        let copy = tempfile::tempdir().unwrap();
        let listed =
            log.audit(copy.path(), &head, &key, &KeyNameDigest::of("lottery"), 0..7).await.unwrap();
        assert_eq!(listed.iter().map(|e| e.serial).collect::<Vec<_>>(), [1, 4, 6]);
        let copy2 = tempfile::tempdir().unwrap();
        let listed = log
            .audit(copy2.path(), &head, &key, &KeyNameDigest::of("lottery"), 2..5)
            .await
            .unwrap();
        assert_eq!(listed.iter().map(|e| e.serial).collect::<Vec<_>>(), [4]);
        let listed =
            log.audit_in_memory(&head, &key, &KeyNameDigest::of("lottery"), 0..7).await.unwrap();
        assert_eq!(listed.iter().map(|e| e.serial).collect::<Vec<_>>(), [1, 4, 6]);
        let other = ReceiptSigner::from_seed(&[6; 32]);
        let e = log
            .audit(copy2.path(), &head, other.public_key(), &KeyNameDigest::of("lottery"), 0..7)
            .await
            .unwrap_err();
        assert!(matches!(e, AuditError::Refused(Refused { check: Check::Log, .. })), "{e}");
        // A copy is never written over.
        assert!(matches!(log.copy_log(copy.path(), 7).await, Err(AuditError::Io { .. })));
        // Consistency proofs come through as hashes; an old size above the new is refused.
        let proof = log.consistency_proof(3, 7).await.unwrap();
        assert!(!proof.is_empty());
        assert!(log.consistency_proof(8, 7).await.is_err());
    }
}
