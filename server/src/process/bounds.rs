//! The gateway's worst case: resident memory and file descriptors as a formula of its config.
//!
//! docs/security.md ("Resource bounds") explains each term; this file computes them for one
//! config, so the formula lives in one place: `entropy-gateway --print-bounds` prints it, the
//! gateway logs the total at start, and the resource sweep (bench/sweep.py) checks what it
//! measures against it.
//!
//! Memory is the sum of:
//! - the pool, committed at start (`pool_capacity_bytes`);
//! - every buffer the gateway holds for its peers, which the byte allowances bound as a whole
//!   (`max_buffered_bytes`: request headers and bodies, calls in progress, answers not yet
//!   written, entropy drawn and not yet delivered, Publish bodies);
//! - what each open connection costs beyond those, at most ([`connection_bytes`]): its TLS
//!   buffers, its write buffers, the frame being read, a header block being assembled, the
//!   HPACK tables, a call waiting for its charge, h2's state for each stream it may open, and
//!   the request bytes its receive window lets sit unread;
//! - the metrics endpoint's connections;
//! - responses being encoded (one per runtime worker, in up to three copies);
//! - the process itself (code, runtime, thread stacks), measured.
//!
//! Descriptors: both listeners' connection caps, the metrics endpoint's, and a reserve.

use crate::process::config::GatewayConfig;
use crate::process::fd_limit;
use crate::process::server::{
    INGEST_CONNECTION_WINDOW, INGEST_MAX_FRAME, MAX_HEADER_LIST_BYTES, PUBLIC_MAX_FRAME,
    PUBLIC_WINDOW,
};
use crate::transport::write_coalesce;

/// rustls' buffers for one connection, at most: one TLS record arriving (16 KiB of plaintext
/// plus its expansion), 16 KiB decrypted and not yet read, and 64 KiB waiting to be sent.
pub(crate) const TLS_BYTES: u64 = (16 << 10) + 2048 + (16 << 10) + (64 << 10);
/// h2's write buffer beside the coalescing buffer.
pub(crate) const H2_WRITE_BYTES: u64 = 16 << 10;
/// HPACK's tables (decoder and encoder at their default 4 KiB) and the connection's own state.
pub(crate) const TABLES_BYTES: u64 = 16 << 10;
/// h2's state for one open stream, whether or not its call holds a charge (measured: 1 to 1.7
/// KiB a stream with 32 to 256 streams open on each of 250 connections): a peer may hold
/// `max_streams_per_connection` of them on every connection.
pub(crate) const STREAM_BYTES: u64 = 2 << 10;
/// The one call a connection may have waiting for its charge on the request allowances
/// (`transport::stream::call_charge`): its task and its decoded headers, which no allowance
/// counts until the charge is held.
pub(crate) const WAITING_CALL_BYTES: u64 =
    crate::transport::CALL_BYTES as u64 + MAX_HEADER_LIST_BYTES as u64;
/// The metrics endpoint's connections: hyper's read buffer for a request head, and the
/// response (the exposition of every series).
pub(crate) const METRICS_CONNECTION_BYTES: u64 = (16 << 10) + (256 << 10);
/// The largest response being encoded (1 MiB as hex, with its provenance), and how many copies
/// of it exist at once while a handler builds and encodes it (values, message, encoding).
pub(crate) const ENCODING_BYTES: u64 = 3 * ((2 << 20) + (4 << 10));
/// The process without traffic, less its pool: code, the runtime, thread stacks, the TLS and
/// config state. Measured on an idle gateway (bench/sweep.py reports the figure it measures).
pub(crate) const PROCESS_BYTES: u64 = 32 << 20;

/// One term of the bound.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Term {
    /// What it covers.
    pub name: &'static str,
    /// How it is computed, in the config's words.
    pub formula: String,
    /// Its value, in bytes.
    pub bytes: u64,
}

/// The worst case of one config.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bounds {
    /// The memory terms, which add up.
    pub memory: Vec<Term>,
    /// Their sum, in bytes.
    pub memory_bytes: u64,
    /// File descriptors, at most.
    pub descriptors: u64,
    /// The runtime workers the "responses being encoded" term counts.
    pub workers: u64,
}

/// At most what one connection costs beyond the byte allowances, on a listener whose peers may
/// send frames of `max_frame` bytes, leave `window` bytes unread and open `max_streams`
/// streams.
pub(crate) fn connection_bytes(tls: bool, max_frame: u32, window: u32, max_streams: u32) -> u64 {
    let header_block = 2 * u64::from(MAX_HEADER_LIST_BYTES); // encoded, and decoded so far
    (if tls { TLS_BYTES } else { 0 })
        + write_coalesce::CAPACITY as u64
        + H2_WRITE_BYTES
        + u64::from(max_frame)
        + header_block
        + TABLES_BYTES
        + WAITING_CALL_BYTES
        + u64::from(max_streams) * STREAM_BYTES
        + u64::from(window)
}

