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
//! entropy usage                                # what is left of this key's limits, and when
//!                                              # each refills (`--json`: the proto's fields)
//! entropy check --sample 1MiB                  # statistics and a verdict on bytes drawn for it
//! entropy completions bash                     # shell completions; `entropy man`: the man page
//! entropy --accept quantum bytes 32 --hex      # only bytes all of whose sources are quantum
//! entropy --construction drbg stream --total 10GiB > out.bin   # DRBG output seeded from the
//!                                              # pool (needs the key's entropy:drbg scope)
//! entropy int --min 1 --max 49 --count 6 --receipt draw.json   # with a signed receipt, kept
//! entropy receipt public-key --out gateway.pub # the key that signs receipts and heads
//! entropy receipt verify draw.json --public-key gateway.pub    # offline: every check named
//! entropy receipt prove draw.json              # adds the inclusion proof in a signed head
//! entropy receipt head --out old.sth; entropy receipt consistency old.sth new.sth --public-key gateway.pub
//! entropy receipt audit --public-key gateway.pub --key-name lottery   # every draw of a key
//! ```
//!
//! Endpoint and CA come from `--endpoint`/`--ca-file` or `ENTROPY_ENDPOINT`/`ENTROPY_CA_FILE`, in
//! the syntax every client shares (clients/README.md). The key comes from `ENTROPY_API_KEY` or
//! the file `--api-key-file` names, never from a flag's value (a command line is visible to
//! every user of the machine in `ps` and lands in shell history).
//! Exit codes: 0 success (also when the reader of stdout goes away), 1 a failed call, 2 usage,
//! 3 `check` ran and the sample failed the verdict, 4 receipt evidence refused (the message
//! names the check: draw file, key id, signature, serial, commitment, request, inclusion,
//! key name, signed head, consistency or log).

mod receipt;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use entropy_diode_client::{
    ClientBuilder, Construction, DrawProvenance, Error, QualityReport, SourceKind,
};
use tokio::io::AsyncWriteExt;

/// Quantum random bytes, integers, floats and UUIDs from an Entropy Diode gateway.
#[derive(Debug, Parser)]
#[command(name = "entropy", version)]
struct Cli {
    /// Gateway: host:port, http://host:port or https://host:port (a bare remote host is TLS).
    #[arg(long, env = "ENTROPY_ENDPOINT", default_value = "127.0.0.1:50051", global = true)]
    endpoint: String,
    /// File holding the API key (sent as `authorization: Bearer`); else ENTROPY_API_KEY. The key
    /// itself is never a flag value.
    #[arg(long, global = true, value_name = "FILE")]
    api_key_file: Option<PathBuf>,
    /// PEM file of the CA to trust for TLS (instead of the web PKI roots).
    #[arg(long, env = "ENTROPY_CA_FILE", global = true, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Deadline of each call, in milliseconds.
    #[arg(long, global = true, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Accept only bytes all of whose sources are of these kinds (comma-separated: quantum,
    /// hardware, os); default any.
    #[arg(long, global = true, value_delimiter = ',', value_name = "KINDS")]
    accept: Vec<Kind>,
    /// How the bytes are made: raw (pool bytes, each served once; the default), drbg (the
    /// output of a DRBG instance of the call's own, seeded from the pool; needs the key's
    /// entropy:drbg scope) or drbg-prediction-resistant (reseeded before every 64 KiB).
    #[arg(
        long,
        env = "ENTROPY_CONSTRUCTION",
        global = true,
        value_enum,
        default_value_t = ConstructionArg::Raw
    )]
    construction: ConstructionArg,
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
        /// Ask for a signed receipt and keep it with the bytes in this draw file (never
        /// overwritten; `entropy receipt verify FILE` checks it).
        #[arg(long, value_name = "FILE")]
        receipt: Option<PathBuf>,
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
        /// Ask for a signed receipt and keep it with the values in this draw file (never
        /// overwritten; `entropy receipt verify FILE` checks it).
        #[arg(long, value_name = "FILE")]
        receipt: Option<PathBuf>,
    },
    /// Uniform doubles in [0, 1), one per line.
    Float {
        /// How many (1..=10000).
        #[arg(long, default_value_t = 1)]
        count: u32,
        /// Ask for a signed receipt and keep it with the values in this draw file (never
        /// overwritten; `entropy receipt verify FILE` checks it).
        #[arg(long, value_name = "FILE")]
        receipt: Option<PathBuf>,
    },
    /// Random version 4 UUIDs, one per line.
    Uuid {
        /// How many (1..=10000).
        #[arg(long, default_value_t = 1)]
        count: u32,
        /// Ask for a signed receipt and keep it with the values in this draw file (never
        /// overwritten; `entropy receipt verify FILE` checks it).
        #[arg(long, value_name = "FILE")]
        receipt: Option<PathBuf>,
    },
    /// Draw receipts: verify a draw file offline, prove it into the gateway's log, fetch the
    /// public key and signed heads, check two heads' consistency, audit a key's draws.
    Receipt {
        #[command(subcommand)]
        command: receipt::ReceiptCommand,
    },
    /// The gateway's pool, counters and sources.
    Status,
    /// This key's limits and what is left of each now: calls and bytes per second (with when
    /// they refill), streams open, bytes drawn and not yet read. Any valid key, no scope;
    /// asking costs none of it.
    Usage {
        /// Print the usage as JSON (the proto's field names).
        #[arg(long)]
        json: bool,
    },
    /// Draws a sample that no one is ever served and prints the gateway's statistics on it
    /// with a verdict (exit 3 when it fails). Needs the `quality:check` scope.
    Check {
        /// Bytes to test: 2500 (one FIPS 140-2 block) to 4MiB.
        #[arg(long, value_parser = parse_size, default_value = "1MiB")]
        sample: u64,
        /// Print the report as JSON (the proto's field names).
        #[arg(long)]
        json: bool,
    },
    /// A completion script for SHELL on stdout, e.g.
    /// `entropy completions bash > /etc/bash_completion.d/entropy`. Needs no gateway.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// This help as a man page (roff) on stdout, e.g.
    /// `entropy man > /usr/local/share/man/man1/entropy.1`. Needs no gateway.
    Man,
}

