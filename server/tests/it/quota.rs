//! Scopes and quotas per key: PERMISSION_DENIED, RESOURCE_EXHAUSTED with a retry delay, streams
//! capped in number and metered in bytes, and nothing drawn for a refused call.

use std::time::Duration;

use entropy_proto::v1::{GetRandomRequest, GetStatusRequest, StreamRandomRequest};
use tokio_stream::StreamExt;
use tonic::Code;

use super::support::{
    TestGateway, assert_status, keys_named, start_with_keys, test_config, with_key,
};

/// A gateway with the keys described by `entries` (TOML tables after name and sha256; each
/// key's secret is its name), with its 8 MiB pool full.
async fn gateway(entries: &[(&str, &str)]) -> TestGateway {
    let keys = keys_named(entries);
    let mut gw = start_with_keys(test_config(|c| c.pool_capacity_bytes = 8 << 20), keys).await;
    gw.feed(8 << 20, 256 << 10, |i| i as u8).await;
    gw
}

async fn served(gw: &TestGateway, key: &str) -> u64 {
    let mut client = gw.client().await;
    client
        .get_status(with_key(key, GetStatusRequest {}))
        .await
        .unwrap()
        .into_inner()
        .served_bytes_total
}

#[tokio::test]
async fn a_key_without_the_scope_is_permission_denied() {
    let gw = gateway(&[
        ("watcher", "scopes = [\"status:read\"]"),
        ("reader", "scopes = [\"entropy:read\"]"),
    ])
    .await;
    let mut client = gw.client().await;
    assert_status(
        client
            .get_random(with_key(
                "watcher",
                GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() },
            ))
            .await,
        Code::PermissionDenied,
        &["watcher", "entropy:read"],
    );
    client
        .get_status(with_key("watcher", GetStatusRequest {}))
        .await
        .expect("status:read suffices");
    client
        .get_random(with_key(
            "reader",
            GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() },
        ))
        .await
        .expect("entropy");
    assert_status(
        client.get_status(with_key("reader", GetStatusRequest {})).await,
        Code::PermissionDenied,
        &["status:read"],
    );
    assert_eq!(served(&gw, "watcher").await, 8, "the denied call drew nothing");
    gw.stop().await;
}

#[tokio::test]
async fn a_feeder_key_streams_raw_bytes_and_may_call_nothing_else() {
    use entropy_proto::v1::{
        CheckQualityRequest, Construction, GetFloatsRequest, GetIntegersRequest, GetUuidsRequest,
    };
    let gw = gateway(&[
        ("feeder", "scopes = [\"entropy:feed\"]"),
        ("watcher", "scopes = [\"status:read\"]"),
    ])
    .await;
    let mut client = gw.client().await;
    let stream = |construction| StreamRandomRequest {
        chunk_bytes: 4096,
        total_bytes: 64 << 10,
        construction,
        ..Default::default()
    };
    let mut messages =
        client.stream_random(with_key("feeder", stream(0))).await.expect("stream").into_inner();
    let mut received = 0;
    while let Some(message) = messages.next().await {
        received += message.expect("message").data.len();
    }
    assert_eq!(received, 64 << 10);
    assert_status(
        client.stream_random(with_key("feeder", stream(Construction::Drbg as i32))).await,
        Code::PermissionDenied,
        &["feeder", "entropy:drbg"],
    );
    let denied = ["feeder", "entropy:read"];
    let random = GetRandomRequest { num_bytes: 8, ..Default::default() };
    assert_status(
        client.get_random(with_key("feeder", random)).await,
        Code::PermissionDenied,
        &denied,
    );
    let ints = GetIntegersRequest { min: 1, max: 6, count: 1, ..Default::default() };
    assert_status(
        client.get_integers(with_key("feeder", ints)).await,
        Code::PermissionDenied,
        &denied,
    );
    let floats = GetFloatsRequest { count: 1, ..Default::default() };
    assert_status(
        client.get_floats(with_key("feeder", floats)).await,
        Code::PermissionDenied,
        &denied,
    );
    let uuids = GetUuidsRequest { count: 1, ..Default::default() };
    assert_status(
        client.get_uuids(with_key("feeder", uuids)).await,
        Code::PermissionDenied,
        &denied,
    );
    let quality = CheckQualityRequest { sample_bytes: 2500, ..Default::default() };
    assert_status(
        client.check_quality(with_key("feeder", quality)).await,
        Code::PermissionDenied,
        &["feeder", "quality:check"],
    );
    assert_status(
        client.get_status(with_key("feeder", GetStatusRequest {})).await,
        Code::PermissionDenied,
        &["feeder", "status:read"],
    );
    // A key with neither scope is told both.
    assert_status(
        client.stream_random(with_key("watcher", stream(0))).await,
        Code::PermissionDenied,
        &["watcher", "entropy:read or entropy:feed"],
    );
    assert_eq!(served(&gw, "watcher").await, 64 << 10, "the denied calls drew nothing");
    gw.stop().await;
}

