//! ReceiptLogService: the receipt log for callers and auditors (issue 32). Its public key, the
//! latest signed head, proofs, and (with `receipts:audit`) the receipts themselves, every
//! answer bounded by the latest signed head, so that what it serves can be checked against a
//! head the gateway signed. Disk reads run off the async workers.

use std::sync::Arc;

use entropy_proto::v1::receipt_log_service_server::ReceiptLogService;
use entropy_proto::v1::{
    GetConsistencyProofRequest, GetConsistencyProofResponse, GetInclusionProofRequest,
    GetInclusionProofResponse, GetPublicKeyRequest, GetPublicKeyResponse, GetSignedTreeHeadRequest,
    GetSignedTreeHeadResponse, ListReceiptsRequest, ListReceiptsResponse,
};
use tonic::{Request, Response, Status};

use super::delivery::{self, Undelivered};
use super::errors;
use super::observe::{Call, Caller, Failure, Reply};
use crate::domain::allowance::Account;
use crate::domain::auth::Scope;
use crate::domain::receipts::Notary;
use crate::domain::served::Totals;
use crate::metrics::{GatewayMetrics, Method};
use crate::transport::ConnectionInfo;

/// Most receipts in one ListReceipts page.
pub(crate) const MAX_LIST_RECEIPTS: u32 = 1000;
/// Most bytes of receipts in one ListReceipts page (a page holds at least one receipt): 1 MiB
/// less 16 KiB, so that a page's answer fits in the smallest allowance a valid config gives a
/// connection (`max_undelivered_bytes_per_connection` >= 1 MiB; checked at compile time below).
pub(crate) const MAX_LIST_BYTES: usize = (1 << 20) - (16 << 10);
/// ListReceipts calls reading the log at once in the gateway; the others wait their turn.
const LIST_TURNS: usize = 2;
/// Wire bytes a ListReceipts answer takes at most: its receipts (the last one may pass
/// [`MAX_LIST_BYTES`] by one receipt of at most 6 KiB), a tag and length for each, the rest.
pub(crate) const MAX_LIST_WIRE_BYTES: usize =
    MAX_LIST_BYTES + (6 << 10) + MAX_LIST_RECEIPTS as usize * 4 + 64;
// A page's answer fits in the least `max_undelivered_bytes_per_connection` validation accepts.
const _: () = assert!(MAX_LIST_WIRE_BYTES <= 1 << 20);
/// How long a ListReceipts call waits for room to hold its answer.
const LIST_HOLD_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The ReceiptLogService implementation.
#[derive(Debug, Clone)]
pub(crate) struct ReceiptLogApi {
    notary: Option<Arc<Notary>>,
    metrics: Arc<GatewayMetrics>,
    list_turns: Arc<tokio::sync::Semaphore>,
    /// The process's allowance for response bytes: a listing's answer is held on it (and on
    /// the key's and the connection's) until written, as a draw's is.
    responses: Account,
    totals: Arc<Totals>,
}

impl ReceiptLogApi {
    /// The service of `notary`'s log (`None`: the gateway keeps none, and says so).
    pub(crate) fn new(
        notary: Option<Arc<Notary>>,
        metrics: Arc<GatewayMetrics>,
        (responses, totals): (Account, Arc<Totals>),
    ) -> Self {
        let list_turns = Arc::new(tokio::sync::Semaphore::new(LIST_TURNS));
        Self { notary, metrics, list_turns, responses, totals }
    }

    /// Room for a listing's answer of at most [`MAX_LIST_WIRE_BYTES`], held on the caller's
    /// allowances until its bytes are written (RESOURCE_EXHAUSTED if none within a second).
    async fn hold_page(
        &self,
        caller: &Caller,
        extensions: &tonic::Extensions,
    ) -> Result<Undelivered, Failure> {
        let connection = ConnectionInfo::of(extensions);
        let until = tokio::time::Instant::now() + LIST_HOLD_WAIT;
        let held = delivery::hold(
            &caller.grant.quota,
            connection,
            &self.responses,
            (0, MAX_LIST_WIRE_BYTES),
            Some(until),
        )
        .await
        .map_err(|full| Failure::Status(full.into()))?;
        Ok(Undelivered::new(0, held, caller.meter.clone(), self.totals.clone(), connection))
    }

    fn notary(&self) -> Result<&Arc<Notary>, Failure> {
        self.notary.as_ref().ok_or_else(|| {
            Status::failed_precondition(
                "this gateway keeps no receipt log (receipts_dir is not set)",
            )
            .into()
        })
    }

    /// The latest signed head's size: what every answer is bounded by.
    fn head_size(&self) -> Result<u64, Failure> {
        Ok(self.notary()?.latest_head().head.size)
    }

    /// Runs `read` on the log off the async workers.
    async fn read<T: Send + 'static>(
        &self,
        what: &'static str,
        read: impl FnOnce(&Notary) -> Result<T, entropy_receipts::LogError> + Send + 'static,
    ) -> Result<T, Failure> {
        let notary = self.notary()?.clone();
        let read = tokio::task::spawn_blocking(move || read(&notary))
            .await
            .map_err(|e| errors::internal(what, &e))?;
        read.map_err(|e| Failure::Status(errors::internal(what, &e)))
    }
}

