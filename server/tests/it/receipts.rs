//! Verifiable draws through the gateway (issue 32): every unary draw's receipt verifies under
//! the published key, opens with the values served, is in a signed head, and shows in the
//! audit listing; refusals draw nothing; the log survives restarts; no served value reaches it.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use entropy_gateway::process::config::GatewayConfig;
use entropy_proto::v1::receipt_log_service_client::ReceiptLogServiceClient;
use entropy_proto::v1::{
    DrawReceipt, GetConsistencyProofRequest, GetFloatsRequest, GetInclusionProofRequest,
    GetIntegersRequest, GetPublicKeyRequest, GetRandomRequest, GetSignedTreeHeadRequest,
    GetUuidsRequest, ListReceiptsRequest, StreamRandomRequest,
};
use entropy_receipts::verify::{
    audit_key, audit_listing, open_commitment, verify_consistency, verify_inclusion,
    verify_receipt_bytes,
};
use entropy_receipts::{
    KeyNameDigest, LogReader, PublicKey, Rpc, Salt, ServedValues, SignedReceipt, SignedTreeHead,
};
use tonic::Code;
use tonic::transport::Channel;

use super::support::{
    API_KEY, TestGateway, assert_status, authed, keys_named, start, start_with_keys, test_config,
    with_key,
};

/// The test gateway's key name (`ApiKeys::single("test", ..)`).
const KEY_NAME: &str = "test";

fn receipts_config(dir: &Path) -> GatewayConfig {
    test_config(|c| {
        c.receipts_dir = Some(dir.to_owned());
        c.receipts_head_interval_ms = 20;
    })
}

async fn log_client(gw: &TestGateway) -> ReceiptLogServiceClient<Channel> {
    ReceiptLogServiceClient::connect(format!("http://{}", gw.public)).await.unwrap()
}

async fn public_key(log: &mut ReceiptLogServiceClient<Channel>, api_key: &str) -> PublicKey {
    let request = with_key(api_key, GetPublicKeyRequest {});
    let pk = log.get_public_key(request).await.unwrap().into_inner();
    let key = PublicKey::from_bytes(&pk.public_key.try_into().unwrap()).unwrap();
    assert_eq!(pk.key_id, key.key_id().0.to_vec());
    key
}

/// The latest signed head once it covers `size` receipts.
async fn head_covering(log: &mut ReceiptLogServiceClient<Channel>, size: u64) -> SignedTreeHead {
    head_covering_as(log, size, API_KEY).await
}

