//! Clients that do not read: what their key can make the gateway hold, and what happens to
//! bytes drawn for them. A raw HTTP/2 client announces a zero flow-control window, so the
//! gateway can send it nothing, and asks for entropy anyway.

use std::time::Duration;

use entropy_gateway::auth::{ApiKeys, digest};
use entropy_proto::v1::{GetRandomRequest, GetStatusRequest, GetStatusResponse};
use prost::Message;
use prost::bytes::{BufMut, Bytes, BytesMut};

use super::support::{TestGateway, start_with_keys, test_config, with_key};

/// A gateway whose key "stalled" may hold 2 MiB undelivered, and a key "other"; 8 MiB fed.
async fn gateway() -> TestGateway {
    let text = format!(
        "[[key]]\nname = \"stalled\"\nsha256 = \"{}\"\nmax_undelivered_bytes = 2097152\n\
         [[key]]\nname = \"other\"\nsha256 = \"{}\"\n",
        hex::encode(digest(b"stalled")),
        hex::encode(digest(b"other")),
    );
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), text).expect("write keys");
    let keys = ApiKeys::load_file(file.path()).expect("keys load");
    let config = test_config(|c| {
        c.pool_capacity_bytes = 8 << 20;
        c.max_wait_ms = 500;
    });
    let mut gw = start_with_keys(config, keys).await;
    gw.feed(8 << 20, 1 << 20, |i| i as u8).await;
    gw
}

async fn status(gw: &TestGateway) -> GetStatusResponse {
    let mut client = gw.client().await;
    client.get_status(with_key("other", GetStatusRequest {})).await.expect("status").into_inner()
}

/// A gRPC frame: the 5-byte prefix, then `message`.
fn frame(message: &impl Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut out = BytesMut::with_capacity(5 + body.len());
    out.put_u8(0);
    out.put_u32(u32::try_from(body.len()).expect("small"));
    out.put_slice(&body);
    out.freeze()
}

#[tokio::test]
async fn a_client_that_does_not_read_holds_at_most_its_keys_allowance() {
    let gw = gateway().await;
    let tcp = tokio::net::TcpStream::connect(gw.public).await.expect("connect");
    let (mut h2, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .expect("h2 handshake");
    let driver = tokio::spawn(connection);
    let mut responses = Vec::new();
    for _ in 0..6 {
        let request = http::Request::post(format!(
            "http://{}/entropy.v1.EntropyService/GetRandom",
            gw.public
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("authorization", "Bearer stalled")
        .body(())
        .expect("request");
        h2 = h2.ready().await.expect("ready");
        let (response, mut body) = h2.send_request(request, false).expect("send");
        let message = GetRandomRequest { num_bytes: 1 << 20, ..Default::default() };
        body.send_data(frame(&message), true).expect("data");
        responses.push(response);
    }
    // Two calls fit the 2 MiB allowance; the other four wait for room, then are refused.
    let mut refused = 0;
    for response in responses.drain(2..) {
        let response = tokio::time::timeout(Duration::from_secs(10), response)
            .await
            .expect("answered within the wait")
            .expect("response headers");
        let code = response.headers().get("grpc-status").map(|v| v.to_str().unwrap_or("?"));
        let message = response.headers().get("grpc-message").map(|v| v.to_str().unwrap_or(""));
        assert_eq!(code, Some("8"), "RESOURCE_EXHAUSTED: {message:?}");
        assert!(message.is_some_and(|m| m.contains("max_undelivered_bytes")), "{message:?}");
        refused += 1;
    }
    assert_eq!(refused, 4);
    let held = status(&gw).await;
    assert_eq!(
        held.ingested_bytes_total - held.pool_bytes,
        2 << 20,
        "the stalled key holds exactly its allowance"
    );
    // Another key is not held up.
    let mut client = gw.client().await;
    let small = with_key("other", GetRandomRequest { num_bytes: 32, ..Default::default() });
    assert_eq!(
        client.get_random(small).await.expect("other key served").into_inner().data.len(),
        32
    );

    // The client goes away: its two responses were never delivered, so their bytes count as
    // discarded (wiped), never as served.
    drop(responses);
    drop(h2);
    driver.abort();
    let mut after = status(&gw).await;
    for _ in 0..500 {
        if after.served_bytes_total == 32 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        after = status(&gw).await;
    }
    assert_eq!(after.served_bytes_total, 32, "only the other key's 32 bytes were served");
    assert_eq!(after.pool_bytes, (6 << 20) - 32, "the 2 MiB drawn for the stalled client are gone");
    gw.stop().await;
}
