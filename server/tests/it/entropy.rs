//! EntropyService: every RPC's happy path and bounds, auth, deadlines, at-most-once.

use std::collections::HashSet;
use std::time::Duration;

use entropy_proto::v1::{
    Encoding, GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetUuidsRequest, SourceKind,
    StreamRandomRequest,
};
use tokio_stream::StreamExt;
use tonic::{Code, Request};

use super::support::{assert_status, authed, start, test_config};

#[tokio::test]
async fn get_random_returns_exactly_the_bytes_asked_for() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(3 << 20, 64 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    for n in [1u32, 32, 1000, 1 << 20] {
        let resp = client
            .get_random(authed(GetRandomRequest {
                num_bytes: n,
                encoding: 0,
                ..Default::default()
            }))
            .await
            .expect("bytes")
            .into_inner();
        assert_eq!(resp.data.len(), n as usize);
        assert!(resp.text.is_empty());
    }
    let hex = client
        .get_random(authed(GetRandomRequest {
            num_bytes: 16,
            encoding: Encoding::Hex as i32,
            ..Default::default()
        }))
        .await
        .expect("hex")
        .into_inner();
    assert!(hex.data.is_empty());
    assert_eq!(hex.text.len(), 32);
    assert!(hex.text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    let b64 = client
        .get_random(authed(GetRandomRequest {
            num_bytes: 16,
            encoding: Encoding::Base64 as i32,
            ..Default::default()
        }))
        .await
        .expect("base64")
        .into_inner();
    assert_eq!(b64.text.len(), 24);
    assert!(b64.text.ends_with("=="));
    gw.stop().await;
}

#[tokio::test]
async fn get_random_bounds_name_the_field() {
    let gw = start(test_config(|_| {})).await;
    let mut client = gw.client().await;
    for n in [0u32, (1 << 20) + 1, u32::MAX] {
        assert_status(
            client
                .get_random(authed(GetRandomRequest {
                    num_bytes: n,
                    encoding: 0,
                    ..Default::default()
                }))
                .await,
            Code::InvalidArgument,
            &["num_bytes", "1..=1048576"],
        );
    }
    assert_status(
        client
            .get_random(authed(GetRandomRequest {
                num_bytes: 1,
                encoding: 7,
                ..Default::default()
            }))
            .await,
        Code::InvalidArgument,
        &["encoding"],
    );
    gw.stop().await;
}

#[tokio::test]
async fn keys_are_required_and_checked() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(4096, 4096, |_| 1).await;
    let mut client = gw.client().await;
    let req = || GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() };
    assert_status(
        client.get_random(Request::new(req())).await,
        Code::Unauthenticated,
        &["missing"],
    );
    for bad in
        ["Bearer wrong", "Bearer ", "Basic dGVzdA==", &format!("Bearer {}", "k".repeat(4000))]
    {
        let mut r = Request::new(req());
        r.metadata_mut().insert("authorization", bad.parse().unwrap());
        assert_status(client.get_random(r).await, Code::Unauthenticated, &[]);
    }
    let mut r = Request::new(req());
    r.metadata_mut().insert("x-api-key", super::support::API_KEY.parse().unwrap());
    assert_eq!(client.get_random(r).await.expect("x-api-key works").into_inner().data.len(), 8);
    let mut r = Request::new(req());
    r.metadata_mut()
        .insert("authorization", format!("bearer {}", super::support::API_KEY).parse().unwrap());
    client.get_random(r).await.expect("scheme is case-insensitive");
    assert_eq!(gw.status().await.served_bytes_total, 16, "failed calls consumed nothing");
    gw.stop().await;
}

#[tokio::test]
async fn stream_delivers_exactly_total_bytes() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(3 << 20, 256 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    let mut stream = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: 65536,
            total_bytes: 1 << 20,
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    let mut sizes = Vec::new();
    while let Some(msg) = stream.next().await {
        sizes.push(msg.expect("message").data.len());
    }
    assert_eq!(sizes, vec![65536; 16]);

    // Default chunk size, and a total that is not a multiple of it.
    let mut stream = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: 0,
            total_bytes: 40_000,
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    let mut sizes = Vec::new();
    while let Some(msg) = stream.next().await {
        sizes.push(msg.expect("message").data.len());
    }
    assert_eq!(sizes, vec![16384, 16384, 7232]);
    assert_status(
        client
            .stream_random(authed(StreamRandomRequest {
                chunk_bytes: (1 << 20) + 1,
                total_bytes: 0,
                ..Default::default()
            }))
            .await,
        Code::InvalidArgument,
        &["chunk_bytes", "1048576"],
    );
    gw.stop().await;
}

