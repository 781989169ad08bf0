//! `entropy-mcp`: parse and validate config, connect to the gateway (lazily), serve MCP on
//! stdio or Streamable HTTP until the agent leaves or SIGTERM/SIGINT.
//!
//! Exit codes: 0 clean shutdown, 64 bad config or usage (before anything is bound or read from
//! stdin), 1 runtime failure (a port in use, a broken transport). Logs go to stderr: on stdio,
//! stdout is the protocol channel.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use entropy_mcp::config::{self, API_KEY_ENV, ConfigFlags, McpConfig, Transport};
use entropy_mcp::gateway::Gateway;
use entropy_mcp::http::{HttpLimits, MCP_PATH};
use entropy_mcp::tokens::{self, Tokens};
use entropy_mcp::tools::EntropyServer;
use entropy_mcp::{bounds, serve};
use tokio_util::sync::CancellationToken;

const EX_USAGE: u8 = 64;

/// The HTTP transport's limits and, when configured, its TLS settings.
type HttpSetup = (HttpLimits, Option<Arc<rustls::ServerConfig>>);

/// MCP server for Entropy Diode: fair dice, shuffles, samples, passwords, numbers, UUIDs and
/// bytes for AI agents, drawn from the gateway. The gateway key comes from ENTROPY_API_KEY or
/// gateway_api_key_file, never from a flag.
#[derive(Debug, Parser)]
#[command(name = "entropy-mcp", version)]
struct Cli {
    /// TOML config file; keys are overridden by ENTROPY_<KEY> variables, then by flags.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print the effective config (as TOML; it holds no secret) and exit.
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    flags: ConfigFlags,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Make a bearer token for the HTTP transport: prints the token once, and the entry to add
    /// to the tokens file (which holds only its SHA-256), then exits.
    Token {
        /// The token's name, shown in logs instead of the token.
        #[arg(long)]
        name: String,
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
    if let Some(Command::Token { name }) = &cli.command {
        return match tokens::generate(name) {
            Ok((token, entry)) => {
                eprintln!("Token (shown once; give it to the agent, store it nowhere else):");
                println!("{token}");
                eprintln!("\nAdd to the tokens file (http_tokens_file), then restart:\n");
                eprint!("{entry}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("entropy-mcp: token: {e}");
                ExitCode::from(EX_USAGE)
            }
        };
    }
    let config = match config::load(cli.config.as_deref(), &cli.flags) {
        Ok(config) => config,
        Err(e) => return usage(e),
    };
    if cli.print_config {
        match toml::to_string(&config) {
            Ok(text) => {
                let source = match &config.gateway_api_key_file {
                    Some(path) => format!("the file {}", path.display()),
                    None => format!("the environment variable {API_KEY_ENV}"),
                };
                println!("# gateway API key: read from {source} (never printed)");
                print!("{text}");
            }
            Err(e) => eprintln!("entropy-mcp: cannot print config: {e}"),
        }
        return ExitCode::SUCCESS;
    }
    let key = match config::gateway_key(&config, std::env::var(API_KEY_ENV).ok()) {
        Ok(key) => key,
        Err(e) => return usage(e),
    };
    let http = match http_setup(&config) {
        Ok(http) => http,
        Err(e) => return usage(e),
    };
    if let Err(e) = entropy_ops::logging::init(&config.log_filter, config.log_format) {
        return usage(e);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("entropy-mcp: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let gateway = match runtime.block_on(Gateway::connect(
        &config.gateway_endpoint,
        &key,
        config.gateway_ca_file.as_deref(),
        config.gateway_timeout(),
    )) {
        Ok(gateway) => gateway,
        Err(e) => {
            return usage(format!("invalid config key gateway_endpoint/gateway_ca_file: {e}"));
        }
    };
    drop(key);
    match runtime.block_on(run(config, EntropyServer::new(gateway), http)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("entropy-mcp: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn usage(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("entropy-mcp: {e}");
    ExitCode::from(EX_USAGE)
}

/// The HTTP transport's tokens, limits and TLS, loaded before anything binds.
fn http_setup(config: &McpConfig) -> Result<Option<HttpSetup>, String> {
    if config.transport != Transport::Http {
        return Ok(None);
    }
    // validate() guarantees a tokens file for the http transport.
    let path = config
        .http_tokens_file
        .as_deref()
        .ok_or("invalid config key http_tokens_file: required for transport \"http\"")?;
    let tokens =
        Tokens::load_file(path).map_err(|e| format!("invalid config key http_tokens_file: {e}"))?;
    let tls = match (&config.http_tls_cert_file, &config.http_tls_key_file) {
        (Some(cert), Some(key)) => Some(serve::tls_config(cert, key).map_err(|e| {
            format!("invalid config key http_tls_cert_file/http_tls_key_file: {e}")
        })?),
        _ => None,
    };
    let limits = HttpLimits::from_config(config, tokens);
    bounds::check_descriptors(&limits).map_err(|e| e.to_string())?;
    Ok(Some((limits, tls)))
}

async fn run(
    config: McpConfig,
    server: EntropyServer,
    http: Option<HttpSetup>,
) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    entropy_ops::signals::cancel_on_terminate(shutdown.clone(), "shutting down");
    let gateway = config.gateway_endpoint.as_str();
    match http {
        None => {
            tracing::info!(%gateway, "entropy-mcp serving MCP on stdio");
            serve::stdio(server, shutdown).await
        }
        Some((limits, tls)) => {
            let listener = serve::bind(config.http_listen_addr).await?;
            let addr = listener.local_addr()?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            // The one line on stdout: where to connect (tests and scripts read it).
            println!("entropy-mcp: MCP over Streamable HTTP at {scheme}://{addr}{MCP_PATH}");
            tracing::info!(%addr, %gateway, tokens = limits.tokens.len(), "entropy-mcp serving");
            let over_tls = tls.is_some();
            let anyone = bounds::worst_case(&limits, over_tls, false);
            let holder = bounds::worst_case(&limits, over_tls, true);
            tracing::info!(
                bound_memory_without_token_bytes = anyone.memory_bytes,
                bound_memory_bytes = holder.memory_bytes,
                bound_descriptors = holder.descriptors,
                sessions_per_token = limits.max_sessions_per_token,
                "worst case over HTTP (docs/security.md, \"Resource bounds\")"
            );
            serve::http(server, listener, &limits, tls, shutdown, config.shutdown_grace()).await?;
            tracing::info!("entropy-mcp stopped");
            Ok(())
        }
    }
}
