//! The whole diode in process: simulator → collector → gateway → client, over real sockets.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use entropy_collector::Collector;
use entropy_collector::config::CollectorConfig;
use entropy_collector::publisher::{Delivery, Publisher, RetryPolicy};
use entropy_collector::runner::RunStats;
use entropy_collector::simulator::{self, Fault, Simulator, SimulatorOptions};
use entropy_collector::tls::cert_sha256;
use entropy_proto::v1::{GetRandomRequest, SourceKind};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_util::sync::CancellationToken;
use tonic::Code;
use tonic::transport::Endpoint;

use super::support::{
    MAC_KEY, MAC_KEY_ID, TestGateway, assert_status, authed, start, start_on, test_config,
};

/// The `[[source]]` table of one OS source.
const OS_SOURCE: &str = "[[source]]\nname = \"os\"\ntype = \"os\"\n";

/// A collector (the real entry point, [`Collector`]) run in the background.
struct RunningCollector {
    stats: Arc<RunStats>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Arc<RunStats>>,
}

impl RunningCollector {
    /// Publishes to `gateways`, reading the sources of `sources` (`[[source]]` tables).
    fn start(sources: &str, gateways: &[&TestGateway], chunk: usize, buffer: usize) -> Self {
        let endpoints: Vec<(String, String)> = gateways
            .iter()
            .map(|g| (format!("http://{}", g.ingest), g.gateway_id.clone()))
            .collect();
        Self::start_to(sources, &endpoints, chunk, buffer, RetryPolicy::default())
    }

    /// Publishes to `(endpoint, gateway id)` pairs, retrying by `policy`.
    fn start_to(
        sources: &str,
        endpoints: &[(String, String)],
        chunk: usize,
        buffer: usize,
        policy: RetryPolicy,
    ) -> Self {
        let mut text = format!(
            "collector_id = \"diode-test\"\nkey_id = \"{MAC_KEY_ID}\"\nkey_file = \"/dev/null\"\n\
             chunk_bytes = {chunk}\nbuffer_chunks = {buffer}\nmixing = \"xor\"\n\
             read_timeout_ms = 1000\nshutdown_grace_ms = 2000\nmetrics_listen_addr = \"\"\n"
        );
        for (endpoint, id) in endpoints {
            text += &format!("[[gateway]]\nid = \"{id}\"\nendpoint = \"{endpoint}\"\n");
        }
        text += sources;
        let config = CollectorConfig::from_toml(&text).expect("a valid collector config");
        let collector =
            Collector::build(&config, MAC_KEY.to_vec()).expect("builds").with_retry_policy(policy);
        let stats = collector.stats();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(collector.run(shutdown.clone()));
        Self { stats, shutdown, task }
    }

    /// Stops it and waits for its flush, failing if that takes longer than `limit`.
    async fn stop_within(self, limit: Duration) -> Arc<RunStats> {
        self.shutdown.cancel();
        tokio::time::timeout(limit, self.task)
            .await
            .unwrap_or_else(|_| panic!("the collector did not stop within {limit:?}"))
            .expect("join")
    }

    async fn stop(self) -> Arc<RunStats> {
        self.stop_within(Duration::from_secs(10)).await
    }
}

/// Waits up to `limit` for `f` to hold, polling every 100 ms.
async fn eventually<F: AsyncFnMut() -> bool>(limit: Duration, mut f: F) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// A simulated Quantis appliance at 400 KB/s over HTTPS on an ephemeral port.
struct HttpsSim {
    sim: Arc<Simulator>,
    tls: Arc<rustls::ServerConfig>,
    addr: std::net::SocketAddr,
    /// The collector's `[[source]]` table for it, pinned to its certificate.
    source: String,
}

impl HttpsSim {
    fn new() -> Self {
        let sim =
            Simulator::new(SimulatorOptions { rate_bytes_per_s: 400_000, ..Default::default() });
        let (tls, pem) = simulator::self_signed_tls(&["127.0.0.1"]).unwrap();
        let pin = cert_sha256(&CertificateDer::from_pem_slice(pem.as_bytes()).unwrap());
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        Self { sim, tls, addr, source: hex::encode(pin) }
    }

