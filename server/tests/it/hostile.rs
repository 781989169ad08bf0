//! The hostile-input suite: one gateway takes every kind of bad input a network peer can send
//! (bad keys, extreme fields on every RPC, oversized and malformed messages, forged, replayed,
//! stale and unknown-key chunks, unknown methods, a thousand connections opened and dropped).
//! Each gets its documented status; afterwards the gateway is healthy, every byte is accounted
//! for (ingested = served + in the pool: the pool never evicts) and no file descriptor leaked.
//!
//! The finer points of each check live beside the feature (`entropy`, `ingest`, `limits`,
//! `quota`); this file is about surviving all of it at once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use entropy_proto::v1::{
    GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetStatusRequest, GetUuidsRequest,
    StreamRandomRequest,
};
use prost::Message;
use prost::bytes::{Buf, BufMut, Bytes};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_stream::StreamExt;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use super::support::{API_KEY, TestGateway, authed, start, test_config};

/// A codec that sends and receives message bytes as they are, so a test can put anything on
/// the wire inside valid gRPC framing.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// Sends `body` as the request message of `path` and returns the response's raw bytes.
async fn raw_call(
    channel: &Channel,
    path: &'static str,
    body: impl Into<Bytes>,
    key: Option<&str>,
) -> Result<Bytes, Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone()).max_decoding_message_size(4 << 20);
    grpc.ready().await.map_err(|e| Status::unavailable(e.to_string()))?;
    let mut request = Request::new(body.into());
    if let Some(key) = key {
        request.metadata_mut().insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    grpc.unary(request, PathAndQuery::from_static(path), RawCodec).await.map(|r| r.into_inner())
}

const GET_RANDOM: &str = "/entropy.v1.EntropyService/GetRandom";
const GET_INTEGERS: &str = "/entropy.v1.EntropyService/GetIntegers";
const PUBLISH: &str = "/entropy.v1.IngestService/Publish";

/// Counts the checks made and prints each, so a failure reads as a table.
struct Expect {
    checks: usize,
}

impl Expect {
    /// `result` failed with `code` and a message containing every word of `words`.
    fn status<T: std::fmt::Debug>(
        &mut self,
        case: &str,
        result: Result<T, Status>,
        code: Code,
        words: &[&str],
    ) {
        self.checks += 1;
        let status = match result {
            Ok(v) => panic!("{case}: expected {code:?}, got a response {v:?}"),
            Err(status) => status,
        };
        println!("{case:<55} {:?}: {}", status.code(), status.message());
        assert_eq!(status.code(), code, "{case}: {}", status.message());
        for word in words {
            assert!(
                status.message().contains(word),
                "{case}: {:?} lacks {word:?}",
                status.message()
            );
        }
    }
}

fn with_metadata<T>(message: T, name: &'static str, value: &str) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert(name, value.parse().unwrap());
    request
}

async fn bad_keys(channel: &Channel, expect: &mut Expect) {
    let mut client = EntropyServiceClient::new(channel.clone());
    let req = || GetRandomRequest { num_bytes: 16, encoding: 0, ..Default::default() };
    expect.status(
        "no key",
        client.get_random(Request::new(req())).await,
        Code::Unauthenticated,
        &["missing"],
    );
    let long = format!("Bearer {}", "k".repeat(8 << 10));
    for (case, value) in [
        ("wrong key", "Bearer wrong-key-0123456789"),
        ("empty bearer", "Bearer "),
        ("basic scheme", "Basic dGVzdDp0ZXN0"),
        ("8 KiB key", long.as_str()),
        ("right key with a trailing byte", &format!("Bearer {API_KEY}x")),
        ("right key truncated", &format!("Bearer {}", &API_KEY[..API_KEY.len() - 1])),
    ] {
        let result = client.get_random(with_metadata(req(), "authorization", value)).await;
        expect.status(case, result, Code::Unauthenticated, &[]);
    }
    let wrong = client.get_random(with_metadata(req(), "x-api-key", "nope")).await;
    expect.status("wrong x-api-key", wrong, Code::Unauthenticated, &[]);
    // A key in the URL is ignored: the call is routed by its path and has no key.
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let in_url = grpc
        .unary(
            Request::new(Bytes::from(req().encode_to_vec())),
            PathAndQuery::from_static("/entropy.v1.EntropyService/GetRandom?api_key=test-key"),
            RawCodec,
        )
        .await;
    expect.status("key in the URL", in_url, Code::Unauthenticated, &["missing"]);
}

