//! Scarce entropy shared between keys: one key cannot hold up another's small call, contending
//! keys get equal shares, streams wait with a limit, and a spent deadline draws nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use entropy_proto::v1::ingest_service_client::IngestServiceClient;
use entropy_proto::v1::{
    GetRandomRequest, GetStatusRequest, GetStatusResponse, StreamRandomRequest,
};
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::transport::Channel;

use super::support::{TestGateway, keys_named, start_with_keys, test_config, with_key};

/// A gateway with an empty pool and a key per name (each key's secret is its name).
async fn gateway(
    names: &[&str],
    edit: impl FnOnce(&mut entropy_gateway::process::config::GatewayConfig),
) -> TestGateway {
    let entries: Vec<(&str, &str)> = names.iter().map(|name| (*name, "")).collect();
    let keys = keys_named(&entries);
    start_with_keys(test_config(edit), keys).await
}

/// The gateway's status, asked with the key named `key`.
async fn status(gw: &TestGateway, key: &str) -> GetStatusResponse {
    let mut client = gw.client().await;
    client.get_status(with_key(key, GetStatusRequest {})).await.expect("status").into_inner()
}

/// Waits (up to 10 s) until the gateway reports `n` waiting takes.
async fn until_waiters(gw: &TestGateway, key: &str, n: u64) {
    for _ in 0..1000 {
        if status(gw, key).await.waiters >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{n} takes never queued for entropy");
}

#[tokio::test]
async fn a_spent_client_deadline_draws_nothing_even_from_a_full_pool() {
    // `grpc-timeout: 1n` used to be served by the fast path: 1 MiB left the pool for a call
    // whose client had already given up.
    let mut gw = gateway(&["reader"], |_| {}).await;
    gw.feed(1 << 20, 256 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    let mut request =
        with_key("reader", GetRandomRequest { num_bytes: 1 << 20, ..Default::default() });
    request.metadata_mut().insert("grpc-timeout", "1n".parse().expect("ascii"));
    // tonic's own timer (CANCELLED) may answer first; either way the call fails.
    let refused = client.get_random(request).await.expect_err("the deadline is spent");
    assert!(matches!(refused.code(), Code::DeadlineExceeded | Code::Cancelled), "{refused:?}");
    let after = status(&gw, "reader").await;
    assert_eq!((after.pool_bytes, after.served_bytes_total), (1 << 20, 0));
    gw.stop().await;
}

#[tokio::test]
async fn a_stream_whose_deadline_is_spent_draws_nothing_and_a_short_one_sends_nothing_after_it() {
    // Before: StreamRandom with grpc-timeout 1n, 0n, 0S or 1m drew, sent and counted 262 to
    // 394 KB before DEADLINE_EXCEEDED. Raw HTTP/2, so no client timer cancels the call first.
    let mut gw = gateway(&["reader"], |_| {}).await;
    gw.feed(2 << 20, 256 << 10, |i| i as u8).await;
    let request = StreamRandomRequest { chunk_bytes: 64 << 10, ..Default::default() };
    for timeout in ["0n", "1n", "0S", "0m"] {
        let (code, received) = raw_stream(&gw, &request, timeout).await;
        assert_eq!(code.as_deref(), Some("4"), "{timeout}: DEADLINE_EXCEEDED");
        assert_eq!(received, 0, "{timeout}: nothing sent");
        let after = status(&gw, "reader").await;
        assert_eq!(after.pool_bytes, 2 << 20, "{timeout}: nothing drawn");
    }
    // A deadline of 1 ms ends the stream at it: what was drawn and not yet sent goes back to
    // the pool, and everything is accounted for (served only what was written to the client).
    let (code, received) = raw_stream(&gw, &request, "1m").await;
    assert_eq!(code.as_deref(), Some("4"), "DEADLINE_EXCEEDED");
    let after = status(&gw, "reader").await;
    assert_eq!(
        after.ingested_bytes_total,
        after.pool_bytes + after.served_bytes_total + after.discarded_bytes_total,
        "{after:?}"
    );
    assert!(after.served_bytes_total <= received as u64, "served only what arrived");
    gw.stop().await;
}

/// Opens StreamRandom over raw HTTP/2 with `grpc-timeout: timeout`, reads it to its end, and
/// returns its grpc-status and the message bytes received.
async fn raw_stream(
    gw: &TestGateway,
    request: &StreamRandomRequest,
    timeout: &str,
) -> (Option<String>, usize) {
    use prost::Message as _;
    let tcp = tokio::net::TcpStream::connect(gw.public).await.expect("connect");
    let (h2, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let driver = tokio::spawn(connection);
    let mut h2 = h2.ready().await.expect("ready");
    let call =
        http::Request::post(format!("http://{}/entropy.v1.EntropyService/StreamRandom", gw.public))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("grpc-timeout", timeout)
            .header("authorization", "Bearer reader")
            .body(())
            .expect("request");
    let (response, mut body) = h2.send_request(call, false).expect("send");
    let message = request.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend((message.len() as u32).to_be_bytes());
    framed.extend(message);
    body.send_data(framed.into(), true).expect("data");
    let response = response.await.expect("answered");
    let (parts, mut body) = response.into_parts();
    let mut received = 0;
    while let Some(Ok(data)) = body.data().await {
        received += data.len();
        let _ = body.flow_control().release_capacity(data.len());
    }
    let trailers = body.trailers().await.ok().flatten().unwrap_or_default();
    let code = trailers
        .get("grpc-status")
        .or(parts.headers.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    driver.abort();
    (code, received)
}

#[tokio::test]
async fn a_key_streaming_big_chunks_does_not_hold_up_another_keys_small_call() {
    // Before: one line for everyone, so four 1 MiB stream draws at its head made a 32-byte
    // call of another key wait for 4 MiB of supply (and fail at an appliance's rate).
    let mut gw = gateway(&["greedy", "modest"], |c| c.max_wait_ms = 10_000).await;
    let mut streams = Vec::new();
    for _ in 0..4 {
        let mut client = gw.client().await;
        let request = with_key(
            "greedy",
            StreamRandomRequest { chunk_bytes: 1 << 20, total_bytes: 0, ..Default::default() },
        );
        let stream = client.stream_random(request).await.expect("stream opens").into_inner();
        streams.push(stream);
    }
    until_waiters(&gw, "modest", 4).await;
    let small = tokio::spawn({
        let mut client = gw.client().await;
        async move {
            client
                .get_random(with_key(
                    "modest",
                    GetRandomRequest { num_bytes: 32, ..Default::default() },
                ))
                .await
        }
    });
    until_waiters(&gw, "modest", 5).await;
    // 64 KiB: far less than any one of greedy's messages, plenty for a turn each.
    gw.feed(64 << 10, 16 << 10, |i| i as u8).await;
    let response = small.await.expect("join").expect("served from the first chunks");
    assert_eq!(response.into_inner().data.len(), 32);
    drop(streams);
    gw.stop().await;
}

#[tokio::test]
async fn contending_keys_receive_equal_shares_whatever_their_stream_count() {
    // "many" opens four streams, "one" a single stream; under a scarce supply both keys get
    // the same bytes (the turns are per key, not per stream).
    let mut gw = gateway(&["many", "one"], |_| {}).await;
    let received: Arc<Mutex<HashMap<&'static str, usize>>> = Arc::default();
    let mut readers = Vec::new();
    for (key, count) in [("many", 4), ("one", 1)] {
        for _ in 0..count {
            let mut client = gw.client().await;
            let request = with_key(
                key,
                StreamRandomRequest { chunk_bytes: 8 << 10, total_bytes: 0, ..Default::default() },
            );
            let mut stream = client.stream_random(request).await.expect("opens").into_inner();
            let received = received.clone();
            readers.push(tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    *received.lock().expect("lock").entry(key).or_default() += message.data.len();
                }
            }));
        }
    }
    until_waiters(&gw, "one", 5).await;
    let fed = 2 << 20;
    gw.feed(fed, 32 << 10, |i| i as u8).await;
    // Everything fed is delivered except what sits reserved for the five messages in progress.
    let in_progress = 5 * (8 << 10);
    let mut shares = (0, 0);
    for _ in 0..1000 {
        let got = received.lock().expect("lock").clone();
        shares = (got.get("many").copied().unwrap_or(0), got.get("one").copied().unwrap_or(0));
        if shares.0 + shares.1 + in_progress >= fed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        shares.0 + shares.1 + in_progress >= fed,
        "the fed bytes never reached the readers: {shares:?}"
    );
    let (hi, lo) = (shares.0.max(shares.1) as f64, shares.0.min(shares.1).max(1) as f64);
    assert!(hi / lo <= 1.5, "shares many/one = {shares:?}, ratio {:.2}", hi / lo);
    for reader in readers {
        reader.abort();
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_keys_streaming_64_kib_messages_from_a_slow_feed_share_it_and_no_stream_fails() {
    // Finding 10: 50 keys, one 64 KiB-message stream each, at 80 KB/s: 10 keys got nothing,
    // shares ranged from 0 to 512 KiB, and every stream ended UNAVAILABLE (a whole message for
    // every key needed ~40 s of the supply, more than stream_max_wait_ms). Scaled down, keeping
    // the ratio: about 750 KB/s and a 2 s wait, where a whole message for every key needs over
    // 4 s, and a key waits at most 49 × 16 KiB (about 1 s) for a turn (`pool::fair`).
    const KEYS: usize = 50;
    const MESSAGE: usize = 64 << 10;
    let names: Vec<String> = (0..KEYS).map(|i| format!("key-{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut gw = gateway(&refs, |c| c.stream_max_wait_ms = 2_000).await;
    let received: Arc<Vec<AtomicUsize>> =
        Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let faults: Arc<Mutex<Vec<String>>> = Arc::default();
    // The pool starts with 1 MiB, as a gateway fed while no one called does: the first keys
    // take it at once (and must not be made to wait for every other key to catch up).
    gw.feed(1 << 20, 64 << 10, |i| i as u8).await;
    let mut clients = Vec::new();
    for _ in 0..KEYS {
        clients.push(gw.client().await);
    }
    // Streams open while the feed runs, as they would against an appliance.
    let opener = tokio::spawn({
        let (received, faults) = (received.clone(), faults.clone());
        async move {
            let mut readers = Vec::new();
            for (i, mut client) in clients.into_iter().enumerate() {
                let name = format!("key-{i:02}");
                let request = with_key(
                    &name,
                    StreamRandomRequest { chunk_bytes: MESSAGE as u32, ..Default::default() },
                );
                let mut stream = client.stream_random(request).await.expect("opens").into_inner();
                let (received, faults) = (received.clone(), faults.clone());
                readers.push(tokio::spawn(async move {
                    while let Some(message) = stream.next().await {
                        let fault = match message {
                            Ok(m) if (4096..=MESSAGE).contains(&m.data.len()) => {
                                received[i].fetch_add(m.data.len(), Ordering::Relaxed);
                                continue;
                            }
                            Ok(m) => format!("{name}: a message of {} bytes", m.data.len()),
                            Err(status) => format!("{name}: {status:?}"),
                        };
                        faults.lock().expect("lock").push(fault);
                        return;
                    }
                }));
            }
            readers
        }
    });
    let mut ingest = gw.ingest_client().await;
    trickle(&mut gw, &mut ingest, || opener.is_finished()).await;
    let readers = opener.await.expect("join");
    let before: Vec<usize> = received.iter().map(|r| r.load(Ordering::Relaxed)).collect();
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    trickle(&mut gw, &mut ingest, || tokio::time::Instant::now() >= until).await;
    let shares: Vec<usize> = received
        .iter()
        .zip(&before)
        .map(|(r, before)| r.load(Ordering::Relaxed) - before)
        .collect();
    let faults = faults.lock().expect("lock").clone();
    assert!(faults.is_empty(), "streams failed while bytes flowed: {faults:?}");
    let (least, most) = (shares.iter().min().copied(), shares.iter().max().copied());
    let (least, most) = (least.unwrap_or(0), most.unwrap_or(0));
    assert!(least > 0, "a key got nothing in 3 s: {shares:?}");
    assert!(most <= 2 * least, "shares {least}..={most} differ by more than 2x: {shares:?}");
    for reader in readers {
        reader.abort();
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowly_fed_stream_waits_from_its_last_message_not_from_each_draw() {
    // A stream draws four messages ahead; under scarcity they are served one after another, so
    // the fourth waits for the three before it. Timed from its own start (600 ms here), it would
    // end the stream while a message went out every 150 ms.
    let mut gw = gateway(&["reader"], |c| c.stream_max_wait_ms = 400).await;
    let mut client = gw.client().await;
    let request = with_key(
        "reader",
        StreamRandomRequest { chunk_bytes: 64 << 10, total_bytes: 0, ..Default::default() },
    );
    let mut stream = client.stream_random(request).await.expect("opens").into_inner();
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(message) = stream.next().await {
            got.push(message.map(|m| m.data.len()));
        }
        got
    });
    let mut ingest = gw.ingest_client().await;
    for _ in 0..10 {
        let chunk = gw.sign(vec![3; 4 << 10]);
        ingest.publish(chunk).await.expect("chunk accepted");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // Fed 10 × 4 KiB, then nothing: the stream ends 400 ms after its last message.
    let got =
        tokio::time::timeout(Duration::from_secs(5), reader).await.expect("ends").expect("join");
    let (last, messages) = got.split_last().expect("messages, then the end");
    assert_eq!(messages.iter().map(|m| m.as_ref().ok()).collect::<Vec<_>>(), [Some(&4096); 10]);
    let ended = last.as_ref().expect_err("ends when the feed stops");
    assert_eq!(ended.code(), Code::Unavailable, "{}", ended.message());
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_stream_under_scarcity_sends_shorter_messages_and_exactly_its_total() {
    // Messages carry at most chunk_bytes and, but for the last, at least 4 KiB; the bytes add up
    // to total_bytes exactly, though draws ahead come back short.
    const TOTAL: usize = 50_000;
    let mut gw = gateway(&["reader"], |c| c.stream_max_wait_ms = 5_000).await;
    let mut client = gw.client().await;
    let request = with_key(
        "reader",
        StreamRandomRequest {
            chunk_bytes: 16 << 10,
            total_bytes: TOTAL as u64,
            ..Default::default()
        },
    );
    let mut stream = client.stream_random(request).await.expect("opens").into_inner();
    let reader = tokio::spawn(async move {
        let mut sizes = Vec::new();
        while let Some(message) = stream.next().await {
            sizes.push(message.expect("no error while bytes flow").data.len());
        }
        sizes
    });
    let mut ingest = gw.ingest_client().await;
    while !reader.is_finished() {
        let chunk = gw.sign(vec![3; 4 << 10]);
        ingest.publish(chunk).await.expect("chunk accepted");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let sizes = reader.await.expect("join");
    assert_eq!(sizes.iter().sum::<usize>(), TOTAL, "{sizes:?}");
    let (last, before) = sizes.split_last().expect("messages");
    assert!(*last > 0 && *last <= 16 << 10, "{sizes:?}");
    assert!(before.iter().all(|n| (4096..=16 << 10).contains(n)), "{sizes:?}");
    assert!(before.iter().any(|&n| n < 16 << 10), "scarcity made some shorter: {sizes:?}");
    gw.stop().await;
}

/// Publishes a 16 KiB chunk every 20 ms (about 750 KB/s) until `done`.
async fn trickle(
    gw: &mut TestGateway,
    ingest: &mut IngestServiceClient<Channel>,
    mut done: impl FnMut() -> bool,
) {
    while !done() {
        let chunk = gw.sign(vec![7; 16 << 10]);
        ingest.publish(chunk).await.expect("chunk accepted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_stream_waits_for_entropy_with_a_limit_and_consumes_nothing() {
    let mut gw = gateway(&["reader"], |c| c.stream_max_wait_ms = 300).await;
    // Less than the least a message of 64 KiB carries (4 KiB): no message can be drawn.
    gw.feed(3 << 10, 3 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    let request = with_key(
        "reader",
        StreamRandomRequest { chunk_bytes: 64 << 10, total_bytes: 0, ..Default::default() },
    );
    let mut stream = client.stream_random(request).await.expect("opens").into_inner();
    let ended = match stream.next().await {
        Some(Err(ended)) => ended,
        other => panic!("the stream should end with UNAVAILABLE, got {other:?}"),
    };
    assert_eq!(ended.code(), Code::Unavailable, "{}", ended.message());
    assert!(ended.message().contains("stream_max_wait_ms"), "{}", ended.message());
    let after = status(&gw, "reader").await;
    assert_eq!((after.pool_bytes, after.served_bytes_total), (3 << 10, 0), "nothing consumed");
    gw.stop().await;
}
