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
use entropy_receipts::verify::{AuditEntry, audit_key};
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
}