/// The worst case for `config` (its `max_connections` resolved by [`fd_limit::prepare`]), with
/// TLS on the listeners that have it, and `workers` runtime threads.
pub fn of(config: &GatewayConfig, tls: (bool, bool), workers: u64) -> Bounds {
    let max_connections = config.max_connections;
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / f64::from(1 << 20));
    let streams = config.max_streams_per_connection;
    let public = connection_bytes(tls.0, PUBLIC_MAX_FRAME, PUBLIC_WINDOW, streams);
    let ingest = connection_bytes(tls.1, INGEST_MAX_FRAME, INGEST_CONNECTION_WINDOW, streams);
    let metrics = fd_limit::METRICS_CONNECTIONS;
    let memory = vec![
        Term {
            name: "pool",
            formula: "pool_capacity_bytes".into(),
            bytes: config.pool_capacity_bytes as u64,
        },
        Term {
            name: "buffers",
            formula: "max_buffered_bytes".into(),
            bytes: config.max_buffered_bytes as u64,
        },
        Term {
            name: "public connections",
            formula: format!("max_connections ({max_connections}) × {}", kib(public)),
            bytes: max_connections as u64 * public,
        },
        Term {
            name: "ingest connections",
            formula: format!(
                "ingest_max_connections ({}) × {}",
                config.ingest_max_connections,
                kib(ingest)
            ),
            bytes: config.ingest_max_connections as u64 * ingest,
        },
        Term {
            name: "metrics endpoint",
            formula: format!("{metrics} connections × {}", kib(METRICS_CONNECTION_BYTES)),
            bytes: metrics * METRICS_CONNECTION_BYTES,
        },
        Term {
            name: "responses being encoded",
            formula: format!("{workers} workers × {}", mib(ENCODING_BYTES)),
            bytes: workers * ENCODING_BYTES,
        },
        Term { name: "process", formula: "measured".into(), bytes: PROCESS_BYTES },
    ];
    let memory_bytes = memory.iter().map(|t| t.bytes).sum();
    let descriptors =
        fd_limit::need_for(max_connections as u64, config.ingest_max_connections as u64);
    Bounds { memory, memory_bytes, descriptors, workers }
}

/// The worst case for `config` as the binary runs it: TLS where files are configured, as many
/// runtime workers as cores.
pub fn of_config(config: &GatewayConfig) -> Bounds {
    let tls = (config.tls_cert_file.is_some(), config.ingest_tls_cert_file.is_some());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    of(config, tls, workers)
}

fn kib(bytes: u64) -> String {
    format!("{} KiB", bytes.div_ceil(1024))
}

impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for term in &self.memory {
            writeln!(
                f,
                "{:<24} {:>10.1} MiB  {}",
                term.name,
                term.bytes as f64 / f64::from(1 << 20),
                term.formula
            )?;
        }
        writeln!(
            f,
            "{:<24} {:>10.1} MiB",
            "memory, at most",
            self.memory_bytes as f64 / f64::from(1 << 20)
        )?;
        write!(f, "{:<24} {:>10}", "file descriptors, at most", self.descriptors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_fit_a_small_host() {
        let config = GatewayConfig {
            max_connections: fd_limit::resolve(0, 64, Some(1 << 20)).expect("fits"),
            ..GatewayConfig::default()
        };
        let bounds = of(&config, (true, true), 2);
        assert!(bounds.memory_bytes < 1 << 30, "{bounds}");
        assert_eq!(bounds.memory_bytes, bounds.memory.iter().map(|t| t.bytes).sum::<u64>());
        assert!(bounds.descriptors <= 4096, "{bounds}");
    }

    #[test]
    fn a_tls_connection_costs_its_buffers_and_a_wider_window_costs_more() {
        let plain = connection_bytes(false, 16 << 10, 65_535, 100);
        assert_eq!(connection_bytes(true, 16 << 10, 65_535, 100) - plain, TLS_BYTES);
        assert_eq!(connection_bytes(false, 16 << 10, 2 << 20, 100) - plain, (2 << 20) - 65_535);
        assert_eq!(connection_bytes(false, 16 << 10, 65_535, 200) - plain, 100 * STREAM_BYTES);
    }
}