#[tokio::test]
async fn integers_are_in_range_and_bounds_are_checked() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(1 << 20, 64 << 10, |i| (i * 7 + 3) as u8).await;
    let mut client = gw.client().await;
    let dice = client
        .get_integers(authed(GetIntegersRequest {
            min: 1,
            max: 6,
            count: 10_000,
            ..Default::default()
        }))
        .await
        .expect("dice")
        .into_inner()
        .values;
    assert_eq!(dice.len(), 10_000);
    assert!(dice.iter().all(|v| (1..=6).contains(v)));
    let faces: HashSet<_> = dice.iter().collect();
    assert_eq!(faces.len(), 6, "every face shows up in 10,000 rolls");

    let full = client
        .get_integers(authed(GetIntegersRequest {
            min: i64::MIN,
            max: i64::MAX,
            count: 100,
            ..Default::default()
        }))
        .await
        .expect("full range")
        .into_inner()
        .values;
    assert_eq!(full.len(), 100);
    let constant = client
        .get_integers(authed(GetIntegersRequest {
            min: -5,
            max: -5,
            count: 3,
            ..Default::default()
        }))
        .await
        .expect("one-value range")
        .into_inner()
        .values;
    assert_eq!(constant, vec![-5, -5, -5]);

    assert_status(
        client
            .get_integers(authed(GetIntegersRequest {
                min: 2,
                max: 1,
                count: 1,
                ..Default::default()
            }))
            .await,
        Code::InvalidArgument,
        &["min", "max"],
    );
    for count in [0, 10_001] {
        assert_status(
            client
                .get_integers(authed(GetIntegersRequest {
                    min: 0,
                    max: 1,
                    count,
                    ..Default::default()
                }))
                .await,
            Code::InvalidArgument,
            &["count", "1..=10000"],
        );
    }
    gw.stop().await;
}

#[tokio::test]
async fn floats_and_uuids() {
    let mut gw = start(test_config(|_| {})).await;
    let mut noise = vec![0u8; 1 << 20];
    getrandom::fill(&mut noise).expect("os rng");
    gw.feed(1 << 20, 64 << 10, |i| noise[i]).await;
    let mut client = gw.client().await;
    let floats = client
        .get_floats(authed(GetFloatsRequest { count: 1000, ..Default::default() }))
        .await
        .expect("floats")
        .into_inner()
        .values;
    assert_eq!(floats.len(), 1000);
    assert!(floats.iter().all(|f| (0.0..1.0).contains(f)));
    let uuids = client
        .get_uuids(authed(GetUuidsRequest { count: 50, ..Default::default() }))
        .await
        .expect("uuids")
        .into_inner()
        .uuids;
    assert_eq!(uuids.len(), 50);
    for u in &uuids {
        let parsed = uuid::Uuid::parse_str(u).expect("canonical form");
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(parsed.to_string(), *u, "lowercase hyphenated");
    }
    assert_eq!(uuids.iter().collect::<HashSet<_>>().len(), 50);
    for count in [0, 10_001] {
        assert_status(
            client.get_floats(authed(GetFloatsRequest { count, ..Default::default() })).await,
            Code::InvalidArgument,
            &["count"],
        );
        assert_status(
            client.get_uuids(authed(GetUuidsRequest { count, ..Default::default() })).await,
            Code::InvalidArgument,
            &["count"],
        );
    }
    gw.stop().await;
}

