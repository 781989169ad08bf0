//! Dev mode (`entropy-gateway --dev`), in the style of `vault server -dev`: one process, a
//! gateway plus an in-process collector feeding it from the OS RNG.
//!
//! The feed is a real collector pipeline (`entropy-collector`: health tests included) that
//! signs chunks with a key
//! generated at start and publishes them over gRPC to the ingest listener on an ephemeral
//! loopback port, so dev-mode entropy passes the very same verification as production chunks.
//! It is labelled `os`, not quantum, everywhere.

use std::net::SocketAddr;
use std::time::Duration;

use entropy_collector::config::CollectorConfig;
use entropy_collector::{BuildError, Collector};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::domain::auth::{ApiKeys, MAX_PRESENTED_KEY_BYTES};
use crate::domain::ingest::keys::{KeyError, MacKeys};

/// Environment variable holding the dev API key; generated when unset.
pub const DEV_API_KEY_ENV: &str = "ENTROPY_DEV_API_KEY";
/// Name of the dev API key in logs.
pub(crate) const DEV_KEY_NAME: &str = "dev";
/// MAC key id of the in-process collector.
pub(crate) const DEV_MAC_KEY_ID: &str = "dev";
/// Chunk size of the in-process collector.
pub(crate) const DEV_CHUNK_BYTES: usize = 64 << 10;

/// Keys for a dev-mode run.
pub struct DevKeys {
    /// Client API keys (just the dev key).
    pub api_keys: ApiKeys,
    /// The dev API key's secret, to print for the user.
    pub api_key: String,
    /// True when the key came from [`DEV_API_KEY_ENV`] (so it need not be printed).
    pub from_env: bool,
    /// MAC keys the gateway accepts (just the dev key).
    pub mac_keys: MacKeys,
    /// The in-process collector's MAC secret.
    pub mac_secret: Vec<u8>,
}

/// Why dev keys could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    /// The key from the environment is unusable.
    #[error("{DEV_API_KEY_ENV} must be 1..={MAX_PRESENTED_KEY_BYTES} printable ASCII characters")]
    BadEnvKey,
    /// The OS RNG failed.
    #[error("cannot generate a key: {0}")]
    Rng(String),
    /// The generated MAC key was not accepted (a bug: it is 32 random bytes under a fixed id).
    #[error("dev MAC key: {0}")]
    MacKey(#[from] KeyError),
    /// The in-process collector's config did not validate (a bug: it is fixed here).
    #[error("dev feed config: {0}")]
    FeedConfig(String),
    /// The in-process collector could not be built.
    #[error("dev feed: {0}")]
    Feed(#[from] BuildError),
}

/// Sets up dev keys, taking the API key from `env_key` when given.
pub fn keys(env_key: Option<String>) -> Result<DevKeys, DevError> {
    let random = |n: usize| -> Result<Vec<u8>, DevError> {
        let mut buf = vec![0u8; n];
        getrandom::fill(&mut buf).map_err(|e| DevError::Rng(e.to_string()))?;
        Ok(buf)
    };
    let (api_key, from_env) = match env_key {
        Some(k) => {
            let ok = !k.is_empty()
                && k.len() <= MAX_PRESENTED_KEY_BYTES
                && k.bytes().all(|b| b.is_ascii_graphic());
            if !ok {
                return Err(DevError::BadEnvKey);
            }
            (k, true)
        }
        None => (format!("dev-{}", hex::encode(random(16)?)), false),
    };
    let mac_secret = random(32)?;
    let mut mac_keys = MacKeys::default();
    mac_keys.insert(DEV_MAC_KEY_ID, mac_secret.clone())?;
    Ok(DevKeys {
        api_keys: ApiKeys::single(DEV_KEY_NAME, &api_key),
        api_key,
        from_env,
        mac_keys,
        mac_secret,
    })
}

/// The in-process collector's config, as a `collector.toml` would say it: one OS source,
/// health-tested like any other, publishing to the ingest listener at `ingest_addr`.
pub(crate) fn feed_config(
    ingest_addr: SocketAddr,
    gateway_id: &str,
) -> Result<CollectorConfig, DevError> {
    let text = format!(
        r#"
        collector_id = "dev-collector"
        key_id = "{DEV_MAC_KEY_ID}"
        key_file = "/dev/null" # unused: the key is generated at start and passed in
        chunk_bytes = {DEV_CHUNK_BYTES}
        mixing = "none"
        buffer_chunks = 4
        read_timeout_ms = 5000
        shutdown_grace_ms = 2000
        metrics_listen_addr = ""

        [[gateway]]
        id = "{gateway_id}"
        endpoint = "http://{ingest_addr}"

        [[source]]
        name = "os"
        type = "os"
        min_entropy_per_byte = 8.0
        "#
    );
    CollectorConfig::from_toml(&text).map_err(|e| DevError::FeedConfig(e.to_string()))
}

/// Added to `max_future_skew_ms` before the feed starts, so that its first chunk is dated
/// after the gateway's start plus that skew whatever the millisecond rounding.
pub const FEED_START_MARGIN: Duration = Duration::from_millis(20);

/// Starts the in-process collector ([`feed_config`]), signing with `mac_secret`, once
/// `start_after` has passed (or at once if `shutdown` fires first, which it then honours).
/// The task ends when the collector has stopped, saying what it delivered.
pub fn spawn_feed(
    ingest_addr: SocketAddr,
    gateway_id: &str,
    mac_secret: Vec<u8>,
    start_after: Duration,
    shutdown: CancellationToken,
) -> Result<JoinHandle<()>, DevError> {
    let collector = Collector::build(&feed_config(ingest_addr, gateway_id)?, mac_secret)?;
    Ok(tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep(start_after) => {}
            () = shutdown.cancelled() => {}
        }
        let stats = collector.run(shutdown).await;
        tracing::info!(delivered = stats.delivered(), "dev feed stopped");
    }))
}

