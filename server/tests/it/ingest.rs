//! IngestService over the wire: replayed, forged, stale, oversize chunks, and a full pool.

use entropy_proto::signing::chunk_mac;
use tonic::Code;

use super::support::{MAC_KEY, assert_status, start, test_config};

#[tokio::test]
async fn a_replayed_chunk_is_already_exists_and_stores_nothing() {
    let mut gw = start(test_config(|_| {})).await;
    let mut ingest = gw.ingest_client().await;
    let chunk = gw.sign(vec![7; 1000]);
    ingest.publish(chunk.clone()).await.expect("first delivery");
    assert_status(ingest.publish(chunk).await, Code::AlreadyExists, &["already accepted"]);
    let s = gw.status().await;
    assert_eq!((s.pool_bytes, s.chunks_accepted_total, s.chunks_rejected_total), (1000, 1, 1));
    gw.stop().await;
}

#[tokio::test]
async fn forged_stale_future_and_malformed_chunks_are_refused() {
    let mut gw = start(test_config(|c| c.max_chunk_bytes = 4096)).await;
    let mut ingest = gw.ingest_client().await;
    let now = entropy_ops::clock::unix_ms_now();

    let mut forged = gw.sign(vec![1; 100]);
    forged.data[0] ^= 1;
    forged.crc32c = crc32c::crc32c(&forged.data);
    assert_status(ingest.publish(forged).await, Code::Unauthenticated, &["mac"]);

    let mut wrong_key = gw.sign(vec![1; 100]);
    wrong_key.mac = chunk_mac(&[0x43; 32], &wrong_key).to_vec();
    assert_status(ingest.publish(wrong_key).await, Code::Unauthenticated, &["mac"]);

    let mut unknown_id = gw.sign(vec![1; 100]);
    unknown_id.key_id = "k9".into();
    unknown_id.mac = chunk_mac(&MAC_KEY, &unknown_id).to_vec();
    assert_status(ingest.publish(unknown_id).await, Code::Unauthenticated, &["key_id"]);

    let mut bad_crc = gw.sign(vec![1; 100]);
    bad_crc.crc32c ^= 1;
    assert_status(ingest.publish(bad_crc).await, Code::InvalidArgument, &["crc32c"]);

    let sources = vec![super::support::os_source()];
    let stale = gw.signer.sign_at(
        vec![1; 100],
        entropy_proto::v1::Mixing::None,
        sources.clone(),
        now - 61_000,
    );
    assert_status(ingest.publish(stale).await, Code::FailedPrecondition, &["stale", "60000"]);
    let future =
        gw.signer.sign_at(vec![1; 100], entropy_proto::v1::Mixing::None, sources, now + 61_000);
    assert_status(ingest.publish(future).await, Code::FailedPrecondition, &["future"]);

    let oversize = gw.sign(vec![1; 4097]);
    assert_status(ingest.publish(oversize).await, Code::InvalidArgument, &["data", "1..=4096"]);

    let s = gw.status().await;
    assert_eq!((s.pool_bytes, s.chunks_accepted_total, s.chunks_rejected_total), (0, 0, 7));
    gw.stop().await;
}

#[tokio::test]
async fn a_chunk_signed_before_the_gateway_started_is_refused() {
    // Signed by a collector moments before this gateway (re)started: fresh by the clock, but
    // a previous gateway run may have stored it, so it must not be stored again.
    let sources = vec![super::support::os_source()];
    let mut early = entropy_collector::signer::ChunkSigner::new("c", "k1", MAC_KEY.to_vec())
        .unwrap()
        .for_gateway("dev");
    let chunk = early.sign(vec![5; 100], entropy_proto::v1::Mixing::None, sources);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let gw = start(test_config(|_| {})).await;
    let mut ingest = gw.ingest_client().await;
    assert_status(
        ingest.publish(chunk).await,
        Code::FailedPrecondition,
        &["before this gateway accepts chunks", "max_future_skew_ms"],
    );
    gw.stop().await;
}

#[tokio::test]
async fn a_chunk_stored_before_a_restart_is_refused_after_it() {
    // Before: freshness allowed 60 s into the future and the restart rule refused only chunks
    // dated before the start, so a chunk dated +45 s was stored, the gateway restarted, and the
    // same chunk was stored again. Now the future is bounded by max_future_skew_ms and a
    // restarted gateway accepts chunks dated from its start plus that skew on.
    let mut first = start(test_config(|_| {})).await;
    let skew = 100; // test_config's max_future_skew_ms
    let now = entropy_ops::clock::unix_ms_now();
    let ahead = first.signer.sign_at(
        vec![8; 100],
        entropy_proto::v1::Mixing::None,
        vec![super::support::os_source()],
        now + skew - 10,
    );
    first.ingest_client().await.publish(ahead.clone()).await.expect("within the skew: stored");
    assert_status(
        first.ingest_client().await.publish(ahead.clone()).await,
        Code::AlreadyExists,
        &[],
    );
    first.stop().await;
    let second = start(test_config(|_| {})).await;
    assert_status(
        second.ingest_client().await.publish(ahead).await,
        Code::FailedPrecondition,
        &["before this gateway accepts chunks"],
    );
    assert_eq!(second.status().await.pool_bytes, 0, "nothing stored twice across the restart");
    second.stop().await;
}

#[tokio::test]
async fn a_chunk_for_one_gateway_is_refused_by_another_with_the_same_keys() {
    // Before: the MAC bound no gateway, so a chunk stored by gateway A was stored by B too.
    let mut a = start(test_config(|c| c.gateway_id = "gw-a".into())).await;
    let b = start(test_config(|c| c.gateway_id = "gw-b".into())).await;
    let chunk = a.sign(vec![4; 4096]);
    a.ingest_client().await.publish(chunk.clone()).await.expect("stored by its gateway");
    assert_status(
        b.ingest_client().await.publish(chunk.clone()).await,
        Code::PermissionDenied,
        &["addressed to gateway \"gw-a\"", "this is gateway \"gw-b\""],
    );
    // Readdressed by someone without the key, it fails the MAC.
    let mut readdressed = chunk;
    readdressed.gateway_id = "gw-b".into();
    assert_status(b.ingest_client().await.publish(readdressed).await, Code::Unauthenticated, &[]);
    assert_eq!(b.status().await.pool_bytes, 0);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_full_pool_refuses_whole_chunks_and_takes_them_later() {
    let mut gw = start(test_config(|c| c.pool_capacity_bytes = 1 << 20)).await;
    let mut ingest = gw.ingest_client().await;
    for _ in 0..4 {
        let chunk = gw.sign(vec![3; 256 << 10]);
        ingest.publish(chunk).await.expect("fits");
    }
    let extra = gw.sign(vec![4; 1000]);
    assert_status(ingest.publish(extra.clone()).await, Code::ResourceExhausted, &["room"]);
    let s = gw.status().await;
    assert_eq!(s.pool_bytes, 1 << 20, "nothing partially stored");
    assert_eq!((s.chunks_rejected_total, s.chunks_deferred_total), (0, 1));

    // Make room; the same signed chunk is then accepted (a refusal for room is not a replay).
    let mut client = gw.client().await;
    let req =
        entropy_proto::v1::GetRandomRequest { num_bytes: 1000, encoding: 0, ..Default::default() };
    client.get_random(super::support::authed(req)).await.expect("draw");
    ingest.publish(extra).await.expect("accepted once there is room");
    assert_eq!(gw.status().await.pool_bytes, 1 << 20);
    gw.stop().await;
}
