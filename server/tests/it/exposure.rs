//! The metrics and health endpoint as an attacker meets it: its connections are capped and
//! slow-loris ones closed, and key names can be kept out of the series.

use std::time::Duration;

use entropy_gateway::metrics::KeyLabel;
use entropy_ops::endpoint::MAX_HTTP_CONNECTIONS;
use entropy_proto::v1::GetRandomRequest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::metrics::{http_get, scrape, start};
use super::support::authed;

/// Waits (up to `within`) for the server to close `tcp`.
async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(within, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn the_metrics_endpoint_caps_connections_and_closes_slow_loris_ones() {
    // Before: no cap and no header timeout; 3,000 slow-loris connections stayed open and,
    // under a descriptor limit, starved the gRPC listeners.
    let (gw, metrics) = start(|_| {}).await;
    let mut loris = Vec::new();
    for _ in 0..MAX_HTTP_CONNECTIONS {
        let mut tcp = TcpStream::connect(metrics).await.expect("connect");
        tcp.write_all(b"GET /metr").await.expect("a partial request line");
        loris.push(tcp);
    }
    // Give the server time to take them all, then one more: closed at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut extra = TcpStream::connect(metrics).await.expect("the kernel accepts it");
    assert!(closed_within(&mut extra, Duration::from_secs(2)).await, "past the cap: closed");
    // Each slow one is closed by the header timeout (5 s), and the endpoint serves again.
    for tcp in &mut loris {
        assert!(closed_within(tcp, Duration::from_secs(10)).await, "header timeout");
    }
    let (code, body) = http_get(metrics, "/healthz").await;
    assert_eq!((code, body.as_str()), (200, "ok\n"));
    gw.stop().await;
}

#[tokio::test]
async fn the_metrics_endpoint_speaks_http1_only_and_refuses_heads_past_its_read_buffer() {
    // Before: HTTP/2 was served too, whose streams and header blocks (up to 16 MiB each in
    // hyper's defaults) a peer could hold on each of the 64 connections.
    let (gw, metrics) = start(|_| {}).await;
    let mut h2 = TcpStream::connect(metrics).await.expect("connect");
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .expect("preface");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), h2.read_to_end(&mut answer)).await;
    // An HTTP/2 server's first frame is its SETTINGS; HTTP/1.1 answers with a status line, or
    // closes.
    assert!(
        answer.is_empty() || answer.starts_with(b"HTTP/1.1 "),
        "an HTTP/1.1 answer to the preface, not HTTP/2 frames: {:?}",
        &answer[..answer.len().min(40)]
    );
    assert!(closed_within(&mut h2, Duration::from_secs(1)).await, "and the connection closed");

    let mut big = TcpStream::connect(metrics).await.expect("connect");
    let padding = "p".repeat(entropy_ops::endpoint::HTTP_READ_BUFFER_BYTES + 1024);
    let head = format!("GET /healthz HTTP/1.1\r\nhost: x\r\nx-padding: {padding}\r\n\r\n");
    // The server may close before it has read every byte.
    let _ = big.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), big.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "{answer}");
    let (code, body) = http_get(metrics, "/healthz").await;
    assert_eq!((code, body.as_str()), (200, "ok\n"), "a normal request is still served");
    gw.stop().await;
}

#[tokio::test]
async fn key_names_can_be_kept_out_of_the_metrics() {
    let (gw, metrics) = start(|c| c.metrics_key_label = KeyLabel::Digest).await;
    let mut client = gw.client().await;
    let _ =
        client.get_random(authed(GetRandomRequest { num_bytes: 8, ..Default::default() })).await;
    let exposed = scrape(metrics).await;
    let keys: Vec<_> = exposed.samples.iter().filter_map(|s| s.labels.get("key")).collect();
    assert!(!keys.is_empty(), "per-key series are still there");
    assert!(keys.iter().all(|k| k.starts_with("k-") && k.len() == 14), "{keys:?}");
    assert!(keys.iter().all(|k| *k == &KeyLabel::Digest.value("alice")), "{keys:?}");
    gw.stop().await;
}
