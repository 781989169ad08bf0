//! h2-hostile: clients that misbehave on purpose, over raw HTTP/2, for the resource sweep
//! (bench/sweep.py) and by hand.
//!
//! Opens `--connections` connections to `--target`, each with `--streams` calls of one
//! `--shape`, holds them for `--hold-ms` (printing `READY` on stderr once everything is set
//! up, so a driver can measure the gateway at its peak), then closes them and prints what
//! happened as one JSON object: connections the gateway refused or closed (and when), streams
//! it refused or answered (by grpc-status), bytes sent and received.
//!
//! Shapes (each call is one HTTP/2 stream):
//! - `tcp`: a TCP connection that never sends a byte (half-open).
//! - `idle`: an HTTP/2 connection that makes no call.
//! - `health-partial`: Health/Check with `--body-bytes` of a message announced larger, never
//!   finished; `--header-bytes` of padding metadata.
//! - `health-loop`: one complete Health/Check every `--every-ms` (a client without a key
//!   keeping its connection busy).
//! - `unary`: GetRandom of `--num-bytes` (`--encoding`) with `--key`, never read.
//! - `stream`: StreamRandom of `--chunk-bytes` messages with `--key`, never read.
//! - `publish-partial`: ingest Publish announcing `--body-bytes` + 1 and sending `--body-bytes`
//!   in frames of `--frame-bytes`, never finished (no MAC needed to try).
//!
//! gRPC-Web over HTTP/1.1 (the public listener with `grpc_web_enabled`), one connection each:
//! - `web-partial`: a GetRandom POST whose `content-length` announces `--body-bytes` more than
//!   it sends (after `--header-bytes` of padding), never finished; with or without `--key`.
//! - `web-slow-head`: a request head sent one byte every `--every-ms` (slow loris).
//! - `web-unread`: `--streams` GetRandom POSTs of `--num-bytes` (`--encoding`) pipelined with
//!   `--key`, the answers left unread; shortly before the hold ends the client reads what
//!   reached it (counted as received: it was delivered to this host).
//!
//! How the client reads: `--window` is the flow-control window it announces (0: the gateway
//! can send nothing); with `--read-every-ms`, every that often it reads what arrived and gives
//! that much window back (a trickling reader). `--ping-every-ms` sends PINGs (the gateway's
//! answers are writes, which must not count as reading).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use entropy_proto::v1::{GetRandomRequest, StreamRandomRequest};
use prost::Message as _;
use prost::bytes::{BufMut, Bytes, BytesMut};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Shape {
    Tcp,
    Idle,
    HealthPartial,
    HealthLoop,
    Unary,
    Stream,
    PublishPartial,
    WebPartial,
    WebSlowHead,
    WebUnread,
}

#[derive(Debug, Parser)]
#[command(about = "HTTP/2 clients that misbehave on purpose")]
struct Args {
    /// host:port of the listener.
    #[arg(long)]
    target: SocketAddr,
    #[arg(long, value_enum)]
    shape: Shape,
    #[arg(long, default_value_t = 1)]
    connections: usize,
    #[arg(long, default_value_t = 1)]
    streams: usize,
    /// How long to hold everything open, ms.
    #[arg(long, default_value_t = 2000)]
    hold_ms: u64,
    /// API key (authorization: Bearer).
    #[arg(long)]
    key: Option<String>,
    /// The flow-control window the client announces (stream and connection).
    #[arg(long, default_value_t = 65_535)]
    window: u32,
    /// Read what arrived and give its window back this often; never, without it.
    #[arg(long)]
    read_every_ms: Option<u64>,
    /// Send a PING this often.
    #[arg(long)]
    ping_every_ms: Option<u64>,
    /// health-loop: one complete call this often.
    #[arg(long, default_value_t = 500)]
    every_ms: u64,
    /// unary: bytes asked for.
    #[arg(long, default_value_t = 1 << 20)]
    num_bytes: u32,
    /// unary: 0 raw, 1 hex, 2 base64.
    #[arg(long, default_value_t = 0)]
    encoding: i32,
    /// stream: message size.
    #[arg(long, default_value_t = 64 << 10)]
    chunk_bytes: u32,
    /// health-partial, publish-partial: body bytes sent of a larger announced message.
    #[arg(long, default_value_t = 1000)]
    body_bytes: usize,
    /// health-partial: bytes of padding metadata in the request headers.
    #[arg(long, default_value_t = 0)]
    header_bytes: usize,
    /// publish-partial: DATA frame size.
    #[arg(long, default_value_t = 16 << 10)]
    frame_bytes: usize,
}

