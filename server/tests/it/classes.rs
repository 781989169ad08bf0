//! Source classes share the pool: a class that filled it cannot keep another's bytes out
//! (finding 6 of the third security review).

use std::time::Duration;

use entropy_proto::v1::{
    GetRandomRequest, Mixing, PublishRequest, SourceHealth, SourceKind, SourceReport,
};
use tonic::Code;

use super::support::{TestGateway, authed, start, test_config};

/// The report of a healthy quantum source that contributed.
fn quantum_source() -> SourceReport {
    SourceReport {
        name: "quantis".into(),
        kind: SourceKind::Quantum as i32,
        health: SourceHealth::Healthy as i32,
        contributed: true,
    }
}

/// Publishes one signed chunk; the gateway's answer.
async fn publish(gw: &TestGateway, chunk: PublishRequest) -> Result<(), tonic::Status> {
    gw.ingest_client().await.publish(chunk).await.map(drop)
}

fn quantum_only(num_bytes: u32) -> tonic::Request<GetRandomRequest> {
    authed(GetRandomRequest {
        num_bytes,
        accept_kinds: vec![SourceKind::Quantum as i32],
        ..Default::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quantum_chunks_get_into_a_pool_the_os_source_filled_and_quantum_calls_are_served() {
    // Before: an OS collector filled a 2 MiB pool; the quantum collector was refused
    // (RESOURCE_EXHAUSTED) for 91 s and every quantum-only call failed, 14 of 14.
    const CHUNK: usize = 64 << 10;
    let mut gw = start(test_config(|c| {
        c.pool_capacity_bytes = 2 << 20;
        c.max_wait_ms = 10_000;
    }))
    .await;
    gw.feed(2 << 20, CHUNK, |i| i as u8).await;
    let os_chunk = gw.sign(vec![1; CHUNK]);
    let full = publish(&gw, os_chunk).await.expect_err("the pool is full of OS bytes");
    assert_eq!(full.code(), Code::ResourceExhausted, "{}", full.message());

    // The first quantum chunk is stored at once: quantum holds less than its half.
    let quantum = |gw: &mut TestGateway, byte: u8| {
        gw.signer.sign(vec![byte; CHUNK], Mixing::None, vec![quantum_source()])
    };
    let chunk = quantum(&mut gw, 0x51);
    publish(&gw, chunk).await.expect("stored, evicting OS bytes");

    // A quantum-only call for more than is there waits, and is served as quantum bytes arrive.
    let waiting = tokio::spawn({
        let mut client = gw.client().await;
        async move { client.get_random(quantum_only(512 << 10)).await }
    });
    for _ in 0..500 {
        if gw.status().await.waiters >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for _ in 1..8 {
        let chunk = quantum(&mut gw, 0x52);
        publish(&gw, chunk).await.expect("stored, evicting OS bytes");
    }
    let reply = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("served while quantum bytes arrive")
        .expect("join")
        .expect("quantum bytes")
        .into_inner();
    assert_eq!(reply.data.len(), 512 << 10);
    assert_eq!(reply.provenance.expect("provenance").kinds, [SourceKind::Quantum as i32]);

    // Quantum fills the free room, then grows to its share (half) by eviction, no further.
    for _ in 0..16 {
        let chunk = quantum(&mut gw, 0x53);
        publish(&gw, chunk).await.expect("stored");
    }
    let chunk = quantum(&mut gw, 0x54);
    let refused = publish(&gw, chunk).await.expect_err("quantum is at its share");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{}", refused.message());
    let os_chunk = gw.sign(vec![2; CHUNK]);
    let refused = publish(&gw, os_chunk).await.expect_err("OS is at its share");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{}", refused.message());

    let status = gw.status().await;
    let by_class: Vec<(Vec<i32>, u64)> =
        status.pool_by_class.iter().map(|c| (c.kinds.clone(), c.bytes)).collect();
    assert_eq!(
        by_class,
        [(vec![SourceKind::Quantum as i32], 1 << 20), (vec![SourceKind::Os as i32], 1 << 20)]
    );
    // 8 quantum chunks evicted one OS chunk each, then 8 more once the free room was used.
    assert_eq!(status.evicted_bytes_total, 1 << 20);
    assert_eq!(
        status.ingested_bytes_total,
        status.served_bytes_total + status.pool_bytes + status.evicted_bytes_total
    );
    let mut client = gw.client().await;
    client.get_random(quantum_only(1 << 20)).await.expect("a quantum-only call, at once");
    gw.stop().await;
}
