//! `entropy-gateway`: parse and validate config, load keys and TLS, then serve until
//! SIGTERM/SIGINT ([`entropy_gateway::process::launch`] does the work).
//!
//! Exit codes: 0 clean shutdown, 64 bad config or usage (before anything is bound), 65 an
//! ingest lease in `state_dir` that does not parse (before anything is bound), 1 runtime
//! failure (a port in use, a listener error).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use entropy_gateway::process::config::{self, ConfigFlags, Mode};
#[cfg(feature = "dev")]
use entropy_gateway::process::dev;
use entropy_gateway::process::launch::Launch;

const EX_USAGE: u8 = 64;

/// The Entropy Diode gateway: serves verified (quantum) entropy over gRPC, each byte once.
#[derive(Debug, Parser)]
#[command(name = "entropy-gateway", version)]
struct Cli {
    /// TOML config file; keys are overridden by ENTROPY_<KEY> variables, then by flags.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Dev mode: plaintext on 127.0.0.1:50051, fed from the OS RNG by an in-process collector,
    /// API key from ENTROPY_DEV_API_KEY or generated and printed (builds with the cargo feature
    /// "dev", the default; the production images refuse it).
    #[arg(long)]
    dev: bool,
    /// With --dev: serve on a listen_addr that is not loopback anyway. Dev mode is plaintext
    /// and prints its API key; this is for a throwaway machine, never for a real service.
    #[arg(long)]
    dev_listen_any: bool,
    /// Print the effective config (as TOML) and exit.
    #[arg(long)]
    print_config: bool,
    /// Print the worst-case memory and file descriptors of the effective config (the formula
    /// of docs/security.md, "Resource bounds"), as JSON with --log-format json, and exit.
    #[arg(long)]
    print_bounds: bool,
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
        return match entropy_gateway::domain::auth::generate_key(name) {
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
        return match entropy_gateway::process::devcerts::generate(out, hosts) {
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
    #[cfg(not(feature = "dev"))]
    if cli.dev {
        let refused = entropy_gateway::process::launch::PrepareError::NoDevMode;
        eprintln!("entropy-gateway: {refused}");
        return ExitCode::from(refused.exit_code());
    }
    let mode = match cli.dev {
        true => Mode::Dev { listen_any: cli.dev_listen_any },
        false => Mode::Service,
    };
    let config = match config::load(cli.config.as_deref(), mode, &cli.flags) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("entropy-gateway: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let config = match entropy_gateway::process::fd_limit::prepare(config) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("entropy-gateway: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    if cli.dev && !config.listen_addr.ip().is_loopback() {
        // Only with --dev-listen-any: config validation refuses it otherwise.
        eprintln!(
            "WARNING: --dev on {}: plaintext, with the key printed below, reachable from the network",
            config.listen_addr
        );
    }
    if cli.print_bounds {
        let bounds = entropy_gateway::process::bounds::of_config(&config);
        match config.log_format {
            entropy_gateway::process::config::LogFormat::Json => {
                match serde_json::to_string(&bounds) {
                    Ok(json) => println!("{json}"),
                    Err(e) => eprintln!("entropy-gateway: cannot print bounds: {e}"),
                }
            }
            entropy_gateway::process::config::LogFormat::Text => println!("{bounds}"),
        }
        return ExitCode::SUCCESS;
    }
    if cli.print_config {
        match toml::to_string(&config) {
            Ok(text) => print!("{text}"),
            Err(e) => eprintln!("entropy-gateway: cannot print config: {e}"),
        }
        return ExitCode::SUCCESS;
    }
    #[cfg(feature = "dev")]
    let dev_api_key = std::env::var(dev::DEV_API_KEY_ENV).ok();
    #[cfg(not(feature = "dev"))]
    let dev_api_key = None;
    let launch = match Launch::prepare(config.clone(), cli.dev, dev_api_key) {
        Ok(launch) => launch,
        Err(e) => {
            eprintln!("entropy-gateway: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    if let Err(e) = entropy_ops::logging::init(&config.log_filter, config.log_format) {
        eprintln!("entropy-gateway: {e}");
        return ExitCode::from(EX_USAGE);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("entropy-gateway: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(launch.run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("entropy-gateway: {e}");
            ExitCode::FAILURE
        }
    }
}
