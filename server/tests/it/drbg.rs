//! DRBG constructions: output of an instance of the caller's own, seeded from the pool, labelled
//! on every response, only for keys holding `entropy:drbg`, never repeated.

use std::collections::HashSet;

use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use entropy_proto::v1::{
    Construction, DrawProvenance, DrbgMechanism, GetFloatsRequest, GetIntegersRequest,
    GetRandomRequest, GetUuidsRequest, SourceKind, StreamRandomRequest,
};
use tokio_stream::StreamExt;
use tonic::Code;

use super::support::{
    TestGateway, assert_status, authed, keys_named, start, start_with_keys, test_config, with_key,
};

const DRBG: i32 = Construction::Drbg as i32;
const DRBG_PR: i32 = Construction::DrbgPredictionResistant as i32;

/// A gateway (its test key holds every scope) with `fed` bytes of the OS class in its pool.
async fn fed_gateway(
    fed: usize,
    edit: impl FnOnce(&mut entropy_gateway::process::config::GatewayConfig),
) -> TestGateway {
    let mut gw = start(test_config(|c| {
        c.pool_capacity_bytes = 4 << 20;
        edit(c);
    }))
    .await;
    gw.feed(fed, 64 << 10, |i| (i * 7 + i / 251) as u8).await;
    gw
}

fn drbg_random(num_bytes: u32, construction: i32) -> tonic::Request<GetRandomRequest> {
    authed(GetRandomRequest { num_bytes, construction, ..Default::default() })
}

/// The DRBG label of `p`, checking what every DRBG response says.
fn label(p: &DrawProvenance, construction: i32) -> entropy_proto::v1::DrbgLabel {
    assert_eq!(p.construction, construction);
    let label = p.drbg.clone().expect("a DRBG label");
    assert_eq!(label.mechanism, DrbgMechanism::CtrDrbgAes256 as i32);
    assert_eq!(label.security_strength_bits, 256);
    assert_eq!(label.instance_id.len(), 32, "{}", label.instance_id);
    assert!(label.instance_id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(label.prediction_resistance, construction == DRBG_PR);
    // The seeds' origin: the pool's OS chunks.
    assert_eq!(p.kinds, [SourceKind::Os as i32]);
    assert!(p.first_chunk.is_some() && p.chunk_count >= 1);
    label
}

/// Every 16-byte block of `data` at a 16-byte offset, to find repeats across responses.
fn blocks(data: &[u8]) -> impl Iterator<Item = [u8; 16]> + '_ {
    data.chunks_exact(16).map(|b| b.try_into().expect("16 bytes"))
}

#[tokio::test]
async fn a_drbg_call_is_labelled_seeded_from_the_pool_and_counted_apart_from_pool_bytes() {
    let gw = fed_gateway(1 << 20, |_| {}).await;
    let before = gw.status().await;
    let mut client = gw.client().await;
    let response =
        client.get_random(drbg_random(256 << 10, DRBG)).await.expect("DRBG").into_inner();
    assert_eq!(response.data.len(), 256 << 10);
    let label = label(&response.provenance.expect("provenance"), DRBG);
    assert_eq!((label.reseed_count, label.bytes_since_reseed, label.seed_bytes), (0, 0, 48));

    // A call that does not ask gets pool bytes, labelled RAW.
    let raw = client.get_random(authed(GetRandomRequest { num_bytes: 64, ..Default::default() }));
    let raw = raw.await.expect("raw").into_inner().provenance.expect("provenance");
    assert_eq!(raw.construction, Construction::Raw as i32);
    assert_eq!(raw.drbg, None);

    let after = gw.status().await;
    assert_eq!(after.drbg_seed_bytes_total - before.drbg_seed_bytes_total, 48);
    assert_eq!(after.drbg_served_bytes_total - before.drbg_served_bytes_total, 256 << 10);
    assert_eq!(after.served_bytes_total - before.served_bytes_total, 64, "pool bytes only");
    assert_eq!(before.pool_bytes - after.pool_bytes, 48 + 64, "the pool gave the seed and 64");
    gw.stop().await;
}