#[tokio::test]
async fn the_request_rate_is_enforced_with_a_retry_delay() {
    let gw =
        gateway(&[("slow", "requests_per_second = 3"), ("watcher", "scopes = [\"status:read\"]")])
            .await;
    let mut client = gw.client().await;
    for _ in 0..3 {
        client
            .get_random(with_key(
                "slow",
                GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() },
            ))
            .await
            .expect("burst");
    }
    let refused = client
        .get_random(with_key(
            "slow",
            GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() },
        ))
        .await
        .expect_err("over the rate");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{}", refused.message());
    let retry_ms: u64 = refused
        .metadata()
        .get("retry-after-ms")
        .expect("retry-after-ms trailer")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=400).contains(&retry_ms), "{retry_ms}");
    assert_eq!(served(&gw, "watcher").await, 24, "the refused call drew nothing");
    tokio::time::sleep(Duration::from_millis(retry_ms + 50)).await;
    client
        .get_random(with_key(
            "slow",
            GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() },
        ))
        .await
        .expect("after the delay");
    gw.stop().await;
}

#[tokio::test]
async fn the_byte_rate_refuses_unary_calls_that_would_exceed_it() {
    let gw =
        gateway(&[("thin", "bytes_per_second = 1000"), ("watcher", "scopes = [\"status:read\"]")])
            .await;
    let mut client = gw.client().await;
    // The burst admits one request of up to 1 MiB, then the bucket is empty.
    client
        .get_random(with_key(
            "thin",
            GetRandomRequest { num_bytes: 1 << 20, encoding: 0, ..Default::default() },
        ))
        .await
        .expect("burst");
    let refused = client
        .get_random(with_key(
            "thin",
            GetRandomRequest { num_bytes: 4096, encoding: 0, ..Default::default() },
        ))
        .await;
    assert_status(refused, Code::ResourceExhausted, &["byte rate"]);
    assert_eq!(served(&gw, "watcher").await, 1 << 20);
    gw.stop().await;
}

#[tokio::test]
async fn streams_are_capped_per_key_and_metered_as_they_flow() {
    let gw = gateway(&[("one", "max_streams = 1\nbytes_per_second = 2097152")]).await;
    let mut client = gw.client().await;
    let open = |total| {
        with_key(
            "one",
            StreamRandomRequest { chunk_bytes: 64 << 10, total_bytes: total, ..Default::default() },
        )
    };
    let mut first = client.stream_random(open(0)).await.expect("first stream").into_inner();
    first.next().await.expect("a message").expect("ok");
    assert_status(
        client.stream_random(open(0)).await,
        Code::ResourceExhausted,
        &["at most 1 streams"],
    );
    drop(first);
    tokio::time::sleep(Duration::from_millis(200)).await; // the server notices the cancel

    // 2 MiB/s with a 2 MiB burst: 4 MiB takes at least ~1 s; the key is slowed, not refused.
    // The first stream drew at most its burst plus ~0.5 s at 2 MiB/s, so the pool still holds
    // the 4 MiB; the deadline turns any regression into a failure rather than a hang.
    let started = std::time::Instant::now();
    let mut request = open(4 << 20);
    request.set_timeout(Duration::from_secs(20));
    let mut stream = client.stream_random(request).await.expect("slot came back").into_inner();
    let mut got = 0;
    while let Some(message) = stream.next().await {
        got += message.expect("metered, never refused").data.len();
    }
    assert_eq!(got, 4 << 20);
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "metered: took {:?}",
        started.elapsed()
    );
    gw.stop().await;
}
