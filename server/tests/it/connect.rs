//! The Connect protocol on the public listener: off by default; when on, unary calls in JSON and
//! binary and server streams with their end-of-stream message, over HTTP/1.1 and HTTP/2,
//! plaintext and TLS, through the same keys, scopes, quotas and delivery accounting as gRPC,
//! every error with Connect's code, its HTTP status and gRPC's own message.
//!
//! The requests are sent by an HTTP client (reqwest), as curl or any HTTP library sends them.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use entropy_gateway::process::config::GatewayConfig;
use entropy_gateway::process::devcerts;
use entropy_gateway::process::server::ListenerTls;
use entropy_gateway::transport::tls::{TlsFiles, server_config};
use entropy_proto::v1::{
    CheckQualityRequest, GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetRandomResponse,
    GetStatusRequest, GetUuidsRequest, StreamRandomRequest, StreamRandomResponse,
};
use futures_util::StreamExt as _;
use prost::Message;
use prost::bytes::Bytes;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use tokio::net::TcpListener;

use super::support::{
    API_KEY, TestGateway, keys_named, start, start_with_keys, start_with_tls, test_config, with_key,
};

const KEY: &str = "connect";

/// Connect on, keys `connect` (every scope but feed and DRBG), `reader` (entropy:read only),
/// `watcher` (status:read only), `slow` (2 requests a second), and `pool_bytes` in the pool.
async fn gateway(pool_bytes: usize, edit: impl FnOnce(&mut GatewayConfig)) -> TestGateway {
    let keys = keys_named(&[
        (API_KEY, ""),
        (KEY, r#"scopes = ["entropy:read", "status:read", "quality:check"]"#),
        ("reader", r#"scopes = ["entropy:read"]"#),
        ("watcher", r#"scopes = ["status:read"]"#),
        (
            "slow",
            r#"scopes = ["entropy:read", "status:read"]
requests_per_second = 2"#,
        ),
    ]);
    let config = test_config(|c| {
        c.connect_enabled = true;
        c.pool_capacity_bytes = 8 << 20;
        edit(c);
    });
    let mut gw = start_with_keys(config, keys).await;
    if pool_bytes > 0 {
        gw.feed(pool_bytes, 256 << 10, |i| (i * 7 + i / 251) as u8).await;
    }
    gw
}

/// A TLS client config trusting `ca` (none: trusting nothing, for plaintext), offering `alpn`.
fn tls(ca: Option<&std::path::Path>, alpn: &[&[u8]]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = ca {
        let pem = std::fs::read(ca).expect("CA file");
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.expect("CA PEM")).expect("CA cert");
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

/// An HTTP client speaking HTTP/1.1 or (prior knowledge) HTTP/2 over plaintext.
fn client(http2: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder().use_preconfigured_tls(tls(None, &[]));
    let builder = if http2 { builder.http2_prior_knowledge() } else { builder.http1_only() };
    builder.build().expect("client")
}

/// A Connect call's answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    version: http::Version,
    headers: http::HeaderMap,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    /// The envelopes of a streaming answer: (flags, payload).
    fn envelopes(&self) -> Vec<(u8, Vec<u8>)> {
        let (mut out, mut rest) = (Vec::new(), &self.body[..]);
        while !rest.is_empty() {
            let len = u32::from_be_bytes(rest[1..5].try_into().expect("4 bytes")) as usize;
            out.push((rest[0], rest[5..5 + len].to_vec()));
            rest = &rest[5 + len..];
        }
        out
    }

    /// A streaming answer's end-of-stream message, which must come last and only once.
    fn end_of_stream(&self) -> serde_json::Value {
        let envelopes = self.envelopes();
        let (flags, end) = envelopes.last().expect("an end-of-stream message");
        assert_eq!(*flags, 2, "the last envelope ends the stream: {self:?}");
        assert!(envelopes[..envelopes.len() - 1].iter().all(|(f, _)| *f == 0));
        serde_json::from_slice(end).expect("end-of-stream JSON")
    }
}

/// POSTs `body` as `content_type` to `method` with `key` (none: no key header).
async fn post(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    content_type: &str,
    key: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> Answer {
    // A bare name is EntropyService's; `Service/Method` names another service's method.
    let path = if method.contains('/') {
        format!("entropy.v1.{method}")
    } else {
        format!("entropy.v1.EntropyService/{method}")
    };
    let mut request =
        http.post(format!("{base}/{path}")).header("content-type", content_type).body(body);
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let response = tokio::time::timeout(Duration::from_secs(20), request.send())
        .await
        .expect("answered (a guard against a hang, not a timing assertion)")
        .expect("an HTTP answer");
    let (status, version, headers) =
        (response.status().as_u16(), response.version(), response.headers().clone());
    let body = response.bytes().await.expect("the whole body");
    Answer { status, version, headers, body }
}

/// A streaming request's body: the message in one envelope.
fn enveloped(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The data of a JSON `GetRandomResponse` or `StreamRandomResponse`.
fn json_data(message: &serde_json::Value) -> Vec<u8> {
    let data = message["data"].as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.decode(data).expect("base64 data")
}

/// Draws over every shape of Connect call with `http`, checking each answer; returns the bytes
/// drawn.
async fn every_shape(http: &reqwest::Client, base: &str, version: http::Version) -> usize {
    // Unary JSON: the message as JSON, nothing else.
    let r =
        post(http, base, "GetRandom", "application/json", Some(KEY), r#"{"numBytes": 32}"#).await;
    assert_eq!((r.status, r.version), (200, version), "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(json_data(&r.json()).len(), 32, "{r:?}");
    let provenance = &r.json()["provenance"];
    assert!(provenance.is_object(), "the provenance travels too: {r:?}");

    // Unary binary.
    let get = GetRandomRequest { num_bytes: 48, ..Default::default() }.encode_to_vec();
    let r = post(http, base, "GetRandom", "application/proto", Some(KEY), get).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/proto"));
    assert_eq!(GetRandomResponse::decode(&r.body[..]).expect("binary reply").data.len(), 48);

    // A stream in JSON: its messages, then the end-of-stream message, empty on success.
    let stream = br#"{"chunkBytes": 16384, "totalBytes": "100000"}"#;
    let r =
        post(http, base, "StreamRandom", "application/connect+json", Some(KEY), enveloped(stream))
            .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/connect+json"));
    assert_eq!(r.end_of_stream(), serde_json::json!({}));
    let envelopes = r.envelopes();
    assert_eq!(envelopes.len(), 7 + 1, "100000 bytes in 16 KiB messages, then the end");
    let total: usize = envelopes[..7]
        .iter()
        .map(|(_, m)| json_data(&serde_json::from_slice(m).expect("JSON message")).len())
        .sum();
    assert_eq!(total, 100_000);

    // A stream in binary.
    let stream =
        StreamRandomRequest { chunk_bytes: 30_000, total_bytes: 65_536, ..Default::default() };
    let body = enveloped(&stream.encode_to_vec());
    let r = post(http, base, "StreamRandom", "application/connect+proto", Some(KEY), body).await;
    assert_eq!(r.header("content-type"), Some("application/connect+proto"));
    assert_eq!(r.end_of_stream(), serde_json::json!({}));
    let envelopes = r.envelopes();
    let sizes: Vec<usize> = envelopes[..envelopes.len() - 1]
        .iter()
        .map(|(_, m)| StreamRandomResponse::decode(&m[..]).expect("binary message").data.len())
        .collect();
    assert_eq!(sizes, [30_000, 30_000, 5_536]);

    // GetStatus with an empty body (curl -d ''): the empty request.
    let r = post(http, base, "GetStatus", "application/json", Some(KEY), "").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.json()["poolCapacityBytes"].is_string(), "64-bit numbers are strings: {r:?}");
    32 + 48 + 100_000 + 65_536
}

#[tokio::test]
async fn every_shape_works_over_http1_and_http2_and_every_byte_counts_as_served() {
    let gw = gateway(2 << 20, |_| {}).await;
    let base = format!("http://{}", gw.public);
    let mut drawn = 0;
    for (http2, version) in [(false, http::Version::HTTP_11), (true, http::Version::HTTP_2)] {
        drawn += every_shape(&client(http2), &base, version).await;
    }
    // What went out over Connect was delivered: counted served once its bytes left.
    let status = gw.status().await;
    assert_eq!(status.served_bytes_total, drawn as u64, "{status:?}");
    gw.stop().await;
}

#[tokio::test]
async fn every_shape_works_over_tls_in_http1_and_http2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let certs = devcerts::generate(dir.path(), &["localhost".into()]).expect("certs");
    let files = TlsFiles {
        cert: &certs.server_cert,
        key: &certs.server_key,
        client_ca: None,
        allow_tls12: false,
    };
    let tls_listener =
        ListenerTls { public: Some(server_config(&files).expect("TLS config")), ingest: None };
    let public = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let ingest = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let config = test_config(|c| {
        c.connect_enabled = true;
        c.pool_capacity_bytes = 8 << 20;
    });
    let mut gw = start_with_tls(config, public, ingest, tls_listener);
    gw.feed(1 << 20, 256 << 10, |i| i as u8).await;
    let base = format!("https://localhost:{}", gw.public.port());
    for (alpn, version) in
        [(&b"http/1.1"[..], http::Version::HTTP_11), (&b"h2"[..], http::Version::HTTP_2)]
    {
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls(Some(&certs.ca), &[alpn]))
            .resolve("localhost", gw.public)
            .build()
            .expect("client");
        let r =
            post(&http, &base, "GetRandom", "application/json", Some(API_KEY), "{\"numBytes\":16}")
                .await;
        assert_eq!((r.status, r.version), (200, version), "{r:?}");
        assert_eq!(json_data(&r.json()).len(), 16);
        let stream = enveloped(br#"{"chunkBytes": 1000, "totalBytes": 3000}"#);
        let r =
            post(&http, &base, "StreamRandom", "application/connect+json", Some(API_KEY), stream)
                .await;
        assert_eq!(r.end_of_stream(), serde_json::json!({}));
        assert_eq!(r.envelopes().len(), 4, "{r:?}");
    }
    gw.stop().await;
}

/// The gRPC status of `method` called natively with the protobuf `request` and `key`.
async fn grpc_status(gw: &TestGateway, method: &str, request: &[u8], key: &str) -> tonic::Status {
    let mut client = gw.client().await;
    let result = match method {
        "GetRandom" => {
            let m = GetRandomRequest::decode(request).expect("request");
            client.get_random(with_key(key, m)).await.map(drop)
        }
        "GetIntegers" => {
            let m = GetIntegersRequest::decode(request).expect("request");
            client.get_integers(with_key(key, m)).await.map(drop)
        }
        "GetFloats" => {
            let m = GetFloatsRequest::decode(request).expect("request");
            client.get_floats(with_key(key, m)).await.map(drop)
        }
        "GetUuids" => {
            let m = GetUuidsRequest::decode(request).expect("request");
            client.get_uuids(with_key(key, m)).await.map(drop)
        }
        "GetStatus" => client.get_status(with_key(key, GetStatusRequest {})).await.map(drop),
        "CheckQuality" => {
            let m = CheckQualityRequest::decode(request).expect("request");
            client.check_quality(with_key(key, m)).await.map(drop)
        }
        "StreamRandom" => {
            let m = StreamRandomRequest::decode(request).expect("request");
            match client.stream_random(with_key(key, m)).await {
                Ok(stream) => {
                    stream.into_inner().next().await.expect("a message or status").map(drop)
                }
                Err(status) => Err(status),
            }
        }
        other => panic!("no method {other}"),
    };
    result.expect_err("the call fails")
}

/// Connect's name of a gRPC code.
fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        InvalidArgument => "invalid_argument",
        Unauthenticated => "unauthenticated",
        PermissionDenied => "permission_denied",
        ResourceExhausted => "resource_exhausted",
        FailedPrecondition => "failed_precondition",
        OutOfRange => "out_of_range",
        Unavailable => "unavailable",
        other => panic!("not expected here: {other:?}"),
    }
}

/// A bad call: its name, method, request (protobuf), key, and the words its message must hold
/// (the field and its bound).
type Case<'a> = (&'a str, &'a str, Vec<u8>, &'a str, &'a [&'a str]);

#[tokio::test]
async fn every_error_has_connects_code_and_status_and_grpcs_message() {
    let gw = gateway(1 << 20, |_| {}).await;
    let base = format!("http://{}", gw.public);
    let http = client(false);
    let ints = |min, max, count| GetIntegersRequest { min, max, count, ..Default::default() };
    let cases: Vec<Case> = vec![
        (
            "num_bytes 0",
            "GetRandom",
            GetRandomRequest::default().encode_to_vec(),
            KEY,
            &["num_bytes", "1048576"],
        ),
        (
            "num_bytes past 1 MiB",
            "GetRandom",
            GetRandomRequest { num_bytes: (1 << 20) + 1, ..Default::default() }.encode_to_vec(),
            KEY,
            &["num_bytes", "1048576"],
        ),
        (
            "integers count 0",
            "GetIntegers",
            ints(0, 9, 0).encode_to_vec(),
            KEY,
            &["count", "10000"],
        ),
        (
            "integers count 10001",
            "GetIntegers",
            ints(0, 9, 10_001).encode_to_vec(),
            KEY,
            &["count", "10000"],
        ),
        ("integers min > max", "GetIntegers", ints(5, 1, 1).encode_to_vec(), KEY, &["min", "max"]),
        (
            "floats count 10001",
            "GetFloats",
            GetFloatsRequest { count: 10_001, ..Default::default() }.encode_to_vec(),
            KEY,
            &["count", "10000"],
        ),
        ("uuids count 0", "GetUuids", GetUuidsRequest::default().encode_to_vec(), KEY, &["count"]),
        (
            "quality sample past 4 MiB",
            "CheckQuality",
            CheckQualityRequest { sample_bytes: (4 << 20) + 1, ..Default::default() }
                .encode_to_vec(),
            KEY,
            &["sample_bytes"],
        ),
        (
            "chunk_bytes past 1 MiB",
            "StreamRandom",
            StreamRandomRequest { chunk_bytes: (1 << 20) + 1, ..Default::default() }
                .encode_to_vec(),
            KEY,
            &["chunk_bytes"],
        ),
        (
            "wrong key",
            "GetRandom",
            GetRandomRequest { num_bytes: 8, ..Default::default() }.encode_to_vec(),
            "wrong",
            &["invalid API key"],
        ),
        ("missing scope", "GetStatus", Vec::new(), "reader", &["status:read"]),
        (
            "missing scope on a stream",
            "StreamRandom",
            StreamRandomRequest::default().encode_to_vec(),
            "slow-no",
            &["API key"],
        ),
        (
            "quality without its scope",
            "CheckQuality",
            CheckQualityRequest { sample_bytes: 1 << 16, ..Default::default() }.encode_to_vec(),
            "reader",
            &["quality:check"],
        ),
    ];
    for (case, method, request, key, words) in cases {
        let want = grpc_status(&gw, method, &request, key).await;
        let (code, message) = (code_name(want.code()), want.message().to_owned());
        for word in words {
            assert!(message.contains(word), "{case}: {message:?} lacks {word:?}");
        }
        let error = serde_json::json!({"code": code, "message": message});
        let streaming = method == "StreamRandom";
        for binary in [false, true] {
            let body = if binary {
                request.clone()
            } else {
                // The same request as the proto3 JSON mapping writes it.
                let json = match method {
                    "GetRandom" => {
                        serde_json::to_vec(&GetRandomRequest::decode(&request[..]).unwrap())
                    }
                    "GetIntegers" => {
                        serde_json::to_vec(&GetIntegersRequest::decode(&request[..]).unwrap())
                    }
                    "GetFloats" => {
                        serde_json::to_vec(&GetFloatsRequest::decode(&request[..]).unwrap())
                    }
                    "GetUuids" => {
                        serde_json::to_vec(&GetUuidsRequest::decode(&request[..]).unwrap())
                    }
                    "GetStatus" => serde_json::to_vec(&GetStatusRequest {}),
                    "CheckQuality" => {
                        serde_json::to_vec(&CheckQualityRequest::decode(&request[..]).unwrap())
                    }
                    _ => serde_json::to_vec(&StreamRandomRequest::decode(&request[..]).unwrap()),
                };
                json.expect("JSON")
            };
            let codec = if binary { "proto" } else { "json" };
            if streaming {
                let content_type = format!("application/connect+{codec}");
                let r =
                    post(&http, &base, method, &content_type, Some(key), enveloped(&body)).await;
                assert_eq!(r.status, 200, "{case}: streams report errors at their end: {r:?}");
                assert_eq!(r.end_of_stream()["error"], error, "{case} ({codec})");
            } else {
                let content_type = format!("application/{codec}");
                let r = post(&http, &base, method, &content_type, Some(key), body).await;
                let http_status = match code {
                    "invalid_argument" | "failed_precondition" | "out_of_range" => 400,
                    "unauthenticated" => 401,
                    "permission_denied" => 403,
                    "resource_exhausted" => 429,
                    "unavailable" => 503,
                    other => panic!("{other}"),
                };
                assert_eq!(r.status, http_status, "{case} ({codec}): {r:?}");
                assert_eq!(r.header("content-type"), Some("application/json"));
                assert_eq!(r.json(), error, "{case} ({codec})");
            }
        }
    }

    // No key at all.
    let r = post(&http, &base, "GetStatus", "application/json", None, "{}").await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.json()["code"], "unauthenticated");
    assert!(r.json()["message"].as_str().unwrap().contains("missing API key"), "{r:?}");
    // x-api-key works as on gRPC.
    let r = http
        .post(format!("{base}/entropy.v1.EntropyService/GetStatus"))
        .header("content-type", "application/json")
        .header("x-api-key", KEY)
        .body("{}")
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status(), 200);
    gw.stop().await;
}

