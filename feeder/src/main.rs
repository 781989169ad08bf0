//! `entropy-feeder`: gateway entropy, health-tested, into the Linux kernel's RNG when it asks
//! (and to virtual machines over an EGD socket), or once at boot (`--boot BYTES`).
//!
//! Exit codes (feeder-contract.md): 0 done or clean shutdown; 64 bad config or usage (before
//! anything is opened); 1 runtime failure (a socket in use, the random device cannot be
//! opened, the ioctl refused: EPERM says it needs CAP_SYS_ADMIN); 75 boot mode timed out
//! (fed less than asked).

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use entropy_diode_client::{Client, ClientBuilder};
use entropy_feeder::config::{API_KEY_ENV, ApiKey, ConfigFlags, FeederConfig, read_api_key};
use entropy_feeder::egd::{self, EgdLimits};
use entropy_feeder::feed::{self, FeedOptions};
use entropy_feeder::kernel::LinuxRandom;
use entropy_feeder::metrics::{self, FeederProbe, Metrics};
use entropy_feeder::supply::{Supply, SupplyOptions};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const EX_USAGE: u8 = 64;
const EX_TEMPFAIL: u8 = 75;

/// Feeds the kernel's RNG (and EGD clients) with health-tested gateway entropy.
#[derive(Debug, Parser)]
#[command(name = "entropy-feeder", version)]
struct Cli {
    /// TOML config file (see feeder/README.md).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Print the effective config (file, environment and flags applied) and exit. The API key
    /// is never printed (nor read for it).
    #[arg(long)]
    print_config: bool,
    /// One-shot: feed BYTES to the kernel, asked or not, then exit; at most boot_timeout_ms
    /// (exit 75 with a warning saying how much was fed when that runs out).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    boot: Option<u64>,
    #[command(flatten)]
    flags: ConfigFlags,
}

fn main() -> ExitCode {
    let started = Instant::now();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(EX_USAGE) } else { ExitCode::SUCCESS };
        }
    };
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("entropy-feeder: {e}");
        ExitCode::from(EX_USAGE)
    };
    let config = match FeederConfig::load(&cli.config, &cli.flags) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    if cli.print_config {
        match toml::to_string(&config) {
            Ok(text) => print!("{text}"),
            Err(e) => eprintln!("entropy-feeder: {e}"),
        }
        return ExitCode::SUCCESS;
    }
    if cli.boot.is_some() && !config.kernel_feed {
        return usage(&"--boot feeds the kernel: it needs kernel_feed = true");
    }
    let key = match read_api_key(&config, std::env::var(API_KEY_ENV).ok()) {
        Ok(k) => k,
        Err(e) => return usage(&e),
    };
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    if let Err(e) = entropy_ops::logging::init(&filter, config.log_format) {
        return usage(&e);
    }
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("entropy-feeder: cannot start the runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
    let client = match runtime.block_on(connect(&config, key)) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let code = match cli.boot {
        Some(total) => runtime.block_on(boot(config, client, total, started)),
        None => match runtime.block_on(daemon(config, client)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("{e:#}");
                ExitCode::FAILURE
            }
        },
    };
    // The poll threads of the kernel wait end within a slice (kernel::POLL_SLICE).
    runtime.shutdown_timeout(Duration::from_secs(2));
    code
}

/// The client (it connects lazily: this checks the endpoint, key and CA file only).
async fn connect(config: &FeederConfig, key: ApiKey) -> Result<Client, String> {
    // Bytes the gateway may send ahead of the supply's reads sit untested in the client's
    // receive buffer: bound them to two messages (HTTP/2's minimum window when that is less).
    let window = config.chunk_bytes.saturating_mul(2);
    let mut builder =
        ClientBuilder::new(config.gateway_endpoint.clone(), key.expose()).stream_window(window);
    if let Some(ca) = config.ca_file() {
        builder = builder.ca_file(ca);
    }
    builder.connect().await.map_err(|e| format!("gateway_endpoint/api_key/ca_file: {e}"))
}

fn supply_options(config: &FeederConfig) -> SupplyOptions {
    SupplyOptions {
        chunk_bytes: config.chunk_bytes,
        buffer_bytes: config.buffer_bytes,
        min_entropy_bits_per_byte: config.min_entropy_bits_per_byte,
    }
}

fn feed_options(config: &FeederConfig) -> FeedOptions {
    FeedOptions {
        feed_bytes: config.feed_bytes,
        credit_bits_per_byte: config.credit_bits_per_byte,
        refresh_interval: config.refresh_interval(),
    }
}

