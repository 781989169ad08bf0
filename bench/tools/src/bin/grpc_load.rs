//! `grpc-load`: the load shapes ghz and h2load do not give.
//!
//! - `unary`: GetRandom from N workers, each calling, waiting for the answer, then thinking
//!   `--think-ms` (the seed report's sustained test), with exact percentiles over every call.
//! - `stream`: N concurrent StreamRandom consumers, each on its own connection by default,
//!   counting the bytes each one got in the same window: aggregate bandwidth and fairness.
//! - `status`: GetStatus as JSON (pool level, counters).
//!
//! Each prints one JSON object on stdout.
//!
//! Kept because nothing else measures these: ghz and h2load have no think time between a
//! worker's calls and cannot read a server stream while counting each consumer's share, so
//! the seed's sustained test and the streaming fairness figures come only from here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use entropy_bench::{Window, authorize, connect, percentiles};
use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use entropy_proto::v1::{Construction, GetRandomRequest, GetStatusRequest, StreamRandomRequest};
use tokio::sync::Mutex;
use tonic::transport::Channel;

/// gRPC load shapes for the benchmark driver.
#[derive(Debug, Parser)]
struct Cli {
    /// Public listener, `host:port`.
    #[arg(long, global = true, default_value = "127.0.0.1:50051")]
    addr: String,
    /// API key, sent as `authorization: Bearer <key>`.
    #[arg(long, global = true, env = "ENTROPY_BENCH_API_KEY")]
    key: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sequential GetRandom calls per worker, with optional think time.
    Unary {
        /// Bytes per call.
        #[arg(long, default_value_t = 1024)]
        num_bytes: u32,
        /// Workers (calls in flight).
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Connections the workers share.
        #[arg(long, default_value_t = 1)]
        connections: usize,
        /// Pause after each answer, in milliseconds.
        #[arg(long, default_value_t = 0)]
        think_ms: u64,
        /// How long to run, in seconds.
        #[arg(long, default_value_t = 10.0)]
        duration_s: f64,
        /// HTTP/2 receive window: default, adaptive or a byte count.
        #[arg(long, default_value = "default")]
        window: Window,
    },
    /// Concurrent StreamRandom consumers; per-stream bytes in one common window.
    Stream {
        /// Concurrent streams.
        #[arg(long, default_value_t = 1)]
        streams: usize,
        /// Bytes per message.
        #[arg(long, default_value_t = 65536)]
        chunk_bytes: u32,
        /// Connections the streams share (0: one per stream).
        #[arg(long, default_value_t = 0)]
        connections: usize,
        /// Measuring window, in seconds (after every stream got its first message).
        #[arg(long, default_value_t = 5.0)]
        duration_s: f64,
        /// Stop the window early once this many bytes arrived in it (0: no limit); keeps a
        /// drain run inside a pre-filled pool.
        #[arg(long, default_value_t = 0)]
        max_bytes: u64,
        /// HTTP/2 receive window: default, adaptive or a byte count.
        #[arg(long, default_value = "adaptive")]
        window: Window,
        /// Gap between messages (ms) that starts a new burst, reported for stream 0.
        #[arg(long, default_value_t = 0)]
        burst_gap_ms: u64,
        /// Ask for DRBG output seeded from the pool (`CONSTRUCTION_DRBG`) instead of pool bytes.
        #[arg(long)]
        drbg: bool,
    },
    /// GetStatus counters as JSON.
    Status,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let key = cli.key.as_deref();
    let report = match cli.command {
        Command::Unary { num_bytes, concurrency, connections, think_ms, duration_s, window } => {
            let opts = UnaryOpts {
                num_bytes,
                concurrency,
                connections,
                think: Duration::from_millis(think_ms),
                duration: Duration::from_secs_f64(duration_s),
                window,
            };
            unary(&cli.addr, key, opts).await?
        }
        Command::Stream {
            streams,
            chunk_bytes,
            connections,
            duration_s,
            max_bytes,
            window,
            burst_gap_ms,
            drbg,
        } => {
            let opts = StreamOpts {
                streams,
                chunk_bytes,
                connections: if connections == 0 { streams } else { connections },
                duration: Duration::from_secs_f64(duration_s),
                max_bytes,
                window,
                burst_gap: Duration::from_millis(burst_gap_ms),
                drbg,
            };
            stream(&cli.addr, key, opts).await?
        }
        Command::Status => status(&cli.addr, key).await?,
    };
    println!("{report}");
    Ok(())
}