/// What happened, for the JSON report.
#[derive(Debug, Default)]
struct Tally {
    connections_opened: AtomicU64,
    connections_failed: AtomicU64,
    /// Connections the gateway closed while held, with when (ms after start).
    closed_at_ms: Mutex<Vec<u64>>,
    /// Everything is still held (closes after the hold are ours, not the gateway's).
    holding: std::sync::atomic::AtomicBool,
    streams_opened: AtomicU64,
    streams_refused: AtomicU64,
    statuses: Mutex<BTreeMap<String, u64>>,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Arc::new(Args::parse());
    let tally = Arc::new(Tally::default());
    tally.holding.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..args.connections {
        let (args, tally) = (args.clone(), tally.clone());
        tasks.push(tokio::spawn(async move {
            if let Err(e) = connection(&args, &tally, started).await {
                tally.connections_failed.fetch_add(1, Ordering::Relaxed);
                eprintln!("connection: {e:#}");
            }
        }));
        // Let the gateway accept: a burst of connects fills its backlog before it does.
        tokio::task::yield_now().await;
    }
    // Everything set up (or failed): the driver measures now.
    let setup = Duration::from_millis(args.hold_ms.min(1000) / 4);
    tokio::time::sleep(setup).await;
    eprintln!("READY");
    tokio::time::sleep(Duration::from_millis(args.hold_ms).saturating_sub(setup)).await;
    tally.holding.store(false, Ordering::Relaxed);
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    let report = serde_json::json!({
        "shape": format!("{:?}", args.shape),
        "connections_opened": tally.connections_opened.load(Ordering::Relaxed),
        "connections_failed": tally.connections_failed.load(Ordering::Relaxed),
        "closed_by_gateway_at_ms": *tally.closed_at_ms.lock().await,
        "streams_opened": tally.streams_opened.load(Ordering::Relaxed),
        "streams_refused": tally.streams_refused.load(Ordering::Relaxed),
        "statuses": *tally.statuses.lock().await,
        "bytes_sent": tally.bytes_sent.load(Ordering::Relaxed),
        "bytes_received": tally.bytes_received.load(Ordering::Relaxed),
    });
    println!("{report}");
    Ok(())
}

/// One connection: its calls, held until aborted.
async fn connection(args: &Args, tally: &Arc<Tally>, started: Instant) -> anyhow::Result<()> {
    let tcp = TcpStream::connect(args.target).await.context("connect")?;
    tcp.set_nodelay(true)?;
    tally.connections_opened.fetch_add(1, Ordering::Relaxed);
    if matches!(args.shape, Shape::WebPartial | Shape::WebSlowHead | Shape::WebUnread) {
        return web(args, tally, started, tcp).await;
    }
    if args.shape == Shape::Tcp {
        // Hold the socket; note when the gateway closes it.
        let mut buf = [0u8; 4096];
        loop {
            tcp.readable().await?;
            match tcp.try_read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                // `readable` may wake spuriously.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
        note_closed(tally, started).await;
        return Ok(());
    }
    let (h2, mut conn) = h2::client::Builder::new()
        .initial_window_size(args.window)
        .initial_connection_window_size(args.window.max(65_535))
        .max_frame_size(16 << 10)
        .handshake::<_, Bytes>(tcp)
        .await
        .context("h2 handshake")?;
    let pings = conn.ping_pong();
    let tally_for_conn = tally.clone();
    let driver = tokio::spawn(async move {
        let _ = conn.await;
        note_closed(&tally_for_conn, started).await;
    });
    if let (Some(mut pings), Some(every)) = (pings, args.ping_every_ms) {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(every)).await;
                if pings.ping(h2::Ping::opaque()).await.is_err() {
                    break;
                }
            }
        });
    }
    let mut streams = Vec::new();
    for _ in 0..args.streams {
        let Ok(ready) = h2.clone().ready().await else { break };
        match call(args, tally, ready).await {
            Ok(held) => streams.push(held),
            Err(e) => {
                eprintln!("call: {e:#}");
                break;
            }
        }
    }
    let _ = driver.await;
    drop(streams);
    Ok(())
}

