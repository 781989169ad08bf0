//! The original QRNG-DD gateway's REST routes: off by default (the answer `/api/*` had
//! before), and when on, every route and encoding in the original's shapes over HTTP/1.1 and
//! HTTP/2, through the same keys, scopes, quotas and pool as gRPC; every bad input refused with
//! the parameter and its bound, a key in the URL refused with nothing drawn.

use std::collections::HashSet;
use std::net::SocketAddr;

use base64::Engine as _;
use entropy_proto::v1::{GetRandomRequest, GetStatusRequest};
use tokio::net::TcpStream;

use super::support::{
    API_KEY, TestGateway, keys_named, start, start_with_keys, test_config, with_key,
};
use super::web::{Http1, exchange, parse};

/// Keys of these tests: every scope by default, status only, and two requests a second.
const KEY: &str = "rest-reader";
const WATCHER: &str = "rest-watcher";
const SLOW: &str = "rest-slow";
const TESTER: &str = "rest-tester";

/// Which HTTP a request goes over.
#[derive(Debug, Clone, Copy)]
enum Via {
    Http1,
    Http2,
}

/// A REST answer: status, headers (lowercase names), body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("utf-8 body")
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("JSON body ({e}): {self:?}"))
    }

    /// The JSON error's message, after checking its shape and status.
    fn error(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(self.header("content-type"), Some("application/json"), "{self:?}");
        let v = self.json();
        assert_eq!(v["error"]["status"], status, "{v}");
        v["error"]["message"].as_str().expect("a message").to_owned()
    }
}

impl From<Http1> for Answer {
    fn from(r: Http1) -> Self {
        Self { status: r.status, headers: r.headers, body: r.body }
    }
}

/// `GET path` with `headers` (`name: value` lines).
async fn get(addr: SocketAddr, via: Via, path: &str, headers: &[(&str, &str)]) -> Answer {
    match via {
        Via::Http1 => {
            let lines: String = headers.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
            parse(&exchange(addr, &format!("GET {path} HTTP/1.1\r\n{lines}"), b"").await).into()
        }
        Via::Http2 => h2_get(addr, path, headers).await,
    }
}

async fn h2_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Answer {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    let mut request = http::Request::get(format!("http://{addr}{path}"));
    for (n, v) in headers {
        request = request.header(*n, *v);
    }
    let mut client = client.ready().await.expect("ready");
    let (response, _) = client.send_request(request.body(()).unwrap(), true).expect("send");
    let response = response.await.expect("response");
    let (parts, mut body) = response.into_parts();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("body");
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let mut headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("?").to_owned()))
        .collect();
    if let Ok(Some(trailers)) = body.trailers().await {
        headers.extend(
            trailers.iter().map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned())),
        );
    }
    Answer { status: parts.status.as_u16(), headers, body: bytes }
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

/// A gateway with the REST routes on (and `edit`), this file's keys, and 4 MiB of bytes whose
/// every aligned 8-byte word is its own index (so no two draws can share a word unnoticed).
async fn rest_gateway(
    edit: impl FnOnce(&mut entropy_gateway::process::config::GatewayConfig),
) -> TestGateway {
    let config = test_config(|c| {
        c.rest_enabled = true;
        edit(c);
    });
    let keys = keys_named(&[
        (KEY, ""),
        (WATCHER, "scopes = [\"status:read\"]"),
        (SLOW, "requests_per_second = 2"),
        (TESTER, "scopes = [\"quality:check\"]"),
    ]);
    let mut gw = start_with_keys(config, keys).await;
    gw.feed(4 << 20, 256 << 10, word_byte).await;
    gw
}

/// Byte `i` of the fed stream: the little-endian index of its 8-byte word.
fn word_byte(i: usize) -> u8 {
    ((i / 8) as u64).to_le_bytes()[i % 8]
}

