//! `entropy-collector`: read sources, health-test, mix, sign, publish one way. Listens for no
//! data: its only port is the metrics and health endpoint (`metrics_listen_addr`, "" for none),
//! which serves text and accepts nothing.
//!
//! Exit codes: 0 clean shutdown, 64 bad config or usage (a key, source or gateway that cannot
//! be set up included; before anything is bound), 1 runtime failure (a port in use).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::Parser;
use entropy_collector::Collector;
use entropy_collector::config::{CollectorConfig, ConfigFlags, read_key_file};
use tokio_util::sync::CancellationToken;

const EX_USAGE: u8 = 64;

/// Reads entropy sources, health-tests and mixes them, signs chunks and publishes them to
/// gateways. Its one listening port serves metrics and health (`metrics_listen_addr`).
#[derive(Debug, Parser)]
#[command(name = "entropy-collector", version)]
struct Cli {
    /// TOML config file (see collector/collector.example.toml).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Print the effective config (file, environment and flags applied) and exit. Credentials
    /// and query strings in URLs are redacted; key files are never read for it.
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    flags: ConfigFlags,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(EX_USAGE) } else { ExitCode::SUCCESS };
        }
    };
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("entropy-collector: {e}");
        ExitCode::from(EX_USAGE)
    };
    let config = match CollectorConfig::load(&cli.config, &cli.flags) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    if cli.print_config {
        match toml::to_string(&config.redacted()) {
            Ok(text) => print!("{text}"),
            Err(e) => eprintln!("entropy-collector: {e}"),
        }
        return ExitCode::SUCCESS;
    }
    let key = match read_key_file(&config.key_file) {
        Ok(k) => k,
        Err(e) => return usage(&e),
    };
    if let Err(e) = entropy_ops::logging::init(&config.log_filter, config.log_format) {
        return usage(&e);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("entropy-collector: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let built = {
        // The publishers' lazily connecting channels spawn their workers on the runtime.
        let _runtime = runtime.enter();
        Collector::build(&config, key)
    };
    let collector = match built {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    match runtime.block_on(run(config, collector)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("entropy-collector: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: CollectorConfig, mut collector: Collector) -> anyhow::Result<()> {
    if let Some(addr) = config.metrics_addr() {
        collector = collector.with_metrics_listener(entropy_ops::endpoint::bind(addr).await?);
    }
    let shutdown = CancellationToken::new();
    entropy_ops::signals::cancel_on_terminate(shutdown.clone(), "flushing and stopping");
    tracing::info!(
        collector_id = %config.collector_id,
        sources = config.source.len(),
        gateways = config.gateway.len(),
        "entropy collector running"
    );
    let stats = collector.run(shutdown).await;
    tracing::info!(
        signed = stats.signed.load(Ordering::Relaxed),
        delivered = stats.delivered(),
        refused = stats.refused.load(Ordering::Relaxed),
        abandoned = stats.abandoned.load(Ordering::Relaxed),
        "entropy collector stopped"
    );
    Ok(())
}
