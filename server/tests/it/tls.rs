//! TLS on the public listener (1.3 by default, 1.2 opt-in) and mTLS on the ingest listener.

use std::sync::Arc;
use std::time::Duration;

use entropy_collector::publisher::{Delivery, Publisher, RetryPolicy};
use entropy_gateway::process::devcerts::{self, DevCerts};
use entropy_gateway::process::server::ListenerTls;
use entropy_gateway::transport::tls::{TlsFiles, server_config};
use entropy_proto::v1::GetStatusRequest;
use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use super::support::{TestGateway, authed, start_with_tls, test_config};

struct TlsGateway {
    gw: TestGateway,
    certs: DevCerts,
    _dir: tempfile::TempDir,
}

async fn tls_gateway(allow_tls12: bool) -> TlsGateway {
    let dir = tempfile::tempdir().unwrap();
    let certs = devcerts::generate(dir.path(), &["localhost".into(), "127.0.0.1".into()]).unwrap();
    let files = |client_ca| TlsFiles {
        cert: &certs.server_cert,
        key: &certs.server_key,
        client_ca,
        allow_tls12,
    };
    let tls = ListenerTls {
        public: Some(server_config(&files(None)).unwrap()),
        ingest: Some(server_config(&files(Some(&certs.ca))).unwrap()),
    };
    let public = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ingest = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gw = start_with_tls(test_config(|_| {}), public, ingest, tls);
    TlsGateway { gw, certs, _dir: dir }
}

fn ca(certs: &DevCerts) -> Certificate {
    Certificate::from_pem(std::fs::read(&certs.ca).unwrap())
}

/// A client of the TLS public listener.
async fn tls_client(t: &TlsGateway) -> EntropyServiceClient<tonic::transport::Channel> {
    let tls = ClientTlsConfig::new().ca_certificate(ca(&t.certs)).domain_name("localhost");
    let endpoint =
        Endpoint::from_shared(format!("https://{}", t.gw.public)).unwrap().tls_config(tls).unwrap();
    EntropyServiceClient::new(endpoint.connect().await.expect("TLS connects"))
}

async fn accepted(t: &TlsGateway) -> u64 {
    let status = tls_client(t).await.get_status(authed(GetStatusRequest {})).await.expect("status");
    status.into_inner().chunks_accepted_total
}

#[tokio::test]
async fn the_public_listener_speaks_tls_to_clients_that_trust_the_ca() {
    let t = tls_gateway(false).await;
    let tls = ClientTlsConfig::new().ca_certificate(ca(&t.certs)).domain_name("localhost");
    let endpoint =
        Endpoint::from_shared(format!("https://{}", t.gw.public)).unwrap().tls_config(tls).unwrap();
    let mut client = EntropyServiceClient::new(endpoint.connect().await.expect("TLS connects"));
    let status = client.get_status(authed(GetStatusRequest {})).await.expect("status over TLS");
    assert_eq!(status.into_inner().pool_capacity_bytes, 4 << 20);

    // A plaintext client gets nowhere.
    let plain = Endpoint::from_shared(format!("http://{}", t.gw.public))
        .unwrap()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(2));
    let result = match plain.connect().await {
        Ok(channel) => EntropyServiceClient::new(channel)
            .get_status(authed(GetStatusRequest {}))
            .await
            .map(|_| ()),
        Err(e) => Err(tonic::Status::unavailable(e.to_string())),
    };
    assert!(result.is_err(), "plaintext must not work against the TLS listener");
    t.gw.stop().await;
}

/// Tries a handshake offering only TLS 1.2.
async fn tls12_handshake(t: &TlsGateway) -> std::io::Result<()> {
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots.add(rustls::pki_types::CertificateDer::from_pem_file(&t.certs.ca).unwrap()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(t.gw.public).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.map(|_| ())
}

#[tokio::test]
async fn tls_1_2_is_refused_unless_allowed() {
    let strict = tls_gateway(false).await;
    assert!(tls12_handshake(&strict).await.is_err(), "TLS 1.3 only by default");
    strict.gw.stop().await;
    let lenient = tls_gateway(true).await;
    tls12_handshake(&lenient).await.expect("TLS 1.2 when opted in");
    lenient.gw.stop().await;
}

#[tokio::test]
async fn the_ingest_listener_requires_a_collector_certificate() {
    let mut t = tls_gateway(false).await;
    let mut chunk = t.gw.sign(vec![3; 1000]);
    let never = CancellationToken::new();
    let policy = RetryPolicy {
        unavailable_initial: Duration::from_millis(10),
        unavailable_max: Duration::from_millis(20),
        call_timeout: Duration::from_secs(2),
        ..RetryPolicy::default()
    };
    let endpoint = |tls: ClientTlsConfig| {
        Endpoint::from_shared(format!("https://{}", t.gw.ingest)).unwrap().tls_config(tls).unwrap()
    };

    // Without a client certificate: no delivery, however long it retries.
    let anonymous = ClientTlsConfig::new().ca_certificate(ca(&t.certs)).domain_name("localhost");
    let mut publisher =
        Publisher::new(endpoint(anonymous), policy, t.gw.signer.sealer(), &t.gw.gateway_id);
    let attempt =
        tokio::time::timeout(Duration::from_secs(2), publisher.deliver(&mut chunk, &never)).await;
    assert!(attempt.is_err(), "a collector without a certificate never gets a chunk in");
    assert_eq!(accepted(&t).await, 0);

    // With the collector certificate: delivered.
    let identity = Identity::from_pem(
        std::fs::read(&t.certs.client_cert).unwrap(),
        std::fs::read(&t.certs.client_key).unwrap(),
    );
    let mutual = ClientTlsConfig::new()
        .ca_certificate(ca(&t.certs))
        .domain_name("localhost")
        .identity(identity);
    let mut publisher =
        Publisher::new(endpoint(mutual), policy, t.gw.signer.sealer(), &t.gw.gateway_id);
    assert!(matches!(publisher.deliver(&mut chunk, &never).await, Delivery::Stored));
    assert_eq!(accepted(&t).await, 1);
    t.gw.stop().await;
}

/// Shutdown does not wait on a connection still shaking hands: a client that opened TCP and
/// sent no ClientHello (on either listener) would otherwise hold the drain for the handshake
/// timeout (10 s), twice the 5 s `stop` allows.
#[tokio::test]
async fn shutdown_does_not_wait_for_a_handshake_in_progress() {
    let t = tls_gateway(false).await;
    let silent_public = tokio::net::TcpStream::connect(t.gw.public).await.unwrap();
    let silent_ingest = tokio::net::TcpStream::connect(t.gw.ingest).await.unwrap();
    // The gateway has accepted both and is waiting for their ClientHellos.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    t.gw.stop().await;
    assert!(started.elapsed() < TLS_HANDSHAKE_TIMEOUT, "stopped before any handshake timed out");
    drop((silent_public, silent_ingest));
}

/// The gateway's TLS handshake timeout (transport/tls.rs).
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