async fn served(gw: &TestGateway) -> u64 {
    let mut client = gw.client().await;
    let status = client.get_status(with_key(KEY, GetStatusRequest {})).await.expect("status");
    status.into_inner().served_bytes_total
}

#[tokio::test]
async fn off_by_default_api_gets_the_answer_it_had_before() {
    let config = test_config(|_| {});
    assert!(!config.rest_enabled, "off by default");
    let mut gw = start(config).await;
    gw.feed(1 << 20, 256 << 10, word_byte).await;
    // HTTP/2: tonic's answer to a path it does not serve (gRPC UNIMPLEMENTED), as before.
    let r = h2_get(gw.public, "/api/random?bytes=32", &[("authorization", &bearer(API_KEY))]).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("grpc-status"), Some("12"), "{r:?}");
    assert!(r.body.is_empty());
    let r = h2_get(gw.public, "/health", &[]).await;
    assert_eq!(r.header("grpc-status"), Some("12"), "{r:?}");
    // HTTP/1.1 is not spoken at all on a plaintext listener without gRPC-Web or REST.
    let raw = exchange(gw.public, "GET /api/random?bytes=32 HTTP/1.1\r\n", b"").await;
    assert!(!raw.starts_with(b"HTTP/1.1 2"), "{:?}", String::from_utf8_lossy(&raw));
    assert_eq!(gw.status().await.served_bytes_total, 0);
    gw.stop().await;

    // With gRPC-Web on (HTTP/1.1 for POST) and REST off, a GET is still 405, no body.
    let mut gw = start(test_config(|c| c.grpc_web_enabled = true)).await;
    gw.feed(1 << 20, 256 << 10, word_byte).await;
    let r = parse(&exchange(gw.public, "GET /api/random?bytes=32 HTTP/1.1\r\n", b"").await);
    assert_eq!(r.status, 405, "{r:?}");
    assert!(r.body.is_empty());
    assert_eq!(gw.status().await.served_bytes_total, 0);
    gw.stop().await;
}