/// A source kind, as `--accept` spells it.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Kind {
    /// A quantum random number generator.
    Quantum,
    /// A non-quantum hardware noise source.
    Hardware,
    /// The operating system's CSPRNG.
    Os,
}

impl From<Kind> for SourceKind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Quantum => SourceKind::Quantum,
            Kind::Hardware => SourceKind::Hardware,
            Kind::Os => SourceKind::Os,
        }
    }
}

/// A construction, as `--construction` spells it.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ConstructionArg {
    /// Pool bytes as the collectors delivered them.
    Raw,
    /// DRBG output seeded from the pool.
    Drbg,
    /// DRBG output, reseeded from the pool before every 64 KiB.
    DrbgPredictionResistant,
}

impl From<ConstructionArg> for Construction {
    fn from(c: ConstructionArg) -> Self {
        match c {
            ConstructionArg::Raw => Construction::Raw,
            ConstructionArg::Drbg => Construction::Drbg,
            ConstructionArg::DrbgPredictionResistant => Construction::DrbgPredictionResistant,
        }
    }
}

/// The sample failed the quality verdict (exit code 3).
#[derive(Debug, thiserror::Error)]
#[error("the sample failed the quality check")]
struct QualityFailed;

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
        Err(e) if e.downcast_ref::<QualityFailed>().is_some() => ExitCode::from(3),
        Err(e) if e.downcast_ref::<receipt::EvidenceRefused>().is_some() => {
            eprintln!("entropy: refused: {e:#}");
            ExitCode::from(4)
        }
        Err(e) => {
            eprintln!("entropy: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The key from the file `file` names (trimmed), else from ENTROPY_API_KEY.
fn api_key(file: Option<&std::path::Path>) -> anyhow::Result<String> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("--api-key-file {}: {e}", path.display()))?;
        let key = text.trim();
        anyhow::ensure!(!key.is_empty(), "--api-key-file {} is empty", path.display());
        return Ok(key.to_owned());
    }
    match std::env::var("ENTROPY_API_KEY") {
        Ok(key) if !key.is_empty() => Ok(key),
        _ => anyhow::bail!("no API key: set ENTROPY_API_KEY or pass --api-key-file FILE"),
    }
}

