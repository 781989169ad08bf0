//! Scopes and quotas per key: PERMISSION_DENIED, RESOURCE_EXHAUSTED with a retry delay, streams
//! capped in number and metered in bytes, and nothing drawn for a refused call; GetUsage, what
//! is left of each limit, for the calling key only and at no cost.

use std::time::Duration;

use entropy_proto::v1::{
    GetRandomRequest, GetStatusRequest, GetUsageRequest, HeldUsage, RateUsage, StreamRandomRequest,
};
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

/// The calling key's usage.
async fn usage(gw: &TestGateway, key: &str) -> entropy_proto::v1::GetUsageResponse {
    let mut client = gw.client().await;
    client.get_usage(with_key(key, GetUsageRequest {})).await.expect("GetUsage").into_inner()
}

/// Milliseconds since `t`, rounded up: the bound on how much a bucket refilled meanwhile.
fn ms_since(t: std::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_micros().div_ceil(1000)).expect("small")
}

#[tokio::test]
async fn get_usage_reports_each_limit_before_and_after_a_draw_and_costs_nothing() {
    // One call a second (burst 1), so a GetUsage that took a call would refuse the next one;
    // 1000 B/s (burst 1 MiB, the floor), so a byte comes back each millisecond.
    let gw = gateway(&[(
        "metered",
        "requests_per_second = 1\nbytes_per_second = 1000\ndrbg_bytes_per_second = 2000000\n\
         max_streams = 2\nmax_undelivered_bytes = 2097152",
    )])
    .await;
    let fresh = usage(&gw, "metered").await;
    assert_eq!(fresh.key_name, "metered");
    let rate = |unlimited, per_second, burst, remaining, next_refill_ms, full_in_ms| RateUsage {
        unlimited,
        per_second,
        burst,
        remaining,
        next_refill_ms,
        full_in_ms,
    };
    assert_eq!(fresh.requests, Some(rate(false, 1, 1, 1, 0, 0)));
    assert_eq!(fresh.bytes, Some(rate(false, 1000, 1 << 20, 1 << 20, 0, 0)));
    assert_eq!(fresh.drbg_bytes, Some(rate(false, 2_000_000, 2_000_000, 2_000_000, 0, 0)));
    let held =
        |unlimited, limit, in_use, remaining| HeldUsage { unlimited, limit, in_use, remaining };
    assert_eq!(fresh.streams, Some(held(false, 2, 0, 2)));
    assert_eq!(fresh.undelivered_bytes, Some(held(false, 2 << 20, 0, 2 << 20)));
    for _ in 0..20 {
        assert_eq!(usage(&gw, "metered").await, fresh, "GetUsage takes none of what it reports");
    }

    let mut client = gw.client().await;
    let drawn_at = std::time::Instant::now();
    let random = || GetRandomRequest { num_bytes: 500_000, ..Default::default() };
    client.get_random(with_key("metered", random())).await.expect("within every limit");
    // Out of calls (one a second), the key is refused a draw, and may still ask when the next
    // comes.
    assert_status(
        client.get_random(with_key("metered", random())).await,
        Code::ResourceExhausted,
        &["request rate"],
    );
    let after = usage(&gw, "metered").await;
    let elapsed_ms = ms_since(drawn_at);
    // The call: its one token is gone, back a second after it was taken.
    let requests = after.requests.expect("requests");
    assert_eq!(requests.burst, 1, "{requests:?}");
    if elapsed_ms < 1000 {
        assert_eq!(requests.remaining, 0, "{requests:?}");
        assert!((1000 - elapsed_ms..=1000).contains(&requests.next_refill_ms), "{requests:?}");
        assert_eq!(requests.full_in_ms, requests.next_refill_ms);
    } else {
        // A machine slow enough that the second passed: the token may be back, no sooner.
        assert!(requests.remaining <= 1 && requests.next_refill_ms <= 1000, "{requests:?}");
    }
    // The bytes: 500000 gone (the refused call took none), one back each millisecond since.
    let bytes = after.bytes.expect("bytes");
    let left = (1 << 20) - 500_000;
    assert!((left..=left + elapsed_ms).contains(&bytes.remaining), "{bytes:?}");
    assert_eq!(bytes.next_refill_ms, 1, "{bytes:?}");
    assert!((500_000 - elapsed_ms..=500_000).contains(&bytes.full_in_ms), "{bytes:?}");
    assert_eq!(after.drbg_bytes, fresh.drbg_bytes, "a RAW draw takes no DRBG output");
    // Read by the client: what is held is the one response at most (its hold ends as its last
    // byte leaves, which can be just after the client has it).
    let held = after.undelivered_bytes.expect("undelivered");
    assert_eq!((held.limit, held.in_use + held.remaining), (2 << 20, 2 << 20), "{held:?}");
    assert!(held.in_use <= 500_000 + 64, "{held:?}");
    gw.stop().await;
}