#[tokio::test]
async fn every_route_and_encoding_in_the_original_shapes_over_http1_and_http2() {
    let gw = rest_gateway(|_| {}).await;
    let auth = bearer(KEY);
    for via in [Via::Http1, Via::Http2] {
        let key = [("authorization", auth.as_str())];
        let before = served(&gw).await;

        let r = get(gw.public, via, "/api/random?bytes=32", &key).await;
        assert_eq!(r.status, 200, "{via:?} {r:?}");
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(r.header("cache-control"), Some("no-store"));
        assert_eq!(r.body.len(), 64);
        assert!(r.text().bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));

        let r = get(gw.public, via, "/api/random?bytes=33&encoding=base64", &key).await;
        assert_eq!(r.status, 200, "{via:?} {r:?}");
        let decoded = base64::engine::general_purpose::STANDARD.decode(&r.body).expect("base64");
        assert_eq!(decoded.len(), 33);

        // The key may come as X-API-Key too; binary is the raw bytes.
        let r =
            get(gw.public, via, "/api/random?bytes=100000&encoding=binary", &[("x-api-key", KEY)])
                .await;
        assert_eq!(r.status, 200, "{via:?} {r:?}");
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert_eq!(r.body.len(), 100_000);
        // Each byte drawn counts as served once its answer has been sent.
        assert_eq!(served(&gw).await, before + 32 + 33 + 100_000, "{via:?}");

        let r = get(gw.public, via, "/api/integers?count=50&min=-3&max=3", &key).await;
        assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
        let values: Vec<i64> = serde_json::from_slice(&r.body).expect("array of integers");
        assert_eq!(values.len(), 50);
        assert!(values.iter().all(|v| (-3..=3).contains(v)), "{values:?}");
        assert!(values.iter().collect::<HashSet<_>>().len() > 1, "{values:?}");
        // The defaults are the original's: 0..=100.
        let r = get(gw.public, via, "/api/integers?count=20", &key).await;
        let values: Vec<i64> = serde_json::from_slice(&r.body).expect("array of integers");
        assert!(values.iter().all(|v| (0..=100).contains(v)), "{values:?}");
        // The full 64-bit range, which crashed the original.
        let full = format!("/api/integers?count=4&min={}&max={}", i64::MIN, i64::MAX);
        let r = get(gw.public, via, &full, &key).await;
        assert_eq!(r.status, 200, "{r:?}");
        let values: Vec<i64> = serde_json::from_slice(&r.body).expect("array of integers");
        assert_eq!(values.len(), 4);
        let r = get(gw.public, via, "/api/integers?count=3&min=7&max=7", &key).await;
        assert_eq!(r.json(), serde_json::json!([7, 7, 7]));

        let r = get(gw.public, via, "/api/floats?count=30", &key).await;
        let values: Vec<f64> = serde_json::from_slice(&r.body).expect("array of floats");
        assert_eq!(values.len(), 30);
        assert!(values.iter().all(|v| (0.0..1.0).contains(v)), "{values:?}");

        // One UUID: bare text, as the original; more: a JSON array.
        let r = get(gw.public, via, "/api/uuid", &key).await;
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"), "{r:?}");
        let one = uuid::Uuid::parse_str(r.text()).expect("a UUID");
        assert_eq!(one.get_version_num(), 4);
        let r = get(gw.public, via, "/api/uuid?count=3", &key).await;
        let many: Vec<String> = serde_json::from_slice(&r.body).expect("array of UUIDs");
        assert_eq!(many.len(), 3);
        assert!(many.iter().all(|u| uuid::Uuid::parse_str(u).is_ok()));

        let r = get(gw.public, via, "/api/status", &key).await;
        assert_eq!(r.status, 200, "{r:?}");
        let v = r.json();
        for field in [
            "status",
            "buffer_fill_percent",
            "buffer_bytes_available",
            "last_data_received",
            "data_freshness_seconds",
            "uptime_seconds",
            "total_requests_served",
            "total_bytes_served",
            "requests_per_second",
            "warnings",
        ] {
            assert!(v.get(field).is_some(), "{field} missing from {v}");
        }
        assert_eq!(v["status"], "healthy", "{v}");
        assert!(v["last_data_received"].as_str().unwrap().ends_with('Z'), "{v}");

        // Monte Carlo pi is CheckQuality (its scope; 6 bytes a point, tested and wiped).
        let tester = bearer(TESTER);
        let path = "/api/test/monte-carlo?iterations=5000";
        let r = get(gw.public, via, path, &[("authorization", &tester)]).await;
        assert_eq!(r.status, 200, "{r:?}");
        let v = r.json();
        assert_eq!(v["iterations"], 5000, "{v}");
        // The fed bytes are word indices, far from uniform: the estimate shows it.
        let estimate = v["estimated_pi"].as_f64().unwrap();
        assert!((0.0..=4.0).contains(&estimate), "{v}");
        let error = v["error"].as_f64().unwrap();
        assert!((error - (estimate - std::f64::consts::PI).abs()).abs() < 1e-9, "{v}");
        assert!(v["quantum_vs_pseudo"]["pseudo_error"].is_number(), "{v}");
        assert!(v["convergence_rate"].is_string() && v["quality_assessment"].is_string(), "{v}");
        let r = get(gw.public, via, path, &key).await;
        assert!(r.error(403).contains("lacks the quality:check scope"), "{r:?}");

        // /health needs no key, as the gRPC health service.
        let r = get(gw.public, via, "/health", &[]).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.json()["status"], "healthy");
    }
    gw.stop().await;
}