async fn head_covering_as(
    log: &mut ReceiptLogServiceClient<Channel>,
    size: u64,
    api_key: &str,
) -> SignedTreeHead {
    for _ in 0..500 {
        let request = with_key(api_key, GetSignedTreeHeadRequest {});
        let h = log.get_signed_tree_head(request).await.unwrap();
        let h = h.into_inner();
        if h.tree_size >= size {
            let head = SignedTreeHead::from_bytes(&h.signed_tree_head).unwrap();
            assert_eq!(head.head.size, h.tree_size);
            return head;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no signed head covered {size} receipts within 5 s");
}

/// Checks `r` under `key` and opens it with `values`; returns the signed receipt.
fn check(r: &DrawReceipt, key: &PublicKey, values: ServedValues<'_>) -> SignedReceipt {
    let signed = verify_receipt_bytes(&r.signed_receipt, key).expect("the receipt verifies");
    assert_eq!(signed.receipt.serial, r.serial);
    let salt = Salt(r.salt.clone().try_into().expect("a 32-byte salt"));
    open_commitment(&signed.receipt, values, &salt).expect("the values open the commitment");
    // Another value does not.
    let wrong = Salt([0; 32]);
    assert!(open_commitment(&signed.receipt, values, &wrong).is_err());
    signed
}

#[tokio::test]
async fn every_unary_draw_gets_a_receipt_that_verifies_opens_and_is_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut gw = start(receipts_config(dir.path())).await;
    // Bytes that look random, so that a match in the log's files would mean a leak.
    gw.feed(1 << 20, 64 << 10, |i| ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
        .await;
    let mut client = gw.client().await;
    let mut log = log_client(&gw).await;
    let key = public_key(&mut log, API_KEY).await;
    // The public key file the operator publishes is the same key.
    let from_file = PublicKey::from_file(&dir.path().join("public.key")).unwrap();
    assert_eq!(from_file.to_bytes(), key.to_bytes());

    let mut receipts = Vec::new();
    let mut served: Vec<Vec<u8>> = Vec::new();

    let r = client
        .get_random(authed(GetRandomRequest {
            num_bytes: 100,
            receipt: true,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let signed = check(r.receipt.as_ref().unwrap(), &key, ServedValues::Bytes(&r.data));
    assert_eq!(signed.receipt.request.rpc, Rpc::GetRandom { num_bytes: 100 });
    assert_eq!(signed.receipt.gateway_id, gw.gateway_id);
    assert_eq!(signed.receipt.key_name_digest, KeyNameDigest::of(KEY_NAME));
    let p = r.provenance.as_ref().unwrap();
    assert_eq!(signed.receipt.provenance.chunk_count, p.chunk_count);
    assert_eq!(signed.receipt.provenance.collector_ids, p.collector_ids);
    served.push(r.data.clone());
    receipts.push(signed);

    // Text encodings: the commitment is over the bytes, before hex.
    let r = client
        .get_random(authed(GetRandomRequest {
            num_bytes: 33,
            encoding: 1,
            receipt: true,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let bytes = hex::decode(&r.text).unwrap();
    receipts.push(check(r.receipt.as_ref().unwrap(), &key, ServedValues::Bytes(&bytes)));
    served.push(bytes);

    let r = client
        .get_integers(authed(GetIntegersRequest {
            min: 1,
            max: 49,
            count: 6,
            accept_kinds: vec![3, 3],
            receipt: true,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let signed = check(r.receipt.as_ref().unwrap(), &key, ServedValues::Integers(&r.values));
    assert_eq!(signed.receipt.request.rpc, Rpc::GetIntegers { min: 1, max: 49, count: 6 });
    assert_eq!(signed.receipt.request.accept_kinds, vec![entropy_receipts::SourceKind::Os]);
    // Integers in 1..=49 are mostly zero bytes: not a scan's needle.
    receipts.push(signed);

    let r = client
        .get_floats(authed(GetFloatsRequest { count: 5, receipt: true, ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    receipts.push(check(r.receipt.as_ref().unwrap(), &key, ServedValues::Floats(&r.values)));
    served.push(r.values.iter().flat_map(|v| v.to_bits().to_be_bytes()).collect());

    let r = client
        .get_uuids(authed(GetUuidsRequest { count: 4, receipt: true, ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    let uuids: Vec<[u8; 16]> =
        r.uuids.iter().map(|u| *uuid::Uuid::parse_str(u).unwrap().as_bytes()).collect();
    receipts.push(check(r.receipt.as_ref().unwrap(), &key, ServedValues::Uuids(&uuids)));
    served.push(uuids.concat());

    // A draw that does not ask gets none, and takes no serial.
    let r = client
        .get_random(authed(GetRandomRequest { num_bytes: 8, ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    assert!(r.receipt.is_none());

    // Serials are dense, in order.
    let serials: Vec<u64> = receipts.iter().map(|r| r.receipt.serial).collect();
    assert_eq!(serials, vec![0, 1, 2, 3, 4]);

    // Each is in a signed head; heads are consistent; the audit lists them all.
    let head = head_covering(&mut log, 5).await;
    for r in &receipts {
        let proof = log
            .get_inclusion_proof(authed(GetInclusionProofRequest {
                serial: r.receipt.serial,
                tree_size: head.head.size,
            }))
            .await
            .unwrap()
            .into_inner();
        let hashes: Vec<[u8; 32]> =
            proof.hashes.into_iter().map(|h| h.try_into().unwrap()).collect();
        verify_inclusion(r, &hashes, &head, &key).expect("included in the signed head");
    }
    let r = client
        .get_random(authed(GetRandomRequest { num_bytes: 16, receipt: true, ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    receipts.push(check(r.receipt.as_ref().unwrap(), &key, ServedValues::Bytes(&r.data)));
    served.push(r.data);
    let newer = head_covering(&mut log, 6).await;
    let proof = log
        .get_consistency_proof(authed(GetConsistencyProofRequest {
            old_size: head.head.size,
            new_size: newer.head.size,
        }))
        .await
        .unwrap()
        .into_inner();
    let hashes: Vec<[u8; 32]> = proof.hashes.into_iter().map(|h| h.try_into().unwrap()).collect();
    verify_consistency(&head, &newer, &hashes, &key).expect("the log only grew");

    // The audit, from the pages (small pages: the listing is paged), and from the file.
    let mut pages = Vec::new();
    let mut next = 0;
    while next < newer.head.size {
        let page = log
            .list_receipts(authed(ListReceiptsRequest { start_serial: next, max_receipts: 4 }))
            .await
            .unwrap()
            .into_inner();
        assert!(!page.signed_receipts.is_empty() && page.signed_receipts.len() <= 4);
        next = page.next_serial;
        pages.extend(page.signed_receipts);
    }
    let digest = KeyNameDigest::of(KEY_NAME);
    let listed = audit_listing(pages, &newer, &key, &digest, 0..u64::MAX).unwrap();
    assert_eq!(listed.len(), 6);
    let listed = audit_key(LogReader::open(dir.path()).unwrap(), &newer, &key, &digest, 2..4);
    assert_eq!(listed.unwrap().iter().map(|e| e.serial).collect::<Vec<_>>(), vec![2, 3]);

    // No served value is in the log's files or the head (every 8-byte window of every draw of
    // bytes, floats and UUIDs).
    let windows: HashSet<&[u8]> = served.iter().flat_map(|v| v.windows(8)).collect();
    for file in ["receipts.log", "leaves.bin", "head.sth"] {
        let bytes = std::fs::read(dir.path().join(file)).unwrap();
        assert!(
            !bytes.windows(8).any(|w| windows.contains(w)),
            "{file} holds 8 bytes of a served value"
        );
    }
    gw.stop().await;
}

#[tokio::test]
async fn without_a_log_or_for_streams_receipts_are_refused_and_nothing_is_drawn() {
    // No receipts_dir: asking for a receipt is refused before drawing.
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(256 << 10, 64 << 10, |i| i as u8).await;
    let level = gw.status().await.pool_bytes;
    let mut client = gw.client().await;
    assert_status(
        client
            .get_random(authed(GetRandomRequest {
                num_bytes: 32,
                receipt: true,
                ..Default::default()
            }))
            .await,
        Code::FailedPrecondition,
        &["receipt", "receipts_dir", "nothing drawn"],
    );
    assert_status(
        client
            .get_integers(authed(GetIntegersRequest {
                min: 0,
                max: 9,
                count: 3,
                receipt: true,
                ..Default::default()
            }))
            .await,
        Code::FailedPrecondition,
        &["receipts_dir"],
    );
    let mut log = log_client(&gw).await;
    assert_status(
        log.get_signed_tree_head(authed(GetSignedTreeHeadRequest {})).await,
        Code::FailedPrecondition,
        &["receipts_dir"],
    );
    // Streams issue none: refused, whatever the gateway keeps.
    let stream = client
        .stream_random(authed(StreamRandomRequest {
            total_bytes: 64,
            receipt: true,
            ..Default::default()
        }))
        .await;
    assert_status(stream, Code::InvalidArgument, &["receipt", "StreamRandom", "GetRandom"]);
    // min == max draws nothing: there is no draw to receipt.
    assert_status(
        client
            .get_integers(authed(GetIntegersRequest {
                min: 5,
                max: 5,
                count: 3,
                receipt: true,
                ..Default::default()
            }))
            .await,
        Code::InvalidArgument,
        &["receipt", "min == max"],
    );
    let status = gw.status().await;
    assert_eq!(status.pool_bytes, level, "nothing was drawn");
    assert_eq!(status.served_bytes_total, 0);
    gw.stop().await;
}

#[tokio::test]
async fn a_key_holding_entropy_receipts_gets_one_unasked_and_the_listing_needs_its_scope() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_named(&[
        ("lottery", r#"scopes = ["entropy:read", "entropy:receipts"]"#),
        ("reader", r#"scopes = ["entropy:read"]"#),
        ("auditor", r#"scopes = ["receipts:audit"]"#),
    ]);
    let mut gw = start_with_keys(receipts_config(dir.path()), keys).await;
    gw.feed(256 << 10, 64 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    let r = client
        .get_integers(with_key(
            "lottery",
            GetIntegersRequest { min: 1, max: 49, count: 6, ..Default::default() },
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(r.receipt.is_some(), "every draw of an entropy:receipts key is receipted");
    // Its streams are refused (a stream issues no receipts), nothing drawn.
    assert_status(
        client
            .stream_random(with_key(
                "lottery",
                StreamRandomRequest { total_bytes: 64, ..Default::default() },
            ))
            .await,
        Code::FailedPrecondition,
        &["lottery", "entropy:receipts", "StreamRandom"],
    );
    // Another key's draws are receipted only when asked.
    let r = client
        .get_random(with_key("reader", GetRandomRequest { num_bytes: 8, ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    assert!(r.receipt.is_none());

    let mut log = log_client(&gw).await;
    // Heads and proofs: any valid key. The listing: receipts:audit only.
    head_covering_as(&mut log, 1, "reader").await;
    assert_status(
        log.list_receipts(with_key("reader", ListReceiptsRequest::default())).await,
        Code::PermissionDenied,
        &["reader", "receipts:audit"],
    );
    assert_status(
        log.get_signed_tree_head(with_key("nobody", GetSignedTreeHeadRequest {})).await,
        Code::Unauthenticated,
        &[],
    );
    let page = log
        .list_receipts(with_key("auditor", ListReceiptsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(page.signed_receipts.len(), 1);
    let key = public_key(&mut log, "reader").await;
    let signed = verify_receipt_bytes(&page.signed_receipts[0], &key).unwrap();
    assert_eq!(signed.receipt.key_name_digest, KeyNameDigest::of("lottery"));
    // The auditor's key draws nothing.
    assert_status(
        client
            .get_random(with_key(
                "auditor",
                GetRandomRequest { num_bytes: 8, ..Default::default() },
            ))
            .await,
        Code::PermissionDenied,
        &["auditor"],
    );
    gw.stop().await;
}

#[tokio::test]
async fn log_calls_name_the_field_and_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut gw = start(receipts_config(dir.path())).await;
    gw.feed(256 << 10, 64 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    for _ in 0..3 {
        client
            .get_random(authed(GetRandomRequest {
                num_bytes: 8,
                receipt: true,
                ..Default::default()
            }))
            .await
            .unwrap();
    }
    let mut log = log_client(&gw).await;
    head_covering(&mut log, 3).await;
    let incl = |serial, tree_size| authed(GetInclusionProofRequest { serial, tree_size });
    assert_status(
        log.get_inclusion_proof(incl(0, 0)).await,
        Code::InvalidArgument,
        &["tree_size", "1..=3"],
    );
    assert_status(
        log.get_inclusion_proof(incl(0, 4)).await,
        Code::InvalidArgument,
        &["tree_size", "is 4", "1..=3"],
    );
    assert_status(
        log.get_inclusion_proof(incl(3, 3)).await,
        Code::InvalidArgument,
        &["serial", "0..3"],
    );
    let cons = |old_size, new_size| authed(GetConsistencyProofRequest { old_size, new_size });
    assert_status(
        log.get_consistency_proof(cons(0, 4)).await,
        Code::InvalidArgument,
        &["new_size", "0..=3"],
    );
    assert_status(
        log.get_consistency_proof(cons(3, 2)).await,
        Code::InvalidArgument,
        &["old_size", "0..=2"],
    );
    // The widest values the wire allows: refused by name, never an overflow.
    let max = u64::MAX;
    for (result, field) in [
        (log.get_inclusion_proof(incl(max, max)).await.map(drop), "tree_size"),
        (log.get_inclusion_proof(incl(max, 3)).await.map(drop), "serial"),
        (log.get_consistency_proof(cons(max, max)).await.map(drop), "new_size"),
        (log.get_consistency_proof(cons(max, 3)).await.map(drop), "old_size"),
    ] {
        assert_status(result, Code::InvalidArgument, &[field]);
    }
    log.get_consistency_proof(cons(0, 3)).await.expect("from the empty tree");
    log.get_consistency_proof(cons(3, 3)).await.expect("to itself");
    let list =
        |start_serial, max_receipts| authed(ListReceiptsRequest { start_serial, max_receipts });
    assert_status(
        log.list_receipts(list(0, 1001)).await,
        Code::InvalidArgument,
        &["max_receipts", "1000"],
    );
    assert_status(
        log.list_receipts(list(4, 0)).await,
        Code::InvalidArgument,
        &["start_serial", "0..=3"],
    );
    assert_status(
        log.list_receipts(list(u64::MAX, u32::MAX)).await,
        Code::InvalidArgument,
        &["max_receipts"],
    );
    assert_status(
        log.list_receipts(list(u64::MAX, 1)).await,
        Code::InvalidArgument,
        &["start_serial"],
    );
    let end = log.list_receipts(list(3, 0)).await.unwrap().into_inner();
    assert!(end.signed_receipts.is_empty());
    assert_eq!((end.next_serial, end.tree_size), (3, 3));
    // A page's answer is held on the process's response allowance while it is sent, and
    // given back once written (or the room would leak with every listing).
    for _ in 0..20 {
        log.list_receipts(list(0, 0)).await.unwrap();
    }
    for _ in 0..200 {
        if gw.budget.responses.held() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(gw.budget.responses.held(), 0, "listings' room given back once written");
    gw.stop().await;
}

#[tokio::test]
async fn the_log_and_its_key_survive_a_restart_and_the_new_heads_extend_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let mut gw = start(receipts_config(dir.path())).await;
    gw.feed(256 << 10, 64 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    let mut first = Vec::new();
    for _ in 0..3 {
        let r = client
            .get_random(authed(GetRandomRequest {
                num_bytes: 8,
                receipt: true,
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner();
        first.push(r.receipt.unwrap());
    }
    let mut log = log_client(&gw).await;
    let key = public_key(&mut log, API_KEY).await;
    let old = head_covering(&mut log, 3).await;
    gw.stop().await;

    // A second gateway on the same directory while the first is stopped: the same key, the
    // serials go on, the old receipts are still leaves 0..3, and the log only grew.
    let mut gw = start(receipts_config(dir.path())).await;
    gw.feed(256 << 10, 64 << 10, |i| i as u8).await;
    let mut client = gw.client().await;
    let r = client
        .get_random(authed(GetRandomRequest { num_bytes: 8, receipt: true, ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.receipt.unwrap().serial, 3);
    let mut log = log_client(&gw).await;
    assert_eq!(public_key(&mut log, API_KEY).await.to_bytes(), key.to_bytes());
    let new = head_covering(&mut log, 4).await;
    let proof = log
        .get_consistency_proof(authed(GetConsistencyProofRequest { old_size: 3, new_size: 4 }))
        .await
        .unwrap()
        .into_inner();
    let hashes: Vec<[u8; 32]> = proof.hashes.into_iter().map(|h| h.try_into().unwrap()).collect();
    verify_consistency(&old, &new, &hashes, &key).unwrap();
    for r in &first {
        let signed = verify_receipt_bytes(&r.signed_receipt, &key).unwrap();
        let proof = log
            .get_inclusion_proof(authed(GetInclusionProofRequest {
                serial: r.serial,
                tree_size: 4,
            }))
            .await
            .unwrap()
            .into_inner();
        let hashes: Vec<[u8; 32]> =
            proof.hashes.into_iter().map(|h| h.try_into().unwrap()).collect();
        verify_inclusion(&signed, &hashes, &new, &key).unwrap();
    }
    gw.stop().await;
}