async fn extreme_fields(client: &mut EntropyServiceClient<Channel>, expect: &mut Expect) {
    for (case, num_bytes) in [
        ("num_bytes 0", 0),
        ("num_bytes 1 MiB + 1", (1 << 20) + 1),
        ("num_bytes u32::MAX", u32::MAX),
    ] {
        let result = client
            .get_random(authed(GetRandomRequest { num_bytes, encoding: 0, ..Default::default() }))
            .await;
        expect.status(case, result, Code::InvalidArgument, &["num_bytes", "1048576"]);
    }
    let result = client
        .get_random(authed(GetRandomRequest {
            num_bytes: 8,
            encoding: 1 << 30,
            ..Default::default()
        }))
        .await;
    expect.status("unknown encoding", result, Code::InvalidArgument, &["encoding"]);

    for (case, chunk_bytes) in
        [("chunk_bytes 1 MiB + 1", (1 << 20) + 1), ("chunk_bytes u32::MAX", u32::MAX)]
    {
        let request = StreamRandomRequest { chunk_bytes, total_bytes: 1, ..Default::default() };
        let result = match client.stream_random(authed(request)).await {
            Ok(stream) => {
                stream.into_inner().next().await.expect("a message or a status").map(|_| ())
            }
            Err(status) => Err(status),
        };
        expect.status(case, result, Code::InvalidArgument, &["chunk_bytes"]);
    }

    let ints =
        |min, max, count| authed(GetIntegersRequest { min, max, count, ..Default::default() });
    for (case, count) in [
        ("integers count 0", 0),
        ("integers count 10001", 10_001),
        ("integers count u32::MAX", u32::MAX),
    ] {
        expect.status(
            case,
            client.get_integers(ints(0, 9, count)).await,
            Code::InvalidArgument,
            &["count", "10000"],
        );
    }
    let result = client.get_integers(ints(i64::MAX, i64::MIN, 1)).await;
    expect.status("integers min > max", result, Code::InvalidArgument, &["min", "max"]);
    // The seed system crashed on wide ranges: here they are ordinary requests.
    let full = client.get_integers(ints(i64::MIN, i64::MAX, 10_000)).await.expect("full range");
    assert_eq!(full.into_inner().values.len(), 10_000);
    let one = client.get_integers(ints(i64::MIN, i64::MIN, 3)).await.expect("a single value");
    assert_eq!(one.into_inner().values, vec![i64::MIN; 3]);
    let top = client.get_integers(ints(i64::MAX - 1, i64::MAX, 100)).await.expect("top of range");
    assert!(top.into_inner().values.iter().all(|v| *v >= i64::MAX - 1));

    for count in [0, 10_001, u32::MAX] {
        let floats =
            client.get_floats(authed(GetFloatsRequest { count, ..Default::default() })).await;
        expect.status(&format!("floats count {count}"), floats, Code::InvalidArgument, &["count"]);
        let uuids = client.get_uuids(authed(GetUuidsRequest { count, ..Default::default() })).await;
        expect.status(&format!("uuids count {count}"), uuids, Code::InvalidArgument, &["count"]);
    }
}

