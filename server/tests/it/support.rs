//! The harness: a gateway on ephemeral loopback ports, clients, and a signing collector.

use std::net::SocketAddr;
use std::time::Duration;

use entropy_collector::signer::ChunkSigner;
use entropy_gateway::Gateway;
use entropy_gateway::domain::allowance::Budget;
use entropy_gateway::domain::auth::ApiKeys;
use entropy_gateway::domain::ingest::keys::MacKeys;
use entropy_gateway::domain::ingest::lease::Lease;
use entropy_gateway::grpc::stream_random::ShutdownCuts;
use entropy_gateway::process::config::GatewayConfig;
use entropy_gateway::process::fd_limit;
use entropy_gateway::process::server::{ListenerTls, ServeError};
use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use entropy_proto::v1::ingest_service_client::IngestServiceClient;
use entropy_proto::v1::{GetStatusRequest, GetStatusResponse, Mixing, PublishRequest};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::Request;
use tonic::transport::Channel;

pub(super) const API_KEY: &str = "test-key-0123456789";
pub(super) const MAC_KEY_ID: &str = "k1";
pub(super) const MAC_KEY: [u8; 32] = [0x42; 32];

pub(super) struct TestGateway {
    pub public: SocketAddr,
    pub ingest: SocketAddr,
    pub shutdown: CancellationToken,
    pub handle: JoinHandle<Result<(), ServeError>>,
    pub signer: ChunkSigner,
    pub gateway_id: String,
    pub cuts: ShutdownCuts,
    /// The gateway's byte allowances, to read what they hold.
    pub budget: Budget,
    /// The gateway's start rule: chunks dated before this (Unix ms) are refused.
    pub accepts_from_unix_ms: i64,
}

/// Small, fast defaults for tests; `edit` adjusts them.
pub(super) fn test_config(edit: impl FnOnce(&mut GatewayConfig)) -> GatewayConfig {
    let mut config = GatewayConfig {
        pool_capacity_bytes: 4 << 20,
        pool_low_watermark_bytes: 1024,
        max_wait_ms: 300,
        // The gateway accepts chunks dated from its start plus this on (`start_full` waits it
        // out, so tests can sign at once).
        max_future_skew_ms: 100,
        ..GatewayConfig::dev_defaults()
    };
    edit(&mut config);
    config
}

pub(super) async fn start(config: GatewayConfig) -> TestGateway {
    let public = TcpListener::bind("127.0.0.1:0").await.expect("bind public");
    let ingest = TcpListener::bind("127.0.0.1:0").await.expect("bind ingest");
    start_on(config, public, ingest)
}

/// Starts a gateway on listeners the caller bound.
pub(super) fn start_on(
    config: GatewayConfig,
    public: TcpListener,
    ingest: TcpListener,
) -> TestGateway {
    start_with_tls(config, public, ingest, ListenerTls::default())
}

/// Starts a gateway on listeners the caller bound, with TLS where `tls` says.
pub(super) fn start_with_tls(
    config: GatewayConfig,
    public: TcpListener,
    ingest: TcpListener,
    tls: ListenerTls,
) -> TestGateway {
    start_full(config, public, ingest, tls, ApiKeys::single("test", API_KEY))
}

/// Starts a gateway accepting the client keys `keys` (instead of the one test key).
pub(super) async fn start_with_keys(config: GatewayConfig, keys: ApiKeys) -> TestGateway {
    let public = TcpListener::bind("127.0.0.1:0").await.expect("bind public");
    let ingest = TcpListener::bind("127.0.0.1:0").await.expect("bind ingest");
    start_full(config, public, ingest, ListenerTls::default(), keys)
}

fn start_full(
    config: GatewayConfig,
    public: TcpListener,
    ingest: TcpListener,
    tls: ListenerTls,
    keys: ApiKeys,
) -> TestGateway {
    let gateway = start_unwaited(config, public, ingest, tls, keys);
    // Chunks dated before the gateway's start rule are refused (its start plus its skew, or
    // the end of the lease in its state_dir): wait it out, so tests can sign at once.
    let wait_ms = gateway.accepts_from_unix_ms - entropy_ops::clock::unix_ms_now();
    std::thread::sleep(Duration::from_millis(wait_ms.max(0) as u64 + 20));
    gateway
}

/// Starts a gateway without waiting for its start rule, for tests of the rule itself. With
/// `state_dir` set it keeps its ingest lease there, as the binary does; else in memory.
pub(super) async fn start_now(config: GatewayConfig) -> TestGateway {
    let public = TcpListener::bind("127.0.0.1:0").await.expect("bind public");
    let ingest = TcpListener::bind("127.0.0.1:0").await.expect("bind ingest");
    start_unwaited(config, public, ingest, ListenerTls::default(), ApiKeys::single("test", API_KEY))
}