#[tokio::test]
async fn get_usage_counts_open_streams_and_says_unlimited_for_what_is_not_set() {
    let gw = gateway(&[
        ("streamer", "max_streams = 2"),
        ("watcher", "scopes = [\"status:read\"]"),
        ("feeder", "scopes = [\"entropy:feed\"]"),
    ])
    .await;
    let unlimited = RateUsage { unlimited: true, ..RateUsage::default() };
    for key in ["watcher", "feeder"] {
        // No scope is needed: any valid key reads its own usage.
        let usage = usage(&gw, key).await;
        assert_eq!(usage.key_name, key);
        assert_eq!(
            (usage.requests, usage.bytes, usage.drbg_bytes),
            (Some(unlimited), Some(unlimited), Some(unlimited))
        );
        assert_eq!(
            usage.streams,
            Some(HeldUsage { unlimited: true, limit: 0, in_use: 0, remaining: 0 })
        );
        assert_eq!(
            usage.undelivered_bytes,
            Some(HeldUsage { unlimited: false, limit: 32 << 20, in_use: 0, remaining: 32 << 20 }),
            "the undelivered allowance has a default, never unlimited"
        );
    }

    let mut client = gw.client().await;
    let open = StreamRandomRequest { chunk_bytes: 4096, ..Default::default() };
    let mut stream =
        client.stream_random(with_key("streamer", open)).await.expect("stream").into_inner();
    stream.next().await.expect("a message").expect("ok");
    let streaming = usage(&gw, "streamer").await;
    let streams = streaming.streams.expect("streams");
    assert_eq!((streams.limit, streams.in_use, streams.remaining), (2, 1, 1));
    let undelivered = streaming.undelivered_bytes.expect("undelivered");
    assert_eq!(undelivered.in_use + undelivered.remaining, undelivered.limit, "{undelivered:?}");
    for key in ["watcher", "feeder"] {
        assert_eq!(
            usage(&gw, key).await.streams.expect("streams").in_use,
            0,
            "another key's stream is never counted, nor seen"
        );
    }
    drop(stream);
    // The server notices the cancel; the slot comes back (polled, bounded).
    let mut in_use = 1;
    for _ in 0..500 {
        in_use = usage(&gw, "streamer").await.streams.expect("streams").in_use;
        if in_use == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(in_use, 0, "the closed stream's slot came back");
    gw.stop().await;
}

#[tokio::test]
async fn get_usage_needs_a_valid_key_and_reads_no_other() {
    let gw =
        gateway(&[("alice", "requests_per_second = 7"), ("bob", "requests_per_second = 9")]).await;
    let mut client = gw.client().await;
    assert_status(
        client.get_usage(tonic::Request::new(GetUsageRequest {})).await,
        Code::Unauthenticated,
        &["missing API key"],
    );
    assert_status(
        client.get_usage(with_key("mallory", GetUsageRequest {})).await,
        Code::Unauthenticated,
        &["invalid API key"],
    );
    for _ in 0..3 {
        client
            .get_random(with_key("alice", GetRandomRequest { num_bytes: 8, ..Default::default() }))
            .await
            .expect("within alice's rate");
    }
    let (alice, bob) = (usage(&gw, "alice").await, usage(&gw, "bob").await);
    assert_eq!((alice.key_name.as_str(), bob.key_name.as_str()), ("alice", "bob"));
    assert_eq!(alice.requests.map(|r| r.per_second), Some(7));
    assert!(alice.requests.expect("limited").remaining < 7, "alice's calls took her tokens");
    let bob = bob.requests.expect("limited");
    assert_eq!((bob.per_second, bob.remaining), (9, 9), "bob sees his own, untouched");
    gw.stop().await;
}
