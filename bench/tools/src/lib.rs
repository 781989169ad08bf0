//! Shared pieces of the benchmark tools in `bench/tools` (crate `entropy-bench`).
//!
//! The binaries are load generators and stand-ins that `bench/driver` starts; they print one
//! JSON object on stdout (or their listening address), so the driver never parses prose.
//!
//! Layout:
//! - `src/bin/echo_server.rs`: the same services as the gateway, answering with fixed bytes: the
//!   transport ceiling every gateway figure is divided by.
//! - `src/bin/ingest_load.rs`: signs chunks first, then publishes them as fast as the gateway
//!   takes them (ingest capacity, and pre-filling the pool for drain scenarios).
//! - `src/bin/latency_proxy.rs`: a TCP proxy that delays every byte by a fixed time each way.
//! - `src/bin/grpc_load.rs`: unary calls with think time and exact percentiles, streams with
//!   per-stream byte counts (fairness), and GetStatus as JSON.
//! - `src/bin/rest_baseline.rs`: the original REST gateway's serving path (axum, HTTP/1.1), so
//!   every report can state ours ÷ REST.

use std::time::Duration;

use anyhow::Context as _;
use tonic::transport::{Channel, Endpoint};

/// How a client sizes its HTTP/2 receive windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The HTTP/2 default (64 KiB per stream), as an untuned client has it.
    Default,
    /// hyper's adaptive (BDP-estimating) window.
    Adaptive,
    /// Fixed stream window in bytes (the connection window is 4 times that).
    Fixed(u32),
}

impl std::str::FromStr for Window {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(Self::Default),
            "adaptive" => Ok(Self::Adaptive),
            n => n
                .parse()
                .map(Self::Fixed)
                .map_err(|_| format!("{s:?}: expected default, adaptive or a byte count")),
        }
    }
}

/// Connects one HTTP/2 connection to `addr` (`host:port` or a URI) with TCP_NODELAY.
pub async fn connect(addr: &str, window: Window) -> anyhow::Result<Channel> {
    let uri = if addr.contains("://") { addr.to_owned() } else { format!("http://{addr}") };
    let mut endpoint = Endpoint::from_shared(uri.clone())
        .with_context(|| format!("bad address {addr}"))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5));
    endpoint = match window {
        Window::Default => endpoint,
        Window::Adaptive => endpoint.http2_adaptive_window(true),
        Window::Fixed(n) => endpoint
            .initial_stream_window_size(n)
            .initial_connection_window_size(n.saturating_mul(4)),
    };
    endpoint.connect().await.with_context(|| format!("cannot connect to {uri}"))
}

/// Latency summary from exact samples (microseconds), as the seed reports give it.
pub fn percentiles(samples: &mut [u64]) -> serde_json::Value {
    samples.sort_unstable();
    let pick = |q: f64| -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        // Nearest rank: the smallest sample with at least q of all samples at or below it.
        let rank = (q * samples.len() as f64).ceil().max(1.0) as usize;
        samples[rank.min(samples.len()) - 1] as f64 / 1000.0
    };
    let mean = if samples.is_empty() {
        0.0
    } else {
        samples.iter().sum::<u64>() as f64 / samples.len() as f64 / 1000.0
    };
    serde_json::json!({
        "min_ms": pick(0.0),
        "p50_ms": pick(0.50),
        "p75_ms": pick(0.75),
        "p90_ms": pick(0.90),
        "p95_ms": pick(0.95),
        "p99_ms": pick(0.99),
        "max_ms": pick(1.0),
        "mean_ms": mean,
    })
}

/// Adds `authorization: Bearer <key>` to `req` when a key is given.
pub fn authorize<T>(req: &mut tonic::Request<T>, key: Option<&str>) -> anyhow::Result<()> {
    if let Some(key) = key {
        let value = format!("Bearer {key}").parse().context("API key is not valid metadata")?;
        req.metadata_mut().insert("authorization", value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut s: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        let p = percentiles(&mut s);
        assert_eq!(p["p50_ms"], 50.0);
        assert_eq!(p["p99_ms"], 99.0);
        assert_eq!(p["max_ms"], 100.0);
        assert_eq!(p["min_ms"], 1.0);
    }

    #[test]
    fn windows_parse() {
        assert_eq!("adaptive".parse::<Window>(), Ok(Window::Adaptive));
        assert_eq!("1048576".parse::<Window>(), Ok(Window::Fixed(1 << 20)));
        assert!("x".parse::<Window>().is_err());
    }
}
