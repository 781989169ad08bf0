//! The gateway as a process, between a parsed config and a running [`Gateway`]: keys, TLS and
//! the ingest lease loaded and checked before any port is bound ([`Launch::prepare`], whose
//! errors are usage errors, but for a corrupt lease), then the listeners bound, the dev feed
//! started, SIGHUP reloading the keys, and a graceful shutdown bounded by `shutdown_grace_ms`
//! ([`Launch::run`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use entropy_ops::signals::Hangups;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Gateway;
use crate::domain::auth::{ApiKeys, ApiKeysError};
use crate::domain::ingest::keys::{KeyError, MacKeys};
use crate::domain::ingest::lease::{Lease, OpenError};
use crate::grpc::auth::KeyStore;
use crate::process::config::GatewayConfig;
#[cfg(feature = "dev")]
use crate::process::dev::{self, DevError, DevKeys};
use crate::process::server::{ListenerTls, ServeError};
use crate::transport::tls::{self, TlsError, TlsFiles};

/// Why the gateway cannot start with this config: nothing has been bound yet (exit 64, or 65:
/// [`PrepareError::exit_code`]).
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The API keys file does not load.
    #[error("invalid config key api_keys_file: {0}")]
    ApiKeys(#[from] ApiKeysError),
    /// The MAC keys directory does not load.
    #[error("invalid config key ingest_keys_dir: {0}")]
    MacKeys(#[from] KeyError),
    /// A key or certificate file of a listener does not load.
    #[error("invalid config key {keys}: {error}")]
    Tls {
        /// The config keys naming the files.
        keys: &'static str,
        /// What is wrong with them.
        error: TlsError,
    },
    /// A file the config needs outside dev mode is not set (validation catches this first).
    #[error("invalid config key {0}: required (or run with --dev)")]
    Missing(&'static str),
    /// The ingest lease in `state_dir` cannot be used (see [`PrepareError::exit_code`]).
    #[error("invalid config key state_dir: {0}")]
    State(#[from] OpenError),
    /// Dev mode's keys could not be set up.
    #[cfg(feature = "dev")]
    #[error(transparent)]
    Dev(#[from] DevError),
    /// Dev mode was asked of a gateway built without it.
    #[cfg(not(feature = "dev"))]
    #[error(
        "--dev: this gateway is built without dev mode (cargo feature \"dev\", on by default; \
         the production images leave it out)"
    )]
    NoDevMode,
}

impl PrepareError {
    /// 65 (EX_DATAERR) for a lease file that does not parse: not a typo to fix but a record
    /// of earlier runs to restore or, knowingly, delete; 64 (EX_USAGE) for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::State(OpenError::Corrupt { .. }) => 65,
            _ => 64,
        }
    }
}

