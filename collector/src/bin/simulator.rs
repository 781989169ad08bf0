//! `entropy-simulator`: a stand-in for an ID Quantique Quantis appliance (REST API v2.0
//! `GET /api/2.0/streambytes?size=N`), with a rate limit, latency and fault modes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use entropy_collector::simulator::{self, Fault, Simulator, SimulatorOptions};
use rustls::pki_types::pem::PemObject;
use tokio_util::sync::CancellationToken;

/// Simulates a Quantis appliance for demos, tests and benchmarks. Its bytes come from the OS
/// RNG: it simulates the interface, not the physics.
#[derive(Debug, Parser)]
#[command(name = "entropy-simulator", version)]
struct Cli {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8443")]
    listen_addr: SocketAddr,
    /// Serve HTTPS with a fresh self-signed certificate (for localhost and 127.0.0.1).
    #[arg(long)]
    tls: bool,
    /// Write that certificate (PEM) here, for the collector's ca_file; its SHA-256 pin is
    /// printed on stdout.
    #[arg(long, value_name = "FILE", requires = "tls")]
    cert_out: Option<PathBuf>,
    /// Output rate limit in bytes per second (0 = unlimited); a real appliance gives ~80 KB/s.
    #[arg(long, default_value_t = 80_000)]
    rate_bytes_per_s: u64,
    /// Extra latency per request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Misbehave on purpose.
    #[arg(long, value_enum, default_value = "none")]
    fault: Fault,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(64) } else { ExitCode::SUCCESS };
        }
    };
    if let Err(e) = entropy_ops::logging::init("info", entropy_ops::LogFormat::Text) {
        eprintln!("entropy-simulator: {e}");
        return ExitCode::from(64);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("entropy-simulator: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("entropy-simulator: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let sim = Simulator::new(SimulatorOptions {
        rate_bytes_per_s: cli.rate_bytes_per_s,
        latency: Duration::from_millis(cli.latency_ms),
        fault: cli.fault,
    });
    let listener = simulator::bind(cli.listen_addr).await?;
    let addr = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            use tokio::signal::unix::{SignalKind, signal};
            if let (Ok(mut term), Ok(mut int)) =
                (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
            {
                tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            }
            shutdown.cancel();
        }
    });
    if cli.tls {
        let (tls, pem) = simulator::self_signed_tls(&["localhost", "127.0.0.1"])?;
        let der = rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        println!(
            "pinned_cert_sha256 = \"{}\"",
            hex::encode(entropy_collector::tls::cert_sha256(&der))
        );
        if let Some(path) = &cli.cert_out {
            std::fs::write(path, &pem)?;
            println!("certificate written to {}", path.display());
        }
        println!("simulator listening on https://{addr} (fault: {:?})", cli.fault);
        sim.serve_https(listener, tls, shutdown).await?;
    } else {
        println!("simulator listening on http://{addr} (fault: {:?})", cli.fault);
        sim.serve_http(listener, shutdown).await?;
    }
    Ok(())
}
