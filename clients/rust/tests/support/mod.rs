//! A real dev-mode gateway in process (OS source through the real ingest path) on
//! 127.0.0.1:0, for the client's and the CLI's integration tests.

use std::net::SocketAddr;
use std::time::Duration;

use entropy_diode_client::Client;
use entropy_gateway::Gateway;
use entropy_gateway::process::config::GatewayConfig;
use entropy_gateway::process::dev;
use entropy_gateway::process::fd_limit;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub const KEY: &str = "client-test-key";

pub struct DevGateway {
    pub addr: SocketAddr,
    shutdown: CancellationToken,
    served: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for DevGateway {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl DevGateway {
    /// SIGTERM's path: streams end with UNAVAILABLE, the listener closes; returns once the
    /// gateway has stopped.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(served) = self.served.take() {
            served.await.unwrap();
        }
    }
}

/// A dev-mode gateway (OS source through the real ingest path), ready when it returns.
pub async fn dev_gateway() -> DevGateway {
    dev_gateway_with_tls(None).await
}

/// The same, serving TLS on the public listener when `tls` is given.
pub async fn dev_gateway_with_tls(tls: Option<std::sync::Arc<rustls::ServerConfig>>) -> DevGateway {
    dev_gateway_on("127.0.0.1:0".parse().unwrap(), tls).await
}

/// The same on `public_addr` (to start one again where another stopped).
pub async fn dev_gateway_on(
    public_addr: SocketAddr,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
) -> DevGateway {
    dev_gateway_configured(public_addr, tls, None).await
}

/// A dev-mode gateway keeping its receipt log (and signing key, public key file and latest
/// head) in `receipts_dir`.
pub async fn dev_gateway_with_receipts(receipts_dir: &std::path::Path) -> DevGateway {
    dev_gateway_configured("127.0.0.1:0".parse().unwrap(), None, Some(receipts_dir.to_owned()))
        .await
}

async fn dev_gateway_configured(
    public_addr: SocketAddr,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    receipts_dir: Option<std::path::PathBuf>,
) -> DevGateway {
    let public = TcpListener::bind(public_addr).await.unwrap();
    let ingest = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (addr, ingest_addr) = (public.local_addr().unwrap(), ingest.local_addr().unwrap());
    let keys = dev::keys(Some(KEY.into())).unwrap();
    let shutdown = CancellationToken::new();
    let config = GatewayConfig {
        pool_capacity_bytes: 8 << 20,
        receipts_dir,
        // Heads every 100 ms: a receipt is provable soon after its draw.
        receipts_head_interval_ms: 100,
        ..GatewayConfig::dev_defaults()
    };
    let config = fd_limit::prepare(config).expect("descriptors for the dev config");
    let (gateway_id, start_after) =
        (config.gateway_id.clone(), config.max_future_skew() + dev::FEED_START_MARGIN);
    let tls_on = tls.is_some();
    let gateway = Gateway::new(config, keys.api_keys, keys.mac_keys)
        .with_tls(entropy_gateway::process::server::ListenerTls { public: tls, ingest: None });
    dev::spawn_feed(
        ingest_addr,
        &gateway_id,
        keys.mac_secret.clone(),
        start_after,
        shutdown.clone(),
    )
    .unwrap();
    let serve = gateway.serve(public, ingest, shutdown.clone());
    let served = tokio::spawn(async move {
        serve.await.unwrap();
    });
    if !tls_on {
        let client = Client::connect(&format!("http://{addr}"), KEY).await.unwrap();
        for _ in 0..100 {
            if client.status().await.is_ok_and(|s| s.pool_bytes >= 4 << 20) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    DevGateway { addr, shutdown, served: Some(served) }
}