fn start_unwaited(
    config: GatewayConfig,
    public: TcpListener,
    ingest: TcpListener,
    tls: ListenerTls,
    keys: ApiKeys,
) -> TestGateway {
    let (public_addr, ingest_addr) = (public.local_addr().unwrap(), ingest.local_addr().unwrap());
    // As the binary does before it builds a gateway: `max_connections = 0` resolved once.
    let config = fd_limit::prepare(config).expect("descriptors for the test config");
    let gateway_id = config.gateway_id.clone();
    let mut mac_keys = MacKeys::default();
    mac_keys.insert(MAC_KEY_ID, MAC_KEY.to_vec()).expect("valid key");
    let gateway = match config.state_dir.clone() {
        Some(dir) => {
            let lease = Lease::open(&dir, config.max_future_skew()).expect("ingest lease");
            Gateway::new_with_lease(config, keys, mac_keys, lease)
        }
        None => Gateway::new(config, keys, mac_keys),
    };
    let accepts_from_unix_ms = gateway.accepts_chunks_from_unix_ms();
    let gateway = gateway.with_tls(tls);
    let shutdown = CancellationToken::new();
    let cuts = gateway.shutdown_cuts();
    let budget = gateway.budget().clone();
    let handle = tokio::spawn(gateway.serve(public, ingest, shutdown.clone()));
    let signer = ChunkSigner::new("test-collector", MAC_KEY_ID, MAC_KEY.to_vec())
        .expect("signer")
        .for_gateway(&gateway_id);
    TestGateway {
        public: public_addr,
        ingest: ingest_addr,
        shutdown,
        handle,
        signer,
        gateway_id,
        cuts,
        budget,
        accepts_from_unix_ms,
    }
}

impl TestGateway {
    pub(super) async fn client(&self) -> EntropyServiceClient<Channel> {
        let channel = Channel::from_shared(format!("http://{}", self.public))
            .unwrap()
            .initial_stream_window_size(Some(8 << 20))
            .initial_connection_window_size(Some(16 << 20))
            .connect()
            .await
            .expect("connect public");
        EntropyServiceClient::new(channel).max_decoding_message_size(8 << 20)
    }

    pub(super) async fn ingest_client(&self) -> IngestServiceClient<Channel> {
        let channel = Channel::from_shared(format!("http://{}", self.ingest))
            .unwrap()
            .connect()
            .await
            .expect("connect ingest");
        IngestServiceClient::new(channel).max_encoding_message_size(8 << 20)
    }

    /// Signs `data` as the next chunk from a healthy OS source.
    pub(super) fn sign(&mut self, data: Vec<u8>) -> PublishRequest {
        self.signer.sign(data, Mixing::None, vec![os_source()])
    }

    /// Publishes `total` bytes of `fill(i)` in chunks of `chunk` bytes, all of which must be
    /// accepted.
    pub(super) async fn feed(&mut self, total: usize, chunk: usize, fill: impl Fn(usize) -> u8) {
        let mut ingest = self.ingest_client().await;
        let mut offset = 0;
        while offset < total {
            let n = chunk.min(total - offset);
            let data = (offset..offset + n).map(&fill).collect();
            let req = self.sign(data);
            ingest.publish(req).await.expect("chunk accepted");
            offset += n;
        }
    }

    pub(super) async fn status(&self) -> GetStatusResponse {
        self.client()
            .await
            .get_status(authed(GetStatusRequest {}))
            .await
            .expect("status")
            .into_inner()
    }

    /// Stops the gateway and waits for it, failing if it does not stop within 5 s.
    pub(super) async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(5), self.handle)
            .await
            .expect("gateway stops within 5 s")
            .expect("join")
            .expect("serve returns Ok");
    }
}

pub(super) use entropy_testkit::chunk::healthy_os_source as os_source;

/// Client keys from `entries`: each a name (which is also the key's secret) and the TOML lines
/// of its entry after name and sha256 (scopes, limits), as a keys file would hold them.
pub(super) fn keys_named(entries: &[(&str, &str)]) -> ApiKeys {
    let text: String = entries
        .iter()
        .map(|(name, extra)| {
            let sha = hex::encode(entropy_gateway::domain::auth::digest(name.as_bytes()));
            format!("[[key]]\nname = \"{name}\"\nsha256 = \"{sha}\"\n{extra}\n")
        })
        .collect();
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), text).expect("write keys");
    ApiKeys::load_file(file.path()).expect("keys load")
}

/// A request carrying the test API key.
pub(super) fn authed<T>(message: T) -> Request<T> {
    with_key(API_KEY, message)
}

/// A request carrying `key`.
pub(super) fn with_key<T>(key: &str, message: T) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert("authorization", format!("Bearer {key}").parse().unwrap());
    request
}

/// Asserts a call failed with `code` and a message containing each of `words`.
pub(super) fn assert_status<T: std::fmt::Debug>(
    result: Result<T, tonic::Status>,
    code: tonic::Code,
    words: &[&str],
) {
    let status = result.expect_err("call should fail");
    assert_eq!(status.code(), code, "message: {}", status.message());
    for w in words {
        assert!(status.message().contains(w), "{:?} lacks {w:?}", status.message());
    }
}
