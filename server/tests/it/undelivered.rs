//! Clients that do not read: what their key can make the gateway hold, and what happens to
//! bytes drawn for them. A raw HTTP/2 client announces a zero flow-control window, so the
//! gateway can send it nothing, and asks for entropy anyway.

use std::time::Duration;

use entropy_gateway::domain::auth::{ApiKeys, digest};
use entropy_gateway::process::config::GatewayConfig;
use entropy_proto::v1::{
    GetRandomRequest, GetStatusRequest, GetStatusResponse, StreamRandomRequest,
};
use prost::Message;
use prost::bytes::{BufMut, Bytes, BytesMut};

use super::support::{TestGateway, start_with_keys, test_config, with_key};

/// A gateway with a key "stalled" (with `stalled_limits` in its keys-file entry) and a key
/// "other", 8 MiB fed, configured by `edit`.
async fn gateway(stalled_limits: &str, edit: impl FnOnce(&mut GatewayConfig)) -> TestGateway {
    let text = format!(
        "[[key]]\nname = \"stalled\"\nsha256 = \"{}\"\n{stalled_limits}\n\
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
        edit(c);
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

/// A client that announces a zero window (the gateway can send it nothing) and never reads.
struct Stalled {
    h2: h2::client::SendRequest<Bytes>,
    driver: tokio::task::JoinHandle<Result<(), h2::Error>>,
    addr: std::net::SocketAddr,
}

impl Stalled {
    async fn connect(gw: &TestGateway) -> Self {
        let tcp = tokio::net::TcpStream::connect(gw.public).await.expect("connect");
        let (h2, connection) = h2::client::Builder::new()
            .initial_window_size(0)
            .handshake::<_, Bytes>(tcp)
            .await
            .expect("h2 handshake");
        Self { h2, driver: tokio::spawn(connection), addr: gw.public }
    }

    /// Sends one call of `method` with `message` as key "stalled"; the response is not read.
    async fn call(&mut self, method: &str, message: &impl Message) -> h2::client::ResponseFuture {
        let request =
            http::Request::post(format!("http://{}/entropy.v1.EntropyService/{method}", self.addr))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .header("authorization", "Bearer stalled")
                .body(())
                .expect("request");
        self.h2 = self.h2.clone().ready().await.expect("ready");
        let (response, mut body) = self.h2.send_request(request, false).expect("send");
        body.send_data(frame(message), true).expect("data");
        response
    }

    /// Waits (up to 10 s) for the gateway to close the connection.
    async fn closed_by_the_gateway(self) {
        let ended = tokio::time::timeout(Duration::from_secs(10), self.driver).await;
        assert!(ended.is_ok(), "the gateway did not close the stalled connection within 10 s");
    }
}

/// Waits (up to 5 s) until the gateway's served counter reads `n`, and returns the status.
async fn served_becomes(gw: &TestGateway, n: u64) -> GetStatusResponse {
    let mut after = status(gw).await;
    for _ in 0..500 {
        if after.served_bytes_total == n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        after = status(gw).await;
    }
    after
}

/// Reads the status of a refused call's response: code and message.
async fn refusal(response: h2::client::ResponseFuture) -> (String, String) {
    let response = tokio::time::timeout(Duration::from_secs(10), response)
        .await
        .expect("answered within the wait")
        .expect("response headers");
    let header = |name| {
        response.headers().get(name).map_or(String::new(), |v| v.to_str().unwrap_or("?").into())
    };
    (header("grpc-status"), header("grpc-message"))
}

fn one_mib() -> GetRandomRequest {
    GetRandomRequest { num_bytes: 1 << 20, ..Default::default() }
}

#[tokio::test]
async fn a_client_that_does_not_read_holds_at_most_its_keys_allowance() {
    let gw = gateway("max_undelivered_bytes = 2097152", |c| c.send_timeout_ms = 0).await;
    let mut stalled = Stalled::connect(&gw).await;
    let mut responses = Vec::new();
    for _ in 0..6 {
        responses.push(stalled.call("GetRandom", &one_mib()).await);
    }
    // Two calls fit the 2 MiB allowance; the other four wait for room, then are refused.
    let mut refused = 0;
    for response in responses.drain(2..) {
        let (code, message) = refusal(response).await;
        assert_eq!(code, "8", "RESOURCE_EXHAUSTED: {message:?}");
        assert!(message.contains("max_undelivered_bytes%20"), "{message:?}");
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
    stalled.driver.abort();
    let after = served_becomes(&gw, 32).await;
    assert_eq!(after.served_bytes_total, 32, "only the other key's 32 bytes were served");
    assert_eq!(after.pool_bytes, (6 << 20) - 32, "the 2 MiB drawn for the stalled client are gone");
    gw.stop().await;
}

#[tokio::test]
async fn one_connection_holds_at_most_its_allowance_whatever_its_keys_allow() {
    let cap = 2 << 20;
    let gw = gateway("", |c| {
        c.send_timeout_ms = 0;
        c.max_undelivered_bytes_per_connection = cap;
    })
    .await;
    let mut stalled = Stalled::connect(&gw).await;
    let mut responses = Vec::new();
    let half = GetRandomRequest { num_bytes: 512 << 10, ..Default::default() };
    for _ in 0..6 {
        responses.push(stalled.call("GetRandom", &half).await);
    }
    // The allowance counts each response's bytes on the wire (its values, the gRPC prefix,
    // its provenance): three 512 KiB responses fit in 2 MiB, a fourth does not.
    for response in responses.drain(3..) {
        let (code, message) = refusal(response).await;
        assert_eq!(code, "8", "RESOURCE_EXHAUSTED: {message:?}");
        assert!(message.contains("max_undelivered_bytes_per_connection"), "{message:?}");
    }
    let held = status(&gw).await;
    let drawn = held.ingested_bytes_total - held.pool_bytes;
    assert_eq!(drawn, 3 * (512 << 10), "three responses drawn, held on the connection");
    assert!(drawn <= cap as u64);
    stalled.driver.abort();
    gw.stop().await;
}

#[tokio::test]
async fn a_connection_whose_client_stops_reading_is_closed_after_the_send_timeout() {
    let gw = gateway("", |c| c.send_timeout_ms = 300).await;
    let mut stalled = Stalled::connect(&gw).await;
    let _unary = stalled.call("GetRandom", &one_mib()).await;
    let stream =
        StreamRandomRequest { chunk_bytes: 64 << 10, total_bytes: 0, ..Default::default() };
    let _stream = stalled.call("StreamRandom", &stream).await;
    stalled.closed_by_the_gateway().await;
    // What was drawn for it (the unary 1 MiB, the stream's read-ahead) was wiped and counted
    // as discarded: none of it was written to its socket, so none of it counts as served.
    let after = discarded_settles(&gw).await;
    assert_eq!(after.served_bytes_total, 0, "nothing reached the client");
    let drawn = after.ingested_bytes_total - after.pool_bytes;
    assert_eq!(after.discarded_bytes_total, drawn, "everything drawn was discarded");
    // The unary 1 MiB, the stream's read-ahead (256 KiB), and the message its pipe took from
    // the queue and holds for the window.
    let chunk = 64 << 10;
    assert!(drawn <= (1 << 20) + (256 << 10) + chunk, "{drawn} bytes out of the pool");
    gw.stop().await;
}

/// Waits (up to 5 s) until everything drawn is either served or discarded (the gateway
/// settles a closed connection's responses as it drops them), and returns the status.
async fn discarded_settles(gw: &TestGateway) -> GetStatusResponse {
    let mut after = status(gw).await;
    for _ in 0..500 {
        let drawn = after.ingested_bytes_total - after.pool_bytes;
        if after.served_bytes_total + after.discarded_bytes_total == drawn {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        after = status(gw).await;
    }
    after
}

#[tokio::test]
async fn keepalive_pings_and_health_checks_do_not_keep_a_stalled_connection() {
    // Before: any write to the socket reset the stall clock, and the keepalive PING every 30 s
    // is a write: at the default send_timeout_ms (30000) no stalled connection was ever
    // closed. Only entropy written now counts; here the client pings every 50 ms and gets a
    // health check answered every 100 ms, and is still closed.
    let gw = gateway("", |c| c.send_timeout_ms = 400).await;
    let tcp = tokio::net::TcpStream::connect(gw.public).await.expect("connect");
    let (h2, mut connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .expect("h2 handshake");
    let mut pings = connection.ping_pong().expect("pings");
    let mut driver = tokio::spawn(connection);
    let mut stalled = Stalled { h2, driver: tokio::spawn(std::future::pending()), addr: gw.public };
    let _unary = stalled.call("GetRandom", &one_mib()).await;
    let started = std::time::Instant::now();
    let mut answered = 0;
    let closed = loop {
        tokio::select! {
            ended = &mut driver => break ended.is_ok(),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        let _ =
            tokio::time::timeout(Duration::from_millis(40), pings.ping(h2::Ping::opaque())).await;
        let Ok(mut ready) = stalled.h2.clone().ready().await else { break true };
        let request =
            http::Request::post(format!("http://{}/grpc.health.v1.Health/Check", gw.public))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(())
                .expect("request");
        if let Ok((response, mut body)) = ready.send_request(request, false) {
            let _ = body.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true);
            // The health answer is headers only (trailers-only carries no DATA), or tiny DATA
            // the zero window holds back: either way, nothing of the entropy moves.
            if tokio::time::timeout(Duration::from_millis(40), response).await.is_ok() {
                answered += 1;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(10), "still open after {answered} checks");
    };
    assert!(closed, "the gateway closed the stalled connection");
    assert!(started.elapsed() >= Duration::from_millis(400), "not before the send timeout");
    let after = discarded_settles(&gw).await;
    assert_eq!(after.served_bytes_total, 0);
    assert_eq!(after.discarded_bytes_total, 1 << 20, "the stalled response was discarded");
    gw.stop().await;
}

#[tokio::test]
async fn stalled_streams_of_large_messages_hold_what_their_key_allows_and_count_nothing_served() {
    // Before: a key without max_streams, 2 zero-window connections × 256 StreamRandom(1 MiB):
    // 468 MB drawn, 0 B delivered, and 437 MB counted as served after close (a message counted
    // as delivered when the HTTP/2 layer took it, which then held the whole message).
    let gw = gateway("max_undelivered_bytes = 4194304", |c| c.send_timeout_ms = 0).await;
    let stream = StreamRandomRequest { chunk_bytes: 1 << 20, ..Default::default() };
    let mut conns = Vec::new();
    for _ in 0..2 {
        let mut stalled = Stalled::connect(&gw).await;
        let mut calls = Vec::new();
        for _ in 0..16 {
            calls.push(stalled.call("StreamRandom", &stream).await);
        }
        conns.push((stalled, calls));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = status(&gw).await;
    let drawn = held.ingested_bytes_total - held.pool_bytes;
    assert!(drawn <= 4 << 20, "the key's 4 MiB allowance bounds what its streams drew: {drawn}");
    assert!(drawn >= 1 << 20, "its streams did draw ({drawn})");
    for (stalled, calls) in conns {
        drop(calls);
        stalled.driver.abort();
    }
    let after = discarded_settles(&gw).await;
    assert_eq!(after.served_bytes_total, 0, "nothing reached the clients: nothing served");
    assert_eq!(after.discarded_bytes_total, drawn, "what was drawn for them was discarded");
    gw.stop().await;
}

#[tokio::test]
async fn a_slow_reader_that_keeps_reading_is_not_cut_off() {
    // The send timeout is about no progress at all: a client reading steadily, if slowly,
    // keeps its stream.
    let gw = gateway("", |c| c.send_timeout_ms = 300).await;
    let mut client = gw.client().await;
    let request = super::support::with_key(
        "other",
        StreamRandomRequest { chunk_bytes: 16 << 10, total_bytes: 64 << 10, ..Default::default() },
    );
    let mut stream = client.stream_random(request).await.expect("opens").into_inner();
    let mut got = 0;
    while let Some(message) = tokio_stream::StreamExt::next(&mut stream).await {
        got += message.expect("not cut off").data.len();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert_eq!(got, 64 << 10);
    gw.stop().await;
}

#[tokio::test]
async fn partial_publishes_hold_at_most_the_ingest_budget_and_the_windows() {
    // Before: plaintext ingest read every partial publish into memory before it could check a
    // MAC (2 connections × 256 partial 1 MiB publishes held 560 MB; with 256 KiB frames, 500
    // MB). Now a body is read only as far as the ingest budget holds its bytes, flow control
    // stops the sender, and once the budget is full the connection that holds the most of it
    // without having authenticated is closed (calls that still find no room are refused).
    let budget = 256 << 10;
    let gw = super::support::start(test_config(|c| {
        c.max_chunk_bytes = 128 << 10;
        c.ingest_max_buffered_bytes = budget;
    }))
    .await;
    let tcp = tokio::net::TcpStream::connect(gw.ingest).await.expect("connect");
    let (h2, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let driver = tokio::spawn(connection);
    let mut kept = 0usize;
    let mut shed = 0usize;
    let mut closed = false;
    let mut bodies = Vec::new();
    // Each announces a message within the size cap (so it is not refused outright) and sends
    // all of it but the last byte.
    let (streams, message) = (32usize, 180usize << 10);
    for _ in 0..streams {
        let request =
            http::Request::post(format!("http://{}/entropy.v1.IngestService/Publish", gw.ingest))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(())
                .expect("request");
        let Ok(mut h2) = h2.clone().ready().await else {
            closed = true; // the gateway closed the connection
            break;
        };
        let Ok((response, mut body)) = h2.send_request(request, false) else {
            closed = true;
            break;
        };
        let mut prefix = BytesMut::new();
        prefix.put_u8(0);
        prefix.put_u32(message as u32);
        if body.send_data(prefix.freeze(), false).is_err() {
            closed = true;
            break;
        }
        let mut sent = 0;
        let mut left: usize = message - 1;
        while left > 0 {
            body.reserve_capacity(left.min(64 << 10));
            let granted = tokio::time::timeout(
                Duration::from_millis(300),
                std::future::poll_fn(|cx| body.poll_capacity(cx)),
            )
            .await;
            let Ok(Some(Ok(n))) = granted else { break };
            if n == 0 {
                continue;
            }
            if body.send_data(Bytes::from(vec![0u8; n]), false).is_err() {
                break;
            }
            sent += n;
            left -= n;
        }
        bodies.push(body);
        match tokio::time::timeout(Duration::from_millis(50), response).await {
            // Refused at once, nothing read: what it sent was dropped by h2 on arrival.
            Ok(Ok(answer)) => {
                let header = |n| answer.headers().get(n).and_then(|v| v.to_str().ok());
                assert_eq!(header("grpc-status"), Some("8"), "{answer:?}");
                assert!(
                    header("grpc-message").is_some_and(|m| m.contains("ingest_max_buffered_bytes"))
                );
                shed += 1;
            }
            // Still in progress: its bytes are held by the gateway (read) or by h2 (unread).
            _ => kept += sent,
        }
        assert!(
            gw.budget.ingest.held() <= budget,
            "the ingest budget holds {} > {budget}",
            gw.budget.ingest.held()
        );
    }
    // What the calls in progress made the gateway hold: the budget, plus what the connection
    // window lets sit unread in h2 (2 MiB), plus the stream's last frame.
    let bound = budget + (2 << 20) + (256 << 10);
    assert!(kept <= bound, "calls in progress hold {kept} bytes, bound {bound}");
    assert!(
        closed || shed > 0,
        "once the budget was full, the connection holding it was closed or further calls refused"
    );
    drop(bodies);
    driver.abort();
    // Everything held comes back once the connection is gone.
    for _ in 0..100 {
        if gw.budget.ingest.held() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(gw.budget.ingest.held(), 0, "the budget is whole again");
    gw.stop().await;
}