#[tokio::test]
async fn every_bad_input_is_refused_naming_the_parameter_and_its_bound_and_draws_nothing() {
    let gw = rest_gateway(|_| {}).await;
    let auth = bearer(KEY);
    let key = [("authorization", auth.as_str())];
    let max64 = i64::MAX.to_string();
    let over = format!("{max64}0");
    for via in [Via::Http1, Via::Http2] {
        for (path, field, says) in [
            ("/api/random", "bytes", "query parameter bytes is missing; it must be 1..=1048576"),
            ("/api/random?bytes=0", "bytes", "bytes is 0, must be 1..=1048576"),
            ("/api/random?bytes=1048577", "bytes", "bytes is 1048577, must be 1..=1048576"),
            ("/api/random?bytes=4294967296", "bytes", "must be 1..=1048576"),
            ("/api/random?bytes=-1", "bytes", "must be a decimal integer in 1..=1048576"),
            ("/api/random?bytes=12abc", "bytes", "must be a decimal integer"),
            ("/api/random?bytes=3.5", "bytes", "must be a decimal integer"),
            ("/api/random?bytes=32&encoding=base32", "encoding", "must be hex, base64 or binary"),
            ("/api/random?bytes=32&bytes=64", "bytes", "given twice"),
            ("/api/random?bytes=32&format=hex", "format", "accepted: bytes, encoding"),
            ("/api/integers?count=1&min=10&max=9", "min", "min (10) must be <= max (9)"),
            (
                "/api/integers?count=1&min=-9223372036854775809",
                "min",
                "-9223372036854775808..=9223372036854775807",
            ),
            (&format!("/api/integers?count=1&max={over}"), "max", "decimal integer in"),
            ("/api/integers?count=1&max=1e9", "max", "decimal integer in"),
            ("/api/integers?min=1&max=2", "count", "missing; it must be 1..=10000"),
            ("/api/integers?count=0", "count", "count is 0, must be 1..=10000"),
            ("/api/integers?count=10001", "count", "count is 10001, must be 1..=10000"),
            ("/api/floats?count=10001", "count", "must be 1..=10000"),
            ("/api/floats?count=", "count", "decimal integer in 1..=10000"),
            ("/api/uuid?count=0", "count", "count is 0, must be 1..=10000"),
            ("/api/uuid?count=100000", "count", "must be 1..=10000"),
            ("/api/test/monte-carlo?iterations=1000000", "iterations", "must be 417..=699050"),
        ] {
            let r = get(gw.public, via, path, &key).await;
            let message = r.error(400);
            assert!(message.contains(says), "{via:?} {path}: {message}");
            assert_eq!(r.json()["error"]["field"], field, "{path}");
            assert_eq!(r.json()["error"]["code"], "INVALID_ARGUMENT");
        }
        let r = get(gw.public, via, "/api/nothing", &key).await;
        assert!(r.error(404).contains("/api/random"), "{r:?}");
    }
    // A POST to a REST route (HTTP/2; HTTP/1.1 POST is gRPC-Web's, off here) is 405.
    let r = parse(&exchange(gw.public, "POST /api/random?bytes=1 HTTP/1.1\r\n", b"").await);
    assert_eq!(r.status, 405, "{r:?}");
    assert_eq!(served(&gw).await, 0, "nothing was drawn");
    gw.stop().await;
}

#[tokio::test]
async fn a_key_in_the_url_is_refused_and_draws_nothing() {
    let gw = rest_gateway(|_| {}).await;
    for via in [Via::Http1, Via::Http2] {
        for path in [
            format!("/api/random?bytes=32&api_key={KEY}"),
            format!("/api/random?api_key={KEY}&bytes=32&encoding=binary"),
            format!("/api/integers?count=3&key={KEY}"),
            format!("/api/uuid?apiKey={KEY}"),
            format!("/api/status?token={KEY}"),
            format!("/health?api_key={KEY}"),
            "/api/random?bytes=32&api_key=not-a-key".to_owned(),
        ] {
            // Refused even with a valid key in the header as well.
            let r = get(gw.public, via, &path, &[("authorization", &bearer(KEY))]).await;
            let message = r.error(400);
            assert!(message.contains("never in the URL"), "{message}");
            assert!(message.contains("access logs, proxy logs and browser history"), "{message}");
            assert!(message.contains("Nothing was drawn"), "{message}");
        }
    }
    assert_eq!(served(&gw).await, 0, "nothing was drawn");
    gw.stop().await;
}