#[tokio::test]
async fn quota_refusals_keep_their_retry_delay_unary_and_streaming() {
    let gw = gateway(1 << 20, |_| {}).await;
    let base = format!("http://{}", gw.public);
    let http = client(true);
    let get = r#"{"numBytes": 8}"#;
    for _ in 0..2 {
        let r = post(&http, &base, "GetRandom", "application/json", Some("slow"), get).await;
        assert_eq!(r.status, 200, "{r:?}");
    }
    let r = post(&http, &base, "GetRandom", "application/json", Some("slow"), get).await;
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.json()["code"], "resource_exhausted");
    let wait: u64 = r.header("retry-after-ms").expect("retry-after-ms").parse().expect("ms");
    assert!((1..=1000).contains(&wait), "{wait}");
    // A stream refused the same way carries it in its end-of-stream metadata.
    let stream = enveloped(br#"{"totalBytes": 8}"#);
    let r =
        post(&http, &base, "StreamRandom", "application/connect+json", Some("slow"), stream).await;
    let end = r.end_of_stream();
    assert_eq!(end["error"]["code"], "resource_exhausted", "{end}");
    assert!(end["metadata"]["retry-after-ms"][0].is_string(), "{end}");
    gw.stop().await;
}

#[tokio::test]
async fn malformed_requests_get_clear_errors_before_anything_is_drawn() {
    let gw = gateway(1 << 20, |_| {}).await;
    let base = format!("http://{}", gw.public);
    let http = client(false);
    let json = "application/json";
    let error = |r: &Answer| {
        let e = r.json();
        (
            r.status,
            e["code"].as_str().unwrap_or("").to_owned(),
            e["message"].as_str().unwrap_or("").to_owned(),
        )
    };

    // A body over the public request bound (16 KiB), JSON or binary, streaming or not.
    let long = format!("{{\"numBytes\": 8{}}}", " ".repeat(16 << 10));
    let (status, code, message) =
        error(&post(&http, &base, "GetRandom", json, Some(KEY), long).await);
    assert_eq!((status, code.as_str()), (400, "out_of_range"), "{message}");
    assert!(message.contains("16384"), "{message}");
    let r = post(
        &http,
        &base,
        "StreamRandom",
        "application/connect+proto",
        Some(KEY),
        enveloped(&[0; 16385]),
    )
    .await;
    assert_eq!(r.end_of_stream()["error"]["code"], "out_of_range", "{r:?}");

    for (case, body, words) in [
        ("not JSON", "{numBytes: 8}", &["GetRandomRequest", "line 1"][..]),
        ("an unknown field", r#"{"bytes": 8}"#, &["unknown field", "bytes"][..]),
        ("a wrong type", r#"{"numBytes": "eight"}"#, &["GetRandomRequest"][..]),
    ] {
        let (status, code, message) =
            error(&post(&http, &base, "GetRandom", json, Some(KEY), body).await);
        assert_eq!((status, code.as_str()), (400, "invalid_argument"), "{case}: {message}");
        for word in words {
            assert!(message.contains(word), "{case}: {message:?} lacks {word:?}");
        }
    }
    // Binary that is not the message: what gRPC answers (tonic's decoder: INTERNAL).
    let (status, code, message) = error(
        &post(&http, &base, "GetRandom", "application/proto", Some(KEY), vec![0xff; 4]).await,
    );
    assert_eq!((status, code.as_str()), (500, "internal"), "{message}");
    assert!(message.contains("decode"), "{message}");

    // A streaming body that is not one envelope; a compressed one.
    for (body, words) in [
        (vec![0, 0, 0], "ended inside it"),
        ([enveloped(b""), enveloped(b"")].concat(), "went on after it"),
    ] {
        let r =
            post(&http, &base, "StreamRandom", "application/connect+proto", Some(KEY), body).await;
        let end = r.end_of_stream();
        assert_eq!(end["error"]["code"], "invalid_argument", "{end}");
        assert!(end["error"]["message"].as_str().unwrap().contains(words), "{end}");
    }
    let mut compressed = enveloped(b"");
    compressed[0] = 1;
    let r = post(&http, &base, "StreamRandom", "application/connect+proto", Some(KEY), compressed)
        .await;
    assert_eq!(r.end_of_stream()["error"]["code"], "unimplemented");

    // The shape must match the method's; unknown methods; the protocol version; GET.
    let (status, code, message) =
        error(&post(&http, &base, "StreamRandom", json, Some(KEY), "{}").await);
    assert_eq!((status, code.as_str()), (501, "unimplemented"));
    assert!(message.contains("application/connect+json"), "{message}");
    let (status, code, message) = error(&post(&http, &base, "Nope", json, Some(KEY), "{}").await);
    assert_eq!((status, code.as_str()), (501, "unimplemented"));
    assert!(message.contains("Nope"), "{message}");
    let r = http
        .post(format!("{base}/entropy.v1.EntropyService/GetStatus"))
        .header("content-type", json)
        .header("connect-protocol-version", "2")
        .header("authorization", format!("Bearer {KEY}"))
        .body("{}")
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("connect-protocol-version must be 1"));
    let r = http
        .post(format!("{base}/entropy.v1.EntropyService/GetStatus"))
        .header("content-type", json)
        .header("connect-timeout-ms", "soon")
        .header("authorization", format!("Bearer {KEY}"))
        .body("{}")
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("connect-timeout-ms"));
    // GET: over HTTP/2 the translation answers; over HTTP/1.1 the transport does (405 both).
    for http2 in [true, false] {
        let r = client(http2)
            .get(format!("{base}/entropy.v1.EntropyService/GetStatus?encoding=json&message=%7B%7D"))
            .header("authorization", format!("Bearer {KEY}"))
            .send()
            .await
            .expect("answer");
        assert_eq!(r.status(), 405, "http2 {http2}");
    }

    // Nothing above drew a byte.
    let status = gw.status().await;
    assert_eq!(status.served_bytes_total, 0, "{status:?}");
    assert_eq!(status.pool_bytes, 1 << 20);
    gw.stop().await;
}