async fn malformed_messages(channel: &Channel, expect: &mut Expect) {
    let key = Some(API_KEY);
    let garbage = Bytes::from_static(&[0xff; 64]);
    expect.status(
        "garbage protobuf",
        raw_call(channel, GET_RANDOM, garbage.clone(), key).await,
        Code::Internal,
        &["decode"],
    );
    // Field 1 (varint) with its value cut off.
    let truncated = Bytes::from_static(&[0x08, 0x80]);
    expect.status(
        "truncated protobuf",
        raw_call(channel, GET_RANDOM, truncated, key).await,
        Code::Internal,
        &["decode"],
    );
    // A length-delimited field claiming more bytes than follow.
    let short = Bytes::from_static(&[0x1a, 0x7f, 0x00]);
    expect.status(
        "length prefix past the end",
        raw_call(channel, GET_INTEGERS, short, key).await,
        Code::Internal,
        &["decode"],
    );
    // Wrong wire type for a known field: num_bytes sent as a string.
    let wrong_type = Bytes::from_static(&[0x0a, 0x01, 0x41]);
    expect.status(
        "wrong wire type",
        raw_call(channel, GET_RANDOM, wrong_type, key).await,
        Code::Internal,
        &["decode"],
    );
    // Past the public listener's 16 KiB request cap (an unknown field of 64 KiB).
    let mut big =
        GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() }.encode_to_vec();
    prost::encoding::bytes::encode(99, &vec![0u8; 64 << 10], &mut big);
    expect.status(
        "64 KiB request",
        raw_call(channel, GET_RANDOM, big, key).await,
        Code::OutOfRange,
        &["message length too large"],
    );
    // Unknown fields inside the cap are ignored, as protobuf says.
    let mut padded =
        GetRandomRequest { num_bytes: 8, encoding: 0, ..Default::default() }.encode_to_vec();
    prost::encoding::bytes::encode(99, &vec![0u8; 1024], &mut padded);
    let ok = raw_call(channel, GET_RANDOM, padded, key).await.expect("unknown field ignored");
    assert_eq!(entropy_proto::v1::GetRandomResponse::decode(ok).unwrap().data.len(), 8);
    // Garbage without a key is refused before it is even decoded.
    let unauthenticated = raw_call(channel, GET_RANDOM, garbage, None).await;
    expect.status("garbage without a key", unauthenticated, Code::Unauthenticated, &[]);
    // Methods that do not exist, on the right and on a made-up service.
    for path in ["/entropy.v1.EntropyService/Drain", "/entropy.v1.IngestService/Publish"] {
        let path: &'static str = path;
        expect.status(
            &format!("unknown method {path}"),
            raw_call(channel, path, Bytes::new(), key).await,
            Code::Unimplemented,
            &[],
        );
    }
}

/// Sends `frames` as the request body of `path` over raw HTTP/2 (each a DATA frame, the last
/// ending the stream) and returns the grpc-status and grpc-message of the answer.
async fn raw_frames(
    addr: std::net::SocketAddr,
    path: &str,
    frames: &[Bytes],
    key: Option<&str>,
) -> Result<(), Status> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (h2, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let driver = tokio::spawn(connection);
    let mut request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let mut h2 = h2.ready().await.expect("ready");
    let (response, mut body) =
        h2.send_request(request.body(()).unwrap(), frames.is_empty()).unwrap();
    for (i, frame) in frames.iter().enumerate() {
        body.send_data(frame.clone(), i + 1 == frames.len()).expect("data");
    }
    let response = response.await.expect("answered");
    let (parts, mut body) = response.into_parts();
    let mut headers = parts.headers;
    while let Some(Ok(data)) = body.data().await {
        let _ = body.flow_control().release_capacity(data.len());
    }
    if let Ok(Some(trailers)) = body.trailers().await {
        headers.extend(trailers);
    }
    driver.abort();
    let code = headers.get("grpc-status").and_then(|v| v.to_str().ok()).unwrap_or("?");
    let code: i32 = code.parse().expect("a grpc-status");
    let message = headers.get("grpc-message").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let message = percent_decode(message);
    if code == 0 { Ok(()) } else { Err(Status::new(Code::from(code), message)) }
}