#[tokio::test]
async fn keys_scopes_and_quotas_are_the_grpc_ones() {
    let gw = rest_gateway(|_| {}).await;
    for via in [Via::Http1, Via::Http2] {
        let r = get(gw.public, via, "/api/random?bytes=8", &[]).await;
        assert!(r.error(401).contains("missing API key"), "{r:?}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert_eq!(r.json()["error"]["code"], "UNAUTHENTICATED");
        let r =
            get(gw.public, via, "/api/random?bytes=8", &[("authorization", "Bearer wrong")]).await;
        assert!(r.error(401).contains("invalid API key"), "{r:?}");
        let r = get(gw.public, via, "/api/uuid", &[("authorization", "Basic cmVzdA==")]).await;
        assert!(r.error(401).contains("Bearer <key>"), "{r:?}");
        let watcher = bearer(WATCHER);
        let r = get(gw.public, via, "/api/floats?count=1", &[("authorization", &watcher)]).await;
        let message = r.error(403);
        assert!(message.contains("lacks the entropy:read scope"), "{message}");
        assert_eq!(r.json()["error"]["code"], "PERMISSION_DENIED");
        let r = get(gw.public, via, "/api/status", &[("authorization", &watcher)]).await;
        assert_eq!(r.status, 200, "{r:?}");
    }
    assert_eq!(served(&gw).await, 0, "nothing was drawn");

    // Two requests a second for SLOW: the third is 429 with the wait in both headers.
    let slow = bearer(SLOW);
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(
            get(gw.public, Via::Http1, "/api/random?bytes=8", &[("authorization", &slow)]).await,
        );
    }
    assert_eq!(seen[0].status, 200);
    let refused = seen.iter().find(|r| r.status == 429).expect("a 429 within three calls");
    let message = refused.error(429);
    assert!(message.contains("request rate limit of 2/s reached"), "{message}");
    let ms: u64 = refused.header("retry-after-ms").expect("retry-after-ms").parse().unwrap();
    let secs: u64 = refused.header("retry-after").expect("retry-after").parse().unwrap();
    assert!(ms > 0 && secs == ms.div_ceil(1000).max(1), "{ms} ms, {secs} s");
    gw.stop().await;
}

#[tokio::test]
async fn rest_and_grpc_at_once_never_share_a_byte() {
    let gw = rest_gateway(|_| {}).await;
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let addr = gw.public;
        let mut grpc = gw.client().await;
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for i in 0..12u64 {
                let n = 8 * (1 + (t * 13 + i * 7) % 512) as u32;
                if t % 3 == 0 {
                    let request = GetRandomRequest { num_bytes: n, ..Default::default() };
                    let reply = grpc.get_random(with_key(KEY, request)).await.expect("gRPC draw");
                    got.extend_from_slice(&reply.into_inner().data);
                } else {
                    let via = if t % 3 == 1 { Via::Http1 } else { Via::Http2 };
                    let path = format!("/api/random?bytes={n}&encoding=binary");
                    let r = get(addr, via, &path, &[("authorization", &bearer(KEY))]).await;
                    assert_eq!(r.status, 200, "{r:?}");
                    assert_eq!(r.body.len(), n as usize);
                    got.extend_from_slice(&r.body);
                }
            }
            got
        }));
    }
    let mut words = HashSet::new();
    let mut total = 0u64;
    for task in tasks {
        let got = task.await.expect("task");
        total += got.len() as u64;
        for word in got.chunks_exact(8) {
            assert!(words.insert(word.to_vec()), "a word was served twice: {word:?}");
        }
    }
    assert_eq!(served(&gw).await, total, "every byte sent counts as served, once");
    gw.stop().await;
}
