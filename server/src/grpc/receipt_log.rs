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

use super::errors;
use super::observe::{Call, Failure, Reply};
use crate::domain::auth::Scope;
use crate::domain::receipts::Notary;
use crate::metrics::{GatewayMetrics, Method};

/// Most receipts in one ListReceipts page.
pub(crate) const MAX_LIST_RECEIPTS: u32 = 1000;
/// Most bytes of receipts in one ListReceipts page (a page holds at least one receipt).
pub(crate) const MAX_LIST_BYTES: usize = 1 << 20;
/// ListReceipts calls reading the log at once in the gateway; the others wait their turn.
const LIST_TURNS: usize = 2;

/// The ReceiptLogService implementation.
#[derive(Debug, Clone)]
pub(crate) struct ReceiptLogApi {
    notary: Option<Arc<Notary>>,
    metrics: Arc<GatewayMetrics>,
    list_turns: Arc<tokio::sync::Semaphore>,
}

impl ReceiptLogApi {
    /// The service of `notary`'s log (`None`: the gateway keeps none, and says so).
    pub(crate) fn new(notary: Option<Arc<Notary>>, metrics: Arc<GatewayMetrics>) -> Self {
        Self { notary, metrics, list_turns: Arc::new(tokio::sync::Semaphore::new(LIST_TURNS)) }
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
            async |_, r| {
                let ListReceiptsRequest { start_serial, max_receipts } = r.into_inner();
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
                Ok(Reply::new(ListReceiptsResponse {
                    next_serial: start_serial + page.len() as u64,
                    signed_receipts: page,
                    tree_size: head,
                }))
            },
        )
        .await
    }
}
