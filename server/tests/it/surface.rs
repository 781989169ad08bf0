//! What a peer without a key can reach on the public listener: reflection describes only the
//! public contract, and no service there accepts a request past the 16 KiB cap.

use entropy_gateway::process::server::MAX_PUBLIC_REQUEST_BYTES;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

use super::support::{start, test_config};

async fn channel(addr: std::net::SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}")).expect("uri").connect().await.expect("connect")
}

/// One reflection request on a fresh stream, without a key.
async fn reflect(
    addr: std::net::SocketAddr,
    request: MessageRequest,
) -> Result<MessageResponse, tonic::Status> {
    let mut client = ServerReflectionClient::new(channel(addr).await);
    let request = ServerReflectionRequest { host: String::new(), message_request: Some(request) };
    let mut responses =
        client.server_reflection_info(tokio_stream::iter([request])).await?.into_inner();
    let response: ServerReflectionResponse = responses.next().await.expect("one response")?;
    Ok(response.message_response.expect("a message"))
}

#[tokio::test]
async fn reflection_describes_only_the_public_contract() {
    let gw = start(test_config(|_| {})).await;
    let Ok(MessageResponse::ListServicesResponse(list)) =
        reflect(gw.public, MessageRequest::ListServices(String::new())).await
    else {
        panic!("list_services should answer");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"entropy.v1.EntropyService"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("Ingest")), "{names:?}");

    // Before: `describe entropy.v1.IngestService` worked, since its file was registered.
    for request in [
        MessageRequest::FileContainingSymbol("entropy.v1.IngestService".into()),
        MessageRequest::FileContainingSymbol("entropy.v1.PublishRequest".into()),
        MessageRequest::FileByFilename("entropy/v1/ingest.proto".into()),
    ] {
        match reflect(gw.public, request.clone()).await {
            Ok(MessageResponse::ErrorResponse(e)) => {
                assert_eq!(e.error_code, Code::NotFound as i32, "{request:?}: {e:?}")
            }
            Err(status) => assert_eq!(status.code(), Code::NotFound, "{request:?}: {status:?}"),
            Ok(other) => panic!("{request:?} was answered: {other:?}"),
        }
    }
    // The public contract is still described (grpcurl and ghz need it).
    let described = reflect(
        gw.public,
        MessageRequest::FileContainingSymbol("entropy.v1.EntropyService".into()),
    )
    .await;
    assert!(
        matches!(described, Ok(MessageResponse::FileDescriptorResponse(ref f)) if !f.file_descriptor_proto.is_empty()),
        "{described:?}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn health_and_reflection_refuse_requests_past_the_public_cap() {
    // Before: both kept tonic's 4 MiB default, and 256 streams of nearly 4 MiB on one
    // connection took the gateway's RSS from 275 MB to 1.09 GB.
    let gw = start(test_config(|_| {})).await;
    let big = "x".repeat(MAX_PUBLIC_REQUEST_BYTES + 1);
    let mut health = HealthClient::new(channel(gw.public).await);
    let refused = health.check(HealthCheckRequest { service: big.clone() }).await;
    let status = refused.expect_err("a 16 KiB + 1 health request is refused");
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    assert!(status.message().contains("message length too large"), "{status:?}");

    // Reflection is a bidirectional stream: the oversized message fails its decoding and the
    // stream ends unanswered (a request within the cap would get NOT_FOUND for this symbol).
    let mut client = ServerReflectionClient::new(channel(gw.public).await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::FileContainingSymbol(big)),
    };
    let answered = match client.server_reflection_info(tokio_stream::iter([request])).await {
        Err(status) => Some(Err(status)),
        Ok(responses) => responses.into_inner().next().await,
    };
    match answered {
        None => {}
        Some(Err(status)) => assert_eq!(status.code(), Code::OutOfRange, "{status:?}"),
        Some(Ok(response)) => panic!("an oversized reflection request was answered: {response:?}"),
    }

    let mut ingest_health = HealthClient::new(channel(gw.ingest).await);
    let refused = ingest_health
        .check(HealthCheckRequest { service: "y".repeat(MAX_PUBLIC_REQUEST_BYTES + 1) })
        .await;
    assert_eq!(refused.expect_err("refused on ingest too").code(), Code::OutOfRange);
    gw.stop().await;
}
