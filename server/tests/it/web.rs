//! gRPC-Web for browsers: off by default (an HTTP/1.1 gRPC-Web call is not even answered as
//! HTTP), and when on, calls work over HTTP/1.1 (unary and streaming) with the same keys, quotas
//! and error messages as native gRPC, and CORS admits exactly the configured origins.
//!
//! The requests are written by hand over a TCP socket, as a browser's fetch sends them over
//! plaintext, so the test sees the bytes on the wire.

use std::net::SocketAddr;
use std::time::Duration;

use entropy_gateway::domain::auth::{ApiKeys, digest};
use entropy_proto::v1::{
    GetRandomRequest, GetRandomResponse, GetStatusRequest, StreamRandomRequest,
    StreamRandomResponse,
};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::support::{API_KEY, TestGateway, authed, start, start_with_keys, test_config, with_key};

const PAGE: &str = "http://page.example:8080";
const KEY: &str = "web";

/// An HTTP/1.1 response: status, headers (lowercase names), body (de-chunked).
#[derive(Debug)]
pub(super) struct Http1 {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Http1 {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Sends one HTTP/1.1 request (with `Connection: close`) and reads the whole answer.
pub(super) async fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Vec<u8> {
    let talk = async {
        let mut tcp = TcpStream::connect(addr).await.expect("connect");
        let request = format!(
            "{head}Host: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        tcp.write_all(request.as_bytes()).await.expect("write head");
        tcp.write_all(body).await.expect("write body");
        let mut answer = Vec::new();
        // A reset after the server's last bytes still leaves what it said in `answer`.
        let _ = tcp.read_to_end(&mut answer).await;
        answer
    };
    // A guard against a hang, not a timing assertion: each exchange takes milliseconds.
    tokio::time::timeout(Duration::from_secs(20), talk).await.expect("the server answers or closes")
}

pub(super) fn parse(raw: &[u8]) -> Http1 {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("end of headers");
    let head = std::str::from_utf8(&raw[..split]).expect("ascii head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status = status_line[9..12].parse().expect("status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut rest = &raw[split + 4..];
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if !chunked {
        rest.to_vec()
    } else {
        let mut body = Vec::new();
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n").expect("chunk size line");
            let size_text = std::str::from_utf8(&rest[..eol]).expect("ascii size");
            let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                .expect("hex chunk size");
            rest = &rest[eol + 2..];
            if size == 0 {
                break;
            }
            body.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        body
    };
    Http1 { status, headers, body }
}

/// A gRPC-Web call over HTTP/1.1 from `origin` (none for a non-browser client).
async fn call(
    addr: SocketAddr,
    method: &str,
    message: &impl Message,
    key: &str,
    origin: Option<&str>,
) -> Vec<u8> {
    let mut frame = vec![0u8];
    let encoded = message.encode_to_vec();
    frame.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    frame.extend_from_slice(&encoded);
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    let head = format!(
        "POST /entropy.v1.EntropyService/{method} HTTP/1.1\r\n\
         Content-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1\r\n\
         Authorization: Bearer {key}\r\n{origin}"
    );
    exchange(addr, &head, &frame).await
}

/// The messages and the trailers of a gRPC-Web response body.
fn frames(body: &[u8]) -> (Vec<Vec<u8>>, Vec<(String, String)>) {
    let (mut messages, mut trailers, mut rest) = (Vec::new(), Vec::new(), body);
    while !rest.is_empty() {
        let flag = rest[0];
        let len = u32::from_be_bytes(rest[1..5].try_into().unwrap()) as usize;
        let payload = &rest[5..5 + len];
        if flag & 0x80 != 0 {
            for line in std::str::from_utf8(payload).expect("ascii trailers").split("\r\n") {
                if let Some((n, v)) = line.split_once(':') {
                    trailers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
                }
            }
        } else {
            messages.push(payload.to_vec());
        }
        rest = &rest[5 + len..];
    }
    (messages, trailers)
}

/// A trailer of a gRPC-Web response: from the trailer frame, or from the headers of a
/// trailers-only response (an error before any message, such as a refused key).
fn trailer(r: &Http1, name: &str) -> Option<String> {
    let (_, trailers) = frames(&r.body);
    let found = trailers.into_iter().find(|(n, _)| n == name).map(|(_, v)| v);
    found.or_else(|| r.header(name).map(str::to_owned))
}

/// A gateway with gRPC-Web on for `PAGE`, keys `web` (no limit) and `slow` (2 requests a
/// second), and 4 MiB in its pool.
async fn web_gateway() -> TestGateway {
    let mut text = String::new();
    for (name, extra) in [(KEY, ""), ("slow", "requests_per_second = 2")] {
        let sha = hex::encode(digest(name.as_bytes()));
        text += &format!("[[key]]\nname = \"{name}\"\nsha256 = \"{sha}\"\n{extra}\n");
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    let config = test_config(|c| {
        c.grpc_web_enabled = true;
        c.grpc_web_allowed_origins = vec![PAGE.to_string().try_into().expect("a valid origin")];
    });
    let mut gw = start_with_keys(config, ApiKeys::load_file(file.path()).unwrap()).await;
    gw.feed(4 << 20, 256 << 10, |i| (i * 7 + i / 251) as u8).await;
    gw
}

#[tokio::test]
async fn grpc_web_calls_work_with_the_same_keys_quotas_and_messages() {
    let gw = web_gateway().await;
    let get32 = GetRandomRequest { num_bytes: 32, encoding: 0, ..Default::default() };

    let r = parse(&call(gw.public, "GetRandom", &get32, KEY, Some(PAGE)).await);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/grpc-web+proto"));
    assert_eq!(r.header("access-control-allow-origin"), Some(PAGE));
    assert!(r.header("access-control-expose-headers").unwrap().contains("grpc-status"));
    assert_eq!(trailer(&r, "grpc-status").as_deref(), Some("0"), "{r:?}");
    let (messages, _) = frames(&r.body);
    let reply = GetRandomResponse::decode(&messages[0][..]).expect("message");
    assert_eq!(reply.data.len(), 32);

    // A non-browser gRPC-Web client (no Origin) is served too.
    let r = parse(&call(gw.public, "GetRandom", &get32, KEY, None).await);
    assert_eq!(trailer(&r, "grpc-status").as_deref(), Some("0"), "{r:?}");
    assert_eq!(r.header("access-control-allow-origin"), None);

    // Server streaming arrives whole over HTTP/1.1.
    let stream =
        StreamRandomRequest { chunk_bytes: 16 << 10, total_bytes: 100_000, ..Default::default() };
    let r = parse(&call(gw.public, "StreamRandom", &stream, KEY, Some(PAGE)).await);
    assert_eq!(trailer(&r, "grpc-status").as_deref(), Some("0"), "{r:?}");
    let (messages, _) = frames(&r.body);
    let total: usize =
        messages.iter().map(|m| StreamRandomResponse::decode(&m[..]).unwrap().data.len()).sum();
    assert_eq!(total, 100_000);

    // The same errors, with the server's message for the page to show.
    let r = parse(&call(gw.public, "GetRandom", &get32, "wrong", Some(PAGE)).await);
    assert_eq!(trailer(&r, "grpc-status").as_deref(), Some("16"), "{r:?}");
    assert_eq!(r.header("access-control-allow-origin"), Some(PAGE), "the page may read it");
    let too_big = GetRandomRequest { num_bytes: (1 << 20) + 1, encoding: 0, ..Default::default() };
    let r = parse(&call(gw.public, "GetRandom", &too_big, KEY, Some(PAGE)).await);
    assert_eq!(trailer(&r, "grpc-status").as_deref(), Some("3"), "{r:?}");
    assert!(trailer(&r, "grpc-message").unwrap().contains("num_bytes"), "{r:?}");

    // The same quotas: the third call within a second is refused with a retry delay.
    for _ in 0..2 {
        let r = parse(&call(gw.public, "GetRandom", &get32, "slow", Some(PAGE)).await);
        assert_eq!(trailer(&r, "grpc-status").as_deref(), Some("0"), "{r:?}");
    }
    let r = parse(&call(gw.public, "GetRandom", &get32, "slow", Some(PAGE)).await);
    assert_eq!(trailer(&r, "grpc-status").as_deref(), Some("8"), "{r:?}");
    assert!(trailer(&r, "retry-after-ms").is_some(), "{r:?}");

    // Native gRPC on the same listener is unchanged, and every byte sent over gRPC-Web counts
    // as served (hyper's HTTP/1.1 writer stops at the body's end without polling past it).
    let mut native = gw.client().await;
    let status = native
        .get_status(with_key(KEY, GetStatusRequest {}))
        .await
        .expect("native gRPC still works")
        .into_inner();
    assert_eq!(status.served_bytes_total, 32 + 32 + 100_000 + 32 + 32, "{status:?}");
    gw.stop().await;
}

#[tokio::test]
async fn a_pipelined_answer_leaves_at_once_while_the_call_behind_it_waits() {
    // Before: HTTP/1.1 responses were flushed at the connection's next read, and hyper does not
    // read while pipelined requests wait in its buffer: an answer stayed in the gateway until
    // the call behind it had finished (here, waited max_wait for entropy).
    let config = test_config(|c| {
        c.grpc_web_enabled = true;
        c.max_wait_ms = 5_000;
    });
    let mut gw = start(config).await;
    gw.feed(2 << 20, 256 << 10, |i| (i * 7 + i / 251) as u8).await;
    let mut native = gw.client().await;
    let drain = GetRandomRequest { num_bytes: 1 << 20, ..Default::default() };
    native.get_random(authed(drain)).await.expect("1 MiB of the 2 drawn");
    let get = |num_bytes| {
        let message = GetRandomRequest { num_bytes, ..Default::default() }.encode_to_vec();
        let mut frame = vec![0u8];
        frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
        frame.extend_from_slice(&message);
        let head = format!(
            "POST /entropy.v1.EntropyService/GetRandom HTTP/1.1\r\nHost: {}\r\n\
             Content-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1\r\n\
             Authorization: Bearer {API_KEY}\r\nContent-Length: {}\r\n\r\n",
            gw.public,
            frame.len()
        );
        [head.into_bytes(), frame].concat()
    };
    // 32 bytes (there), then 1 MiB (32 bytes short: it waits up to 5 s for more), then one
    // more call behind it (so hyper has a request in its buffer and does not read meanwhile).
    let mut tcp = TcpStream::connect(gw.public).await.expect("connect");
    tcp.write_all(&[get(32), get(1 << 20), get(32)].concat()).await.expect("send the pipeline");
    let mut answer = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let first = tokio::time::timeout(Duration::from_millis(2_500), async {
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") || answer.len() < 100 {
            let n = tcp.read(&mut buf).await.expect("read");
            assert!(n > 0, "closed early");
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(first.is_ok(), "the first answer waited for the call behind it");
    let first = parse(&answer);
    assert_eq!(trailer(&first, "grpc-status").as_deref(), Some("0"), "{first:?}");
    drop(tcp);
    gw.stop().await;
}

#[tokio::test]
async fn cors_admits_exactly_the_configured_origins() {
    let gw = web_gateway().await;
    let preflight = |origin: &str| {
        format!(
            "OPTIONS /entropy.v1.EntropyService/GetRandom HTTP/1.1\r\nOrigin: {origin}\r\n\
             Access-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: authorization,content-type,x-grpc-web,x-user-agent\r\n"
        )
    };
    let r = parse(&exchange(gw.public, &preflight(PAGE), b"").await);
    assert_eq!(r.status, 204, "{r:?}");
    assert_eq!(r.header("access-control-allow-origin"), Some(PAGE));
    assert_eq!(r.header("access-control-allow-methods"), Some("POST"));
    let allowed = r.header("access-control-allow-headers").expect("allowed headers");
    for h in ["authorization", "content-type", "x-grpc-web", "x-user-agent"] {
        assert!(allowed.contains(h), "{h} in {allowed}");
    }
    assert_eq!(r.header("access-control-allow-credentials"), None, "no cookies, ever");

    // Another origin, a look-alike of the allowed one, and no port: refused, preflight or not.
    for other in ["http://evil.example", "http://page.example:8080.evil", "http://page.example"] {
        let r = parse(&exchange(gw.public, &preflight(other), b"").await);
        assert_eq!(r.status, 403, "{other}: {r:?}");
        assert_eq!(r.header("access-control-allow-origin"), None);
        let get32 = GetRandomRequest { num_bytes: 32, encoding: 0, ..Default::default() };
        let r = parse(&call(gw.public, "GetRandom", &get32, KEY, Some(other)).await);
        assert_eq!(r.status, 403, "{other}: {r:?}");
        assert!(r.body.is_empty(), "nothing drawn for a refused origin");
    }
    let put = preflight(PAGE).replace("Method: POST", "Method: PUT");
    assert_eq!(parse(&exchange(gw.public, &put, b"").await).status, 403, "only POST");

    // Health and reflection are not exposed to browsers.
    let health = "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nOrigin: http://page.example:8080\r\n\
                  Content-Type: application/grpc-web+proto\r\n";
    let answer = exchange(gw.public, health, &[0, 0, 0, 0, 0]).await;
    let r = parse(&answer);
    assert_eq!(r.header("access-control-allow-origin"), None, "{r:?}");
    gw.stop().await;
}

#[tokio::test]
async fn grpc_web_is_off_by_default() {
    let mut gw = start(test_config(|_| {})).await;
    gw.feed(1 << 20, 256 << 10, |i| i as u8).await;
    let get32 = GetRandomRequest { num_bytes: 32, encoding: 0, ..Default::default() };
    let answer = call(gw.public, "GetRandom", &get32, API_KEY, Some(PAGE)).await;
    // The listener speaks HTTP/2 only: an HTTP/1.1 request gets no HTTP/1.1 answer at all.
    assert!(!answer.starts_with(b"HTTP/1"), "{:?}", String::from_utf8_lossy(&answer));
    let preflight = format!(
        "OPTIONS /entropy.v1.EntropyService/GetRandom HTTP/1.1\r\nOrigin: {PAGE}\r\n\
         Access-Control-Request-Method: POST\r\n"
    );
    let answer = exchange(gw.public, &preflight, b"").await;
    assert!(!answer.starts_with(b"HTTP/1"), "{:?}", String::from_utf8_lossy(&answer));
    // Native gRPC is what it serves.
    gw.client().await.get_status(authed(GetStatusRequest {})).await.expect("native gRPC");
    gw.stop().await;
}
