//! Streams ending when the client leaves or the server stops; health following the pool.

use std::time::Duration;

use entropy_proto::v1::StreamRandomRequest;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

use super::support::{authed, start, test_config};

#[tokio::test]
async fn a_cancelled_stream_stops_drawing() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(2 << 20, 256 << 10, |_| 0).await;
    // A client with HTTP/2's default 64 KiB windows (tonic's client asks for about 2 MiB,
    // which would let the whole pool flow to it) that reads 3 messages, then leaves.
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", gw.public))
        .unwrap()
        .initial_stream_window_size(Some(64 << 10))
        .initial_connection_window_size(Some(64 << 10))
        .connect()
        .await
        .unwrap();
    let mut client = entropy_proto::v1::entropy_service_client::EntropyServiceClient::new(channel);
    let mut stream = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: 4096,
            total_bytes: 0,
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    for _ in 0..3 {
        stream.next().await.expect("message").expect("ok");
    }
    drop(stream);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after_cancel = gw.status().await.served_bytes_total;
    // Served before the reset arrived: the 3 read, the 64 KiB the client's window admitted,
    // hyper's 400 KiB send buffer and the message being written; what was still queued is
    // discarded, not served. Well short of the 2 MiB a stream that kept drawing would take.
    let bound = 3 * 4096 + (64 << 10) + (400 << 10) + 3 * 4096;
    assert!(after_cancel <= bound, "stream drew {after_cancel} bytes, bound {bound}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(gw.status().await.served_bytes_total, after_cancel, "no drawing after cancel");
    gw.stop().await;
}

#[tokio::test]
async fn a_stalled_reader_of_large_messages_pins_a_bounded_number_of_bytes() {
    let mut gw = start(test_config(|c| c.pool_capacity_bytes = 8 << 20)).await;
    gw.feed(8 << 20, 1 << 20, |_| 0).await;
    // HTTP/2's default 64 KiB windows (tonic's client asks for about 2 MiB).
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", gw.public))
        .unwrap()
        .initial_stream_window_size(Some(64 << 10))
        .initial_connection_window_size(Some(64 << 10))
        .connect()
        .await
        .unwrap();
    let mut client = entropy_proto::v1::entropy_service_client::EntropyServiceClient::new(channel)
        .max_decoding_message_size(1 << 20);
    let chunk = 256 << 10;
    let mut stream = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: chunk,
            total_bytes: 0,
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    stream.next().await.expect("message").expect("ok");
    // The reader stalls: the stream draws until its queue and the transport's buffers are full.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = gw.status().await;
    // Out of the pool: sent, queued, or reserved for a draw in flight.
    let pinned = status.ingested_bytes_total - status.pool_bytes;
    // The one read, the client's 64 KiB window, hyper's 400 KiB send buffer and the stream's
    // queue (STREAM_BUFFER_BYTES, or one message when they are larger: this one) with the
    // message the transport is writing.
    let chunk = chunk as u64;
    let bound = chunk + (64 << 10) + (400 << 10) + 2 * chunk;
    assert!(pinned <= bound, "a stalled stream drew {pinned} bytes, bound {bound}");
    drop(stream);
    gw.stop().await;
}

#[tokio::test]
async fn shutdown_ends_an_open_stream_with_unavailable_and_counts_only_the_streams_it_cut() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(4096, 4096, |i| i as u8).await;
    let mut client = gw.client().await;
    // This stream gets all of its total_bytes before the shutdown: nothing of it is left to
    // resume elsewhere, so the shutdown does not count it.
    let mut finished = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: 1024,
            total_bytes: 4096,
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    let mut got = 0;
    while let Some(message) = finished.next().await {
        got += message.expect("the finished stream ends OK").data.len();
    }
    assert_eq!(got, 4096, "the finished stream delivered its total");
    // The pool is now empty: this one is parked waiting for entropy when shutdown comes.
    let mut stream = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: 0,
            total_bytes: 0,
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    tokio::time::sleep(Duration::from_millis(100)).await;
    gw.shutdown.cancel();
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("stream ends promptly");
    let status = end.expect("a final status").expect_err("ends with an error status");
    assert_eq!(status.code(), Code::Unavailable, "{}", status.message());
    tokio::time::timeout(Duration::from_secs(5), gw.handle)
        .await
        .expect("server stops")
        .expect("join")
        .expect("serve Ok");
    assert_eq!(gw.cuts.count(), 1, "only the parked stream was cut");
}

#[tokio::test]
async fn health_follows_the_low_watermark() {
    let mut gw = start(test_config(|c| c.pool_low_watermark_bytes = 10_000)).await;
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", gw.public))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let check = |service: &str| HealthCheckRequest { service: service.into() };
    let status_of = async |health: &mut HealthClient<_>, service: &str| {
        // Readiness is sampled every 100 ms: poll for up to 2 s.
        let mut last = ServingStatus::Unknown;
        for _ in 0..20 {
            last = health.check(check(service)).await.expect("check").into_inner().status();
            if last == ServingStatus::Serving {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        last
    };
    tokio::time::sleep(Duration::from_millis(250)).await;
    let empty = health.check(check("entropy.v1.EntropyService")).await.expect("check").into_inner();
    assert_eq!(empty.status(), ServingStatus::NotServing, "empty pool is not ready");
    assert!(!gw.status().await.serving);

    gw.feed(20_000, 10_000, |_| 0).await;
    assert_eq!(status_of(&mut health, "entropy.v1.EntropyService").await, ServingStatus::Serving);
    assert_eq!(status_of(&mut health, "").await, ServingStatus::Serving);
    assert!(gw.status().await.serving);
    gw.stop().await;
}
