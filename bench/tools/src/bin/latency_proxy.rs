//! `latency-proxy`: a TCP proxy that holds every byte for a fixed time in each direction, so a
//! loopback client sees a remote gateway's round-trip time (RTT = 2 x `--delay-us`) without
//! the link's bandwidth changing: bytes are delayed, never throttled (up to the queue bound).
//!
//! Prints `listening <addr>` on stdout once bound.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Delays every byte by `--delay-us` each way between clients and `--target`.
#[derive(Debug, Parser)]
struct Cli {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to forward connections.
    #[arg(long)]
    target: SocketAddr,
    /// One-way delay in microseconds (RTT is twice this).
    #[arg(long)]
    delay_us: u64,
}

/// Reads in flight per direction; at 64 KiB each this admits ~2.6 GB/s at 25 ms one way.
const QUEUE: usize = 1024;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let listener = TcpListener::bind(cli.listen).await?;
    println!("listening {}", listener.local_addr()?);
    let delay = Duration::from_micros(cli.delay_us);
    loop {
        let (client, _) = listener.accept().await?;
        let target = cli.target;
        tokio::spawn(async move {
            let Ok(upstream) = TcpStream::connect(target).await else { return };
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (ur, uw) = upstream.into_split();
            tokio::join!(pipe(cr, uw, delay), pipe(ur, cw, delay));
        });
    }
}

/// Copies `from` to `to`, each read released `delay` after it arrived.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(QUEUE);
    let reader = async move {
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 || tx.send((Instant::now() + delay, buf[..n].to_vec())).await.is_err() {
                break;
            }
        }
        // Dropping `tx` ends the writer after the queued bytes.
    };
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
