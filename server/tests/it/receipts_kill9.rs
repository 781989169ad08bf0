//! The gateway binary's receipt log under faults. Killed with SIGKILL while it issues receipts
//! under load, again and again on the same log: no receipt a client received is ever lost or
//! its serial given to another, and after each restart the log opens, grows on, and verifies
//! against a signed head. On a disk that refuses a write: the draw whose receipt it refused is
//! not served, every later receipted draw is refused before anything is drawn, plain draws go
//! on, and the log opens again afterwards, whole.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use entropy_proto::v1::receipt_log_service_client::ReceiptLogServiceClient;
use entropy_proto::v1::{
    GetIntegersRequest, GetPublicKeyRequest, GetSignedTreeHeadRequest, GetStatusRequest,
    ListReceiptsRequest,
};
use entropy_receipts::verify::{audit_listing, verify_receipt_bytes};
use entropy_receipts::{KeyNameDigest, LogReader, PublicKey, SignedTreeHead};

use super::support::{API_KEY, with_key};

/// The dev gateway's key name.
const DEV_KEY_NAME: &str = "dev";
const ROUNDS: u64 = 5;
const CLIENTS: usize = 4;

/// Starts the binary in dev mode on `dir`'s receipt log; returns it and its public address.
fn start(dir: &Path, sync: &str) -> (Child, String) {
    start_limited(dir, sync, None)
}

/// [`start`], the files the gateway writes limited to `max_file_kib` KiB when given (a shell's
/// `ulimit -f`, with SIGXFSZ ignored, so a write past it fails with EFBIG as on a full disk).
fn start_limited(dir: &Path, sync: &str, max_file_kib: Option<u64>) -> (Child, String) {
    let bin = env!("CARGO_BIN_EXE_entropy-gateway");
    let mut command = match max_file_kib {
        None => Command::new(bin),
        Some(kib) => {
            let mut c = Command::new("bash");
            c.args(["-c", &format!("ulimit -f {kib}; trap '' XFSZ; exec \"$0\" \"$@\""), bin]);
            c
        }
    };
    let mut child = command
        .args(["--dev", "--listen-addr", "127.0.0.1:0", "--metrics-listen-addr", ""])
        .args(["--max-future-skew-ms", "100", "--receipts-head-interval-ms", "20"])
        .args(["--receipts-sync", sync, "--receipts-dir"])
        .arg(dir)
        .env("ENTROPY_DEV_API_KEY", API_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the gateway");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let public = loop {
        let line = lines.next().expect("a banner line").expect("utf-8");
        if let Some(addr) = line.strip_prefix("Listening: ") {
            break addr.split_whitespace().next().expect("an address").to_owned();
        }
    };
    // Keep reading stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, public)
}

