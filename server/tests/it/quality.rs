//! Issue Quality: provenance on every response, the source filter, the byte age limit and
//! CheckQuality, against a real gateway fed signed chunks directly. Feeding the gateway this
//! way skips the collector's health tests: it is the test-only path by which a biased source's
//! bytes reach the pool, so that CheckQuality can be shown to flag them.

use std::time::Duration;

use entropy_gateway::domain::auth::{ApiKeys, digest};
use entropy_proto::v1::{
    CheckQualityRequest, GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetUuidsRequest,
    SourceKind, StreamRandomRequest,
};
use tonic::Code;

use super::support::{
    API_KEY, assert_status, authed, start, start_with_keys, test_config, with_key,
};

/// A well-mixed byte for position `i` (splitmix64): what a healthy source looks like.
fn good(i: usize) -> u8 {
    let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u8
}

/// A byte whose bits are each 1 with probability 9/16: a detector drifting off balance.
fn biased(i: usize) -> u8 {
    let (a, b, c, d) = (good(4 * i), good(4 * i + 1), good(4 * i + 2), good(4 * i + 3));
    a | (b & c & d)
}

fn check(sample_bytes: u32) -> tonic::Request<CheckQualityRequest> {
    authed(CheckQualityRequest { sample_bytes, ..Default::default() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_quality_passes_a_healthy_feed_and_flags_a_biased_one() {
    let mut gw = start(test_config(|_| {})).await;
    let mut client = gw.client().await;

    gw.feed(256 << 10, 64 << 10, good).await;
    let report = client.check_quality(check(256 << 10)).await.expect("report").into_inner();
    assert!(report.passed, "{:?}", report.failures);
    assert_eq!(report.sample_bytes, 256 << 10);
    let provenance = report.provenance.expect("provenance");
    assert_eq!(provenance.kinds, [SourceKind::Os as i32]);
    assert_eq!((provenance.chunk_count, provenance.collector_ids.len()), (4, 1));
    let (pi, os) = (report.pi.expect("pi"), report.pi_os_reference.expect("reference"));
    assert_eq!(pi.points, os.points, "the OS reference runs on as many bytes");
    assert!(os.error.abs() < 5.0 * os.standard_error, "{os:?}");

    gw.feed(256 << 10, 64 << 10, biased).await;
    let report = client.check_quality(check(256 << 10)).await.expect("report").into_inner();
    assert!(!report.passed, "a 9/16 bit bias passed: {report:?}");
    assert!(report.mean > 135.0, "{}", report.mean);
    assert!(report.failures.iter().any(|f| f.starts_with("chi-square")), "{:?}", report.failures);
    assert!(report.failures.iter().any(|f| f.starts_with("FIPS 140-2")), "{:?}", report.failures);
    assert!(report.fips140_2.expect("fips").monobit_failures > 90, "most blocks fail monobit");
    assert_eq!(report.thresholds.len(), 5);

    let status = gw.status().await;
    assert_eq!(status.pool_bytes, 0, "the samples were drawn, never to be served");
    assert_eq!(status.served_bytes_total, 0, "samples are never served");
    assert_eq!(status.quality_tested_bytes_total, 512 << 10, "they are counted as tested");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_quality_refuses_bad_input_and_keys_without_its_scope_drawing_nothing() {
    let digest = |s: &str| hex::encode(digest(s.as_bytes()));
    let text = format!(
        "[[key]]\nname = \"reader\"\nsha256 = \"{}\"\n\n[[key]]\nname = \"checker\"\nsha256 = \
         \"{}\"\nscopes = [\"quality:check\", \"status:read\"]\n\n[[key]]\nname = \"metered\"\n\
         sha256 = \"{}\"\nscopes = [\"quality:check\"]\nbytes_per_second = 1000\n",
        digest("reader-secret"),
        digest("checker-secret"),
        digest("metered-secret"),
    );
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), text).expect("write keys");
    let keys = ApiKeys::load_file(file.path()).expect("keys");
    let mut gw = start_with_keys(test_config(|_| {}), keys).await;
    gw.feed(64 << 10, 64 << 10, good).await;
    let mut client = gw.client().await;
    let request = |key, sample_bytes, accept_kinds| {
        with_key(key, CheckQualityRequest { sample_bytes, accept_kinds, ..Default::default() })
    };

    assert_status(
        client.check_quality(request("reader-secret", 4096, vec![])).await,
        Code::PermissionDenied,
        &["quality:check"],
    );
    for (n, bound) in [(2499, "2500..=4194304"), (4_194_305, "2500..=4194304")] {
        assert_status(
            client.check_quality(request("checker-secret", n, vec![])).await,
            Code::InvalidArgument,
            &["sample_bytes", bound],
        );
    }
    assert_status(
        client.check_quality(request("checker-secret", 4096, vec![1, 0])).await,
        Code::InvalidArgument,
        &["accept_kinds[1] is 0"],
    );
    assert_status(
        client
            .check_quality(request("checker-secret", 4096, vec![SourceKind::Quantum as i32]))
            .await,
        Code::FailedPrecondition,
        &["QUANTUM only", "the pool holds OS: 65536 bytes", "nothing consumed"],
    );
    // Before: a key whose byte burst (1 MiB here) is below the sample was told "retry in
    // 1000 ms" for ever. Waiting never helps: say so, and how much it may ask for.
    assert_status(
        client.check_quality(request("metered-secret", 2 << 20, vec![])).await,
        Code::FailedPrecondition,
        &["2097152 bytes at once exceed", "burst of 1048576", "ask for at most 1048576"],
    );
    // A key with only quality:check cannot draw entropy to keep.
    assert_status(
        client
            .get_random(with_key(
                "checker-secret",
                GetRandomRequest { num_bytes: 8, ..Default::default() },
            ))
            .await,
        Code::PermissionDenied,
        &["entropy:read"],
    );
    let status = client
        .get_status(with_key("checker-secret", Default::default()))
        .await
        .expect("status")
        .into_inner();
    assert_eq!((status.pool_bytes, status.served_bytes_total), (64 << 10, 0), "nothing drawn");
    let report = client.check_quality(request("checker-secret", 4096, vec![3])).await;
    assert!(report.expect("report").into_inner().passed);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_that_carries_entropy_says_where_it_came_from() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(256 << 10, 4096, good).await; // 64 chunks, sequences 0..64 of one epoch
    let mut client = gw.client().await;

    // Across two chunks: both ends named, in order.
    let r = client
        .get_random(authed(GetRandomRequest { num_bytes: 6000, ..Default::default() }))
        .await
        .expect("bytes")
        .into_inner();
    let p = r.provenance.expect("provenance");
    let (first, last) = (p.first_chunk.expect("first"), p.last_chunk.expect("last"));
    assert_eq!((p.chunk_count, last.sequence - first.sequence), (2, 1));
    assert_eq!((first.collector_id.as_str(), first.epoch), ("test-collector", last.epoch));
    assert_eq!((p.kinds, p.mixed), (vec![SourceKind::Os as i32], false));
    assert!(p.oldest_byte_age_ms < 60_000);

    let ints = client
        .get_integers(authed(GetIntegersRequest {
            min: 1,
            max: 6,
            count: 100,
            ..Default::default()
        }))
        .await
        .expect("ints")
        .into_inner();
    let floats = client
        .get_floats(authed(GetFloatsRequest { count: 10, ..Default::default() }))
        .await
        .expect("floats")
        .into_inner();
    let uuids = client
        .get_uuids(authed(GetUuidsRequest { count: 3, ..Default::default() }))
        .await
        .expect("uuids")
        .into_inner();
    for p in [ints.provenance, floats.provenance, uuids.provenance] {
        let p = p.expect("provenance");
        assert_eq!(
            (p.collector_ids.as_slice(), p.chunk_count >= 1),
            (&["test-collector".to_owned()][..], true)
        );
    }
    // A range of one value draws nothing, so it has no provenance.
    let one = client
        .get_integers(authed(GetIntegersRequest { min: 5, max: 5, count: 3, ..Default::default() }))
        .await
        .expect("ints")
        .into_inner();
    assert_eq!((one.values, one.provenance), (vec![5, 5, 5], None));

    let mut stream = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: 8192,
            total_bytes: 64 << 10,
            accept_kinds: vec![SourceKind::Os as i32],
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    let mut messages = 0;
    let mut last_sequence = 0;
    while let Some(message) = stream.message().await.expect("message") {
        let p = message.provenance.expect("every message has one");
        let first = p.first_chunk.expect("first").sequence;
        assert!(first >= last_sequence, "chunks come out in order");
        last_sequence = p.last_chunk.expect("last").sequence;
        messages += 1;
    }
    assert_eq!(messages, 8);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_older_than_max_byte_age_are_wiped_counted_and_never_served() {
    let mut gw = start(test_config(|c| c.max_byte_age_ms = 300)).await;
    gw.feed(64 << 10, 16 << 10, good).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let status = gw.status().await;
    assert_eq!((status.pool_bytes, status.expired_bytes_total), (0, 64 << 10));
    assert_eq!(status.max_byte_age_ms, 300);
    let mut client = gw.client().await;
    assert_status(
        client.get_random(authed(GetRandomRequest { num_bytes: 16, ..Default::default() })).await,
        Code::Unavailable,
        &["nothing consumed"],
    );
    // Fresh bytes are served, and say how young they are.
    gw.feed(16 << 10, 16 << 10, |i| good(i + 1_000_000)).await;
    let r = client
        .get_random(authed(GetRandomRequest { num_bytes: 16, ..Default::default() }))
        .await
        .expect("fresh bytes")
        .into_inner();
    assert!(r.provenance.expect("provenance").oldest_byte_age_ms < 300);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_read_ahead_is_held_to_max_byte_age_when_it_is_sent() {
    // Before: a stream's read-ahead kept the provenance of the moment it was drawn, so a byte
    // 3 s old was sent and reported as at most 2 ms old past a 300 ms limit. Now a message
    // becomes a response when the transport takes it: too old, it is wiped instead.
    let mut gw = start(test_config(|c| c.max_byte_age_ms = 300)).await;
    gw.feed(512 << 10, 16 << 10, good).await;
    // A client whose window admits one message at a time: the read-ahead stays in the gateway.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", gw.public))
        .expect("endpoint")
        .initial_stream_window_size(Some(17 << 10))
        .initial_connection_window_size(Some(65_535))
        .connect()
        .await
        .expect("connects");
    let mut client = entropy_proto::v1::entropy_service_client::EntropyServiceClient::new(channel);
    let request = StreamRandomRequest { chunk_bytes: 16 << 10, ..Default::default() };
    let mut stream = client.stream_random(authed(request)).await.expect("opens").into_inner();
    let first = tokio_stream::StreamExt::next(&mut stream).await.expect("a message").expect("ok");
    assert!(first.provenance.expect("provenance").oldest_byte_age_ms < 300);
    // The stream has drawn ahead; wait past the limit, then feed fresh bytes.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let fresh_from = entropy_ops::clock::unix_ms_now();
    gw.feed(256 << 10, 16 << 10, |i| good(i + 2_000_000)).await;
    let mut from_before = 0;
    for _ in 0..12 {
        let message =
            tokio_stream::StreamExt::next(&mut stream).await.expect("a message").expect("ok");
        let provenance = message.provenance.expect("provenance");
        let age = provenance.oldest_byte_age_ms;
        assert!(age < 300, "a message taken with bytes {age} ms old past a 300 ms limit");
        // Bytes drawn before the wait (chunks signed 700 ms earlier) reach the client only if
        // the transport had already taken them: tonic encodes messages into frames of up to
        // 32 KiB, one frame waits in the stream's pipe and one is in the client's window, so
        // at most six 16 KiB messages. The rest of the read-ahead (16 messages) aged out and
        // was wiped; before, all of it was sent.
        let signed = provenance.first_chunk.expect("chunk").signed_at_unix_ms;
        if signed < fresh_from - 50 {
            from_before += 1;
        }
    }
    assert!(from_before <= 6, "{from_before} messages of the aged read-ahead were sent");
    let status = gw.status().await;
    assert!(status.expired_bytes_total > 0, "the read-ahead that aged was wiped and counted");
    drop((stream, client));
    gw.stop().await;
}

#[tokio::test]
async fn a_bounded_stream_whose_read_ahead_ages_still_sends_exactly_its_total() {
    // Read-ahead wiped for its age is drawn again: a stream with total_bytes sends exactly that
    // many bytes, all within max_byte_age, and ends OK.
    let mut gw = start(test_config(|c| c.max_byte_age_ms = 300)).await;
    gw.feed(512 << 10, 16 << 10, good).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", gw.public))
        .expect("endpoint")
        .initial_stream_window_size(Some(17 << 10))
        .initial_connection_window_size(Some(65_535))
        .connect()
        .await
        .expect("connects");
    let mut client = entropy_proto::v1::entropy_service_client::EntropyServiceClient::new(channel);
    let total = 384u64 << 10;
    let request =
        StreamRandomRequest { chunk_bytes: 16 << 10, total_bytes: total, ..Default::default() };
    let mut stream = client.stream_random(authed(request)).await.expect("opens").into_inner();
    let first = tokio_stream::StreamExt::next(&mut stream).await.expect("a message").expect("ok");
    let mut got = first.data.len() as u64;
    // The read-ahead ages past the limit while the client waits; then fresh bytes arrive.
    tokio::time::sleep(Duration::from_millis(700)).await;
    gw.feed(512 << 10, 16 << 10, |i| good(i + 2_000_000)).await;
    while let Some(message) = tokio_stream::StreamExt::next(&mut stream).await {
        let message = message.expect("the stream ends OK");
        let age = message.provenance.expect("provenance").oldest_byte_age_ms;
        assert!(age < 300, "a message taken with bytes {age} ms old past a 300 ms limit");
        got += message.data.len() as u64;
    }
    assert_eq!(got, total, "exactly total_bytes, the aged read-ahead drawn again");
    let status = gw.status().await;
    assert!(
        status.expired_bytes_total > 0,
        "some read-ahead aged out (else the test tests nothing)"
    );
    drop((stream, client));
    gw.stop().await;
}

/// The key the harness uses everywhere has every scope (dev mode's single key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_dev_key_may_check_quality() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(8192, 8192, good).await;
    let mut client = gw.client().await;
    let report = client.check_quality(with_key(
        API_KEY,
        CheckQualityRequest { sample_bytes: 8192, ..Default::default() },
    ));
    assert!(report.await.expect("report").into_inner().passed);
    gw.stop().await;
}