    /// Serves on its address (a fresh port the first time, the same one after), until the
    /// returned token is cancelled.
    async fn serve(&mut self) -> (CancellationToken, tokio::task::JoinHandle<std::io::Result<()>>) {
        let listener = simulator::bind(self.addr).await.unwrap();
        if self.addr.port() == 0 {
            self.addr = listener.local_addr().unwrap();
            self.source = format!(
                "[[source]]\nname = \"quantis-sim\"\ntype = \"quantis\"\nurl = \"https://{}\"\n\
                 pinned_cert_sha256 = \"{}\"\nrequest_timeout_ms = 500\nattempts = 1\n",
                self.addr, self.source
            );
        }
        let stop = CancellationToken::new();
        let task =
            tokio::spawn(self.sim.clone().serve_https(listener, self.tls.clone(), stop.clone()));
        (stop, task)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulator_to_collector_to_gateway_and_back_after_an_outage() {
    let mut sim = HttpsSim::new();
    let (sim_stop, sim_task) = sim.serve().await;
    let gw = start(test_config(|_| {})).await;
    let collector = RunningCollector::start(&sim.source, &[&gw], 8192, 4);

    assert!(
        eventually(Duration::from_secs(15), async || gw.status().await.chunks_accepted_total >= 3)
            .await,
        "chunks flow from the simulator to the gateway"
    );
    let mut client = gw.client().await;
    let bytes = client
        .get_random(authed(GetRandomRequest { num_bytes: 1024, encoding: 0, ..Default::default() }))
        .await;
    assert_eq!(bytes.expect("entropy").into_inner().data.len(), 1024);
    let status = gw.status().await;
    let source =
        status.sources.iter().find(|s| s.name == "quantis-sim").expect("provenance names it");
    assert_eq!(
        (source.collector_id.as_str(), source.kind),
        ("diode-test", SourceKind::Quantum as i32)
    );

    // Kill the appliance: the source becomes unreachable and the gateway stops receiving.
    sim_stop.cancel();
    sim_task.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await; // in-flight and buffered chunks land
    let before = gw.status().await.chunks_accepted_total;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(gw.status().await.chunks_accepted_total, before, "nothing arrives while it is down");
    assert!(collector.stats.rounds_skipped.load(Ordering::Relaxed) > 0);

    // Bring it back on the same address with the same certificate: flow resumes after a
    // fresh start-up test.
    let (sim_stop, sim_task) = sim.serve().await;
    assert!(
        eventually(Duration::from_secs(20), async || gw.status().await.chunks_accepted_total
            > before)
        .await,
        "chunks flow again after the appliance returns"
    );
    let stats = collector.stop().await;
    assert_eq!(stats.refused.load(Ordering::Relaxed), 0);
    sim_stop.cancel();
    sim_task.await.unwrap().unwrap();
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_gateways_each_chunk_is_stored_by_exactly_one() {
    // Two gateways of one deployment have ids of their own (the collector's config insists).
    let a = start(test_config(|c| c.gateway_id = "gw-a".into())).await;
    let b = start(test_config(|c| c.gateway_id = "gw-b".into())).await;
    let collector = RunningCollector::start(OS_SOURCE, &[&a, &b], 16 << 10, 8);
    assert!(
        eventually(Duration::from_secs(10), async || {
            a.status().await.chunks_accepted_total >= 5
                && b.status().await.chunks_accepted_total >= 5
        })
        .await,
        "both gateways receive chunks"
    );
    let stats = collector.stop().await;
    let (sa, sb) = (a.status().await, b.status().await);
    let stored = stats.stored.load(Ordering::Relaxed);
    assert_eq!(stats.already_stored.load(Ordering::Relaxed), 0);
    assert_eq!(
        sa.chunks_accepted_total + sb.chunks_accepted_total,
        stored,
        "no chunk stored twice"
    );
    assert_eq!(sa.ingested_bytes_total + sb.ingested_bytes_total, stored * (16 << 10));
    let signed = stats.signed.load(Ordering::Relaxed);
    assert_eq!(
        signed,
        stored + stats.refused.load(Ordering::Relaxed) + stats.abandoned.load(Ordering::Relaxed)
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_gateway_slows_the_collector_and_nothing_is_lost() {
    let gw = start(test_config(|c| c.pool_capacity_bytes = 1 << 20)).await;
    let collector = RunningCollector::start(OS_SOURCE, &[&gw], 64 << 10, 4);
    assert!(
        eventually(Duration::from_secs(10), async || gw.status().await.pool_bytes == 1 << 20).await,
        "the pool fills"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let signed_while_full = collector.stats.signed.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        collector.stats.signed.load(Ordering::Relaxed),
        signed_while_full,
        "backpressure: no rounds while the buffer is full"
    );
    // Drain; the waiting chunks go in.
    let mut client = gw.client().await;
    for _ in 0..4 {
        client
            .get_random(authed(GetRandomRequest {
                num_bytes: 1 << 18,
                encoding: 0,
                ..Default::default()
            }))
            .await
            .expect("drain");
    }
    let accepted_before = gw.status().await.chunks_accepted_total;
    assert!(
        eventually(Duration::from_secs(10), async || gw.status().await.chunks_accepted_total
            > accepted_before)
        .await
    );
    let stats = collector.stop().await;
    assert_eq!(stats.refused.load(Ordering::Relaxed), 0, "a full pool never drops a chunk");
    let status = gw.status().await;
    assert_eq!(status.chunks_accepted_total, stats.stored.load(Ordering::Relaxed));
    assert_eq!(
        stats.signed.load(Ordering::Relaxed),
        stats.delivered() + stats.abandoned.load(Ordering::Relaxed),
        "every signed chunk is delivered, or still waiting when the grace period ends"
    );
    gw.stop().await;
}

#[tokio::test]
async fn a_resent_chunk_counts_as_delivered_and_is_stored_once() {
    let mut gw = start(test_config(|_| {})).await;
    let mut chunk = gw.sign(vec![6; 4096]);
    let endpoint = Endpoint::from_shared(format!("http://{}", gw.ingest)).unwrap();
    let sealer = gw.signer.sealer();
    let mut publisher = Publisher::new(endpoint, RetryPolicy::default(), sealer, &gw.gateway_id);
    let never = CancellationToken::new();
    assert!(matches!(publisher.deliver(&mut chunk, &never).await, Delivery::Stored));
    // Sealed again (fresh timestamp), the same sequence is a replay: delivered, stored once.
    assert!(matches!(publisher.deliver(&mut chunk, &never).await, Delivery::AlreadyStored));
    let status = gw.status().await;
    assert_eq!((status.pool_bytes, status.chunks_accepted_total), (4096, 1));
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_that_starts_late_gets_fresh_chunks_and_refuses_older_ones() {
    // Reserve the ingest address, then leave it closed: the collector dials nothing there.
    let reserved = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ingest_addr = reserved.local_addr().unwrap();
    drop(reserved);
    let collector = RunningCollector::start_to(
        OS_SOURCE,
        &[(format!("http://{ingest_addr}"), "dev".to_owned())],
        16 << 10,
        2,
        RetryPolicy::default(),
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(collector.stats.delivered(), 0, "nothing delivered while the gateway is down");
    let signed_before = collector.stats.signed.load(Ordering::Relaxed);
    assert!(signed_before >= 1, "chunks were signed and are waiting");

    let public = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ingest = tokio::net::TcpListener::bind(ingest_addr).await.unwrap();
    let gw = start_on(test_config(|_| {}), public, ingest);
    assert!(
        eventually(Duration::from_secs(15), async || gw.status().await.chunks_accepted_total >= 3)
            .await,
        "chunks flow once the gateway is up"
    );
    let stats = collector.stop().await;
    // Chunks signed before the gateway started were refused (it cannot know whether an earlier
    // run stored them), counted, and never re-signed as new data.
    let refused = stats.refused.load(Ordering::Relaxed);
    assert!(
        refused >= 1 && refused <= signed_before,
        "refused {refused}, signed before {signed_before}"
    );
    let status = gw.status().await;
    assert_eq!(status.chunks_accepted_total, stats.stored.load(Ordering::Relaxed));
    assert_eq!(
        stats.signed.load(Ordering::Relaxed),
        stats.stored.load(Ordering::Relaxed) + refused + stats.abandoned.load(Ordering::Relaxed)
    );
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_while_blocked_on_a_full_gateway_ends_within_the_grace_period() {
    let gw = start(test_config(|c| c.pool_capacity_bytes = 1 << 20)).await;
    let collector = RunningCollector::start(OS_SOURCE, &[&gw], 64 << 10, 2);
    assert!(
        eventually(Duration::from_secs(10), async || gw.status().await.pool_bytes == 1 << 20).await,
        "the pool fills"
    );
    tokio::time::sleep(Duration::from_millis(300)).await; // queue full, a round blocked on it
    // The grace period is 2 s; a collector blocked on the full queue must not outlive it by much.
    let stats = collector.stop_within(Duration::from_secs(5)).await;
    assert_eq!(stats.refused.load(Ordering::Relaxed), 0);
    assert!(stats.abandoned.load(Ordering::Relaxed) >= 1, "chunks still waiting were abandoned");
    assert_eq!(
        stats.signed.load(Ordering::Relaxed),
        stats.delivered() + stats.abandoned.load(Ordering::Relaxed)
    );
    assert_eq!(gw.status().await.chunks_accepted_total, stats.stored.load(Ordering::Relaxed));
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_kept_back_by_a_full_pool_longer_than_the_freshness_window_are_not_lost() {
    // Before: queued chunks went stale while the pool stayed full, were refused and dropped
    // (six a minute in an idle dev gateway). Now a chunk the gateway answered "full" for is
    // sealed again (same sequence, fresh timestamp) before a retry once it has aged.
    let gw = start(test_config(|c| {
        c.pool_capacity_bytes = 1 << 20;
        c.freshness_window_ms = 1_000;
    }))
    .await;
    let policy = RetryPolicy { reseal_after: Duration::from_millis(300), ..RetryPolicy::default() };
    let endpoints = [(format!("http://{}", gw.ingest), gw.gateway_id.clone())];
    let collector = RunningCollector::start_to(OS_SOURCE, &endpoints, 64 << 10, 2, policy);
    assert!(
        eventually(Duration::from_secs(10), async || gw.status().await.pool_bytes == 1 << 20).await,
        "the pool fills"
    );
    // Full for three freshness windows: every waiting chunk would have gone stale.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let accepted_while_full = gw.status().await.chunks_accepted_total;
    let mut client = gw.client().await;
    let drained = client
        .get_random(authed(GetRandomRequest { num_bytes: 1 << 20, ..Default::default() }))
        .await
        .expect("drain the pool");
    assert_eq!(drained.into_inner().data.len(), 1 << 20);
    assert!(
        eventually(Duration::from_secs(10), async || {
            gw.status().await.chunks_accepted_total >= accepted_while_full + 4
        })
        .await,
        "the chunks that waited are stored once there is room"
    );
    let stats = collector.stop().await;
    assert_eq!(stats.refused.load(Ordering::Relaxed), 0, "none refused as stale");
    assert_eq!(
        stats.signed.load(Ordering::Relaxed),
        stats.delivered() + stats.abandoned.load(Ordering::Relaxed),
        "every chunk is stored, or still waiting when the grace period ended"
    );
    let status = gw.status().await;
    assert_eq!(status.chunks_accepted_total, stats.stored.load(Ordering::Relaxed));
    assert_eq!(status.chunks_rejected_total, 0);
    gw.stop().await;
}

/// Bytes ready in the pool of the class made of exactly `kinds`.
fn class_bytes(status: &entropy_proto::v1::GetStatusResponse, kinds: &[SourceKind]) -> u64 {
    let kinds: Vec<i32> = kinds.iter().map(|&k| k as i32).collect();
    status.pool_by_class.iter().find(|c| c.kinds == kinds).map_or(0, |c| c.bytes)
}

fn quantis_health(status: &entropy_proto::v1::GetStatusResponse) -> i32 {
    status.sources.iter().find(|s| s.name == "quantis-sim").map_or(0, |s| s.health)
}

/// Issue Quality, end to end: a quantum-only call is served through the diode and says so; a
/// quantum source XORed with the OS source is not quantum-only; and when the appliance turns
/// biased, stuck or replaying, the collector's health tests drop it and nothing of it is stored
/// (hence served) while the OS source keeps the gateway fed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quantum_only_calls_are_served_through_the_diode_and_a_faulty_source_never_is() {
    use entropy_proto::v1::SourceHealth;
    let mut https = HttpsSim::new();
    let (sim_stop, sim_task) = https.serve().await;
    let (sim, quantis) = (https.sim.clone(), https.source.clone());
    let quantum_only = |n| GetRandomRequest {
        num_bytes: n,
        accept_kinds: vec![SourceKind::Quantum as i32],
        ..Default::default()
    };

    // The appliance alone: quantum-only calls are served, and the bytes say where from.
    let gw = start(test_config(|_| {})).await;
    let collector = RunningCollector::start(&quantis, &[&gw], 8192, 4);
    let quantum = [SourceKind::Quantum];
    assert!(
        eventually(Duration::from_secs(15), async || class_bytes(&gw.status().await, &quantum)
            >= 4096)
        .await,
        "quantum chunks arrive"
    );
    let mut client = gw.client().await;
    let reply = client.get_random(authed(quantum_only(4096))).await.expect("quantum bytes");
    let p = reply.into_inner().provenance.expect("provenance");
    assert_eq!((p.kinds, p.mixed), (vec![SourceKind::Quantum as i32], false));
    assert_eq!(p.collector_ids, ["diode-test"]);
    collector.stop().await;
    gw.stop().await;

    // The appliance XORed with the OS source: the class is QUANTUM+OS.
    let gw = start(test_config(|c| c.pool_capacity_bytes = 64 << 20)).await;
    let both = format!("{quantis}{OS_SOURCE}");
    let collector = RunningCollector::start(&both, &[&gw], 8192, 4);
    let mut client = gw.client().await;
    let q_os = [SourceKind::Quantum, SourceKind::Os];
    assert!(
        eventually(Duration::from_secs(15), async || class_bytes(&gw.status().await, &q_os) > 0)
            .await,
        "mixed chunks arrive"
    );
    assert_status(
        client.get_random(authed(quantum_only(16))).await,
        Code::FailedPrecondition,
        &["QUANTUM only", "QUANTUM+OS:"],
    );

    for fault in [Fault::Bias, Fault::Stuck, Fault::Repeat] {
        sim.set_fault(fault);
        assert!(
            eventually(Duration::from_secs(15), async || {
                quantis_health(&gw.status().await) == SourceHealth::Quarantined as i32
            })
            .await,
            "{fault:?}: the health tests quarantine the appliance"
        );
        // Chunks are stored in the order they were mixed: once one reports the appliance
        // quarantined, no later chunk has its bytes until it passes a fresh start-up test.
        let before = gw.status().await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let after = gw.status().await;
        assert_eq!(
            class_bytes(&after, &q_os),
            class_bytes(&before, &q_os),
            "{fault:?}: no bytes of the faulty appliance were stored"
        );
        assert!(
            after.chunks_accepted_total > before.chunks_accepted_total,
            "{fault:?}: the OS source alone keeps the gateway fed"
        );
        let os_only = client
            .get_random(authed(GetRandomRequest {
                num_bytes: 64,
                accept_kinds: vec![SourceKind::Os as i32],
                ..Default::default()
            }))
            .await
            .expect("OS bytes");
        let p = os_only.into_inner().provenance.expect("provenance");
        assert_eq!(p.kinds, [SourceKind::Os as i32], "{fault:?}");

        // Healthy again: after a fresh start-up test, mixed chunks flow again.
        sim.set_fault(Fault::None);
        let level = class_bytes(&gw.status().await, &q_os);
        assert!(
            eventually(Duration::from_secs(15), async || {
                let s = gw.status().await;
                quantis_health(&s) == SourceHealth::Healthy as i32 && class_bytes(&s, &q_os) > level
            })
            .await,
            "{fault:?}: the appliance recovers"
        );
    }
    collector.stop().await;
    sim_stop.cancel();
    sim_task.await.unwrap().unwrap();
    gw.stop().await;
}