async fn connect(public: &str) -> tonic::transport::Channel {
    for _ in 0..200 {
        if let Ok(channel) = tonic::transport::Channel::from_shared(format!("http://{public}"))
            .unwrap()
            .connect()
            .await
        {
            return channel;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the gateway at {public} never accepted a connection");
}

fn draw() -> tonic::Request<GetIntegersRequest> {
    with_key(
        API_KEY,
        GetIntegersRequest { min: 1, max: 1000, count: 4, receipt: true, ..Default::default() },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_no_acknowledged_receipt_and_reuses_no_serial() {
    let dir = tempfile::tempdir().unwrap();
    // Every receipt a client got: serial -> its bytes.
    let acked: Arc<Mutex<BTreeMap<u64, Vec<u8>>>> = Arc::default();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for round in 0..ROUNDS {
        let sync = if round % 2 == 0 { "group" } else { "every_append" };
        let (mut child, public) = start(dir.path(), sync);
        let channel = connect(&public).await;
        // Wait until the dev feed serves.
        let mut client = EntropyServiceClient::new(channel.clone());
        for _ in 0..400 {
            if client.get_integers(draw()).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let before = acked.lock().unwrap().len();
        let mut load = Vec::new();
        for _ in 0..CLIENTS {
            let (mut client, acked) = (EntropyServiceClient::new(channel.clone()), acked.clone());
            load.push(tokio::spawn(async move {
                while let Ok(r) = client.get_integers(draw()).await {
                    let receipt = r.into_inner().receipt.expect("asked for a receipt");
                    let previous =
                        acked.lock().unwrap().insert(receipt.serial, receipt.signed_receipt);
                    assert!(previous.is_none(), "serial {} acknowledged twice", receipt.serial);
                }
            }));
        }
        // SIGKILL at a moment of this seed's choosing, mid-load.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(150 + seed % 350)).await;
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        for task in load {
            task.await.expect("a load task ended cleanly");
        }
        let acked = acked.lock().unwrap().clone();
        assert!(acked.len() > before, "round {round} acknowledged no receipt under load");
        // Offline, as an auditor with a copy would: every acknowledged receipt is its serial's
        // leaf, byte for byte (a torn tail past them is cut at the next open).
        let on_disk: Vec<Vec<u8>> =
            LogReader::open(dir.path()).unwrap().map(|r| r.unwrap().1.to_bytes()).collect();
        for (serial, bytes) in &acked {
            let leaf = on_disk.get(*serial as usize);
            assert_eq!(leaf, Some(bytes), "round {round}: acknowledged serial {serial} lost");
        }
    }

    // A last start: the log opens, and the whole of it verifies against a signed head, every
    // acknowledged receipt listed under the dev key.
    let (mut child, public) = start(dir.path(), "group");
    let channel = connect(&public).await;
    let mut log = ReceiptLogServiceClient::new(channel);
    let pk = log.get_public_key(with_key(API_KEY, GetPublicKeyRequest {})).await.unwrap();
    let key = PublicKey::from_bytes(&pk.into_inner().public_key.try_into().unwrap()).unwrap();
    let head = log.get_signed_tree_head(with_key(API_KEY, GetSignedTreeHeadRequest {})).await;
    let head = SignedTreeHead::from_bytes(&head.unwrap().into_inner().signed_tree_head).unwrap();
    let mut pages = Vec::new();
    while (pages.len() as u64) < head.head.size {
        let start_serial = pages.len() as u64;
        let page = log
            .list_receipts(with_key(API_KEY, ListReceiptsRequest { start_serial, max_receipts: 0 }))
            .await
            .unwrap()
            .into_inner();
        pages.extend(page.signed_receipts);
    }
    for bytes in &pages {
        verify_receipt_bytes(bytes, &key).expect("every leaf verifies");
    }
    let digest = KeyNameDigest::of(DEV_KEY_NAME);
    let listed = audit_listing(pages, &head, &key, &digest, 0..u64::MAX).expect("the log verifies");
    let acked = acked.lock().unwrap().clone();
    let listed: BTreeMap<u64, Vec<u8>> =
        listed.into_iter().map(|e| (e.serial, e.receipt.to_bytes())).collect();
    for (serial, bytes) in &acked {
        assert_eq!(listed.get(serial), Some(bytes), "acknowledged serial {serial} not audited");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

async fn status(client: &mut EntropyServiceClient<tonic::transport::Channel>) -> (u64, u64) {
    let s = client.get_status(with_key(API_KEY, GetStatusRequest {})).await.unwrap().into_inner();
    (s.served_bytes_total, s.discarded_bytes_total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_refuses_a_receipt_fails_that_draw_and_refuses_the_next_before_drawing() {
    let dir = tempfile::tempdir().unwrap();
    // 8 KiB per file: about twenty receipts, then the log's write fails.
    let (mut child, public) = start_limited(dir.path(), "every_append", Some(8));
    let mut client = EntropyServiceClient::new(connect(&public).await);
    let plain = || {
        with_key(API_KEY, GetIntegersRequest { min: 1, max: 1000, count: 4, ..Default::default() })
    };
    for _ in 0..400 {
        if client.get_integers(plain()).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let mut acked = BTreeMap::new();
    let mut failed = None;
    for _ in 0..1000 {
        match client.get_integers(draw()).await {
            Ok(r) => {
                let receipt = r.into_inner().receipt.expect("asked for a receipt");
                acked.insert(receipt.serial, receipt.signed_receipt);
            }
            Err(status) => {
                failed = Some(status);
                break;
            }
        }
    }
    let failed = failed.expect("8 KiB of log fills up");
    assert!(acked.len() >= 5, "{} receipts before the disk refused", acked.len());
    assert_eq!(failed.code(), tonic::Code::Unavailable, "{failed:?}");
    assert!(failed.message().contains("not served"), "{}", failed.message());

    // The next receipted draw is refused before anything is drawn: nothing served, nothing
    // discarded. Plain draws go on.
    let before = status(&mut client).await;
    let refused = client.get_integers(draw()).await.expect_err("the log takes no more");
    assert_eq!(refused.code(), tonic::Code::Unavailable);
    assert!(refused.message().contains("nothing drawn"), "{}", refused.message());
    assert_eq!(status(&mut client).await, before, "the refused call drew nothing");
    client.get_integers(plain()).await.expect("plain draws go on");
    child.kill().unwrap();
    child.wait().unwrap();

    // Restarted without the limit: the log opens (the half-written record cut), every receipt
    // a caller got is its serial's leaf, and the whole log audits.
    let (mut child, public) = start(dir.path(), "group");
    let channel = connect(&public).await;
    let mut log = ReceiptLogServiceClient::new(channel.clone());
    let pk = log.get_public_key(with_key(API_KEY, GetPublicKeyRequest {})).await.unwrap();
    let key = PublicKey::from_bytes(&pk.into_inner().public_key.try_into().unwrap()).unwrap();
    let head = log.get_signed_tree_head(with_key(API_KEY, GetSignedTreeHeadRequest {})).await;
    let head = SignedTreeHead::from_bytes(&head.unwrap().into_inner().signed_tree_head).unwrap();
    let page = log
        .list_receipts(with_key(API_KEY, ListReceiptsRequest { start_serial: 0, max_receipts: 0 }))
        .await
        .unwrap()
        .into_inner();
    let digest = KeyNameDigest::of(DEV_KEY_NAME);
    let listed = audit_listing(page.signed_receipts, &head, &key, &digest, 0..u64::MAX)
        .expect("the log verifies");
    let listed: BTreeMap<u64, Vec<u8>> =
        listed.into_iter().map(|e| (e.serial, e.receipt.to_bytes())).collect();
    for (serial, bytes) in &acked {
        assert_eq!(listed.get(serial), Some(bytes), "acknowledged serial {serial} kept");
    }
    // And it takes receipts again.
    let mut client = EntropyServiceClient::new(channel);
    let r = client.get_integers(draw()).await.expect("a working disk takes receipts");
    assert_eq!(r.into_inner().receipt.unwrap().serial, head.head.size);
    child.kill().unwrap();
    child.wait().unwrap();
}
