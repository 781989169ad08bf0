//! `rest-baseline`: the original system's serving path (QRNG-DD's gateway, seed report 000) as a
//! yardstick in the same benchmark run as ours, so every report can state ours ÷ REST.
//!
//! It does what the original's `GET /api/random` handler does per call, nothing more, nothing
//! less: axum over HTTP/1.1 (no TLS), the tokio multi-thread runtime of `#[tokio::main]`, the API
//! key from the `api_key` query parameter or `Authorization: Bearer <key>` checked the way the
//! original checks it (`Vec<String>::contains` of a fresh `String`: a plain, not constant-time,
//! comparison), `bytes` from 1 to 64 KiB (the original's `MAX_REQUEST_SIZE`), `encoding` one of
//! `hex` (the default), `base64` or `binary`, the bytes popped from a mutex-guarded queue, and one
//! INFO line per request, JSON, with the original's fields (client address, user agent, endpoint,
//! the key's last four characters, the request, the status). The body is the encoded bytes alone
//! (`text/plain` for hex and base64, `application/octet-stream` for binary), as the original's.
//!
//! Left out, because they are not on the path the issue compares or would cap it: the per-key
//! token-bucket rate limiter (1,000 req/s in the seed's set-up), the latency histogram behind
//! `/metrics`, the CORS layer and the other routes. So this is, if anything, faster than the
//! original.
//!
//! The log goes to `--log-file` through a plain blocking writer, one `write(2)` per line: the
//! original wrote to stdout (a container's log pipe) the same way; it used no tracing-appender.
//!
//! The queue is filled once at start with `--prefill-bytes` from the OS RNG and never runs dry:
//! each pop copies the bytes out and appends them back at the tail (the queue wraps). The
//! original copies every served byte twice too (into a `BytesMut` under its lock, then
//! `to_vec()` for the body), so the work per byte is the same. The bytes repeat every
//! `--prefill-bytes`: a yardstick, not a source.
//!
//! Prints `rest <addr>` on stdout once the listener is bound. Pins nothing: the bench driver runs
//! it under `taskset` on the server core, like the gateway.

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context as _;
use axum::Router;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use clap::Parser;
use serde::Deserialize;
use tokio::net::TcpListener;
use tracing::info;

/// The original's largest request (`qrng_core::MAX_REQUEST_SIZE`).
const MAX_REQUEST_BYTES: usize = 64 << 10;

/// The original REST gateway's hot path, for comparison.
#[derive(Debug, Parser)]
struct Cli {
    /// Listen address (HTTP/1.1, no TLS).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The one accepted API key.
    #[arg(long, env = "REST_BASELINE_KEY", hide_env_values = true)]
    key: String,
    /// File the per-request log lines are appended to.
    #[arg(long)]
    log_file: PathBuf,
    /// Bytes drawn from the OS RNG into the queue at start (they are served round and round).
    #[arg(long, default_value_t = 64 << 20)]
    prefill_bytes: usize,
}

/// What every handler shares.
struct Baseline {
    /// Accepted keys, as the original's config holds them.
    api_keys: Vec<String>,
    /// The pre-filled bytes.
    queue: Mutex<VecDeque<u8>>,
}

impl Baseline {
    /// Pops `n` bytes from the front and appends them back at the tail; `None` when the queue
    /// holds fewer than `n` (only if `n` exceeds `--prefill-bytes`).
    fn pop(&self, n: usize) -> Option<Vec<u8>> {
        // A handler that panicked mid-pop leaves whole bytes behind: nothing to repair.
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.len() < n {
            return None;
        }
        let mut out = Vec::with_capacity(n);
        let (front, back) = queue.as_slices();
        let from_front = front.len().min(n);
        out.extend_from_slice(&front[..from_front]);
        out.extend_from_slice(&back[..n - from_front]);
        queue.drain(..n);
        queue.extend(&out);
        Some(out)
    }
}

/// The original's `RandomQuery`.
#[derive(Deserialize)]
struct RandomQuery {
    bytes: usize,
    #[serde(default = "default_encoding")]
    encoding: String,
    #[serde(default)]
    api_key: Option<String>,
}

fn default_encoding() -> String {
    "hex".to_string()
}