/// One gRPC-Web connection over HTTP/1.1 (the `web-*` shapes).
async fn web(
    args: &Args,
    tally: &Arc<Tally>,
    started: Instant,
    mut tcp: TcpStream,
) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let request = GetRandomRequest {
        num_bytes: args.num_bytes,
        encoding: args.encoding,
        ..Default::default()
    }
    .encode_to_vec();
    let message = frame(&request, request.len());
    let head = |content_length: usize| {
        let mut head = format!(
            "POST /entropy.v1.EntropyService/GetRandom HTTP/1.1\r\nhost: {}\r\n\
             content-type: application/grpc-web+proto\r\nx-grpc-web: 1\r\n\
             content-length: {content_length}\r\n",
            args.target
        );
        if let Some(key) = &args.key {
            head += &format!("authorization: Bearer {key}\r\n");
        }
        if args.header_bytes > 0 {
            head += &format!("x-padding: {}\r\n", "p".repeat(args.header_bytes));
        }
        head + "\r\n"
    };
    let mut sent = Vec::new();
    match args.shape {
        Shape::WebPartial => {
            sent.extend_from_slice(head(message.len() + args.body_bytes).as_bytes());
            sent.extend_from_slice(&message);
            tally.streams_opened.fetch_add(1, Ordering::Relaxed);
        }
        Shape::WebSlowHead => {
            let head = head(message.len());
            tally.streams_opened.fetch_add(1, Ordering::Relaxed);
            for byte in head.as_bytes() {
                if tcp.write_all(&[*byte]).await.is_err() {
                    break;
                }
                tally.bytes_sent.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(args.every_ms)).await;
            }
        }
        _ => {
            for _ in 0..args.streams {
                sent.extend_from_slice(head(message.len()).as_bytes());
                sent.extend_from_slice(&message);
                tally.streams_opened.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    if !sent.is_empty() {
        tcp.write_all(&sent).await.context("send")?;
        tally.bytes_sent.fetch_add(sent.len() as u64, Ordering::Relaxed);
    }
    // Left unread until shortly before the hold ends; the other shapes watch for the close.
    if args.shape == Shape::WebUnread {
        let read_at = Duration::from_millis(args.hold_ms.saturating_sub(400));
        tokio::time::sleep(read_at.saturating_sub(started.elapsed())).await;
    }
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tally.bytes_received.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
    note_closed(tally, started).await;
    Ok(())
}

async fn note_closed(tally: &Tally, started: Instant) {
    if !tally.holding.load(Ordering::Relaxed) {
        return;
    }
    let at = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tally.closed_at_ms.lock().await.push(at);
}

/// A gRPC frame: the 5-byte prefix, then `body`.
fn frame(body: &[u8], announced: usize) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + body.len());
    out.put_u8(0);
    out.put_u32(u32::try_from(announced).unwrap_or(u32::MAX));
    out.put_slice(body);
    out.freeze()
}

/// What a held call keeps alive.
type Held = tokio::task::JoinHandle<()>;

