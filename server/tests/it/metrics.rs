//! The metrics endpoint under real traffic: every series in docs/metrics.md is exposed with its
//! type and labels (and nothing undocumented is), the counters match what clients received and
//! what ingest refused, /readyz follows the pool and ingest activity, and the binary logs one
//! JSON line per call and refuses a taken metrics port clearly.

use std::net::SocketAddr;
use std::time::Duration;

use entropy_collector::signer::ChunkSigner;
use entropy_gateway::Gateway;
use entropy_gateway::domain::auth::{ApiKeys, digest};
use entropy_gateway::domain::ingest::keys::MacKeys;
use entropy_gateway::process::config::GatewayConfig;
use entropy_gateway::process::fd_limit;
use entropy_proto::v1::{
    GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetStatusRequest, GetUsageRequest,
    GetUuidsRequest, StreamRandomRequest,
};
use entropy_testkit::docs_table::check_documented;
use entropy_testkit::exposition::Exposition;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tonic::Code;

use super::support::{
    API_KEY, MAC_KEY, MAC_KEY_ID, TestGateway, assert_status, authed, test_config, with_key,
};

const STATUS_ONLY_KEY: &str = "status-only-secret-0123456789";
const SLOW_KEY: &str = "slow-secret-0123456789abcdef";

/// A gateway with a metrics listener and three keys: `alice` (the test key, no limits),
/// `watcher` (status:read only) and `slow` (one request per second).
pub(super) async fn start(edit: impl FnOnce(&mut GatewayConfig)) -> (TestGateway, SocketAddr) {
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = |name: &str, secret: &str, extra: &str| {
        format!(
            "[[key]]\nname = \"{name}\"\nsha256 = \"{}\"\n{extra}\n",
            hex::encode(digest(secret.as_bytes()))
        )
    };
    let file = dir.path().join("keys.toml");
    let text = [
        entry("alice", API_KEY, ""),
        entry("watcher", STATUS_ONLY_KEY, "scopes = [\"status:read\"]"),
        entry("slow", SLOW_KEY, "requests_per_second = 1"),
    ]
    .concat();
    std::fs::write(&file, text).expect("write keys");
    let keys = ApiKeys::load_file(&file).expect("keys");

    let public = TcpListener::bind("127.0.0.1:0").await.expect("bind public");
    let ingest = TcpListener::bind("127.0.0.1:0").await.expect("bind ingest");
    let metrics = TcpListener::bind("127.0.0.1:0").await.expect("bind metrics");
    let addrs = (public.local_addr().unwrap(), ingest.local_addr().unwrap());
    let metrics_addr = metrics.local_addr().unwrap();
    let mut mac_keys = MacKeys::default();
    mac_keys.insert(MAC_KEY_ID, MAC_KEY.to_vec()).expect("mac key");
    let config = fd_limit::prepare(test_config(edit)).expect("descriptors for the test config");
    let gateway_id = config.gateway_id.clone();
    let gateway = Gateway::new(config, keys, mac_keys).with_metrics_listener(metrics);
    let accepts_from_unix_ms = gateway.accepts_chunks_from_unix_ms();
    let shutdown = CancellationToken::new();
    let cuts = gateway.shutdown_cuts();
    let budget = gateway.budget().clone();
    let handle = tokio::spawn(gateway.serve(public, ingest, shutdown.clone()));
    let signer = ChunkSigner::new("test-collector", MAC_KEY_ID, MAC_KEY.to_vec())
        .expect("signer")
        .for_gateway(&gateway_id);
    // Chunks are accepted from the start plus max_future_skew_ms (100 ms in tests) on.
    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
    let t = TestGateway {
        public: addrs.0,
        ingest: addrs.1,
        shutdown,
        handle,
        signer,
        gateway_id,
        cuts,
        budget,
        accepts_from_unix_ms,
    };
    (t, metrics_addr)
}

pub(super) use entropy_testkit::http::get as http_get;

pub(super) async fn scrape(addr: SocketAddr) -> Exposition {
    let (code, body) = http_get(addr, "/metrics").await;
    assert_eq!(code, 200);
    Exposition::parse(&body).expect("valid exposition")
}