struct UnaryOpts {
    num_bytes: u32,
    concurrency: usize,
    connections: usize,
    think: Duration,
    duration: Duration,
    window: Window,
}

#[derive(Default)]
struct UnaryResults {
    latencies_us: Vec<u64>,
    errors: BTreeMap<String, u64>,
}

async fn channels(addr: &str, n: usize, window: Window) -> anyhow::Result<Vec<Channel>> {
    let mut out = Vec::new();
    for _ in 0..n.max(1) {
        out.push(connect(addr, window).await?);
    }
    Ok(out)
}

async fn unary(addr: &str, key: Option<&str>, o: UnaryOpts) -> anyhow::Result<serde_json::Value> {
    let chans = channels(addr, o.connections, o.window).await?;
    let results = Arc::new(Mutex::new(UnaryResults::default()));
    let start = Instant::now();
    let deadline = start + o.duration;
    let mut workers = Vec::new();
    for i in 0..o.concurrency.max(1) {
        let mut client = EntropyServiceClient::new(chans[i % chans.len()].clone())
            .max_decoding_message_size(8 << 20);
        let key = key.map(str::to_owned);
        let results = results.clone();
        let (num_bytes, think) = (o.num_bytes, o.think);
        workers.push(tokio::spawn(async move {
            let mut local = UnaryResults::default();
            while Instant::now() < deadline {
                let mut req =
                    tonic::Request::new(GetRandomRequest { num_bytes, ..Default::default() });
                authorize(&mut req, key.as_deref())?;
                let t0 = Instant::now();
                match client.get_random(req).await {
                    Ok(r) if r.get_ref().data.len() == num_bytes as usize => {
                        local.latencies_us.push(t0.elapsed().as_micros() as u64);
                    }
                    Ok(_) => *local.errors.entry("short_answer".into()).or_default() += 1,
                    Err(s) => *local.errors.entry(format!("{:?}", s.code())).or_default() += 1,
                }
                if !think.is_zero() {
                    tokio::time::sleep(think).await;
                }
            }
            let mut all = results.lock().await;
            all.latencies_us.extend(local.latencies_us);
            for (k, v) in local.errors {
                *all.errors.entry(k).or_default() += v;
            }
            anyhow::Ok(())
        }));
    }
    for w in workers {
        w.await??;
    }
    let secs = start.elapsed().as_secs_f64();
    let mut all = results.lock().await;
    let ok = all.latencies_us.len() as u64;
    let failed: u64 = all.errors.values().sum();
    Ok(serde_json::json!({
        "num_bytes": o.num_bytes,
        "concurrency": o.concurrency,
        "connections": o.connections,
        "think_ms": o.think.as_millis() as u64,
        "elapsed_secs": secs,
        "requests": ok + failed,
        "ok": ok,
        "failed": failed,
        "errors": all.errors,
        "success_rate": if ok + failed > 0 { ok as f64 / (ok + failed) as f64 } else { 0.0 },
        "rps": ok as f64 / secs,
        "bytes_per_s": (ok * u64::from(o.num_bytes)) as f64 / secs,
        "latency": percentiles(&mut all.latencies_us),
    }))
}

struct StreamOpts {
    streams: usize,
    chunk_bytes: u32,
    connections: usize,
    duration: Duration,
    max_bytes: u64,
    window: Window,
    burst_gap: Duration,
    drbg: bool,
}

