//! `entropy-collector`: read sources, health-test, mix, sign, publish one way. Listens for no
//! data: its only port is the metrics and health endpoint (`metrics_listen_addr`, "" for none),
//! which serves text and accepts nothing.
//!
//! Exit codes: 0 clean shutdown, 64 bad config or usage, 1 runtime failure.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use clap::Parser;
use entropy_collector::config::{CollectorConfig, ConfigFlags, read_key_file};
use entropy_collector::prom;
use entropy_collector::runner::{self, RunStats};
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
    let config = match CollectorConfig::load(&cli.config, &cli.flags) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("entropy-collector: {e}");
            return ExitCode::from(EX_USAGE);
        }
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
        Err(e) => {
            eprintln!("entropy-collector: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let filter = match tracing_subscriber::EnvFilter::try_new(&config.log_filter) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("entropy-collector: invalid config key log_filter: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if config.log_format == "json" {
        logs.json().init()
    } else {
        logs.init()
    }

    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("entropy-collector: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config, key)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("entropy-collector: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: CollectorConfig, key: Vec<u8>) -> anyhow::Result<()> {
    let metrics = entropy_collector::metrics_for(&config);
    let listener = match config.metrics_addr() {
        Some(addr) => Some(prom::bind(addr).await.map_err(|e| anyhow::anyhow!(e))?),
        None => None,
    };
    let (pipeline, publishers) = entropy_collector::build_observed(&config, key, Some(&metrics))?;
    let shutdown = CancellationToken::new();
    tokio::spawn(wait_for_signal(shutdown.clone()));
    // The endpoint outlives the run, so scrapes see the flush after SIGTERM too.
    let endpoint_stop = CancellationToken::new();
    let upkeep = metrics.registry().spawn_upkeep(endpoint_stop.clone());
    let http = match listener {
        Some(listener) => {
            let addr = listener.local_addr()?;
            tracing::info!(%addr, "metrics endpoint: /metrics /healthz /readyz");
            let probe: Arc<dyn prom::Probe> = metrics.clone();
            Some(tokio::spawn(prom::serve(listener, probe, endpoint_stop.clone())))
        }
        None => None,
    };
    let stats = Arc::new(RunStats::default());
    tracing::info!(
        collector_id = %config.collector_id,
        sources = config.source.len(),
        gateways = config.gateway.len(),
        "entropy collector running"
    );
    runner::run_observed(
        pipeline,
        publishers,
        config.buffer_chunks,
        stats.clone(),
        Some(metrics),
        shutdown,
        config.shutdown_grace(),
    )
    .await;
    endpoint_stop.cancel();
    let _ = upkeep.await;
    if let Some(http) = http {
        let _ = http.await;
    }
    tracing::info!(
        signed = stats.signed.load(Ordering::Relaxed),
        delivered = stats.delivered(),
        refused = stats.refused.load(Ordering::Relaxed),
        abandoned = stats.abandoned.load(Ordering::Relaxed),
        "entropy collector stopped"
    );
    Ok(())
}

async fn wait_for_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) =
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: flushing and stopping"),
        _ = int.recv() => tracing::info!("SIGINT: flushing and stopping"),
    }
    shutdown.cancel();
}