/// Checks the docs table of `heading` against `exposed`, both ways.
fn check_docs_match(exposed: &Exposition, heading: &str, prefix: &str) {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md"))
        .expect("docs/metrics.md");
    check_documented(exposed, &docs, heading, prefix)
        .unwrap_or_else(|e| panic!("docs/metrics.md: {e}"));
}

#[tokio::test]
async fn metrics_follow_traffic_and_match_the_docs() {
    let (mut t, metrics) = start(|_| {}).await;
    let (code, body) = http_get(metrics, "/readyz").await;
    assert_eq!(code, 503, "an empty pool is not ready");
    assert!(body.contains("pool_low_watermark_bytes"), "{body}");
    assert_eq!(http_get(metrics, "/healthz").await, (200, "ok\n".to_owned()));

    t.feed(2 << 20, 64 << 10, |i| i as u8).await;
    let mut client = t.client().await;

    // Successful calls: count what the client receives.
    let mut received = std::collections::BTreeMap::<&str, u64>::new();
    for n in [32u32, 1000, 4096] {
        let r = client
            .get_random(authed(GetRandomRequest {
                num_bytes: n,
                encoding: 0,
                ..Default::default()
            }))
            .await;
        *received.entry("GetRandom").or_default() += r.expect("ok").into_inner().data.len() as u64;
    }
    let mut stream = client
        .stream_random(authed(StreamRandomRequest {
            chunk_bytes: 4096,
            total_bytes: 40_000,
            ..Default::default()
        }))
        .await
        .expect("stream")
        .into_inner();
    while let Some(msg) = stream.message().await.expect("message") {
        *received.entry("StreamRandom").or_default() += msg.data.len() as u64;
    }
    let ints = client
        .get_integers(authed(GetIntegersRequest {
            min: 0,
            max: 255,
            count: 100,
            ..Default::default()
        }))
        .await
        .expect("ints");
    // A full byte range needs one byte per value and rejects none.
    received.insert("GetIntegers", ints.into_inner().values.len() as u64);
    let floats = client
        .get_floats(authed(GetFloatsRequest { count: 10, ..Default::default() }))
        .await
        .expect("floats");
    received.insert("GetFloats", floats.into_inner().values.len() as u64 * 8);
    let uuids = client
        .get_uuids(authed(GetUuidsRequest { count: 5, ..Default::default() }))
        .await
        .expect("uuids");
    received.insert("GetUuids", uuids.into_inner().uuids.len() as u64 * 16);

    client.get_usage(authed(GetUsageRequest {})).await.expect("usage");

    let status = t.status().await;
    let e = scrape(metrics).await;
    let total: u64 = received.values().sum();
    for (method, bytes) in &received {
        let served = e.sum("entropy_gateway_served_bytes_total", &[("method", method)]);
        assert_eq!(served, *bytes as f64, "served bytes of {method}");
    }
    assert_eq!(e.sum("entropy_gateway_served_bytes_total", &[]), status.served_bytes_total as f64);
    assert_eq!(e.sum("entropy_gateway_served_bytes_total", &[]), total as f64);
    assert_eq!(e.sum("entropy_gateway_key_served_bytes_total", &[("key", "alice")]), total as f64);
    assert_eq!(e.sum("entropy_gateway_pool_bytes", &[]), status.pool_bytes as f64);
    assert_eq!(e.sum("entropy_gateway_pool_capacity_bytes", &[]), (4 << 20) as f64);
    assert_eq!(e.sum("entropy_gateway_ready", &[]), 1.0);
    assert_eq!(
        e.sum("entropy_gateway_chunks_accepted_total", &[("collector", "test-collector")]),
        32.0
    );
    assert_eq!(e.sum("entropy_gateway_ingested_bytes_total", &[]), (2 << 20) as f64);
    let ok_calls = |method| {
        e.sum("entropy_gateway_rpc_duration_seconds_count", &[("method", method), ("code", "OK")])
    };
    assert_eq!(ok_calls("GetRandom"), 3.0);
    assert_eq!(ok_calls("StreamRandom"), 1.0);
    assert_eq!(ok_calls("GetStatus"), 1.0);
    assert_eq!(ok_calls("GetUsage"), 1.0);
    assert_eq!(
        e.sum("entropy_gateway_key_requests_total", &[("key", "alice"), ("method", "GetUsage")]),
        1.0,
        "counted for its key like any call"
    );
    assert_eq!(e.sum("entropy_gateway_served_bytes_total", &[("method", "GetUsage")]), 0.0);
    assert_eq!(e.sum("entropy_gateway_streams_opened_total", &[]), 1.0);
    assert_eq!(e.sum("entropy_gateway_streams_active", &[]), 0.0);
    assert_eq!(
        e.sum("entropy_gateway_key_requests_total", &[("key", "alice"), ("method", "GetRandom")]),
        3.0
    );
    assert_eq!(http_get(metrics, "/readyz").await, (200, "ready\n".to_owned()));
    assert!(status.serving || !status.not_serving_reason.is_empty(), "a reason when not serving");
    assert!(!status.serving || status.not_serving_reason.is_empty(), "none when serving");

    // Refusals: auth (three reasons), quota, invalid argument, forged and replayed chunks.
    let none = client
        .get_random(tonic::Request::new(GetRandomRequest { num_bytes: 8, ..Default::default() }));
    assert_status(none.await, Code::Unauthenticated, &["missing"]);
    let bad = client.get_random(with_key(
        "no-such-key",
        GetRandomRequest { num_bytes: 8, ..Default::default() },
    ));
    assert_status(bad.await, Code::Unauthenticated, &["invalid"]);
    let scope = client.get_random(with_key(
        STATUS_ONLY_KEY,
        GetRandomRequest { num_bytes: 8, ..Default::default() },
    ));
    assert_status(scope.await, Code::PermissionDenied, &["scope"]);
    client.get_status(with_key(SLOW_KEY, GetStatusRequest {})).await.expect("first slow call");
    let again = client.get_status(with_key(SLOW_KEY, GetStatusRequest {})).await;
    assert_status(again, Code::ResourceExhausted, &["rate"]);
    let zero = client
        .get_random(authed(GetRandomRequest { num_bytes: 0, encoding: 0, ..Default::default() }))
        .await;
    assert_status(zero, Code::InvalidArgument, &["num_bytes"]);

    let mut ingest = t.ingest_client().await;
    let mut forged = t.sign(vec![7; 500]);
    forged.mac[0] ^= 1;
    assert_status(ingest.publish(forged).await, Code::Unauthenticated, &[]);
    let good = t.sign(vec![9; 300]);
    ingest.publish(good.clone()).await.expect("stored");
    assert_status(ingest.publish(good).await, Code::AlreadyExists, &[]);

    let e = scrape(metrics).await;
    for reason in ["missing", "invalid", "scope"] {
        let n = e.sum("entropy_gateway_auth_failures_total", &[("reason", reason)]);
        assert_eq!(n, 1.0, "auth failures {reason}");
    }
    let unauthenticated = e.sum(
        "entropy_gateway_rpc_duration_seconds_count",
        &[("method", "GetRandom"), ("code", "UNAUTHENTICATED")],
    );
    assert_eq!(unauthenticated, 2.0, "refused before the handler, still counted by method");
    assert_eq!(
        e.sum("entropy_gateway_quota_rejections_total", &[("key", "slow"), ("limit", "requests")]),
        1.0
    );
    assert_eq!(
        e.sum(
            "entropy_gateway_rpc_duration_seconds_count",
            &[("method", "GetRandom"), ("code", "INVALID_ARGUMENT")]
        ),
        1.0
    );
    let rejected = |reason| e.sum("entropy_gateway_chunks_rejected_total", &[("reason", reason)]);
    assert_eq!((rejected("bad_mac"), rejected("replay"), rejected("stale")), (1.0, 1.0, 0.0));
    assert_eq!(e.sum("entropy_gateway_rejected_bytes_total", &[("reason", "bad_mac")]), 500.0);
    assert_eq!(e.sum("entropy_gateway_rejected_bytes_total", &[("reason", "replay")]), 300.0);
    // Bytes of refused calls were never served.
    assert_eq!(e.sum("entropy_gateway_served_bytes_total", &[]), total as f64);

    assert_eq!(
        e.types.get("entropy_gateway_rpc_duration_seconds").map(|k| k.as_str()),
        Some("histogram")
    );
    check_docs_match(&e, "## Gateway series", "entropy_gateway_");
    t.stop().await;
}