#[tokio::test]
async fn a_deadline_travels_as_grpcs() {
    // An empty pool: the call waits for entropy until its Connect deadline, not max_wait_ms.
    let gw = gateway(0, |c| c.max_wait_ms = 10_000).await;
    let base = format!("http://{}", gw.public);
    let started = std::time::Instant::now();
    let r = client(false)
        .post(format!("{base}/entropy.v1.EntropyService/GetRandom"))
        .header("content-type", "application/json")
        .header("connect-timeout-ms", "200")
        .header("authorization", format!("Bearer {KEY}"))
        .body(r#"{"numBytes": 8}"#)
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status(), 504);
    let error: serde_json::Value =
        serde_json::from_slice(&r.bytes().await.expect("body")).expect("error JSON");
    assert_eq!(error["code"], "deadline_exceeded", "{error}");
    assert!(started.elapsed() < Duration::from_secs(5), "the deadline, not max_wait_ms");
    gw.stop().await;
}

#[tokio::test]
async fn connect_is_off_by_default() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(1 << 20, 256 << 10, |i| i as u8).await;
    let base = format!("http://{}", gw.public);
    // HTTP/1.1: the listener speaks HTTP/2 only, no HTTP answer at all.
    let http1 = client(false)
        .post(format!("{base}/entropy.v1.EntropyService/GetStatus"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {API_KEY}"))
        .body("{}")
        .send()
        .await;
    assert!(http1.is_err(), "{http1:?}");
    // HTTP/2: 415, saying Connect is off; nothing drawn.
    for (content_type, body) in [
        ("application/json", br#"{"numBytes": 8}"#.to_vec()),
        ("application/connect+json", enveloped(br#"{"totalBytes": 8}"#)),
    ] {
        let r = post(&client(true), &base, "GetRandom", content_type, Some(API_KEY), body).await;
        assert_eq!(r.status, 415, "{r:?}");
        assert_eq!(r.json()["code"], "unimplemented");
        assert!(r.json()["message"].as_str().unwrap().contains("connect_enabled"), "{r:?}");
    }
    let status = gw.status().await;
    assert_eq!((status.served_bytes_total, status.pool_bytes), (0, 1 << 20));
    gw.stop().await;
}

#[tokio::test]
async fn bytes_drawn_over_connect_and_grpc_at_once_never_overlap() {
    const WORDS: usize = 65_536; // 512 KiB of u64 serial numbers
    let mut gw = start(test_config(|c| {
        c.connect_enabled = true;
        c.max_wait_ms = 300;
    }))
    .await;
    let serial = |i: usize| (i as u64 / 8).to_le_bytes()[i % 8];
    gw.feed(WORDS * 8, 32 << 10, serial).await;
    let base = format!("http://{}", gw.public);
    let mut tasks = Vec::new();
    for t in 0..12u32 {
        let (gw_client, base) = (gw.client().await, base.clone());
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            let n = 8 * (1 + t * 37 % 256);
            match t % 3 {
                0 => {
                    let mut native = gw_client;
                    let get = || {
                        with_key(API_KEY, GetRandomRequest { num_bytes: n, ..Default::default() })
                    };
                    while let Ok(r) = native.get_random(get()).await {
                        got.extend_from_slice(&r.into_inner().data);
                    }
                }
                1 => {
                    let http = client(t % 2 == 0);
                    let body = format!("{{\"numBytes\": {n}}}");
                    loop {
                        let r = post(
                            &http,
                            &base,
                            "GetRandom",
                            "application/json",
                            Some(API_KEY),
                            body.clone(),
                        )
                        .await;
                        if r.status != 200 {
                            break;
                        }
                        got.extend_from_slice(&json_data(&r.json()));
                    }
                }
                _ => {
                    let http = client(true);
                    let stream = StreamRandomRequest {
                        chunk_bytes: n,
                        total_bytes: 8 * 2048,
                        ..Default::default()
                    };
                    for _ in 0..4 {
                        let body = enveloped(&stream.encode_to_vec());
                        let r = post(
                            &http,
                            &base,
                            "StreamRandom",
                            "application/connect+proto",
                            Some(API_KEY),
                            body,
                        )
                        .await;
                        let envelopes = r.envelopes();
                        for (flags, m) in &envelopes {
                            if *flags == 0 {
                                got.extend_from_slice(
                                    &StreamRandomResponse::decode(&m[..]).expect("message").data,
                                );
                            }
                        }
                    }
                }
            }
            got
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for task in tasks {
        let got = task.await.expect("task");
        assert_eq!(got.len() % 8, 0);
        for word in got.chunks_exact(8) {
            assert!(
                seen.insert(u64::from_le_bytes(word.try_into().expect("8 bytes"))),
                "a word served twice"
            );
        }
        total += got.len();
    }
    assert!(total >= (WORDS * 8) / 2, "most of the pool was drawn ({total})");
    // Every word was served whole, to one caller: takers draw multiples of 8 from a pool fed
    // in multiples of 8.
    gw.stop().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_a_connect_stream_is_accounted_like_grpc() {
    // A raw HTTP/2 client with a zero window: the gateway can send it nothing.
    let gw = gateway(4 << 20, |c| c.send_timeout_ms = 300).await;
    let tcp = tokio::net::TcpStream::connect(gw.public).await.expect("connect");
    let (h2, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .expect("h2 handshake");
    let driver = tokio::spawn(connection);
    let mut h2 = h2.ready().await.expect("ready");
    let request =
        http::Request::post(format!("http://{}/entropy.v1.EntropyService/StreamRandom", gw.public))
            .header("content-type", "application/connect+json")
            .header("authorization", format!("Bearer {KEY}"))
            .body(())
            .expect("request");
    let (_response, mut body) = h2.send_request(request, false).expect("send");
    let message = enveloped(br#"{"chunkBytes": 65536}"#);
    body.send_data(Bytes::from(message), true).expect("data");
    let closed = tokio::time::timeout(Duration::from_secs(10), driver).await;
    assert!(closed.is_ok(), "the gateway closed the stalled connection");
    // Nothing reached the client: what was drawn for it is discarded, none of it served.
    let mut after = gw.status().await;
    for _ in 0..500 {
        let drawn = after.ingested_bytes_total - after.pool_bytes;
        if after.discarded_bytes_total == drawn && drawn > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        after = gw.status().await;
    }
    let drawn = after.ingested_bytes_total - after.pool_bytes;
    assert_eq!(after.served_bytes_total, 0, "{after:?}");
    assert!(drawn > 0, "the stream drew before it stalled");
    assert_eq!(after.discarded_bytes_total, drawn, "{after:?}");
    // The stream's read-ahead (256 KiB), the message the translation is writing as JSON, and
    // the one the transport's pipe holds for the window.
    assert!(drawn <= (256 << 10) + 2 * (64 << 10), "{drawn} bytes out of the pool");
    gw.stop().await;
}

/// With HTTP/1.1 admitted over plaintext, the gateway reads a connection's first bytes to tell
/// HTTP/1.1 from HTTP/2: a client that connects and sends nothing must not hold up shutdown.
#[tokio::test]
async fn shutdown_does_not_wait_for_a_silent_connection_it_is_sniffing() {
    let gw = start(test_config(|c| c.connect_enabled = true)).await;
    let silent = tokio::net::TcpStream::connect(gw.public).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    gw.stop().await;
    drop(silent);
}

/// The receipt log speaks Connect too: a receipted draw's receipt crosses as JSON and verifies
/// under the key the log serves as JSON, heads come as JSON, the listing keeps its scope, and
/// an unknown method names the service.
#[tokio::test]
async fn the_receipt_log_and_receipts_cross_connect_as_json() {
    use entropy_receipts::verify::{open_commitment, verify_receipt_bytes};
    use entropy_receipts::{PublicKey, Salt, ServedValues};

    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(256 << 10, |c| {
        c.receipts_dir = Some(dir.path().to_owned());
        c.receipts_head_interval_ms = 20;
    })
    .await;
    let (http, base) = (client(false), format!("http://{}", gw.public));
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::STANDARD.decode(v.as_str().expect("a base64 string"))
    };
    let json = "application/json";
    let draw = post(
        &http,
        &base,
        "GetIntegers",
        json,
        Some(KEY),
        r#"{"min": 1, "max": 49, "count": 6, "receipt": true}"#,
    )
    .await;
    assert_eq!(draw.status, 200, "{draw:?}");
    let draw = draw.json();
    let values: Vec<i64> = draw["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().parse().unwrap())
        .collect();
    let pk = post(&http, &base, "ReceiptLogService/GetPublicKey", json, Some(KEY), "{}").await;
    assert_eq!(pk.status, 200, "{pk:?}");
    let key: [u8; 32] = b64(&pk.json()["publicKey"]).unwrap().try_into().unwrap();
    let key = PublicKey::from_bytes(&key).unwrap();
    let signed = verify_receipt_bytes(&b64(&draw["receipt"]["signedReceipt"]).unwrap(), &key)
        .expect("the receipt verifies");
    let salt = Salt(b64(&draw["receipt"]["salt"]).unwrap().try_into().unwrap());
    open_commitment(&signed.receipt, ServedValues::Integers(&values), &salt)
        .expect("the JSON values open the commitment");

    let mut size = 0;
    for _ in 0..500 {
        let head =
            post(&http, &base, "ReceiptLogService/GetSignedTreeHead", json, Some(KEY), "{}").await;
        assert_eq!(head.status, 200, "{head:?}");
        size = head.json()["treeSize"].as_str().map_or(0, |s| s.parse().unwrap());
        if size >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(size, 1, "a signed head covers the draw");
    let list = post(&http, &base, "ReceiptLogService/ListReceipts", json, Some(KEY), "{}").await;
    assert_eq!(list.status, 403, "{list:?}");
    assert_eq!(list.json()["code"], "permission_denied");
    let nope = post(&http, &base, "ReceiptLogService/Nope", json, Some(KEY), "{}").await;
    assert_eq!(nope.status, 501, "{nope:?}");
    assert_eq!(nope.json()["code"], "unimplemented");
    let message = nope.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("entropy.v1.ReceiptLogService") && message.contains("Nope"),
        "{message}"
    );
    gw.stop().await;
}
