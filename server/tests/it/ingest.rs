//! IngestService over the wire: replayed, forged, stale, oversize chunks, a full pool, and
//! restarts on one state_dir (the ingest lease).

use entropy_gateway::domain::ingest::lease::LEASE_MARGIN_MS;
use entropy_proto::signing::chunk_mac;
use entropy_proto::v1::Mixing;
use tonic::Code;

use super::support::{MAC_KEY, assert_status, start, start_now, test_config};

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

/// A test gateway keeping its ingest lease in `dir`, with `skew_ms` as `max_future_skew_ms`.
fn leased(dir: &std::path::Path, skew_ms: u64) -> entropy_gateway::process::config::GatewayConfig {
    test_config(|c| {
        c.state_dir = Some(dir.to_owned());
        c.max_future_skew_ms = skew_ms;
    })
}

async fn sleep_until_unix_ms(at: i64) {
    let wait = at - entropy_ops::clock::unix_ms_now();
    tokio::time::sleep(std::time::Duration::from_millis(wait.max(0) as u64)).await;
}

#[tokio::test]
async fn a_chunk_stored_under_a_larger_skew_is_never_stored_again_after_a_smaller_one() {
    // Finding 7: a chunk dated +25 s was stored by a gateway with max_future_skew_ms = 30000;
    // restarted with the default 2000, the gateway refused it as "future" for 21 s, then
    // stored it again: its start rule (start plus its own skew) assumed the skew never shrinks.
    // Now every stored chunk is covered by the lease on disk, and a restarted gateway accepts
    // only chunks dated after it.
    let dir = tempfile::tempdir().unwrap();
    // A first run leaves a lease, so the next need not wait out a 30 s skew to take chunks.
    start(leased(dir.path(), 100)).await.stop().await;
    let mut wide = start(leased(dir.path(), 30_000)).await;
    let now = entropy_ops::clock::unix_ms_now();
    let sources = vec![super::support::os_source()];
    let ahead = wide.signer.sign_at(vec![7; 1000], Mixing::None, sources, now + 25_000);
    let ts = ahead.timestamp_unix_ms;
    wide.ingest_client().await.publish(ahead.clone()).await.expect("within 30 s: stored");
    wide.stop().await;

    let narrow = start_now(leased(dir.path(), 2_000)).await;
    assert!(narrow.accepts_from_unix_ms > ts, "the lease covers the stored chunk");
    let mut ingest = narrow.ingest_client().await;
    // While it is more than 2 s ahead, once it is within the skew (where it was stored again
    // before), and after its time has passed: refused every time.
    for (at, words) in [
        (now + 1_000, "future"),
        (ts - 1_500, "before this gateway accepts chunks"),
        (ts + 500, "before this gateway accepts chunks"),
    ] {
        sleep_until_unix_ms(at).await;
        assert_status(ingest.publish(ahead.clone()).await, Code::FailedPrecondition, &[words]);
        assert_eq!(narrow.status().await.pool_bytes, 0, "stored again at {}", at - now);
    }
    // Fresh chunks are taken once the lease has passed, once each.
    sleep_until_unix_ms(narrow.accepts_from_unix_ms).await;
    let mut narrow = narrow;
    let fresh = narrow.sign(vec![9; 500]);
    ingest.publish(fresh.clone()).await.expect("a fresh chunk after the lease");
    assert_status(ingest.publish(fresh).await, Code::AlreadyExists, &[]);
    assert_eq!(narrow.status().await.pool_bytes, 500, "only the fresh chunk");
    narrow.stop().await;
}

#[tokio::test]
async fn after_a_restart_with_a_larger_skew_fresh_chunks_wait_for_the_lease_not_the_skew() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = start(leased(dir.path(), 100)).await;
    let stored = first.sign(vec![3; 100]);
    first.ingest_client().await.publish(stored.clone()).await.expect("stored");
    first.stop().await;

    let started = entropy_ops::clock::unix_ms_now();
    let mut second = start_now(leased(dir.path(), 10_000)).await;
    let lease_end = stored.timestamp_unix_ms + LEASE_MARGIN_MS;
    assert_eq!(second.accepts_from_unix_ms, lease_end + 1, "the lease, not start + 10 s");
    let mut ingest = second.ingest_client().await;
    assert_status(
        ingest.publish(stored).await,
        Code::FailedPrecondition,
        &["before this gateway accepts chunks"],
    );
    sleep_until_unix_ms(second.accepts_from_unix_ms).await;
    let fresh = second.sign(vec![4; 100]);
    ingest.publish(fresh).await.expect("taken after the lease");
    assert!(
        entropy_ops::clock::unix_ms_now() < started + 10_000,
        "before the start plus the new skew"
    );
    assert_eq!(second.status().await.pool_bytes, 100);
    second.stop().await;
}

#[tokio::test]
async fn with_its_lease_deleted_a_gateway_starts_a_new_state_from_start_plus_skew() {
    // Documented (docs/operations.md, "The ingest state"): without the file nothing is known
    // of earlier runs, and the gateway falls back to the start rule that needs no memory.
    let dir = tempfile::tempdir().unwrap();
    let mut first = start(leased(dir.path(), 100)).await;
    let now = entropy_ops::clock::unix_ms_now();
    let sources = vec![super::support::os_source()];
    let ahead = first.signer.sign_at(vec![5; 100], Mixing::None, sources, now + 90);
    first.ingest_client().await.publish(ahead.clone()).await.expect("stored");
    first.stop().await;
    let lease = dir.path().join(entropy_gateway::domain::ingest::lease::LEASE_FILE);
    std::fs::remove_file(&lease).unwrap();

    let started = entropy_ops::clock::unix_ms_now();
    let second = start_now(leased(dir.path(), 100)).await;
    assert!(second.accepts_from_unix_ms >= started + 100, "start plus skew");
    assert!(lease.exists(), "the new state is on disk before the first chunk");
    // The same skew and a restart slower than it: the stored chunk is still refused.
    assert_status(
        second.ingest_client().await.publish(ahead).await,
        Code::FailedPrecondition,
        &["before this gateway accepts chunks"],
    );
    assert_eq!(second.status().await.pool_bytes, 0);
    second.stop().await;
}