#[tokio::test]
async fn every_entropy_call_and_the_stream_offer_drbg_output_and_none_repeats() {
    let gw = fed_gateway(1 << 20, |_| {}).await;
    let mut client = gw.client().await;
    let mut seen = HashSet::new();
    let mut ids = HashSet::new();
    for _ in 0..16 {
        let r = client.get_random(drbg_random(4096, DRBG)).await.expect("DRBG").into_inner();
        assert!(ids.insert(label(&r.provenance.expect("provenance"), DRBG).instance_id));
        for block in blocks(&r.data) {
            assert!(seen.insert(block), "a 16-byte block repeated across DRBG calls");
        }
    }
    let stream = StreamRandomRequest {
        chunk_bytes: 64 << 10,
        total_bytes: 1 << 20,
        construction: DRBG,
        ..Default::default()
    };
    let mut stream = client.stream_random(authed(stream)).await.expect("stream").into_inner();
    let mut stream_ids = HashSet::new();
    let mut total = 0;
    while let Some(message) = stream.next().await {
        let message = message.expect("message");
        stream_ids.insert(label(&message.provenance.expect("provenance"), DRBG).instance_id);
        total += message.data.len();
        for block in blocks(&message.data) {
            assert!(seen.insert(block), "a 16-byte block repeated");
        }
    }
    assert_eq!(total, 1 << 20);
    assert_eq!(stream_ids.len(), 1, "one instance for the whole stream");
    assert!(ids.is_disjoint(&stream_ids), "never an instance of another call");

    let ints = GetIntegersRequest {
        min: 1,
        max: 6,
        count: 1000,
        construction: DRBG,
        ..Default::default()
    };
    let ints = client.get_integers(authed(ints)).await.expect("integers").into_inner();
    assert_eq!(ints.values.len(), 1000);
    assert!(ints.values.iter().all(|v| (1..=6).contains(v)));
    label(&ints.provenance.expect("provenance"), DRBG);
    let floats = GetFloatsRequest { count: 100, construction: DRBG, ..Default::default() };
    let floats = client.get_floats(authed(floats)).await.expect("floats").into_inner();
    assert!(floats.values.iter().all(|v| (0.0..1.0).contains(v)));
    label(&floats.provenance.expect("provenance"), DRBG);
    let uuids = GetUuidsRequest { count: 10, construction: DRBG, ..Default::default() };
    let uuids = client.get_uuids(authed(uuids)).await.expect("uuids").into_inner();
    assert_eq!(uuids.uuids.iter().collect::<HashSet<_>>().len(), 10);
    label(&uuids.provenance.expect("provenance"), DRBG);
    gw.stop().await;
}

#[tokio::test]
async fn prediction_resistance_reseeds_before_every_request_and_a_stream_reseeds_by_bytes() {
    let gw = fed_gateway(1 << 20, |c| c.drbg_reseed_interval_bytes = 64 << 10).await;
    let before = gw.status().await;
    let mut client = gw.client().await;
    // 256 KiB is four requests of 64 KiB: the instance's 48 bytes, then 32 before each.
    let r = client.get_random(drbg_random(256 << 10, DRBG_PR)).await.expect("DRBG").into_inner();
    let label_pr = label(&r.provenance.expect("provenance"), DRBG_PR);
    assert_eq!(label_pr.seed_bytes, 48 + 32, "as of its first byte: seeded, reseeded once");
    let seeds = gw.status().await.drbg_seed_bytes_total - before.drbg_seed_bytes_total;
    assert_eq!(seeds, 48 + 4 * 32);

    // Reseeding every 64 KiB: each 64 KiB message after the first starts on a fresh reseed.
    let stream = StreamRandomRequest {
        chunk_bytes: 64 << 10,
        total_bytes: 8 * (64 << 10),
        construction: DRBG,
        ..Default::default()
    };
    let mut stream = client.stream_random(authed(stream)).await.expect("stream").into_inner();
    let mut reseeds = Vec::new();
    while let Some(message) = stream.next().await {
        let label = label(&message.expect("message").provenance.expect("provenance"), DRBG);
        assert_eq!(label.bytes_since_reseed, 0);
        reseeds.push(label.reseed_count);
    }
    // In order: messages take the instance's output in the order the stream sends them.
    assert_eq!(reseeds, (0..8).collect::<Vec<u64>>());
    gw.stop().await;
}

