//! `entropy-gateway`: parse and validate config, bind, serve until SIGTERM/SIGINT.
//!
//! Exit codes: 0 clean shutdown, 64 bad config or usage (before anything is bound), 1 runtime
//! failure (a port in use, a listener error).

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser;
use entropy_gateway::config::{self, ConfigFlags, GatewayConfig, LogFormat};
use entropy_gateway::dev;
use entropy_gateway::grpc::auth::KeyStore;
use entropy_gateway::ingest::keys::MacKeys;
use entropy_gateway::server::ListenerTls;
use entropy_gateway::tls::{self, TlsFiles};
use entropy_gateway::{Gateway, auth::ApiKeys};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const EX_USAGE: u8 = 64;

/// The Entropy Diode gateway: serves verified (quantum) entropy over gRPC, each byte once.
#[derive(Debug, Parser)]
#[command(name = "entropy-gateway", version)]
struct Cli {
    /// TOML config file; keys are overridden by ENTROPY_<KEY> variables, then by flags.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Dev mode: plaintext on 127.0.0.1:50051, fed from the OS RNG by an in-process collector,
    /// API key from ENTROPY_DEV_API_KEY or generated and printed.
    #[arg(long)]
    dev: bool,
    /// With --dev: serve on a listen_addr that is not loopback anyway. Dev mode is plaintext
    /// and prints its API key; this is for a throwaway machine, never for a real service.
    #[arg(long)]
    dev_listen_any: bool,
    /// Print the effective config (as TOML) and exit.
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    flags: ConfigFlags,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Make a new API key: prints the secret once, and the entry to add to the keys file
    /// (which holds only its SHA-256), then exits.
    Keygen {
        /// The key's name, shown in logs instead of the secret.
        #[arg(long)]
        name: String,
    },
    /// Write a throwaway CA, a gateway server certificate and a collector client certificate
    /// into DIR, for trying TLS and mTLS (development only), then exit.
    DevCerts {
        /// Directory to write ca.pem, gateway.pem/.key, collector.pem/.key into.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Host names and IP addresses the gateway certificate is valid for.
        #[arg(long = "host", value_name = "NAME", default_values = ["localhost", "127.0.0.1"])]
        hosts: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let _ = e.print();
            return ExitCode::from(EX_USAGE);
        }
        Err(e) => {
            let _ = e.print(); // --help, --version
            return ExitCode::SUCCESS;
        }
    };
    if let Some(Command::Keygen { name }) = &cli.command {
        return match entropy_gateway::auth::generate_key(name) {
            Ok((secret, entry)) => {
                eprintln!("Secret (shown once; give it to the client, store it nowhere else):");
                println!("{secret}");
                eprintln!(
                    "\nAdd to the keys file (api_keys_file), then send SIGHUP to the gateway:\n"
                );
                eprint!("{entry}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("entropy-gateway: keygen: {e}");
                ExitCode::from(EX_USAGE)
            }
        };
    }
    if let Some(Command::DevCerts { out, hosts }) = &cli.command {
        return match entropy_gateway::devcerts::generate(out, hosts) {
            Ok(c) => {
                println!("CA (trust it):         {}", c.ca.display());
                println!(
                    "gateway certificate:   {} (key {})",
                    c.server_cert.display(),
                    c.server_key.display()
                );
                println!(
                    "collector certificate: {} (key {})",
                    c.client_cert.display(),
                    c.client_key.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("entropy-gateway: dev-certs: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let config = match config::load(cli.config.as_deref(), cli.dev, &cli.flags) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("entropy-gateway: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    if let Err(e) = entropy_gateway::fd_limit::prepare(&config) {
        eprintln!("entropy-gateway: {e}");
        return ExitCode::from(EX_USAGE);
    }
    if cli.dev && !config.listen_addr.ip().is_loopback() {
        if !cli.dev_listen_any {
            eprintln!(
                "entropy-gateway: listen_addr {}: --dev serves plaintext and prints its API key, \
                 so it listens on loopback only; add --dev-listen-any to serve it on {} anyway \
                 (throwaway machines only), or run without --dev, with TLS and a keys file",
                config.listen_addr,
                config.listen_addr.ip()
            );
            return ExitCode::from(EX_USAGE);
        }
        eprintln!(
            "WARNING: --dev on {}: plaintext, with the key printed below, reachable from the network",
            config.listen_addr
        );
    }
    if cli.print_config {
        match toml::to_string(&config) {
            Ok(text) => print!("{text}"),
            Err(e) => eprintln!("entropy-gateway: cannot print config: {e}"),
        }
        return ExitCode::SUCCESS;
    }
    let keys = match load_keys(&config, cli.dev) {
        Ok(keys) => keys,
        Err(e) => {
            eprintln!("entropy-gateway: {e:#}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let tls = match load_tls(&config) {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("entropy-gateway: {e:#}");
            return ExitCode::from(EX_USAGE);
        }
    };
    init_logging(&config);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("entropy-gateway: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config, keys, tls)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("entropy-gateway: {e:#}");
            ExitCode::FAILURE
        }
    }
}

enum Keys {
    Dev(Box<dev::DevKeys>),
    Files(ApiKeys, MacKeys),
}

fn load_keys(config: &GatewayConfig, dev_mode: bool) -> anyhow::Result<Keys> {
    if dev_mode {
        let env_key = std::env::var(dev::DEV_API_KEY_ENV).ok();
        return Ok(Keys::Dev(Box::new(dev::keys(env_key)?)));
    }
    // validate() guarantees both are set outside dev mode.
    let api_file = config.api_keys_file.as_deref().context("invalid config key api_keys_file")?;
    let mac_dir =
        config.ingest_keys_dir.as_deref().context("invalid config key ingest_keys_dir")?;
    let api = ApiKeys::load_file(api_file).context("invalid config key api_keys_file")?;
    let mac = MacKeys::load_dir(mac_dir).context("invalid config key ingest_keys_dir")?;
    Ok(Keys::Files(api, mac))
}

fn load_tls(config: &GatewayConfig) -> anyhow::Result<ListenerTls> {
    let public = match (&config.tls_cert_file, &config.tls_key_file) {
        (Some(cert), Some(key)) => Some(
            tls::server_config(&TlsFiles {
                cert,
                key,
                client_ca: None,
                allow_tls12: config.tls_allow_tls12,
            })
            .context("invalid config key tls_cert_file/tls_key_file")?,
        ),
        _ => None,
    };
    let ingest = match (&config.ingest_tls_cert_file, &config.ingest_tls_key_file) {
        (Some(cert), Some(key)) => Some(
            tls::server_config(&TlsFiles {
                cert,
                key,
                client_ca: config.ingest_client_ca_file.as_deref(),
                allow_tls12: config.tls_allow_tls12,
            })
            .context(
                "invalid config key ingest_tls_cert_file/ingest_tls_key_file/ingest_client_ca_file",
            )?,
        ),
        _ => None,
    };
    Ok(ListenerTls { public, ingest })
}

fn init_logging(config: &GatewayConfig) {
    let filter = tracing_subscriber::EnvFilter::new(&config.log_filter);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match config.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

async fn run(config: GatewayConfig, keys: Keys, tls: ListenerTls) -> anyhow::Result<()> {
    let public = bind(config.listen_addr, "listen_addr").await?;
    let ingest = bind(config.ingest_listen_addr, "ingest_listen_addr").await?;
    let metrics = match config.metrics_addr() {
        Some(addr) => {
            Some(entropy_collector::prom::bind(addr).await.map_err(|e| anyhow::anyhow!(e))?)
        }
        None => None,
    };
    let metrics_addr = metrics.as_ref().map(TcpListener::local_addr).transpose()?;
    let public_addr = public.local_addr()?;
    let ingest_addr = ingest.local_addr()?;
    let shutdown = CancellationToken::new();
    tokio::spawn(wait_for_signal(shutdown.clone()));

    let grace = config.shutdown_grace();
    let keys_file = config.api_keys_file.clone();
    let (mut gateway, feed) = match keys {
        Keys::Files(api, mac) => (Gateway::new(config, api, mac).with_tls(tls), None),
        Keys::Dev(dev_keys) => {
            let feed = dev::spawn_feed(
                ingest_addr,
                &config.gateway_id,
                dev_keys.mac_secret.clone(),
                shutdown.clone(),
            )?;
            println!("{}", dev::banner(public_addr, &dev_keys));
            if let Some(addr) = metrics_addr {
                println!("Metrics:   curl http://{addr}/metrics   (probes: /healthz, /readyz)\n");
            }
            (Gateway::new(config, dev_keys.api_keys, dev_keys.mac_keys).with_tls(tls), Some(feed))
        }
    };
    if let Some(listener) = metrics {
        gateway = gateway.with_metrics_listener(listener);
    }
    let metrics_addr = metrics_addr.map_or_else(|| "off".to_owned(), |a| a.to_string());
    tracing::info!(%public_addr, %ingest_addr, %metrics_addr, "entropy gateway serving");
    if let Some(path) = keys_file {
        tokio::spawn(reload_keys_on_sighup(path, gateway.key_store(), shutdown.clone()));
    }

    let serve = gateway.serve(public, ingest, shutdown.clone());
    tokio::pin!(serve);
    tokio::select! {
        result = &mut serve => result?,
        () = shutdown.cancelled() => {
            match tokio::time::timeout(grace, &mut serve).await {
                Ok(result) => result?,
                Err(_) => tracing::warn!(?grace, "grace period over; exiting with calls in flight"),
            }
        }
    }
    if let Some(feed) = feed {
        let stats = feed.await?;
        tracing::info!(delivered = stats.delivered(), "dev feed stopped");
    }
    tracing::info!("entropy gateway stopped");
    Ok(())
}

/// Reloads the keys file on SIGHUP. A file that does not load leaves the old keys in place.
/// Open connections and streams are untouched; the next call sees the new keys. Keys keep
/// their quota state by name across the reload (`ApiKeys::reload_file`).
async fn reload_keys_on_sighup(path: PathBuf, store: KeyStore, shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP; keys reload only on restart");
        return;
    };
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = hup.recv() => {}
        }
        match ApiKeys::reload_file(&path, &store.load()) {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), "SIGHUP: API keys reloaded");
                store.store(std::sync::Arc::new(keys));
            }
            Err(e) => tracing::error!("SIGHUP: keeping the old API keys: {e}"),
        }
    }
}

async fn bind(addr: SocketAddr, key: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.with_context(|| format!("cannot bind {key} {addr}"))
}

async fn wait_for_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) =
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
    }
    shutdown.cancel();
}
