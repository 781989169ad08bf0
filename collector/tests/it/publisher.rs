//! The publisher against a scripted gateway: what it does after each answer is the rule
//! `ingest.proto` states for FAILED_PRECONDITION. A chunk that may have been stored (an unknown
//! outcome) is never re-dated: refused, it is dropped; one that was definitely not stored is
//! sealed again, same sequence, fresh timestamp.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use entropy_collector::publisher::{Delivery, Publisher, RetryPolicy};
use entropy_collector::signer::ChunkSigner;
use entropy_proto::v1::ingest_service_server::{IngestService, IngestServiceServer};
use entropy_proto::v1::{Mixing, PublishRequest, PublishResponse};
use entropy_testkit::chunk::healthy_os_source;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::Endpoint;
use tonic::{Code, Request, Response, Status};

/// Answers each call with the next scripted code (OK once the script is done) and keeps
/// every request it was sent.
#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Code>>>,
    seen: Arc<Mutex<Vec<PublishRequest>>>,
}

#[tonic::async_trait]
impl IngestService for Scripted {
    async fn publish(
        &self,
        request: Request<PublishRequest>,
    ) -> Result<Response<PublishResponse>, Status> {
        self.seen.lock().unwrap().push(request.into_inner());
        match self.answers.lock().unwrap().pop_front().unwrap_or(Code::Ok) {
            Code::Ok => Ok(Response::new(PublishResponse {})),
            code => Err(Status::new(code, "scripted")),
        }
    }
}

/// Delivers one chunk to a gateway answering `script`; returns the outcome and what it sent.
async fn deliver_against(script: &[Code]) -> (Delivery, Vec<PublishRequest>) {
    let gateway = Scripted::default();
    gateway.answers.lock().unwrap().extend(script.iter().copied());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = Endpoint::from_shared(format!("http://{}", listener.local_addr().unwrap()));
    let shutdown = CancellationToken::new();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(IngestServiceServer::new(gateway.clone()))
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(listener),
                shutdown.clone().cancelled_owned(),
            ),
    );
    let mut signer = ChunkSigner::new("c", "k1", vec![7; 32]).unwrap().for_gateway("gw");
    let mut chunk = signer.sign(vec![1; 64], Mixing::None, vec![healthy_os_source()]);
    let policy = RetryPolicy {
        unavailable_initial: Duration::from_millis(5),
        pool_full_initial: Duration::from_millis(5),
        ..RetryPolicy::default()
    };
    let mut publisher = Publisher::new(endpoint.unwrap(), policy, signer.sealer(), "gw");
    let outcome = publisher.deliver(&mut chunk, &CancellationToken::new()).await;
    shutdown.cancel();
    let seen = gateway.seen.lock().unwrap().clone();
    (outcome, seen)
}

#[tokio::test]
async fn refused_after_an_unknown_outcome_a_chunk_is_dropped_never_redated() {
    // UNAVAILABLE: the first send may have been stored (by a gateway run that then stopped);
    // the restarted gateway refuses the resend as dated at or before its lease.
    let (outcome, seen) = deliver_against(&[Code::Unavailable, Code::FailedPrecondition]).await;
    assert!(matches!(outcome, Delivery::Refused(ref s) if s.code() == Code::FailedPrecondition));
    assert_eq!(seen.len(), 2, "no third send: the chunk is dropped");
    assert_eq!(seen[0], seen[1], "the resend is the same sealed bytes");
}

#[tokio::test]
async fn refused_with_no_unknown_outcome_a_chunk_is_sealed_again_and_stored() {
    let (outcome, seen) = deliver_against(&[Code::FailedPrecondition, Code::Ok]).await;
    assert!(matches!(outcome, Delivery::Stored), "{outcome:?}");
    assert_eq!(seen.len(), 2);
    assert_eq!((seen[1].epoch, seen[1].sequence), (seen[0].epoch, seen[0].sequence));
    assert!(seen[1].timestamp_unix_ms > seen[0].timestamp_unix_ms, "a fresh timestamp");
    assert_ne!(seen[1].mac, seen[0].mac, "and a new MAC");
    assert_eq!(seen[1].data, seen[0].data);
}
