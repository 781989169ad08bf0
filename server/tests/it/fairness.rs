//! Scarce entropy shared between keys: one key cannot hold up another's small call, contending
//! keys get equal shares, streams wait with a limit, and a spent deadline draws nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use entropy_gateway::auth::{ApiKeys, digest};
use entropy_proto::v1::{
    GetRandomRequest, GetStatusRequest, GetStatusResponse, StreamRandomRequest,
};
use tokio_stream::StreamExt;
use tonic::Code;

use super::support::{TestGateway, start_with_keys, test_config, with_key};

/// A gateway with an empty pool and a key per name (each key's secret is its name).
async fn gateway(
    names: &[&str],
    edit: impl FnOnce(&mut entropy_gateway::config::GatewayConfig),
) -> TestGateway {
    let text: String = names
        .iter()
        .map(|name| {
            format!(
                "[[key]]\nname = \"{name}\"\nsha256 = \"{}\"\n",
                hex::encode(digest(name.as_bytes()))
            )
        })
        .collect();
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), text).expect("write keys");
    let keys = ApiKeys::load_file(file.path()).expect("keys load");
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

#[tokio::test]
async fn a_stream_waits_for_entropy_with_a_limit_and_consumes_nothing() {
    let mut gw = gateway(&["reader"], |c| c.stream_max_wait_ms = 300).await;
    gw.feed(4 << 10, 4 << 10, |i| i as u8).await;
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
    assert_eq!((after.pool_bytes, after.served_bytes_total), (4 << 10, 0), "nothing consumed");
    gw.stop().await;
}