/// INVALID_ARGUMENT for `field` = `value` outside `bound`.
fn out_of_range(field: &str, value: u64, bound: String) -> Failure {
    errors::out_of_range(field, value, &bound).into()
}

#[tonic::async_trait]
impl ReceiptLogService for ReceiptLogApi {
    async fn get_public_key(
        &self,
        request: Request<GetPublicKeyRequest>,
    ) -> Result<Response<GetPublicKeyResponse>, Status> {
        Call::run_any_key(&self.metrics, Method::GetPublicKey, request, async |_, _| {
            let notary = self.notary()?;
            Ok(Reply::new(GetPublicKeyResponse {
                public_key: notary.public_key().to_bytes().to_vec(),
                key_id: notary.public_key().key_id().0.to_vec(),
                gateway_id: notary.gateway_id().to_owned(),
            }))
        })
        .await
    }

    async fn get_signed_tree_head(
        &self,
        request: Request<GetSignedTreeHeadRequest>,
    ) -> Result<Response<GetSignedTreeHeadResponse>, Status> {
        Call::run_any_key(&self.metrics, Method::GetSignedTreeHead, request, async |_, _| {
            let head = self.notary()?.latest_head();
            Ok(Reply::new(GetSignedTreeHeadResponse {
                signed_tree_head: head.to_bytes(),
                tree_size: head.head.size,
            }))
        })
        .await
    }

    async fn get_inclusion_proof(
        &self,
        request: Request<GetInclusionProofRequest>,
    ) -> Result<Response<GetInclusionProofResponse>, Status> {
        Call::run_any_key(&self.metrics, Method::GetInclusionProof, request, async |_, r| {
            let GetInclusionProofRequest { serial, tree_size } = r.into_inner();
            let head = self.head_size()?;
            if tree_size == 0 || tree_size > head {
                let bound = format!("1..={head} (the latest signed head's size)");
                return Err(out_of_range("tree_size", tree_size, bound));
            }
            if serial >= tree_size {
                return Err(out_of_range("serial", serial, format!("0..{tree_size} (tree_size)")));
            }
            let hashes = self
                .read("GetInclusionProof", move |n| n.log().inclusion_proof(serial, tree_size))
                .await?;
            Ok(Reply::new(GetInclusionProofResponse {
                hashes: hashes.iter().map(|h| h.to_vec()).collect(),
            }))
        })
        .await
    }

    async fn get_consistency_proof(
        &self,
        request: Request<GetConsistencyProofRequest>,
    ) -> Result<Response<GetConsistencyProofResponse>, Status> {
        Call::run_any_key(&self.metrics, Method::GetConsistencyProof, request, async |_, r| {
            let GetConsistencyProofRequest { old_size, new_size } = r.into_inner();
            let head = self.head_size()?;
            if new_size > head {
                let bound = format!("0..={head} (the latest signed head's size)");
                return Err(out_of_range("new_size", new_size, bound));
            }
            if old_size > new_size {
                return Err(out_of_range(
                    "old_size",
                    old_size,
                    format!("0..={new_size} (new_size)"),
                ));
            }
            let hashes = self
                .read("GetConsistencyProof", move |n| n.log().consistency_proof(old_size, new_size))
                .await?;
            Ok(Reply::new(GetConsistencyProofResponse {
                hashes: hashes.iter().map(|h| h.to_vec()).collect(),
            }))
        })
        .await
    }

    async fn list_receipts(
        &self,
        request: Request<ListReceiptsRequest>,
    ) -> Result<Response<ListReceiptsResponse>, Status> {
        Call::run(
            &self.metrics,
            (Method::ListReceipts, Scope::ReceiptsAudit),
            request,
            async |caller, r| {
                let (_, extensions, request) = r.into_parts();
                let ListReceiptsRequest { start_serial, max_receipts } = request;
                let head = self.head_size()?;
                if max_receipts > MAX_LIST_RECEIPTS {
                    let bound = format!("0..={MAX_LIST_RECEIPTS} (0: {MAX_LIST_RECEIPTS})");
                    return Err(out_of_range("max_receipts", max_receipts.into(), bound));
                }
                if start_serial > head {
                    let bound = format!("0..={head} (the latest signed head's size)");
                    return Err(out_of_range("start_serial", start_serial, bound));
                }
                let max = if max_receipts == 0 { MAX_LIST_RECEIPTS } else { max_receipts };
                let mut owed = self.hold_page(&caller, &extensions).await?;
                let _turn = self
                    .list_turns
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|e| errors::internal("ListReceipts", &e))?;
                let page = self
                    .read("ListReceipts", move |n| {
                        n.log().read_signed(start_serial, head, (max as usize, MAX_LIST_BYTES))
                    })
                    .await?;
                let response = ListReceiptsResponse {
                    next_serial: start_serial + page.len() as u64,
                    signed_receipts: page,
                    tree_size: head,
                };
                owed.fit(prost::Message::encoded_len(&response) + 5);
                Ok(Reply::drawn(response, owed))
            },
        )
        .await
    }
}