/// What dev mode prints on start: where it listens, the key, and commands to paste. `tls_cert`
/// is the public listener's certificate when it serves TLS: the commands then verify it
/// against the CA that signed it (`-cacert`) instead of speaking plaintext.
pub fn banner(public: SocketAddr, keys: &DevKeys, tls_cert: Option<&std::path::Path>) -> String {
    let key = if keys.from_env { format!("${DEV_API_KEY_ENV}") } else { keys.api_key.clone() };
    let key_line = if keys.from_env {
        format!("API key:   from {DEV_API_KEY_ENV}")
    } else {
        format!(
            "API key:   {}   (new on every start: readers of an earlier start get \
             UNAUTHENTICATED; set {DEV_API_KEY_ENV} to keep one key across restarts)",
            keys.api_key
        )
    };
    let (listening, transport) = match tls_cert {
        None => (format!("Listening: {public} (plaintext gRPC)"), "-plaintext".to_owned()),
        Some(cert) => (
            format!(
                "Listening: {public} (gRPC over TLS, certificate {}; CA.pem below is the CA \
                 that signed it)",
                cert.display()
            ),
            "-cacert CA.pem".to_owned(),
        ),
    };
    let call = |method: &str, body: &str| {
        format!(
            "  grpcurl {transport} -H \"authorization: Bearer {key}\" -d '{body}' {public} \
             entropy.v1.EntropyService/{method}"
        )
    };
    [
        "Entropy Diode gateway, DEV MODE: not for production.".to_owned(),
        "Entropy comes from this machine's OS RNG (labelled source kind OS), not a quantum source."
            .to_owned(),
        listening,
        key_line,
        String::new(),
        "Try:".to_owned(),
        call("GetRandom", r#"{"num_bytes": 32, "encoding": "ENCODING_HEX"}"#),
        call("StreamRandom", r#"{"chunk_bytes": 65536, "total_bytes": 1048576}"#),
        call("GetIntegers", r#"{"min": 1, "max": 6, "count": 10}"#),
        call("GetUuids", r#"{"count": 3}"#),
        call("GetStatus", "{}"),
        call("GetUsage", "{}"),
        format!("  grpcurl {transport} {public} list"),
        String::new(),
    ]
    .join("\n")
}