async fn stream(addr: &str, key: Option<&str>, o: StreamOpts) -> anyhow::Result<serde_json::Value> {
    let chans = channels(addr, o.connections, o.window).await?;
    let counters: Arc<Vec<AtomicU64>> =
        Arc::new((0..o.streams).map(|_| AtomicU64::new(0)).collect());
    let errors = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
    let arrivals = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let mut tasks = Vec::new();
    for i in 0..o.streams {
        let mut client = EntropyServiceClient::new(chans[i % chans.len()].clone())
            .max_decoding_message_size(8 << 20);
        let mut req = tonic::Request::new(StreamRandomRequest {
            chunk_bytes: o.chunk_bytes,
            total_bytes: 0,
            construction: if o.drbg { Construction::Drbg as i32 } else { 0 },
            ..Default::default()
        });
        authorize(&mut req, key)?;
        let (counters, errors, arrivals) = (counters.clone(), errors.clone(), arrivals.clone());
        let record = i == 0 && !o.burst_gap.is_zero();
        tasks.push(tokio::spawn(async move {
            let outcome = async {
                let mut s = client.stream_random(req).await?.into_inner();
                while let Some(msg) = s.message().await? {
                    counters[i].fetch_add(msg.data.len() as u64, Ordering::Relaxed);
                    if record {
                        arrivals.lock().await.push(Instant::now());
                    }
                }
                Ok::<_, tonic::Status>(())
            }
            .await;
            let label = match outcome {
                Ok(()) => "ended".to_owned(),
                Err(s) => format!("{:?}", s.code()),
            };
            *errors.lock().await.entry(label).or_default() += 1;
        }));
    }
    let snapshot = || counters.iter().map(|c| c.load(Ordering::Relaxed)).collect::<Vec<u64>>();
    // The window opens once every stream is flowing (or after 5 s, whichever first).
    let open_by = Instant::now() + Duration::from_secs(5);
    while snapshot().contains(&0) && Instant::now() < open_by {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let (c0, t0) = (snapshot(), Instant::now());
    let mut c1;
    loop {
        tokio::time::sleep(Duration::from_millis(2)).await;
        c1 = snapshot();
        let got: u64 = c1.iter().zip(&c0).map(|(a, b)| a - b).sum();
        if t0.elapsed() >= o.duration || (o.max_bytes > 0 && got >= o.max_bytes) {
            break;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    for t in &tasks {
        t.abort();
    }
    let per_stream: Vec<u64> = c1.iter().zip(&c0).map(|(a, b)| a - b).collect();
    let total: u64 = per_stream.iter().sum();
    let min = per_stream.iter().copied().min().unwrap_or(0);
    let max = per_stream.iter().copied().max().unwrap_or(0);
    let times = arrivals.lock().await.clone();
    let bursts: Vec<Instant> = times
        .iter()
        .enumerate()
        .filter(|(i, t)| *i == 0 || t.duration_since(times[*i - 1]) >= o.burst_gap)
        .map(|(_, t)| *t)
        .collect();
    let mut burst_gaps_us: Vec<u64> =
        bursts.windows(2).map(|w| w[1].duration_since(w[0]).as_micros() as u64).collect();
    Ok(serde_json::json!({
        "streams": o.streams,
        "chunk_bytes": o.chunk_bytes,
        "drbg": o.drbg,
        "connections": o.connections,
        "elapsed_secs": secs,
        "total_bytes": total,
        "bytes_per_s": total as f64 / secs,
        "per_stream_bytes": per_stream,
        "min_share": if total > 0 { min as f64 / total as f64 } else { 0.0 },
        "max_share": if total > 0 { max as f64 / total as f64 } else { 0.0 },
        "max_over_min": if min > 0 { max as f64 / min as f64 } else { f64::INFINITY },
        "stream_ends": *errors.lock().await,
        "bursts": bursts.len(),
        "burst_interval": percentiles(&mut burst_gaps_us),
    }))
}

async fn status(addr: &str, key: Option<&str>) -> anyhow::Result<serde_json::Value> {
    let mut client = EntropyServiceClient::new(connect(addr, Window::Default).await?);
    let mut req = tonic::Request::new(GetStatusRequest {});
    authorize(&mut req, key)?;
    let s = client.get_status(req).await?.into_inner();
    Ok(serde_json::json!({
        "pool_bytes": s.pool_bytes,
        "pool_capacity_bytes": s.pool_capacity_bytes,
        "waiters": s.waiters,
        "ingested_bytes_total": s.ingested_bytes_total,
        "served_bytes_total": s.served_bytes_total,
        "chunks_accepted_total": s.chunks_accepted_total,
        "chunks_rejected_total": s.chunks_rejected_total,
        "chunks_deferred_total": s.chunks_deferred_total,
        "expired_bytes_total": s.expired_bytes_total,
        "evicted_bytes_total": s.evicted_bytes_total,
        "discarded_bytes_total": s.discarded_bytes_total,
        "quality_tested_bytes_total": s.quality_tested_bytes_total,
        "uptime_ms": s.uptime_ms,
        "last_chunk_age_ms": s.last_chunk_age_ms,
        "sources": s.sources.len(),
    }))
}
