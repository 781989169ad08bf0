//! Connection limits: past `max_connections` a new connection is closed at once, and a slot
//! comes back when a connection closes.

use std::time::Duration;

use entropy_proto::v1::GetStatusRequest;
use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use tonic::transport::{Channel, Endpoint};

use super::support::{authed, start, test_config};

/// One HTTP/2 connection of its own.
async fn connection(addr: std::net::SocketAddr) -> EntropyServiceClient<Channel> {
    let endpoint =
        Endpoint::from_shared(format!("http://{addr}")).unwrap().timeout(Duration::from_secs(2));
    EntropyServiceClient::new(endpoint.connect_lazy())
}

async fn works(client: &mut EntropyServiceClient<Channel>) -> bool {
    client.get_status(authed(GetStatusRequest {})).await.is_ok()
}

#[tokio::test]
async fn connections_past_the_cap_are_closed_and_slots_come_back() {
    let gw = start(test_config(|c| c.max_connections = 2)).await;
    let mut a = connection(gw.public).await;
    let mut b = connection(gw.public).await;
    assert!(works(&mut a).await && works(&mut b).await, "two connections fit");
    let mut c = connection(gw.public).await;
    let refused = c.get_status(authed(GetStatusRequest {})).await.expect_err("a third does not");
    // The server closes the connection before any HTTP/2 exchange. Clients name that
    // differently: grpc-go and grpcurl say UNAVAILABLE, tonic says CANCELLED. Either way it is
    // a connection failure, not a gRPC status from the gateway.
    assert!(
        matches!(refused.code(), tonic::Code::Unavailable | tonic::Code::Cancelled),
        "{:?}: {}",
        refused.code(),
        refused.message()
    );
    assert!(works(&mut a).await, "the admitted connections are unaffected");

    drop(b);
    let mut d = connection(gw.public).await;
    let mut admitted = false;
    for _ in 0..20 {
        if works(&mut d).await {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        d = connection(gw.public).await;
    }
    assert!(admitted, "closing a connection frees its slot");
    drop((a, c, d));
    gw.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), gw.handle).await.unwrap().unwrap().unwrap();
}