#[tokio::test]
async fn an_empty_pool_times_out_and_consumes_nothing() {
    let mut gw = start(test_config(|c| c.max_wait_ms = 200)).await;
    gw.feed(100, 100, |_| 9).await;
    let mut client = gw.client().await;

    // The server's max wait ends it: UNAVAILABLE, saying so.
    assert_status(
        client
            .get_random(authed(GetRandomRequest {
                num_bytes: 101,
                encoding: 0,
                ..Default::default()
            }))
            .await,
        Code::Unavailable,
        &["within the server's maximum wait", "nothing consumed"],
    );

    // The client's deadline ends it first: DEADLINE_EXCEEDED.
    let mut gw2 = start(test_config(|c| c.max_wait_ms = 5_000)).await;
    gw2.feed(100, 100, |_| 9).await;
    let mut client2 = gw2.client().await;
    let mut req = authed(GetRandomRequest { num_bytes: 101, encoding: 0, ..Default::default() });
    req.set_timeout(Duration::from_millis(150));
    assert_status(client2.get_random(req).await, Code::DeadlineExceeded, &["nothing consumed"]);

    // A multi-draw call (integers) that cannot finish gives back what it drew.
    let mut req = authed(GetIntegersRequest { min: 0, max: 255, count: 101, ..Default::default() });
    req.set_timeout(Duration::from_millis(150));
    assert_status(client2.get_integers(req).await, Code::DeadlineExceeded, &[]);

    for g in [&gw, &gw2] {
        let s = g.status().await;
        assert_eq!((s.pool_bytes, s.served_bytes_total), (100, 0), "nothing consumed");
    }
    // The bytes are still there for the next caller.
    let r = client
        .get_random(authed(GetRandomRequest { num_bytes: 100, encoding: 0, ..Default::default() }))
        .await;
    assert_eq!(r.expect("bytes").into_inner().data, vec![9; 100]);
    gw.stop().await;
    gw2.stop().await;
}

#[tokio::test]
async fn status_reports_pool_counters_and_provenance() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(10_000, 1000, |_| 0).await;
    let mut client = gw.client().await;
    client
        .get_random(authed(GetRandomRequest { num_bytes: 300, encoding: 0, ..Default::default() }))
        .await
        .expect("ok");
    let s = gw.status().await;
    assert_eq!(s.pool_capacity_bytes, 4 << 20);
    assert_eq!((s.ingested_bytes_total, s.served_bytes_total, s.pool_bytes), (10_000, 300, 9_700));
    assert_eq!((s.chunks_accepted_total, s.chunks_rejected_total), (10, 0));
    assert!(s.last_chunk_age_ms.is_some());
    assert_eq!(s.sources.len(), 1);
    let src = &s.sources[0];
    assert_eq!((src.collector_id.as_str(), src.name.as_str()), ("test-collector", "os"));
    assert_eq!(src.kind, SourceKind::Os as i32, "the OS source is labelled as such");
    assert_eq!(src.contributed_bytes_total, 10_000);
    gw.stop().await;
}

/// At most once under contention: 32 concurrent takers (unary and streaming, varied sizes)
/// drain a pool of numbered bytes; every 8-byte word reaches exactly one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_concurrent_takers_never_share_a_byte() {
    const WORDS: u64 = 131_072; // 1 MiB of u64 serial numbers
    let mut gw = start(test_config(|c| c.max_wait_ms = 500)).await;
    let serial = |i: usize| (i as u64 / 8).to_le_bytes()[i % 8];
    gw.feed((WORDS * 8) as usize, 32 << 10, serial).await;

    let mut tasks = Vec::new();
    for t in 0..32u32 {
        let mut client = gw.client().await;
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            if t % 4 == 0 {
                let req = StreamRandomRequest {
                    chunk_bytes: 8 * (64 + t),
                    total_bytes: 8 * 4096,
                    ..Default::default()
                };
                // Streams wait for entropy without limit; the deadline ends them once the
                // unary takers have drained the pool.
                let mut req = authed(req);
                req.set_timeout(Duration::from_secs(3));
                let mut stream = client.stream_random(req).await.expect("stream").into_inner();
                while let Some(Ok(msg)) = stream.next().await {
                    got.extend_from_slice(&msg.data);
                }
            } else {
                let n = 8 * (1 + t * 37 % 512);
                while let Ok(r) = client
                    .get_random(authed(GetRandomRequest {
                        num_bytes: n,
                        encoding: 0,
                        ..Default::default()
                    }))
                    .await
                {
                    got.extend_from_slice(&r.into_inner().data);
                }
            }
            got
        }));
    }
    let mut seen = vec![false; WORDS as usize];
    let mut received = 0u64;
    for task in tasks {
        let got = task.await.expect("join");
        assert_eq!(got.len() % 8, 0);
        for word in got.chunks_exact(8) {
            let w = u64::from_le_bytes(word.try_into().unwrap());
            assert!(w < WORDS, "invented word {w}");
            assert!(!seen[w as usize], "word {w} served twice");
            seen[w as usize] = true;
            received += 1;
        }
    }
    let s = gw.status().await;
    assert_eq!(received * 8, s.served_bytes_total, "every byte served reached a caller");
    assert_eq!(s.served_bytes_total + s.pool_bytes, WORDS * 8, "nothing lost or invented");
    gw.stop().await;
}
