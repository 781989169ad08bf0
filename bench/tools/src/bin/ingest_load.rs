//! `ingest-load`: how many chunks per second a gateway verifies and stores.
//!
//! All chunks are signed before the clock starts (CRC32C + HMAC-SHA256 with the project's own
//! canonical encoding, `entropy_proto::signing`), so the figure is the gateway's, not the
//! signer's: a real collector spends ~0.6 ms of CPU per MiB signing. Then they are published
//! with `--concurrency` calls in flight over `--connections` HTTP/2 connections, and the
//! outcome of each is counted. Prints one JSON object.
//!
//! Chunks must be dated from the gateway's start plus its `max_future_skew_ms` on (its restart
//! rule) and within its freshness window (60 s by default): sign and send in one go, as this
//! tool does, once the gateway has been up that long.
//!
//! Kept because nothing else loads the ingest side: ghz and h2load would need chunks signed
//! per call (a fresh sequence and MAC each), and the collector itself is paced by its sources.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Parser;
use entropy_bench::{Window, connect};
use entropy_proto::signing::chunk_mac;
use entropy_proto::v1::ingest_service_client::IngestServiceClient;
use entropy_proto::v1::{Mixing, PublishRequest, SourceHealth, SourceKind, SourceReport};
use tokio::sync::Mutex;
use tonic::Code;

/// Pre-signs chunks, then publishes them to a gateway's ingest listener as fast as it accepts.
#[derive(Debug, Parser)]
struct Cli {
    /// Ingest listener, `host:port`.
    #[arg(long)]
    addr: String,
    /// File with the MAC secret as hex (the gateway's `<key_id>.key`).
    #[arg(long)]
    key_file: PathBuf,
    /// The MAC key's id.
    #[arg(long, default_value = "bench")]
    key_id: String,
    /// Collector id written into every chunk.
    #[arg(long, default_value = "bench-ingest")]
    collector_id: String,
    /// The gateway's `gateway_id`: chunks are sealed for it.
    #[arg(long, default_value = "bench")]
    gateway_id: String,
    /// Bytes of entropy per chunk.
    #[arg(long, default_value_t = 1 << 20)]
    chunk_bytes: usize,
    /// Chunks to sign and send; default: `--total-bytes` / `--chunk-bytes`.
    #[arg(long)]
    count: Option<usize>,
    /// Bytes to send when `--count` is not given.
    #[arg(long, default_value_t = 256 << 20)]
    total_bytes: u64,
    /// Publish calls in flight.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// HTTP/2 connections the calls are spread over.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Pace the chunks at this many bytes a second (a steady feed); as fast as accepted without.
    #[arg(long)]
    rate_bytes_per_s: Option<u64>,
}

#[derive(Default)]
struct Outcomes {
    ok: AtomicU64,
    already: AtomicU64,
    pool_full: AtomicU64,
    failed: AtomicU64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    anyhow::ensure!(cli.chunk_bytes > 0, "--chunk-bytes must be positive");
    anyhow::ensure!(cli.concurrency > 0 && cli.connections > 0, "need at least one call");
    let key_hex = std::fs::read_to_string(&cli.key_file)
        .with_context(|| format!("cannot read {}", cli.key_file.display()))?;
    let key = hex::decode(key_hex.trim()).context("key file: not hex")?;
    let count =
        cli.count.unwrap_or_else(|| (cli.total_bytes / cli.chunk_bytes as u64).max(1) as usize);

    let mut channels = Vec::new();
    for _ in 0..cli.connections {
        channels.push(connect(&cli.addr, Window::Fixed(4 << 20)).await?);
    }