/// Starts one call of the shape; returns the task that holds it.
async fn call(
    args: &Args,
    tally: &Arc<Tally>,
    mut h2: h2::client::SendRequest<Bytes>,
) -> anyhow::Result<Held> {
    let (path, body, end) = match args.shape {
        Shape::HealthPartial => {
            ("/grpc.health.v1.Health/Check", frame(&vec![0; args.body_bytes], 16_000), false)
        }
        Shape::HealthLoop => ("/grpc.health.v1.Health/Check", frame(&[], 0), true),
        Shape::Unary => {
            let req = GetRandomRequest {
                num_bytes: args.num_bytes,
                encoding: args.encoding,
                ..Default::default()
            };
            let bytes = req.encode_to_vec();
            ("/entropy.v1.EntropyService/GetRandom", frame(&bytes, bytes.len()), true)
        }
        Shape::Stream => {
            let req = StreamRandomRequest { chunk_bytes: args.chunk_bytes, ..Default::default() };
            let bytes = req.encode_to_vec();
            ("/entropy.v1.EntropyService/StreamRandom", frame(&bytes, bytes.len()), true)
        }
        Shape::PublishPartial => ("/entropy.v1.IngestService/Publish", Bytes::new(), false),
        Shape::Tcp | Shape::Idle | Shape::WebPartial | Shape::WebSlowHead | Shape::WebUnread => {
            return Ok(tokio::spawn(std::future::pending()));
        }
    };
    let mut request = http::Request::post(format!("http://{}{path}", args.target))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(key) = &args.key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    if args.header_bytes > 0 {
        request = request.header("x-padding", "p".repeat(args.header_bytes));
    }
    let request = request.body(())?;
    let (response, mut send) = h2.send_request(request, false)?;
    tally.streams_opened.fetch_add(1, Ordering::Relaxed);
    if args.shape == Shape::PublishPartial {
        send_partial(args, tally, &mut send).await;
    } else {
        tally.bytes_sent.fetch_add(body.len() as u64, Ordering::Relaxed);
        send.send_data(body, end)?;
    }
    let (tally, read_every, every) = (tally.clone(), args.read_every_ms, args.every_ms);
    let looping = args.shape == Shape::HealthLoop;
    let h2_again = h2.clone();
    Ok(tokio::spawn(async move {
        let _send = send;
        answered(&tally, response, read_every).await;
        if looping {
            // A complete call every `every` ms on this connection, for as long as it is held.
            let mut h2 = h2_again;
            loop {
                tokio::time::sleep(Duration::from_millis(every)).await;
                let Ok(ready) = h2.clone().ready().await else { break };
                h2 = ready;
                let request = http::Request::post("/grpc.health.v1.Health/Check")
                    .header("content-type", "application/grpc")
                    .header("te", "trailers")
                    .body(())
                    .unwrap_or_default();
                let Ok((response, mut send)) = h2.send_request(request, false) else { break };
                if send.send_data(frame(&[], 0), true).is_err() {
                    break;
                }
                answered(&tally, response, None).await;
            }
        }
    }))
}

/// Sends `--body-bytes` of a Publish announced one byte longer, in `--frame-bytes` pieces, as
/// the gateway's window admits (giving up when it stays shut).
async fn send_partial(args: &Args, tally: &Tally, send: &mut h2::SendStream<Bytes>) {
    let prefix = frame(&[], args.body_bytes + 1);
    if send.send_data(prefix, false).is_err() {
        return;
    }
    let mut left = args.body_bytes;
    while left > 0 {
        send.reserve_capacity(left.min(args.frame_bytes));
        let granted = tokio::time::timeout(
            Duration::from_millis(200),
            std::future::poll_fn(|cx| send.poll_capacity(cx)),
        )
        .await;
        let Ok(Some(Ok(n))) = granted else { return };
        let n = n.min(left).min(args.frame_bytes);
        if n == 0 {
            continue;
        }
        if send.send_data(Bytes::from(vec![0u8; n]), false).is_err() {
            return;
        }
        tally.bytes_sent.fetch_add(n as u64, Ordering::Relaxed);
        left -= n;
    }
}

/// Waits for a response: counts a refusal (RST_STREAM) or its grpc-status; reads its body only
/// with `read_every` (then slowly, giving the window back as it goes).
async fn answered(tally: &Tally, response: h2::client::ResponseFuture, read_every: Option<u64>) {
    let response = match response.await {
        Ok(response) => response,
        Err(_) => {
            tally.streams_refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    let status_of = |headers: &http::HeaderMap| {
        headers.get("grpc-status").and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    if let Some(status) = status_of(response.headers()) {
        *tally.statuses.lock().await.entry(status).or_default() += 1;
        return;
    }
    let mut body = response.into_body();
    let Some(every) = read_every else { return std::future::pending().await };
    loop {
        tokio::time::sleep(Duration::from_millis(every)).await;
        match body.data().await {
            Some(Ok(data)) => {
                tally.bytes_received.fetch_add(data.len() as u64, Ordering::Relaxed);
                let _ = body.flow_control().release_capacity(data.len());
            }
            _ => break,
        }
    }
    if let Ok(Some(trailers)) = body.trailers().await
        && let Some(status) = status_of(&trailers)
    {
        *tally.statuses.lock().await.entry(status).or_default() += 1;
    }
}