/// Why a running gateway stopped with an error (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A listener's address could not be bound.
    #[error("cannot bind {key} {addr}: {error}")]
    Bind {
        /// The config key of the address.
        key: &'static str,
        /// The address.
        addr: SocketAddr,
        /// Why.
        error: std::io::Error,
    },
    /// The metrics address could not be bound.
    #[error(transparent)]
    MetricsBind(#[from] entropy_ops::endpoint::BindError),
    /// The dev feed could not start.
    #[cfg(feature = "dev")]
    #[error(transparent)]
    Dev(#[from] DevError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

enum Keys {
    #[cfg(feature = "dev")]
    Dev(Box<DevKeys>),
    /// Keys from files, and the ingest lease from `state_dir`.
    Files(ApiKeys, MacKeys, Lease),
}

impl Keys {
    /// Dev mode's generated keys, the API key `api_key` when given.
    #[cfg(feature = "dev")]
    fn dev(api_key: Option<String>) -> Result<Self, PrepareError> {
        Ok(Self::Dev(Box::new(dev::keys(api_key)?)))
    }

    /// Dev mode is not built in.
    #[cfg(not(feature = "dev"))]
    fn dev(_api_key: Option<String>) -> Result<Self, PrepareError> {
        Err(PrepareError::NoDevMode)
    }
}

/// A gateway whose keys and TLS are loaded, ready to bind and serve.
pub struct Launch {
    config: GatewayConfig,
    keys: Keys,
    tls: ListenerTls,
}

impl Launch {
    /// Loads what `config` names: API keys, MAC keys and the ingest lease in `state_dir` (or
    /// dev mode's generated keys, the API key from `dev_api_key` when given, and a lease in
    /// memory) and the listeners' TLS. Binds nothing.
    pub fn prepare(
        config: GatewayConfig,
        dev_mode: bool,
        dev_api_key: Option<String>,
    ) -> Result<Self, PrepareError> {
        let keys = if dev_mode {
            Keys::dev(dev_api_key)?
        } else {
            let api =
                config.api_keys_file.as_deref().ok_or(PrepareError::Missing("api_keys_file"))?;
            let mac = config
                .ingest_keys_dir
                .as_deref()
                .ok_or(PrepareError::Missing("ingest_keys_dir"))?;
            let state = config.state_dir.as_deref().ok_or(PrepareError::Missing("state_dir"))?;
            let (api, mac) = (ApiKeys::load_file(api)?, MacKeys::load_dir(mac)?);
            Keys::Files(api, mac, Lease::open(state, config.max_future_skew())?)
        };
        let tls = load_tls(&config)?;
        Ok(Self { config, keys, tls })
    }

    /// Binds the listeners and serves until SIGTERM or SIGINT; then serves on for
    /// `shutdown_drain_ms` while reporting NOT_SERVING, and drains calls for at most
    /// `shutdown_grace_ms`. In dev mode, starts the in-process collector and prints the banner.
    pub async fn run(self) -> Result<(), RunError> {
        let Self { config, keys, tls } = self;
        let bounds = crate::process::bounds::of_config(&config);
        // The receipt log is opened (locked, recovered) before any port is bound.
        let notary = crate::process::receipts::open(&config).map_err(ServeError::from)?;
        let public = bind(config.listen_addr, "listen_addr").await?;
        let ingest = bind(config.ingest_listen_addr, "ingest_listen_addr").await?;
        let metrics = match config.metrics_addr() {
            Some(addr) => Some(entropy_ops::endpoint::bind(addr).await?),
            None => None,
        };
        let local = |l: &TcpListener, key, addr| {
            l.local_addr().map_err(|error| RunError::Bind { key, addr, error })
        };
        let public_addr = local(&public, "listen_addr", config.listen_addr)?;
        let ingest_addr = local(&ingest, "ingest_listen_addr", config.ingest_listen_addr)?;
        let metrics_addr = metrics.as_ref().and_then(|l| l.local_addr().ok());
        let shutdown = CancellationToken::new();
        let terminate = CancellationToken::new();
        let doing = if config.shutdown_drain_ms > 0 { "draining" } else { "shutting down" };
        entropy_ops::signals::cancel_on_terminate(terminate.clone(), doing);
        let drain = config.shutdown_drain();

        let grace = config.shutdown_grace();
        let keys_file = config.api_keys_file.clone();
        let (mut gateway, feed): (Gateway, Option<JoinHandle<()>>) = match keys {
            Keys::Files(api, mac, lease) => {
                log_lease(&lease);
                (Gateway::new_with_lease(config, api, mac, lease), None)
            }
            #[cfg(feature = "dev")]
            Keys::Dev(dev_keys) => {
                let (gateway_id, skew) = (config.gateway_id.clone(), config.max_future_skew());
                let mac_secret = dev_keys.mac_secret.clone();
                let tls_cert = config.tls_cert_file.as_deref();
                println!("{}", dev::banner(public_addr, &dev_keys, tls_cert));
                if let Some(addr) = metrics_addr {
                    println!(
                        "Metrics:   curl http://{addr}/metrics   (probes: /healthz, /readyz)\n"
                    );
                }
                if let Some(notary) = &notary {
                    println!(
                        "Receipts:  a draw asking for one (\"receipt\": true) is signed and logged in \
                         {}; key id {}\n",
                        notary.dir().display(),
                        notary.public_key().key_id().to_hex()
                    );
                }
                let DevKeys { api_keys, mac_keys, .. } = *dev_keys;
                let gateway = Gateway::new(config, api_keys, mac_keys);
                // The gateway refuses chunks sealed before its start plus max_future_skew_ms
                // (its restart rule), so the feed seals its first chunk after that.
                let feed = dev::spawn_feed(
                    ingest_addr,
                    &gateway_id,
                    mac_secret,
                    skew + dev::FEED_START_MARGIN,
                    shutdown.clone(),
                )?;
                (gateway, Some(feed))
            }
        };
        gateway = gateway.with_tls(tls).with_notary(notary);
        if let Some(listener) = metrics {
            gateway = gateway.with_metrics_listener(listener);
        }
        let shown = metrics_addr.map_or_else(|| "off".to_owned(), |a| a.to_string());
        tracing::info!(%public_addr, %ingest_addr, metrics_addr = %shown, "entropy gateway serving");
        tracing::info!(
            memory_mib = bounds.memory_bytes >> 20,
            descriptors = bounds.descriptors,
            "worst case of this config (--print-bounds lists its terms)"
        );
        if let Some(path) = keys_file {
            tokio::spawn(reload_keys_on_sighup(path, gateway.key_store(), shutdown.clone()));
        }

        tokio::spawn(crate::domain::readiness::drain_then_stop(
            gateway.readiness(),
            terminate,
            drain,
            shutdown.clone(),
        ));
        let cuts = gateway.shutdown_cuts();
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
        if let Some(feed) = feed
            && let Err(e) = feed.await
        {
            tracing::error!("dev feed: {e}");
        }
        // Streams the shutdown ended with bytes still to send: their clients resume elsewhere.
        tracing::info!(streams_cut = cuts.count(), "entropy gateway stopped");
        Ok(())
    }
}

/// Says where the lease is and what it means for this run (logging starts after `prepare`).
fn log_lease(lease: &Lease) {
    let path = lease.path().map(|p| p.display().to_string()).unwrap_or_default();
    let from = lease.accepts_from_unix_ms();
    let wait_ms = from.saturating_sub(entropy_ops::clock::unix_ms_now()).max(0);
    if lease.is_new() {
        tracing::info!(
            %path,
            accepts_from_unix_ms = from,
            "no ingest lease yet: a new state; accepting chunks dated from the start plus \
             max_future_skew_ms on"
        );
    } else if wait_ms > 60_000 {
        tracing::warn!(
            %path,
            accepts_from_unix_ms = from,
            wait_ms,
            "the ingest lease ends far ahead of the clock (did the clock go back?): chunks are \
             refused as before_start until then"
        );
    } else {
        tracing::info!(
            %path,
            accepts_from_unix_ms = from,
            wait_ms,
            "ingest lease read: accepting chunks dated after every chunk earlier runs stored"
        );
    }
}

fn load_tls(config: &GatewayConfig) -> Result<ListenerTls, PrepareError> {
    let server = |keys, cert: &Path, key: &Path, client_ca: Option<&Path>| {
        tls::server_config(&TlsFiles { cert, key, client_ca, allow_tls12: config.tls_allow_tls12 })
            .map_err(|error| PrepareError::Tls { keys, error })
    };
    let public = match (&config.tls_cert_file, &config.tls_key_file) {
        (Some(cert), Some(key)) => Some(server("tls_cert_file/tls_key_file", cert, key, None)?),
        _ => None,
    };
    let ingest = match (&config.ingest_tls_cert_file, &config.ingest_tls_key_file) {
        (Some(cert), Some(key)) => Some(server(
            "ingest_tls_cert_file/ingest_tls_key_file/ingest_client_ca_file",
            cert,
            key,
            config.ingest_client_ca_file.as_deref(),
        )?),
        _ => None,
    };
    Ok(ListenerTls { public, ingest })
}

/// Reloads the keys file on SIGHUP. A file that does not load leaves the old keys in place.
/// Open connections and streams are untouched; the next call sees the new keys. Keys keep
/// their quota state by name across the reload (`ApiKeys::reload_file`).
async fn reload_keys_on_sighup(path: PathBuf, store: KeyStore, shutdown: CancellationToken) {
    let Ok(mut hangups) = Hangups::listen() else {
        tracing::error!("cannot listen for SIGHUP; keys reload only on restart");
        return;
    };
    while hangups.next(&shutdown).await {
        match ApiKeys::reload_file(&path, &store.load()) {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), "SIGHUP: API keys reloaded");
                store.store(Arc::new(keys));
            }
            Err(e) => tracing::error!("SIGHUP: keeping the old API keys: {e}"),
        }
    }
}

async fn bind(addr: SocketAddr, key: &'static str) -> Result<TcpListener, RunError> {
    TcpListener::bind(addr).await.map_err(|error| RunError::Bind { key, addr, error })
}