/// `GET /api/random?bytes=N[&encoding=hex|base64|binary]`, step by step as the original.
async fn serve_random(
    State(state): State<Arc<Baseline>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    Query(params): Query<RandomQuery>,
    headers: HeaderMap,
) -> Response {
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown")
        .to_string();
    let log = |key: &str, request: &str, status: StatusCode| {
        info!(
            client_ip = %addr,
            user_agent = %user_agent,
            endpoint = "/api/random",
            api_key = %mask_api_key(key),
            request = %request,
            status = status.as_u16(),
            "Client request"
        );
    };

    let api_key = match params.api_key {
        Some(key) if state.api_keys.contains(&key) => Some(key),
        Some(_) => None,
        None => bearer_key(&headers, &state.api_keys),
    };
    let Some(api_key) = api_key else {
        log("", &format!("bytes={}", params.bytes), StatusCode::UNAUTHORIZED);
        return StatusCode::UNAUTHORIZED.into_response();
    };
    if params.bytes == 0 || params.bytes > MAX_REQUEST_BYTES {
        log(&api_key, &format!("bytes={} (invalid)", params.bytes), StatusCode::BAD_REQUEST);
        return StatusCode::BAD_REQUEST.into_response();
    }
    let Some(encoding) = Encoding::parse(&params.encoding) else {
        let request = format!("bytes={} encoding={} (invalid)", params.bytes, params.encoding);
        log(&api_key, &request, StatusCode::BAD_REQUEST);
        return StatusCode::BAD_REQUEST.into_response();
    };
    let request = format!("bytes={} encoding={}", params.bytes, params.encoding);
    let Some(data) = state.pop(params.bytes) else {
        log(&api_key, &request, StatusCode::SERVICE_UNAVAILABLE);
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let body = match encoding {
        Encoding::Binary => data,
        Encoding::Hex => encode_hex(&data).into_bytes(),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(&data).into_bytes(),
    };
    log(&api_key, &request, StatusCode::OK);
    (StatusCode::OK, [(header::CONTENT_TYPE, encoding.mime_type())], body).into_response()
}

/// The key of `Authorization: Bearer <key>` when it is an accepted one.
fn bearer_key(headers: &HeaderMap, api_keys: &[String]) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let key = value.strip_prefix("Bearer ")?;
    // The original's comparison: an owned copy, then `==` against each configured key.
    let key = key.to_string();
    api_keys.contains(&key).then_some(key)
}

/// The key's last four characters, as the original logs it.
fn mask_api_key(key: &str) -> String {
    match key.len().checked_sub(4).filter(|&start| start > 0 && key.is_char_boundary(start)) {
        Some(start) => format!("****{}", &key[start..]),
        None => "****".to_string(),
    }
}

/// The original's response encodings.
#[derive(Clone, Copy)]
enum Encoding {
    Hex,
    Base64,
    Binary,
}

impl Encoding {
    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "hex" => Some(Self::Hex),
            "base64" => Some(Self::Base64),
            "binary" | "raw" => Some(Self::Binary),
            _ => None,
        }
    }

    fn mime_type(self) -> &'static str {
        match self {
            Self::Binary => "application/octet-stream",
            Self::Hex | Self::Base64 => "text/plain; charset=utf-8",
        }
    }
}

/// Hex as the original writes it: one formatted `String` per byte, collected.
#[allow(clippy::format_collect)] // the original's cost, on purpose
fn encode_hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let log_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cli.log_file)
        .with_context(|| format!("opening {}", cli.log_file.display()))?;
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_target(false)
        .with_thread_ids(true)
        .json()
        .with_writer(Arc::new(log_file))
        .init();

    let mut prefill = vec![0u8; cli.prefill_bytes];
    getrandom::fill(&mut prefill).map_err(|e| anyhow::anyhow!("OS RNG: {e}"))?;
    let state =
        Arc::new(Baseline { api_keys: vec![cli.key], queue: Mutex::new(VecDeque::from(prefill)) });

    let app = Router::new().route("/api/random", get(serve_random)).with_state(state);
    let listener = TcpListener::bind(cli.listen).await?;
    let addr = listener.local_addr()?;
    info!("REST baseline listening on {addr}, {} bytes pre-filled", cli.prefill_bytes);
    println!("rest {addr}");
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
    Ok(())
}
