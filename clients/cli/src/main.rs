//! `entropy`: quantum randomness from an Entropy Diode gateway, on the command line.
//!
//! ```text
//! entropy bytes 32 --hex
//! entropy stream --total 1GiB > random.bin     # progress on stderr when it is a terminal
//! entropy stream | dieharder -a -g 200         # endless until the reader stops
//! entropy int --min 1 --max 6 --count 10
//! entropy float --count 3
//! entropy uuid --count 2
//! entropy status
//! ```
//!
//! Endpoint, key and CA come from `--endpoint`/`--api-key`/`--ca-file` or `ENTROPY_ENDPOINT`/
//! `ENTROPY_API_KEY`/`ENTROPY_CA_FILE`, in the syntax every client shares (clients/README.md).
//! Exit codes: 0 success (also when the reader of stdout goes away), 1 a failed call, 2 usage.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use entropy_diode_client::{ClientBuilder, Error};
use tokio::io::AsyncWriteExt;

/// Quantum random bytes, integers, floats and UUIDs from an Entropy Diode gateway.
#[derive(Debug, Parser)]
#[command(name = "entropy", version)]
struct Cli {
    /// Gateway: host:port, http://host:port or https://host:port (a bare remote host is TLS).
    #[arg(long, env = "ENTROPY_ENDPOINT", default_value = "127.0.0.1:50051", global = true)]
    endpoint: String,
    /// API key (sent as `authorization: Bearer`).
    #[arg(long, env = "ENTROPY_API_KEY", hide_env_values = true, global = true)]
    api_key: Option<String>,
    /// PEM file of the CA to trust for TLS (instead of the web PKI roots).
    #[arg(long, env = "ENTROPY_CA_FILE", global = true, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Deadline of each call, in milliseconds.
    #[arg(long, global = true, default_value_t = 10_000)]
    timeout_ms: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// N random bytes (1..=1048576), raw on stdout unless --hex or --base64.
    Bytes {
        /// How many bytes.
        n: u32,
        /// Print as lowercase hex.
        #[arg(long, conflicts_with = "base64")]
        hex: bool,
        /// Print as base64.
        #[arg(long)]
        base64: bool,
    },
    /// Raw random bytes on stdout until --total (e.g. 1GiB, 64KiB, 10MB) or forever.
    Stream {
        /// Total to write; endless when absent.
        #[arg(long, value_parser = parse_size)]
        total: Option<u64>,
        /// Bytes per message.
        #[arg(long, value_parser = parse_size, default_value = "64KiB")]
        chunk: u64,
    },
    /// Uniform integers in [min, max], one per line.
    Int {
        /// Smallest value.
        #[arg(long, allow_negative_numbers = true)]
        min: i64,
        /// Largest value.
        #[arg(long, allow_negative_numbers = true)]
        max: i64,
        /// How many (1..=10000).
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// Uniform doubles in [0, 1), one per line.
    Float {
        /// How many (1..=10000).
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// Random version 4 UUIDs, one per line.
    Uuid {
        /// How many (1..=10000).
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// The gateway's pool, counters and sources.
    Status,
}

/// Parses `1GiB`, `64KiB`, `10MB`, `4096`.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 =
        digits.parse().map_err(|_| format!("{text:?} is not a size like 64KiB or 1GiB"))?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        other => return Err(format!("unknown unit {other:?} (use B, KB, MB, GB, KiB, MiB, GiB)")),
    };
    n.checked_mul(factor).ok_or_else(|| format!("{text:?} is too large"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout left (`entropy stream | head -c 100`): not an error.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("entropy: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let key = cli
        .api_key
        .ok_or_else(|| anyhow::anyhow!("no API key: pass --api-key or set ENTROPY_API_KEY"))?;
    let mut builder =
        ClientBuilder::new(&cli.endpoint, key).timeout(Duration::from_millis(cli.timeout_ms));
    if let Some(ca) = cli.ca_file {
        builder = builder.ca_file(ca);
    }
    let client = builder.connect().await.map_err(|e| anyhow::anyhow!("{}: {e}", cli.endpoint))?;
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Bytes { n, hex, base64 } => {
            let bytes = client.get_bytes(n).await?;
            if hex {
                writeln!(out, "{}", ::hex::encode(&bytes))?;
            } else if base64 {
                use ::base64::Engine as _;
                writeln!(out, "{}", ::base64::engine::general_purpose::STANDARD.encode(&bytes))?;
            } else {
                out.write_all(&bytes)?;
            }
        }
        Command::Stream { total, chunk } => {
            drop(out);
            let chunk = u32::try_from(chunk)
                .map_err(|_| Error::InvalidArgument("--chunk must be at most 1MiB".into()))?;
            stream(&client, total, chunk).await?;
        }
        Command::Int { min, max, count } => {
            for v in client.get_integers(min, max, count).await? {
                writeln!(out, "{v}")?;
            }
        }
        Command::Float { count } => {
            for v in client.get_floats(count).await? {
                writeln!(out, "{v}")?;
            }
        }
        Command::Uuid { count } => {
            for v in client.get_uuids(count).await? {
                writeln!(out, "{v}")?;
            }
        }
        Command::Status => print_status(&mut out, &client.status().await?)?,
    }
    out_flush()?;
    Ok(())
}

fn out_flush() -> std::io::Result<()> {
    std::io::stdout().flush()
}

async fn stream(
    client: &entropy_diode_client::Client,
    total: Option<u64>,
    chunk: u32,
) -> anyhow::Result<()> {
    let progress = std::io::stderr().is_terminal().then(|| {
        let bar = match total {
            Some(t) => indicatif::ProgressBar::new(t),
            None => indicatif::ProgressBar::no_length(),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bytes}/{total_bytes} {binary_bytes_per_sec} {wide_bar} {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut source = client.stream(total, chunk);
    let mut stdout = tokio::io::stdout();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = tokio::io::AsyncReadExt::read(&mut source, &mut buf).await?;
        if n == 0 {
            break;
        }
        stdout.write_all(&buf[..n]).await?;
        if let Some(bar) = &progress {
            bar.inc(n as u64);
        }
    }
    stdout.flush().await?;
    if let Some(bar) = progress {
        bar.finish();
    }
    Ok(())
}

fn print_status(out: &mut impl Write, s: &entropy_diode_client::Status) -> std::io::Result<()> {
    writeln!(out, "serving:        {}", s.serving)?;
    writeln!(
        out,
        "pool:           {} / {} bytes (low watermark {})",
        s.pool_bytes, s.pool_capacity_bytes, s.pool_low_watermark_bytes
    )?;
    writeln!(out, "waiters:        {}", s.waiters)?;
    writeln!(
        out,
        "ingested:       {} bytes in {} chunks ({} rejected, {} deferred for room)",
        s.ingested_bytes_total,
        s.chunks_accepted_total,
        s.chunks_rejected_total,
        s.chunks_deferred_total
    )?;
    writeln!(out, "served:         {} bytes", s.served_bytes_total)?;
    writeln!(out, "uptime:         {} ms", s.uptime_ms)?;
    match s.last_chunk_age_ms {
        Some(age) => writeln!(out, "last chunk:     {age} ms ago")?,
        None => writeln!(out, "last chunk:     none yet")?,
    }
    for src in &s.sources {
        let kind = entropy_diode_client::proto::SourceKind::try_from(src.kind)
            .map_or("?", |k| k.as_str_name());
        let health = entropy_diode_client::proto::SourceHealth::try_from(src.health)
            .map_or("?", |h| h.as_str_name());
        writeln!(
            out,
            "source:         {}/{} {} {} ({} bytes, seen {} ms ago)",
            src.collector_id,
            src.name,
            kind,
            health,
            src.contributed_bytes_total,
            src.last_report_age_ms
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size("2 mib"), Ok(2 << 20));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5XB").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }
}
