//! Integration tests of the Rust client against a real in-process dev-mode gateway on
//! 127.0.0.1:0.

// Test harness code panics on setup failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use entropy_diode_client::{Client, ClientBuilder, Error, SourceKind, StreamOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod support;

use support::{KEY, dev_gateway, dev_gateway_on, dev_gateway_with_tls};

fn no_repeated_blocks(bytes: &[u8]) -> bool {
    let mut seen = HashSet::new();
    bytes.chunks_exact(16).all(|b| seen.insert(b.to_vec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_calls_return_what_they_promise() {
    let gw = dev_gateway().await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    assert_eq!(client.get_bytes(32).await.unwrap().len(), 32);
    let dice = client.get_integers(1, 6, 1000).await.unwrap();
    assert!(dice.len() == 1000 && dice.iter().all(|v| (1..=6).contains(v)));
    assert_eq!(client.get_integers(i64::MIN, i64::MAX, 5).await.unwrap().len(), 5);
    let floats = client.get_floats(100).await.unwrap();
    assert!(floats.iter().all(|f| (0.0..1.0).contains(f)));
    let uuids = client.get_uuids(20).await.unwrap();
    assert!(uuids.iter().all(|u| u.get_version_num() == 4));
    assert_eq!(uuids.iter().collect::<HashSet<_>>().len(), 20);
    let status = client.status().await.unwrap();
    assert_eq!(status.pool_capacity_bytes, 8 << 20);
    assert!(status.sources.iter().any(|s| s.name == "os"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_reads_the_keys_own_limits_and_counts_its_open_streams() {
    let gw = dev_gateway().await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    let usage = client.usage().await.unwrap();
    assert_eq!(usage.key_name, "dev");
    // The dev key has no limits but the undelivered allowance, which always has one.
    for rate in [usage.requests, usage.bytes, usage.drbg_bytes] {
        assert!(rate.unwrap().unlimited);
    }
    let undelivered = usage.undelivered_bytes.unwrap();
    assert_eq!((undelivered.unlimited, undelivered.limit), (false, 32 << 20));
    let streams = usage.streams.unwrap();
    assert_eq!((streams.unlimited, streams.in_use), (true, 0));

    let mut stream = client.stream(None, 4096);
    let mut first = [0u8; 4096];
    stream.read_exact(&mut first).await.unwrap();
    assert_eq!(client.usage().await.unwrap().streams.unwrap().in_use, 1);
    let wrong = Client::connect(&format!("http://{}", gw.addr), "wrong").await.unwrap();
    assert!(matches!(wrong.usage().await, Err(Error::Unauthenticated(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_map_to_their_variants() {
    let gw = dev_gateway().await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    match client.get_bytes(0).await {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("num_bytes"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(client.get_integers(2, 1, 1).await, Err(Error::InvalidArgument(_))));
    assert!(matches!(client.get_uuids(0).await, Err(Error::InvalidArgument(_))));
    let wrong = Client::connect(&format!("http://{}", gw.addr), "wrong").await.unwrap();
    assert!(matches!(wrong.get_bytes(8).await, Err(Error::Unauthenticated(_))));
    assert!(matches!(
        ClientBuilder::new(format!("http://{}", gw.addr), "bad\nkey").connect().await,
        Err(Error::Config(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draws_say_where_they_came_from_and_quality_is_checked_on_request() {
    let gw = dev_gateway().await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    let draw = client.draw(32).await.unwrap();
    assert_eq!(draw.data.len(), 32);
    let p = draw.provenance.expect("provenance");
    assert_eq!(p.kinds, [SourceKind::Os as i32]);
    assert!(!p.mixed);
    assert_eq!(p.collector_ids, ["dev-collector"]);
    let (first, last) = (p.first_chunk.expect("first"), p.last_chunk.expect("last"));
    assert!(p.chunk_count >= 1 && first.sequence <= last.sequence);

    let report = client.check_quality(4096).await.unwrap();
    assert!(report.passed, "{:?}", report.failures);
    assert_eq!(report.sample_bytes, 4096);
    assert_eq!(report.fips140_2.expect("fips").blocks, 1);
    let (pi, os) = (report.pi.expect("pi"), report.pi_os_reference.expect("os"));
    assert!(pi.points > 0 && pi.points == os.points);
    assert_eq!(report.thresholds.len(), 5);
    assert_eq!(report.provenance.expect("provenance").kinds, [SourceKind::Os as i32]);
    for (n, bound) in [(100, "2500"), (4_194_305, "4194304")] {
        match client.check_quality(n).await {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains("sample_bytes") && m.contains(bound), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_the_gateway_is_not_fed_is_refused_and_a_stream_does_not_retry_it() {
    let gw = dev_gateway().await;
    let endpoint = format!("http://{}", gw.addr);
    let quantum =
        ClientBuilder::new(&endpoint, KEY).accept_kinds([SourceKind::Quantum]).connect().await;
    let quantum = quantum.unwrap();
    for result in [
        quantum.get_bytes(8).await.map(|_| ()),
        quantum.get_uuids(1).await.map(|_| ()),
        quantum.check_quality(4096).await.map(|_| ()),
    ] {
        match result {
            Err(Error::FailedPrecondition(m)) => {
                assert!(m.contains("QUANTUM") && m.contains("OS:"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }
    let started = std::time::Instant::now();
    let mut out = Vec::new();
    let err = quantum.stream(Some(1024), 1024).read_to_end(&mut out).await.unwrap_err();
    assert!(err.to_string().contains("QUANTUM"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "gave up at once, no reconnect budget");
    assert!(out.is_empty());

    let os_or_quantum = ClientBuilder::new(&endpoint, KEY)
        .accept_kinds([SourceKind::Quantum, SourceKind::Os])
        .connect()
        .await
        .unwrap();
    let draw = os_or_quantum.draw(16).await.unwrap();
    assert_eq!(draw.provenance.expect("provenance").kinds, [SourceKind::Os as i32]);
    let unspecified = ClientBuilder::new(&endpoint, KEY)
        .accept_kinds([SourceKind::Unspecified])
        .connect()
        .await
        .unwrap();
    match unspecified.get_floats(1).await {
        Err(Error::InvalidArgument(m)) => assert!(m.starts_with("accept_kinds[0] is 0"), "{m}"),
        other => panic!("{other:?}"),
    }
    let status = os_or_quantum.status().await.unwrap();
    assert_eq!(status.pool_by_class.len(), 1);
    assert_eq!(status.pool_by_class[0].kinds, [SourceKind::Os as i32]);
    assert_eq!((status.expired_bytes_total, status.max_byte_age_ms), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reads_exactly_its_total() {
    let gw = dev_gateway().await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    let total = (1 << 20) + 123;
    let mut out = Vec::new();
    client.stream(Some(total), 64 << 10).read_to_end(&mut out).await.unwrap();
    assert_eq!(out.len() as u64, total);
    assert!(no_repeated_blocks(&out));
}

/// A TCP proxy to `target` that cuts its first connection once `cut_after` bytes have gone
/// from the server to the client; later connections pass through untouched.
async fn cutting_proxy(target: SocketAddr, cut_after: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(target).await else { return };
            let limit = if first { Some(cut_after) } else { None };
            first = false;
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let upstream = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                let mut sent = 0usize;
                let mut buf = vec![0u8; 64 << 10];
                while let Ok(n) = server_read.read(&mut buf).await {
                    if n == 0 || client_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    sent += n;
                    if limit.is_some_and(|l| sent >= l) {
                        break; // cut: dropping both halves closes both sockets
                    }
                }
                upstream.abort();
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reconnects_after_a_cut_without_losing_or_repeating() {
    let gw = dev_gateway().await;
    let proxy = cutting_proxy(gw.addr, 300 << 10).await;
    let client = Client::connect(&format!("http://{proxy}"), KEY).await.unwrap();
    let total = 3 << 20;
    let mut stream = client.stream(Some(total), 32 << 10);
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    assert!(stream.reconnects() >= 1, "the cut forced a reconnect");
    assert_eq!(out.len() as u64, total, "every byte owed arrived");
    assert!(no_repeated_blocks(&out), "nothing repeated across the reconnect");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_a_gateway_restarted_on_the_same_port() {
    // The gateway stops (SIGTERM's path: the stream ends with UNAVAILABLE) and a new one starts
    // on the same port 2 s later: longer than the old rule's five quick attempts lasted.
    let gw = dev_gateway().await;
    let addr = gw.addr;
    let client = Client::connect(&addr.to_string(), KEY).await.unwrap();
    let total: u64 = 6 << 20;
    let mut stream = client.stream(Some(total), 64 << 10);
    let mut out = vec![0u8; 1 << 20];
    stream.read_exact(&mut out).await.unwrap();
    // The reader keeps reading while the gateway drains (Gateway::serve waits for its calls;
    // the binary bounds that by shutdown_grace_ms).
    let restart = tokio::spawn(async move {
        gw.stop().await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        dev_gateway_on(addr, None).await
    });
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.expect("the reader waits for the new gateway");
    out.extend_from_slice(&rest);
    assert!(stream.reconnects() >= 1, "it reconnected");
    assert_eq!(out.len() as u64, total, "exactly the total");
    assert!(no_repeated_blocks(&out), "nothing repeated across the restart");
    drop(restart.await.unwrap());
}

/// A server that accepts TCP connections and never says a word.
async fn silent_server() -> SocketAddr {
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    addr
}

#[tokio::test]
async fn a_gateway_that_cannot_be_reached_is_named_with_the_cause() {
    // A port nothing listens on: bound, then closed.
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let client = Client::connect(&format!("http://{addr}"), KEY).await.unwrap();
    match client.get_bytes(8).await {
        Err(Error::Unavailable(m)) => {
            assert!(m.contains(&addr.to_string()) && m.contains("refused"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    let options =
        StreamOptions { reconnect_budget: Duration::from_millis(300), ..StreamOptions::default() };
    let mut stream = client.stream_with(Some(1024), options);
    let err = stream.read(&mut [0u8; 16]).await.expect_err("nothing listens");
    let err = err.into_inner().unwrap().downcast::<Error>().unwrap();
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

#[tokio::test]
async fn a_reader_gives_up_on_a_silent_gateway_when_its_budget_is_spent() {
    let addr = silent_server().await; // every attempt times out
    let client = Client::connect(&addr.to_string(), KEY).await.unwrap();
    let options = StreamOptions {
        attempt_timeout: Duration::from_millis(200),
        reconnect_budget: Duration::from_millis(1_000),
        ..StreamOptions::default()
    };
    let started = std::time::Instant::now();
    let mut stream = client.stream_with(Some(1 << 20), options);
    let err = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut [0u8; 16]))
        .await
        .expect("the budget bounds the read")
        .expect_err("nothing can arrive");
    let took = started.elapsed();
    let err = err.into_inner().unwrap().downcast::<Error>().unwrap();
    assert!(matches!(*err, Error::DeadlineExceeded(_)), "{err}");
    assert!(err.to_string().contains("gave up reconnecting"), "{err}");
    assert!(took >= Duration::from_millis(1_000), "tried for the whole budget: {took:?}");
    assert!(stream.reconnects() >= 2, "several attempts: {}", stream.reconnects());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn construction_checks_the_endpoint_and_the_key_without_echoing_it() {
    let err = Client::connect("127.0.0.1:50051", "s3cret-key\n").await.unwrap_err();
    assert!(matches!(err, Error::Config(_)) && err.to_string().contains("line break"), "{err}");
    assert!(!err.to_string().contains("s3cret"), "{err}");
    let err = Client::connect("gw:port", "k").await.unwrap_err();
    assert!(err.to_string().contains("1..=65535"), "{err}");
    // One syntax everywhere: bare loopback, http:// and the default port all reach dev mode.
    let gw = dev_gateway().await;
    for endpoint in [gw.addr.to_string(), format!("http://{}/", gw.addr)] {
        let client = Client::connect(&endpoint, KEY).await.unwrap();
        assert_eq!(client.get_bytes(8).await.expect(&endpoint).len(), 8);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rand_adapters_seed_and_serve() {
    use rand::{RngExt, SeedableRng};
    let gw = dev_gateway().await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    let mut a: rand::rngs::StdRng = client.seed().await.unwrap();
    let mut b: rand::rngs::StdRng = client.seed().await.unwrap();
    assert_ne!(a.random::<u128>(), b.random::<u128>(), "fresh seeds differ");
    let rng = client.prefetched_rng(64).await.unwrap();
    let mut rng = rand_core::UnwrapErr(rng);
    let roll: u8 = rng.random_range(1..=6);
    assert!((1..=6).contains(&roll));
    let _ = rand::rngs::StdRng::from_rng(&mut rng);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let certs =
        entropy_gateway::process::devcerts::generate(dir.path(), &["localhost".into()]).unwrap();
    let files = entropy_gateway::transport::tls::TlsFiles {
        cert: &certs.server_cert,
        key: &certs.server_key,
        client_ca: None,
        allow_tls12: false,
    };
    let gw =
        dev_gateway_with_tls(Some(entropy_gateway::transport::tls::server_config(&files).unwrap()))
            .await;
    let url = format!("https://localhost:{}", gw.addr.port());
    let client = ClientBuilder::new(&url, KEY).ca_file(&certs.ca).connect().await.expect("TLS");
    let mut bytes = Err(Error::Unavailable("not yet".into()));
    for _ in 0..50 {
        bytes = client.get_bytes(16).await;
        if bytes.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(bytes.expect("bytes over TLS").len(), 16);
    // Without the CA, the self-issued certificate is not trusted.
    let untrusting = Client::connect(&url, KEY).await.expect("lazy");
    assert!(matches!(untrusting.get_bytes(16).await, Err(Error::Unavailable(_))));
}

#[tokio::test]
async fn a_deadline_bounds_a_gateway_that_never_answers() {
    let addr = silent_server().await;
    let client = ClientBuilder::new(format!("http://{addr}"), KEY)
        .timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), client.get_bytes(32))
        .await
        .expect("the client's 300 ms deadline did not end the call within 5 s");
    assert!(matches!(result, Err(Error::DeadlineExceeded(_))), "{result:?}");
}

/// The blocking client, used as a program without async uses it: from a plain thread, against
/// a gateway running on a runtime of the test's own.
#[test]
fn the_blocking_client_stream_and_stream_rng_work_without_async() {
    use entropy_diode_client::blocking::BlockingClient;
    use rand_core::TryRng;
    use std::io::Read;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let gw = runtime.block_on(dev_gateway());
    let builder = || ClientBuilder::new(format!("http://{}", gw.addr), KEY);
    // Inside a runtime it refuses rather than block that runtime's thread.
    let inside = runtime.block_on(async { BlockingClient::connect(builder()).map(|_| ()) });
    assert!(matches!(inside, Err(Error::Config(m)) if m.contains("async runtime")));

    let client = BlockingClient::connect(builder()).unwrap();
    assert_eq!(client.get_bytes(32).unwrap().len(), 32);
    let dice = client.get_integers(1, 6, 100).unwrap();
    assert!(dice.len() == 100 && dice.iter().all(|d| (1..=6).contains(d)));
    assert_eq!(client.get_uuids(3).unwrap().len(), 3);
    assert!(matches!(client.get_bytes(0), Err(Error::InvalidArgument(_))));
    let served_before = client.status().unwrap().served_bytes_total;
    assert_eq!(client.usage().unwrap().key_name, "dev");

    let mut all = Vec::new();
    let mut stream = client.stream(Some(1 << 20), 64 << 10);
    stream.read_to_end(&mut all).unwrap();
    assert_eq!(all.len(), 1 << 20);
    assert!(no_repeated_blocks(&all));

    let mut rng = client.stream_rng(4096);
    let words: HashSet<u64> = (0..1000).map(|_| rng.try_next_u64().unwrap()).collect();
    assert_eq!(words.len(), 1000, "no 64-bit value repeated");
    let mut block = vec![0u8; 4096];
    rng.try_fill_bytes(&mut block).unwrap();
    assert!(no_repeated_blocks(&block));
    assert!(client.status().unwrap().served_bytes_total >= served_before + (1 << 20) + 8000);

    // A key the gateway does not know: the RNG fails, saying why, rather than stretching.
    let bad = BlockingClient::connect(ClientBuilder::new(format!("http://{}", gw.addr), "wrong"))
        .unwrap();
    let err = bad.stream_rng(4096).try_next_u32().unwrap_err();
    assert!(err.to_string().contains("unauthenticated"), "{err}");
    drop(gw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipted_draws_verify_and_the_receipt_log_proves_and_lists_them() {
    use entropy_diode_client::receipts::{KeyNameDigest, PublicKey, verify};
    use entropy_diode_client::{Check, DrawFile, Values};

    let receipts = tempfile::tempdir().unwrap();
    let gw = support::dev_gateway_with_receipts(receipts.path()).await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    let log = client.receipt_log();
    let served = log.public_key().await.unwrap();
    let published = PublicKey::from_file(&receipts.path().join("public.key")).unwrap();
    assert_eq!(served.key, published);
    let key = published;

    let ints = client.get_integers_with_receipt(1, 49, 6).await.unwrap();
    assert!(ints.values.len() == 6 && ints.values.iter().all(|v| (1..=49).contains(v)));
    let bytes = client.get_bytes_with_receipt(32).await.unwrap();
    let floats = client.get_floats_with_receipt(4).await.unwrap();
    let uuids = client.get_uuids_with_receipt(3).await.unwrap();
    let redraw = client.get_integers_with_receipt(1, 49, 6).await.unwrap();
    let receipts_of = [
        ints.verify(&key).unwrap(),
        bytes.verify(&key).unwrap(),
        floats.verify(&key).unwrap(),
        uuids.verify(&key).unwrap(),
        redraw.verify(&key).unwrap(),
    ];
    let serials: Vec<u64> = receipts_of.iter().map(|r| r.receipt.serial).collect();
    assert!(serials.windows(2).all(|w| w[0] < w[1]), "{serials:?}");
    assert_eq!(ints.receipt.serial, serials[0]);
    // A draw without `_with_receipt` is as before (the dev key does not hold entropy:receipts).
    assert_eq!(client.get_integers(1, 6, 3).await.unwrap().len(), 3);

    // A changed value, or another key, is refused by name.
    let mut changed = ints.clone();
    changed.values[0] = changed.values[0] % 49 + 1;
    assert_eq!(changed.verify(&key).unwrap_err().check, Check::Commitment);
    let other = entropy_diode_client::receipts::ReceiptSigner::from_seed(&[7; 32]);
    assert_eq!(ints.verify(other.public_key()).unwrap_err().check, Check::KeyId);

    // Kept in a draw file and read back, it verifies the same.
    let file = DrawFile::parse(&floats.to_draw_file().to_json()).unwrap();
    assert_eq!(file.values, Values::Floats(floats.values.clone()));
    file.verify(&key).unwrap();

    // A head covering every draw, inclusion proofs of each, and consistency with an older head.
    let first = log.wait_for_head(serials[0], Duration::from_secs(10)).await.unwrap();
    let head = log.wait_for_head(serials[4], Duration::from_secs(10)).await.unwrap();
    head.verify(&key).unwrap();
    for r in &receipts_of {
        let proof = log.inclusion_proof(r.receipt.serial, head.head.size).await.unwrap();
        verify::verify_inclusion(r, &proof, &head, &key).unwrap();
    }
    let proof = log.consistency_proof(first.head.size, head.head.size).await.unwrap();
    verify::verify_consistency(&first, &head, &proof, &key).unwrap();
    assert!(matches!(
        log.inclusion_proof(head.head.size, head.head.size).await,
        Err(Error::InvalidArgument(_))
    ));

    // The listing: every receipt up to the head, in order; the audit finds the key's draws.
    let all = log.all_receipts(head.head.size).await.unwrap();
    assert_eq!(all.len() as u64, head.head.size);
    for s in &serials {
        assert_eq!(
            all[*s as usize],
            receipts_of.iter().find(|r| r.receipt.serial == *s).unwrap().to_bytes()
        );
    }
    let copy = tempfile::tempdir().unwrap();
    let listed = log
        .audit(copy.path(), &head, &key, &KeyNameDigest::of("dev"), 0..head.head.size)
        .await
        .unwrap();
    assert_eq!(listed.iter().map(|e| e.serial).collect::<Vec<_>>(), serials);
    let nobody = tempfile::tempdir().unwrap();
    let listed = log
        .audit(nobody.path(), &head, &key, &KeyNameDigest::of("nobody"), 0..head.head.size)
        .await
        .unwrap();
    assert!(listed.is_empty());
    // The copy is never written over.
    assert!(log.copy_log(copy.path(), head.head.size).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_receipt_log_receipted_draws_and_the_log_answer_failed_precondition() {
    let gw = dev_gateway().await;
    let client = Client::connect(&format!("http://{}", gw.addr), KEY).await.unwrap();
    match client.get_integers_with_receipt(1, 6, 1).await {
        Err(Error::FailedPrecondition(m)) => assert!(m.contains("receipts_dir"), "{m}"),
        other => panic!("{other:?}"),
    }
    match client.receipt_log().signed_tree_head().await {
        Err(Error::FailedPrecondition(m)) => assert!(m.contains("receipts_dir"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_blocking_client_draws_with_receipts_too() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let receipts = tempfile::tempdir().unwrap();
    let gw = runtime.block_on(support::dev_gateway_with_receipts(receipts.path()));
    let client = entropy_diode_client::blocking::BlockingClient::connect(ClientBuilder::new(
        format!("http://{}", gw.addr),
        KEY,
    ))
    .unwrap();
    let key = client.receipt_log().public_key().unwrap().key;
    let uuids = client.get_uuids_with_receipt(2).unwrap();
    uuids.verify(&key).unwrap();
    let head =
        client.receipt_log().wait_for_head(uuids.receipt.serial, Duration::from_secs(10)).unwrap();
    assert!(head.head.size > uuids.receipt.serial);
    drop(gw);
    drop(runtime);
}