/// Boot mode: `total` bytes to the kernel within `boot_timeout_ms` of `started`.
async fn boot(config: FeederConfig, client: Client, total: u64, started: Instant) -> ExitCode {
    let kernel = match LinuxRandom::open(&config.random_device).and_then(|k| {
        k.check_access()?;
        Ok(k)
    }) {
        Ok(k) => k,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let shutdown = CancellationToken::new();
    let metrics = Metrics::detached();
    let supply = Supply::start(client, supply_options(&config), metrics.clone(), shutdown.clone());
    let deadline = started + config.boot_timeout();
    let mut fed = 0;
    let feeding =
        feed::boot(&kernel, supply.as_ref(), total, feed_options(&config), &metrics, &mut fed);
    let outcome = tokio::time::timeout_at(deadline, feeding).await;
    shutdown.cancel();
    supply.closed().await;
    match outcome {
        Ok(Ok(())) => {
            tracing::info!(fed, ms = started.elapsed().as_millis() as u64, "boot feed done");
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            tracing::error!(fed, "boot feed failed: {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            tracing::warn!(
                fed,
                asked = total,
                "boot feed timed out after boot_timeout_ms = {}: fed {fed} of {total} bytes",
                config.boot_timeout_ms
            );
            ExitCode::from(EX_TEMPFAIL)
        }
    }
}

/// Daemon mode: until SIGTERM/SIGINT, or a failure.
async fn daemon(config: FeederConfig, client: Client) -> anyhow::Result<()> {
    let kernel = match config.kernel_feed {
        true => {
            let kernel = LinuxRandom::open(&config.random_device)?;
            kernel.check_access()?;
            Some(kernel)
        }
        false => None,
    };
    let metrics_listener = match config.metrics_listen_addr {
        Some(addr) => Some(entropy_ops::endpoint::bind(addr).await?),
        None => None,
    };
    let egd_listener = match config.egd_socket() {
        Some(path) => Some(bind_egd(path, config.egd_mode()?)?),
        None => None,
    };

    let (recorder, handle) = metrics::recorder();
    let metrics = Metrics::new(&recorder);
    // The EGD server counts through the `metrics` macros: they go to this recorder too.
    metrics::install(recorder)
        .map_err(|e| anyhow::anyhow!("installing the metrics recorder: {e}"))?;
    metrics.up.set(1.0);

    let shutdown = CancellationToken::new();
    entropy_ops::signals::cancel_on_terminate(shutdown.clone(), "stopping");
    let supply = Supply::start(client, supply_options(&config), metrics.clone(), shutdown.clone());
    let tasks = tokio_util::task::TaskTracker::new();
    if let Some(listener) = metrics_listener {
        let probe = Arc::new(FeederProbe::new(handle, supply.clone()));
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            if let Err(e) = entropy_ops::endpoint::serve(listener, probe, shutdown).await {
                tracing::error!("metrics endpoint: {e}");
            }
        });
    }
    // A failure of the kernel feed or of EGD stops the feeder (exit 1), with the first error.
    let (failed_tx, mut failed_rx) = tokio::sync::mpsc::channel::<anyhow::Error>(2);
    if let Some(listener) = egd_listener {
        let limits = EgdLimits {
            max_clients: config.egd_max_clients,
            idle_timeout: config.egd_idle_timeout(),
        };
        let (supply, shutdown, failed) = (supply.clone(), shutdown.clone(), failed_tx.clone());
        let path = config.egd_socket.clone();
        tasks.spawn(async move {
            if let Err(e) = egd::serve(listener, supply, limits, shutdown).await {
                let _ = failed.send(anyhow::anyhow!("EGD server on {}: {e}", path.display())).await;
            }
        });
    }
    if let Some(kernel) = kernel {
        let (supply, shutdown, failed) = (supply.clone(), shutdown.clone(), failed_tx.clone());
        let (options, metrics) = (feed_options(&config), metrics.clone());
        tasks.spawn(async move {
            if let Err(e) = feed::run(&kernel, supply.as_ref(), options, &metrics, &shutdown).await
            {
                let _ = failed.send(e.into()).await;
            }
        });
    }
    drop(failed_tx);
    tracing::info!(
        gateway = %config.gateway_endpoint,
        kernel_feed = config.kernel_feed,
        egd = %config.egd_socket.display(),
        "entropy feeder running"
    );
    let failure = tokio::select! {
        () = shutdown.cancelled() => None,
        failed = failed_rx.recv() => failed,
    };
    shutdown.cancel();
    tasks.close();
    tasks.wait().await;
    supply.closed().await;
    if let Some(path) = config.egd_socket() {
        let _ = std::fs::remove_file(path);
    }
    match failure {
        Some(e) => Err(e),
        None => {
            tracing::info!("entropy feeder stopped");
            Ok(())
        }
    }
}

/// Binds the EGD socket at `path`: a stale socket there is removed first (anything else there
/// is an error, never removed), and the socket gets `mode`.
fn bind_egd(path: &Path, mode: u32) -> anyhow::Result<tokio::net::UnixListener> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .with_context(|| format!("removing the stale egd_socket {}", path.display()))?,
        Ok(_) => anyhow::bail!("egd_socket {} exists and is not a socket", path.display()),
        Err(_) => {}
    }
    let listener = tokio::net::UnixListener::bind(path)
        .with_context(|| format!("cannot bind egd_socket {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting egd_socket_mode on {}", path.display()))?;
    Ok(listener)
}