/// grpc-message's percent-encoding undone.
fn percent_decode(s: &str) -> String {
    let mut out = Vec::new();
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex: String = bytes.by_ref().take(2).map(char::from).collect();
            out.push(u8::from_str_radix(&hex, 16).unwrap_or(b'?'));
        } else {
            out.push(b);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A gRPC frame of `message`.
fn framed(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(message.len() as u32);
    out.extend_from_slice(message);
    Bytes::from(out)
}

/// Calls that take one message get exactly one: two (in one frame or two), none, or a
/// message cut short are refused before the handler runs, and nothing is drawn.
async fn message_counts(
    gw: &TestGateway,
    client: &mut EntropyServiceClient<Channel>,
    expect: &mut Expect,
) {
    let before = client.get_status(authed(GetStatusRequest {})).await.unwrap().into_inner();
    let get8 = framed(&GetRandomRequest { num_bytes: 8, ..Default::default() }.encode_to_vec());
    let two_in_one = Bytes::from([get8.clone(), get8.clone()].concat());
    let key = Some(API_KEY);
    let cases: [(&str, &str, Vec<Bytes>, &str); 6] = [
        ("two messages in one frame", GET_RANDOM, vec![two_in_one], "exactly one request message"),
        ("two messages in two frames", GET_RANDOM, vec![get8.clone(), get8.clone()], "exactly one"),
        ("no message", GET_RANDOM, vec![], "carried no message"),
        (
            "a message cut short",
            GET_RANDOM,
            vec![get8.slice(..6)],
            "before its message was complete",
        ),
        (
            "a stray byte after the message",
            GET_RANDOM,
            vec![get8.clone(), Bytes::from_static(&[0])],
            "exactly one",
        ),
        (
            "two health checks in one call",
            "/grpc.health.v1.Health/Check",
            vec![framed(&[]), framed(&[])],
            "exactly one",
        ),
    ];
    for (case, path, frames, words) in cases {
        let result = raw_frames(gw.public, path, &frames, key).await;
        expect.status(case, result, Code::InvalidArgument, &[words]);
    }
    raw_frames(gw.public, GET_RANDOM, &[get8], key).await.expect("one message is served");
    let after = client.get_status(authed(GetStatusRequest {})).await.unwrap().into_inner();
    assert_eq!(
        before.pool_bytes - after.pool_bytes,
        8,
        "only the well-formed call drew (8 bytes); the refused ones drew nothing"
    );
}

async fn hostile_chunks(gw: &mut TestGateway, expect: &mut Expect) {
    let ingest_channel =
        Channel::from_shared(format!("http://{}", gw.ingest)).unwrap().connect().await.unwrap();
    let mut ingest = gw.ingest_client().await;

    let mut forged = gw.sign(vec![7; 4096]);
    forged.data[0] ^= 1;
    forged.crc32c = crc32c::crc32c(&forged.data);
    expect.status("forged MAC", ingest.publish(forged).await, Code::Unauthenticated, &["mac"]);

    let good = gw.sign(vec![9; 4096]);
    ingest.publish(good.clone()).await.expect("a good chunk is stored");
    expect.status(
        "replayed chunk",
        ingest.publish(good).await,
        Code::AlreadyExists,
        &["already accepted"],
    );

    let now_ms =
        i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap();
    let mut stale = gw.sign(vec![1; 1024]);
    stale.timestamp_unix_ms = now_ms - 3_600_000;
    expect.status(
        "stale chunk (re-signed)",
        ingest.publish(resign(stale)).await,
        Code::FailedPrecondition,
        &["stale"],
    );
    let mut future = gw.sign(vec![1; 1024]);
    future.timestamp_unix_ms = now_ms + 3_600_000;
    expect.status(
        "future chunk (re-signed)",
        ingest.publish(resign(future)).await,
        Code::FailedPrecondition,
        &["future"],
    );

    let mut unknown_key = gw.sign(vec![2; 1024]);
    unknown_key.key_id = "k9".into();
    expect.status(
        "unknown key id",
        ingest.publish(unknown_key).await,
        Code::Unauthenticated,
        &["key_id"],
    );
    let mut long_key_id = gw.sign(vec![2; 1024]);
    long_key_id.key_id = "k".repeat(10_000);
    expect.status(
        "10,000-character key id",
        ingest.publish(long_key_id).await,
        Code::InvalidArgument,
        &["key_id"],
    );
    let empty = gw.sign(Vec::new());
    expect.status("empty chunk", ingest.publish(empty).await, Code::InvalidArgument, &["data"]);
    let mut bad_crc = gw.sign(vec![3; 1024]);
    bad_crc.crc32c ^= 1;
    expect.status("bad CRC", ingest.publish(bad_crc).await, Code::InvalidArgument, &["crc32c"]);

    // Raw bytes on the ingest listener.
    let garbage = raw_call(&ingest_channel, PUBLISH, Bytes::from_static(&[0xff; 128]), None).await;
    expect.status("garbage Publish", garbage, Code::Internal, &["decode"]);
    // Past max_chunk_bytes + overhead (4 MiB + 64 KiB in this config).
    let huge = vec![0u8; 5 << 20];
    expect.status(
        "5 MiB Publish",
        raw_call(&ingest_channel, PUBLISH, huge, None).await,
        Code::OutOfRange,
        &["message length too large"],
    );
}

/// Re-signs `chunk` after a test changed a signed field, so only that field is wrong.
fn resign(mut chunk: entropy_proto::v1::PublishRequest) -> entropy_proto::v1::PublishRequest {
    let key = super::support::MAC_KEY;
    chunk.mac = entropy_proto::signing::chunk_mac(&key, &chunk).to_vec();
    chunk
}

/// Opens `n` connections, some silent, some with an HTTP/2 preface and junk, and drops them.
async fn open_and_drop_connections(addr: std::net::SocketAddr, n: usize) {
    let batch = n.min(fd_budget());
    let mut opened = 0;
    while opened < n {
        let mut held = Vec::with_capacity(batch);
        for i in 0..batch.min(n - opened) {
            let mut tcp = TcpStream::connect(addr).await.expect("connect");
            match i % 3 {
                0 => {}
                1 => {
                    let _ = tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
                }
                _ => {
                    let _ = tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff\xfe").await;
                }
            }
            held.push(tcp);
        }
        opened += held.len();
        drop(held);
    }
}

/// How many connections this process can hold at once (two descriptors each: client and
/// gateway side), leaving room for the rest of the test.
fn fd_budget() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1024);
    (soft.saturating_sub(256) / 2).max(16)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_survives_hostile_input_and_every_byte_is_accounted_for() {
    let mut gw = start(test_config(|c| {
        c.max_chunk_bytes = 4 << 20;
        c.pool_capacity_bytes = 8 << 20;
    }))
    .await;
    gw.feed(1 << 20, 64 << 10, |i| (i * 7) as u8).await;
    let channel =
        Channel::from_shared(format!("http://{}", gw.public)).unwrap().connect().await.unwrap();
    let mut client = EntropyServiceClient::new(channel.clone()).max_decoding_message_size(4 << 20);
    let fds_before = open_fds();
    let mut expect = Expect { checks: 0 };

    bad_keys(&channel, &mut expect).await;
    extreme_fields(&mut client, &mut expect).await;
    malformed_messages(&channel, &mut expect).await;
    message_counts(&gw, &mut client, &mut expect).await;
    hostile_chunks(&mut gw, &mut expect).await;
    open_and_drop_connections(gw.public, 1000).await;
    open_and_drop_connections(gw.ingest, 1000).await;

    // The dropped connections are gone from the gateway too (no descriptor leaked).
    let mut fds_after = open_fds();
    for _ in 0..100 {
        if fds_after <= fds_before + 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        fds_after = open_fds();
    }
    assert!(fds_after <= fds_before + 8, "descriptors: {fds_before} before, {fds_after} after");

    // Still healthy and serving.
    let mut health = HealthClient::new(channel.clone());
    let check = health.check(HealthCheckRequest { service: String::new() }).await.unwrap();
    assert_eq!(check.into_inner().status, ServingStatus::Serving as i32);
    let data = client
        .get_random(authed(GetRandomRequest { num_bytes: 1000, encoding: 0, ..Default::default() }))
        .await;
    assert_eq!(data.expect("still serving").into_inner().data.len(), 1000);

    // Every byte accounted for: nothing a failed call touched was lost or handed out.
    let status = client.get_status(authed(GetStatusRequest {})).await.unwrap().into_inner();
    println!(
        "{} checks; ingested {} = served {} + pool {}; rejected chunks {}",
        expect.checks,
        status.ingested_bytes_total,
        status.served_bytes_total,
        status.pool_bytes,
        status.chunks_rejected_total
    );
    assert_eq!(status.ingested_bytes_total, status.served_bytes_total + status.pool_bytes);
    assert_eq!(status.ingested_bytes_total, (1 << 20) + 4096, "the feed and the one good chunk");
    // forged, replay, stale, future, unknown key id, long key id, empty, bad CRC
    assert_eq!(status.chunks_rejected_total, 8);
    assert!(expect.checks >= 40, "{} checks", expect.checks);
    gw.stop().await;
}