#[tokio::test]
async fn a_key_without_the_drbg_scope_is_denied_and_draws_nothing() {
    let keys = keys_named(&[
        ("reader", "scopes = [\"entropy:read\", \"status:read\"]"),
        (
            "drbg",
            "scopes = [\"entropy:read\", \"entropy:drbg\", \"status:read\"]\ndrbg_bytes_per_second = 1000",
        ),
    ]);
    let mut gw = start_with_keys(test_config(|_| {}), keys).await;
    gw.feed(1 << 20, 64 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    let random = |key, construction| {
        with_key(key, GetRandomRequest { num_bytes: 32, construction, ..Default::default() })
    };
    assert_status(
        client.get_random(random("reader", DRBG)).await,
        Code::PermissionDenied,
        &["reader", "entropy:drbg"],
    );
    let stream = StreamRandomRequest { construction: DRBG_PR, ..Default::default() };
    assert_status(
        client.stream_random(with_key("reader", stream)).await,
        Code::PermissionDenied,
        &["entropy:drbg"],
    );
    client.get_random(random("reader", 0)).await.expect("raw bytes need no more");
    // An unknown construction names the field.
    assert_status(
        client.get_random(random("drbg", 9)).await,
        Code::InvalidArgument,
        &["construction is 9", "CONSTRUCTION_DRBG"],
    );

    // The DRBG byte rate is the key's own (its burst is 1 MiB, so the second call waits).
    let big = || {
        with_key(
            "drbg",
            GetRandomRequest { num_bytes: 1 << 20, construction: DRBG, ..Default::default() },
        )
    };
    client.get_random(big()).await.expect("within the burst");
    assert_status(
        client.get_random(big()).await,
        Code::ResourceExhausted,
        &["DRBG byte rate limit of 1000 B/s"],
    );

    let status = client
        .get_status(with_key("drbg", entropy_proto::v1::GetStatusRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.drbg_seed_bytes_total, 48, "the refused calls drew no seed");
    gw.stop().await;
}

#[tokio::test]
async fn a_quantum_only_drbg_call_on_a_gateway_fed_os_bytes_fails_its_precondition() {
    let gw = fed_gateway(1 << 20, |_| {}).await;
    let mut client = gw.client().await;
    let quantum_only = GetRandomRequest {
        num_bytes: 1024,
        construction: DRBG,
        accept_kinds: vec![SourceKind::Quantum as i32],
        ..Default::default()
    };
    assert_status(
        client.get_random(authed(quantum_only)).await,
        Code::FailedPrecondition,
        &["QUANTUM"],
    );
    let stream = StreamRandomRequest {
        construction: DRBG,
        accept_kinds: vec![SourceKind::Quantum as i32],
        total_bytes: 1024,
        ..Default::default()
    };
    let mut stream = client.stream_random(authed(stream)).await.expect("opened").into_inner();
    let ended = stream.next().await.expect("an answer").expect_err("no quantum seed");
    assert_eq!(ended.code(), Code::FailedPrecondition, "{}", ended.message());
    assert_eq!(gw.status().await.drbg_seed_bytes_total, 0, "no seed from another class");
    gw.stop().await;
}

#[tokio::test]
async fn no_seed_in_time_is_unavailable_and_serves_nothing() {
    // An empty pool: the seed cannot be drawn within max_wait_ms (300 ms in tests), nor within
    // a stream's wait.
    let gw = start(test_config(|c| c.stream_max_wait_ms = 500)).await;
    let mut client = gw.client().await;
    assert_status(client.get_random(drbg_random(1024, DRBG)).await, Code::Unavailable, &[]);
    let stream =
        StreamRandomRequest { construction: DRBG, total_bytes: 1024, ..Default::default() };
    let mut stream = client.stream_random(authed(stream)).await.expect("opened").into_inner();
    let ended = stream.next().await.expect("an answer").expect_err("no seed");
    assert_eq!(ended.code(), Code::Unavailable, "{}", ended.message());
    let status = gw.status().await;
    assert_eq!((status.drbg_served_bytes_total, status.drbg_seed_bytes_total), (0, 0));
    gw.stop().await;
}

/// Reads a DRBG stream of `total` bytes in messages of `chunk` with `key`, and checks that its
/// messages are its one instance's output in order: each message's label counts exactly the
/// bytes of the messages before it (since the last reseed), and the reseeds count up by one.
async fn assert_stream_in_instance_order(
    client: &mut EntropyServiceClient<tonic::transport::Channel>,
    key: &str,
    (chunk, total, reseed_every): (u32, u64, u64),
) {
    let request = StreamRandomRequest {
        chunk_bytes: chunk,
        total_bytes: total,
        construction: DRBG,
        ..Default::default()
    };
    let mut stream =
        client.stream_random(with_key(key, request)).await.expect("stream").into_inner();
    let (mut made, mut reseeds, mut ids) = (0u64, 0u64, HashSet::new());
    let mut received = 0u64;
    while let Some(message) = stream.next().await {
        let message = message.expect("message");
        let label = label(&message.provenance.expect("provenance"), DRBG);
        ids.insert(label.instance_id.clone());
        if made >= reseed_every {
            (made, reseeds) = (0, reseeds + 1);
        }
        let shape =
            format!("chunk {chunk}, total {total}, reseed every {reseed_every}, at {received}");
        assert_eq!((label.reseed_count, label.bytes_since_reseed), (reseeds, made), "{shape}");
        made += message.data.len() as u64;
        received += message.data.len() as u64;
    }
    assert_eq!(received, total);
    assert_eq!(ids.len(), 1);
}

#[tokio::test]
async fn a_stream_s_messages_are_its_instance_s_output_in_order_whatever_the_shape() {
    // Keys with and without a tight allowance: a stream's draws then wait for room, and wake in
    // any order; a DRBG byte rate makes them wait for tokens too.
    let keys = keys_named(&[
        ("free", "scopes = [\"entropy:read\", \"entropy:drbg\"]"),
        (
            "tight",
            "scopes = [\"entropy:read\", \"entropy:drbg\"]\nmax_undelivered_bytes = 1048576\n\
             drbg_bytes_per_second = 8388608",
        ),
    ]);
    for reseed_every in [1u64 << 30, 48 << 10] {
        let mut gw = start_with_keys(
            test_config(|c| {
                c.pool_capacity_bytes = 4 << 20;
                c.drbg_reseed_interval_bytes = reseed_every;
            }),
            keys.clone(),
        )
        .await;
        gw.feed(2 << 20, 64 << 10, |i| (i * 7 + i / 251) as u8).await;
        let client = gw.client().await;
        for key in ["free", "tight"] {
            for (chunk, total) in
                [(1024, 256 << 10), (4096, 1 << 20), (16 << 10, 2 << 20), (64 << 10, 2 << 20)]
            {
                // Six streams of the key at once, so they compete for its allowance (1 MiB,
                // each stream's buffer is 256 KiB).
                let streams = (0..6).map(|i| {
                    let mut client = client.clone();
                    async move {
                        let shape = (chunk, total / (1 + i % 2), reseed_every);
                        assert_stream_in_instance_order(&mut client, key, shape).await;
                    }
                });
                futures_util::future::join_all(streams).await;
            }
        }
        gw.stop().await;
    }
}