    // Sign everything first. One random block is reused as the data of every chunk: the
    // gateway checks the CRC and the MAC, never that data differs, and filling GiBs from the
    // OS RNG would only slow the set-up.
    let sign_start = Instant::now();
    let mut block = vec![0u8; cli.chunk_bytes];
    getrandom::fill(&mut block).map_err(|e| anyhow::anyhow!("OS RNG: {e}"))?;
    let crc = crc32c::crc32c(&block);
    let mut epoch_bytes = [0u8; 8];
    getrandom::fill(&mut epoch_bytes).map_err(|e| anyhow::anyhow!("OS RNG: {e}"))?;
    let epoch = u64::from_be_bytes(epoch_bytes);
    let now_ms = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?;
    let mut chunks = Vec::with_capacity(count);
    for sequence in 0..count as u64 {
        let mut chunk = PublishRequest {
            collector_id: cli.collector_id.clone(),
            gateway_id: cli.gateway_id.clone(),
            epoch,
            sequence,
            timestamp_unix_ms: now_ms,
            mixing: Mixing::None as i32,
            sources: vec![SourceReport {
                name: "bench".into(),
                kind: SourceKind::Os as i32,
                health: SourceHealth::Healthy as i32,
                contributed: true,
            }],
            data: block.clone(),
            crc32c: crc,
            key_id: cli.key_id.clone(),
            mac: Vec::new(),
        };
        chunk.mac = chunk_mac(&key, &chunk).to_vec();
        chunks.push(chunk);
    }
    let sign_secs = sign_start.elapsed().as_secs_f64();

    // Workers take the next chunk in sequence order, so arrival stays inside the gateway's
    // 1024-sequence replay window.
    let queue = Arc::new(Mutex::new(chunks.into_iter()));
    let outcomes = Arc::new(Outcomes::default());
    let first_error = Arc::new(Mutex::new(None::<String>));
    let start = Instant::now();
    let mut workers = Vec::new();
    for i in 0..cli.concurrency {
        let mut client = IngestServiceClient::new(channels[i % channels.len()].clone())
            .max_encoding_message_size(4 << 20);
        let queue = queue.clone();
        let outcomes = outcomes.clone();
        let first_error = first_error.clone();
        let (rate, chunk_bytes) = (cli.rate_bytes_per_s, cli.chunk_bytes as u64);
        workers.push(tokio::spawn(async move {
            loop {
                let Some(chunk) = queue.lock().await.next() else { break };
                if let Some(rate) = rate.filter(|r| *r > 0) {
                    let due = Duration::from_secs_f64(
                        (chunk.sequence * chunk_bytes) as f64 / rate as f64,
                    );
                    tokio::time::sleep_until(tokio::time::Instant::from_std(start) + due).await;
                }
                match client.publish(chunk).await {
                    Ok(_) => outcomes.ok.fetch_add(1, Ordering::Relaxed),
                    Err(s) if s.code() == Code::AlreadyExists => {
                        outcomes.already.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(s) if s.code() == Code::ResourceExhausted => {
                        outcomes.pool_full.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(s) => {
                        first_error.lock().await.get_or_insert_with(|| s.to_string());
                        outcomes.failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }
    for w in workers {
        w.await?;
    }
    let secs = start.elapsed().as_secs_f64();
    let ok = outcomes.ok.load(Ordering::Relaxed);
    let stored_bytes = ok * cli.chunk_bytes as u64;
    let report = serde_json::json!({
        "chunk_bytes": cli.chunk_bytes,
        "chunks": count,
        "concurrency": cli.concurrency,
        "connections": cli.connections,
        "ok": ok,
        "already_exists": outcomes.already.load(Ordering::Relaxed),
        "pool_full": outcomes.pool_full.load(Ordering::Relaxed),
        "failed": outcomes.failed.load(Ordering::Relaxed),
        "first_error": *first_error.lock().await,
        "sign_secs": sign_secs,
        "elapsed_secs": secs,
        "chunks_per_s": ok as f64 / secs,
        "bytes_per_s": stored_bytes as f64 / secs,
        "stored_bytes": stored_bytes,
    });
    println!("{report}");
    Ok(())
}