#[tokio::test]
async fn readiness_drops_when_ingest_goes_quiet_and_returns_with_a_chunk() {
    let (mut t, metrics) = start(|c| c.ingest_stale_after_ms = 300).await;
    t.feed(64 << 10, 16 << 10, |i| i as u8).await;
    let ready = async |want: u16| {
        for _ in 0..200 {
            let (code, body) = http_get(metrics, "/readyz").await;
            if code == want {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("/readyz never answered {want}");
    };
    ready(200).await;
    let body = ready(503).await;
    assert!(body.contains("no chunk from any collector"), "{body}");
    assert!(body.contains("ingest_stale_after_ms"), "{body}");
    // GetStatus says the same, once grpc.health has caught up.
    let mut status = t.status().await;
    for _ in 0..100 {
        if !status.serving {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        status = t.status().await;
    }
    assert!(!status.serving);
    assert!(status.not_serving_reason.contains("no chunk from any collector"), "{status:?}");
    let mut ingest = t.ingest_client().await;
    ingest.publish(t.sign(vec![1; 1024])).await.expect("stored");
    ready(200).await;
    t.stop().await;
}

#[test]
fn the_binary_logs_json_per_call_and_names_a_taken_metrics_port() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let bin = env!("CARGO_BIN_EXE_entropy-gateway");
    let mut first = Command::new(bin)
        .args(["--dev", "--listen-addr", "127.0.0.1:0", "--metrics-listen-addr", "127.0.0.1:0"])
        .args(["--log-format", "json", "--log-filter", "info,entropy_gateway=debug"])
        .env("ENTROPY_DEV_API_KEY", API_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the gateway");
    let mut lines = BufReader::new(first.stdout.take().expect("stdout")).lines();
    let (mut public, mut metrics) = (None, None);
    while public.is_none() || metrics.is_none() {
        let line = lines.next().expect("banner line").expect("utf-8");
        if let Some(addr) = line.strip_prefix("Listening: ") {
            public = addr.split_whitespace().next().map(str::to_owned);
        }
        if let Some(rest) = line.strip_prefix("Metrics:   curl http://") {
            metrics = rest.split('/').next().map(str::to_owned);
        }
    }
    let (public, metrics) = (public.expect("public"), metrics.expect("metrics"));

    // A second gateway on the same metrics port fails at start, naming the key.
    let second = Command::new(bin)
        .args(["--dev", "--listen-addr", "127.0.0.1:0", "--metrics-listen-addr", &metrics])
        .env("ENTROPY_DEV_API_KEY", API_KEY)
        .output()
        .expect("run a second gateway");
    assert_eq!(second.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("cannot bind metrics_listen_addr"), "{stderr}");

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let channel = tonic::transport::Channel::from_shared(format!("http://{public}"))
            .unwrap()
            .connect()
            .await
            .expect("connect");
        let mut client =
            entropy_proto::v1::entropy_service_client::EntropyServiceClient::new(channel);
        let mut ok = false;
        for _ in 0..100 {
            let r = client
                .get_random(authed(GetRandomRequest {
                    num_bytes: 16,
                    encoding: 0,
                    ..Default::default()
                }))
                .await;
            if r.is_ok() {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(ok, "dev gateway serves");
        let r = client.get_random(with_key(
            "wrong-key",
            GetRandomRequest { num_bytes: 16, encoding: 0, ..Default::default() },
        ));
        assert_status(r.await, Code::Unauthenticated, &[]);
        let body = http_get(metrics.parse().unwrap(), "/metrics").await.1;
        let e = Exposition::parse(&body).expect("exposition");
        assert!(e.sum("entropy_gateway_served_bytes_total", &[("method", "GetRandom")]) >= 16.0);
    });
    first.kill().expect("stop");
    let output = first.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in stderr.lines() {
        assert!(line.starts_with('{') && line.ends_with('}'), "not a JSON object: {line}");
    }
    let has = |words: &[&str]| stderr.lines().any(|l| words.iter().all(|w| l.contains(w)));
    assert!(
        has(&[
            r#""level":"DEBUG""#,
            r#""method":"GetRandom""#,
            r#""key":"dev""#,
            r#""bytes":16"#,
            r#""code":"OK""#,
            r#""duration_us":"#
        ]),
        "no call line in {stderr}"
    );
    assert!(
        has(&[r#""level":"INFO""#, r#""reason":"auth_invalid""#, r#""method":"GetRandom""#]),
        "no refusal line in {stderr}"
    );
    assert!(!stderr.contains(API_KEY), "the secret never appears in logs");
}

#[tokio::test]
async fn connection_gauges_follow_opens_closes_evictions_and_refusals() {
    let (t, metrics) = start(|c| c.max_connections = 2).await;
    let public = [("listener", "public")];
    let gauge = |e: &Exposition| e.sum("entropy_gateway_connections_active", &public);
    let refused = |e: &Exposition| e.sum("entropy_gateway_connections_refused_total", &public);
    let evicted = |e: &Exposition| e.sum("entropy_gateway_connections_evicted_total", &public);
    // Polls until `want` holds (the gateway accepts on its own task).
    async fn until(metrics: SocketAddr, want: impl Fn(&Exposition) -> bool) -> Exposition {
        for _ in 0..100 {
            let e = scrape(metrics).await;
            if want(&e) {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        scrape(metrics).await
    }
    assert_eq!(gauge(&scrape(metrics).await), 0.0);
    // One connection that authenticated (proven) and one that never says anything.
    let mut proven = t.client().await;
    proven.get_status(with_key(API_KEY, GetStatusRequest {})).await.expect("status");
    let silent = TcpStream::connect(t.public).await.unwrap();
    let e = until(metrics, |e| gauge(e) == 2.0).await;
    assert_eq!((gauge(&e), refused(&e), evicted(&e)), (2.0, 0.0, 0.0), "two admitted");

    // A third takes the silent one's place: the silent one is closed, never the proven one.
    // (It proves another key, so neither key holds more than its share of the places below.)
    let mut second = t.client().await;
    second.get_status(with_key(SLOW_KEY, GetStatusRequest {})).await.expect("admitted");
    let e = until(metrics, |e| evicted(e) == 1.0).await;
    assert_eq!((gauge(&e), refused(&e), evicted(&e)), (2.0, 0.0, 1.0), "the silent one gave way");
    // The gateway's SETTINGS may arrive first; then the end of the stream.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        let (mut silent, mut sink) = (silent, Vec::new());
        tokio::io::AsyncReadExt::read_to_end(&mut silent, &mut sink).await
    })
    .await;
    assert!(closed.is_ok(), "the evicted connection was closed");
    proven.get_status(with_key(API_KEY, GetStatusRequest {})).await.expect("still served");

    // Both places held by proven connections with a call in progress: a fourth is refused at
    // once.
    // (The pool is empty: each call waits for entropy.)
    let calls: Vec<_> = [&proven, &second]
        .into_iter()
        .map(|client| {
            let mut client = client.clone();
            tokio::spawn(async move {
                let request = GetRandomRequest { num_bytes: 32, ..Default::default() };
                client.get_random(with_key(API_KEY, request)).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fourth = TcpStream::connect(t.public).await.unwrap();
    let e = until(metrics, |e| refused(e) == 1.0).await;
    assert_eq!((gauge(&e), refused(&e)), (2.0, 1.0), "the fourth is refused, not counted as open");
    // Once their calls end, the one without a call the longest gives way to a newcomer: a
    // client with a key cannot hold places it does not use.
    for call in calls {
        call.abort();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fifth = TcpStream::connect(t.public).await.unwrap();
    let e = until(metrics, |e| evicted(e) == 2.0).await;
    assert_eq!((gauge(&e), refused(&e), evicted(&e)), (2.0, 1.0, 2.0), "an idle one gave way");
    drop((proven, second, fourth, fifth));
    let e = until(metrics, |e| gauge(e) == 0.0).await;
    assert_eq!(gauge(&e), 0.0, "closed connections leave the gauge");
    t.stop().await;
}