/// What needs no gateway: the shell completions and the man page, from the CLI's own help, and
/// the offline check of a draw file.
fn print_help_files(command: &Command) -> anyhow::Result<bool> {
    use clap::CommandFactory as _;
    let mut out = std::io::stdout().lock();
    match command {
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "entropy", &mut out);
        }
        Command::Man => clap_mangen::Man::new(Cli::command()).render(&mut out)?,
        Command::Receipt {
            command: receipt::ReceiptCommand::Verify { draw_file, public_key, key_name },
        } => {
            receipt::verify_file(&mut out, draw_file, public_key, key_name.as_deref())?;
        }
        _ => return Ok(false),
    }
    out.flush()?;
    Ok(true)
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if print_help_files(&cli.command)? {
        return Ok(());
    }
    let key = api_key(cli.api_key_file.as_deref())?;
    let mut builder =
        ClientBuilder::new(&cli.endpoint, key).timeout(Duration::from_millis(cli.timeout_ms));
    if let Some(ca) = cli.ca_file {
        builder = builder.ca_file(ca);
    }
    builder = builder.accept_kinds(cli.accept.iter().map(|&k| SourceKind::from(k)));
    builder = builder.construction(cli.construction.into());
    let client = builder.connect().await.map_err(|e| anyhow::anyhow!("{}: {e}", cli.endpoint))?;
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Bytes { n, hex, base64, receipt } => {
            let bytes = match receipt {
                None => client.get_bytes(n).await?,
                Some(path) => {
                    receipt::draw_to_file(&path, client.get_bytes_with_receipt(n)).await?.values
                }
            };
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
        Command::Int { min, max, count, receipt } => {
            let values = match receipt {
                None => client.get_integers(min, max, count).await?,
                Some(path) => {
                    let draw = client.get_integers_with_receipt(min, max, count);
                    receipt::draw_to_file(&path, draw).await?.values
                }
            };
            for v in values {
                writeln!(out, "{v}")?;
            }
        }
        Command::Float { count, receipt } => {
            let values = match receipt {
                None => client.get_floats(count).await?,
                Some(path) => {
                    receipt::draw_to_file(&path, client.get_floats_with_receipt(count))
                        .await?
                        .values
                }
            };
            for v in values {
                writeln!(out, "{v}")?;
            }
        }
        Command::Uuid { count, receipt } => {
            let values = match receipt {
                None => client.get_uuids(count).await?,
                Some(path) => {
                    receipt::draw_to_file(&path, client.get_uuids_with_receipt(count)).await?.values
                }
            };
            for v in values {
                writeln!(out, "{v}")?;
            }
        }
        Command::Receipt { command } => {
            drop(out);
            receipt::run(command, &client).await?;
            return Ok(());
        }
        Command::Status => print_status(&mut out, &client.status().await?)?,
        Command::Usage { json } => {
            let usage = client.usage().await?;
            if json {
                serde_json::to_writer_pretty(&mut out, &usage_json(&usage))?;
                writeln!(out)?;
            } else {
                print_usage(&mut out, &usage)?;
            }
        }
        Command::Check { sample, json } => {
            let sample = u32::try_from(sample)
                .map_err(|_| Error::InvalidArgument("--sample must be at most 4MiB".into()))?;
            let report = client.check_quality(sample).await?;
            if json {
                serde_json::to_writer_pretty(&mut out, &report_json(&report))?;
                writeln!(out)?;
            } else {
                print_report(&mut out, &report)?;
            }
            out_flush()?;
            if !report.passed {
                return Err(QualityFailed.into());
            }
        }
        // Printed before the client was made (print_help_files).
        Command::Completions { .. } | Command::Man => {}
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

/// Kind names as the proto spells them, without the prefix: `QUANTUM+OS`.
fn kinds(values: &[i32]) -> String {
    let names: Vec<&str> = values
        .iter()
        .map(|&k| {
            SourceKind::try_from(k).map_or("?", |k| {
                k.as_str_name().strip_prefix("SOURCE_KIND_").unwrap_or(k.as_str_name())
            })
        })
        .collect();
    names.join("+")
}

fn print_provenance(out: &mut impl Write, p: Option<&DrawProvenance>) -> std::io::Result<()> {
    let Some(p) = p else { return writeln!(out, "provenance:     none") };
    let chunk = |c: Option<&entropy_diode_client::proto::ChunkRef>| {
        c.map_or_else(|| "?".into(), |c| format!("{}/{}#{}", c.collector_id, c.epoch, c.sequence))
    };
    writeln!(
        out,
        "provenance:     {}{} from {} chunk(s) of {} ({} .. {}), oldest byte {} ms in the pool",
        kinds(&p.kinds),
        if p.mixed { " (mixed)" } else { "" },
        p.chunk_count,
        p.collector_ids.join(", "),
        chunk(p.first_chunk.as_ref()),
        chunk(p.last_chunk.as_ref()),
        p.oldest_byte_age_ms
    )?;
    if let Some(d) = &p.drbg {
        writeln!(
            out,
            "construction:   DRBG ({}, {} bits{}), instance {}, {} reseed(s), {} bytes since, \
             seeded with {} pool bytes (above)",
            entropy_diode_client::proto::DrbgMechanism::try_from(d.mechanism)
                .map_or("?", |m| m.as_str_name()),
            d.security_strength_bits,
            if d.prediction_resistance { ", prediction resistance" } else { "" },
            d.instance_id,
            d.reseed_count,
            d.bytes_since_reseed,
            d.seed_bytes
        )?;
    }
    Ok(())
}

fn print_report(out: &mut impl Write, r: &QualityReport) -> std::io::Result<()> {
    writeln!(out, "verdict:        {}", if r.passed { "PASSED" } else { "FAILED" })?;
    writeln!(out, "sample:         {} bytes", r.sample_bytes)?;
    print_provenance(out, r.provenance.as_ref())?;
    writeln!(out, "entropy:        {:.6} bits/byte (Shannon)", r.shannon_entropy_bits_per_byte)?;
    writeln!(out, "min-entropy:    {:.6} bits/byte (SP 800-90B MCV)", r.min_entropy_bits_per_byte)?;
    writeln!(out, "chi-square:     {:.2} (p = {:.4})", r.chi_square, r.chi_square_p_value)?;
    writeln!(out, "mean:           {:.4} (127.5 random)", r.mean)?;
    match r.serial_correlation {
        Some(c) => writeln!(out, "serial corr.:   {c:.6} (0 random)")?,
        None => writeln!(out, "serial corr.:   undefined (every byte equal)")?,
    }
    for (name, pi) in [("pi:", &r.pi), ("pi (OS):", &r.pi_os_reference)] {
        if let Some(pi) = pi {
            writeln!(
                out,
                "{name:<16}{:.6} (error {:+.6}, standard error {:.6}, {} points)",
                pi.estimate, pi.error, pi.standard_error, pi.points
            )?;
        }
    }
    if let Some(f) = &r.fips140_2 {
        writeln!(
            out,
            "FIPS 140-2:     {} of {} blocks failed (monobit {}, poker {}, runs {}, long run {})",
            f.blocks_failed,
            f.blocks,
            f.monobit_failures,
            f.poker_failures,
            f.runs_failures,
            f.long_run_failures
        )?;
    }
    for failure in &r.failures {
        writeln!(out, "failed:         {failure}")?;
    }
    for threshold in &r.thresholds {
        writeln!(out, "threshold:      {threshold}")?;
    }
    Ok(())
}

/// The report with the proto's field names, for `--json`.
fn report_json(r: &QualityReport) -> serde_json::Value {
    let pi = |p: &Option<entropy_diode_client::proto::MonteCarloPi>| {
        p.as_ref().map(|p| {
            serde_json::json!({
                "estimate": p.estimate, "error": p.error,
                "standard_error": p.standard_error, "points": p.points,
            })
        })
    };
    let provenance = r.provenance.as_ref().map(|p| {
        serde_json::json!({
            "kinds": kinds(&p.kinds).split('+').collect::<Vec<_>>(),
            "mixed": p.mixed,
            "collector_ids": p.collector_ids,
            "chunk_count": p.chunk_count,
            "oldest_byte_age_ms": p.oldest_byte_age_ms,
        })
    });
    let fips = r.fips140_2.as_ref().map(|f| {
        serde_json::json!({
            "blocks": f.blocks, "blocks_failed": f.blocks_failed,
            "monobit_failures": f.monobit_failures, "poker_failures": f.poker_failures,
            "runs_failures": f.runs_failures, "long_run_failures": f.long_run_failures,
        })
    });
    serde_json::json!({
        "passed": r.passed,
        "sample_bytes": r.sample_bytes,
        "provenance": provenance,
        "shannon_entropy_bits_per_byte": r.shannon_entropy_bits_per_byte,
        "min_entropy_bits_per_byte": r.min_entropy_bits_per_byte,
        "chi_square": r.chi_square,
        "chi_square_p_value": r.chi_square_p_value,
        "mean": r.mean,
        "serial_correlation": r.serial_correlation,
        "pi": pi(&r.pi),
        "pi_os_reference": pi(&r.pi_os_reference),
        "fips140_2": fips,
        "failures": r.failures,
        "thresholds": r.thresholds,
    })
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
    writeln!(
        out,
        "DRBG output:    {} bytes served, seeded with {} pool bytes",
        s.drbg_served_bytes_total, s.drbg_seed_bytes_total
    )?;
    for class in &s.pool_by_class {
        writeln!(out, "class:          {} {} bytes", kinds(&class.kinds), class.bytes)?;
    }
    match s.max_byte_age_ms {
        0 => writeln!(out, "byte age limit: none ({} bytes expired)", s.expired_bytes_total)?,
        ms => writeln!(out, "byte age limit: {ms} ms ({} bytes expired)", s.expired_bytes_total)?,
    }
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

fn usage_json(u: &entropy_diode_client::Usage) -> serde_json::Value {
    let rate = |r: &Option<entropy_diode_client::proto::RateUsage>| {
        let r = r.unwrap_or_default();
        serde_json::json!({
            "unlimited": r.unlimited,
            "per_second": r.per_second,
            "burst": r.burst,
            "remaining": r.remaining,
            "next_refill_ms": r.next_refill_ms,
            "full_in_ms": r.full_in_ms,
        })
    };
    let held = |h: &Option<entropy_diode_client::proto::HeldUsage>| {
        let h = h.unwrap_or_default();
        serde_json::json!({
            "unlimited": h.unlimited,
            "limit": h.limit,
            "in_use": h.in_use,
            "remaining": h.remaining,
        })
    };
    serde_json::json!({
        "key_name": u.key_name,
        "requests": rate(&u.requests),
        "bytes": rate(&u.bytes),
        "drbg_bytes": rate(&u.drbg_bytes),
        "streams": held(&u.streams),
        "undelivered_bytes": held(&u.undelivered_bytes),
    })
}

fn print_usage(out: &mut impl Write, u: &entropy_diode_client::Usage) -> std::io::Result<()> {
    writeln!(out, "key:            {}", u.key_name)?;
    let rates = [
        ("calls/s", "calls", &u.requests),
        ("bytes/s", "bytes", &u.bytes),
        ("DRBG bytes/s", "bytes", &u.drbg_bytes),
    ];
    for (name, unit, rate) in rates {
        let r = rate.unwrap_or_default();
        let label = format!("{name}:");
        if r.unlimited {
            writeln!(out, "{label:<16}unlimited")?;
        } else if r.remaining >= r.burst {
            writeln!(
                out,
                "{label:<16}{} of {} {unit} left (full; refills {}/s)",
                r.remaining, r.burst, r.per_second
            )?;
        } else {
            writeln!(
                out,
                "{label:<16}{} of {} {unit} left (refills {}/s: next in {} ms, full in {} ms)",
                r.remaining, r.burst, r.per_second, r.next_refill_ms, r.full_in_ms
            )?;
        }
    }
    let held =
        [("streams:", "open", &u.streams), ("undelivered:", "bytes held", &u.undelivered_bytes)];
    for (label, what, held) in held {
        let h = held.unwrap_or_default();
        if h.unlimited {
            writeln!(out, "{label:<16}{} {what} (no limit)", h.in_use)?;
        } else {
            writeln!(out, "{label:<16}{} {what} of {} ({} left)", h.in_use, h.limit, h.remaining)?;
        }
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
