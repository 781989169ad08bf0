//! Integration tests of the collector: the simulator's every fault mode against real sources
//! and the pipeline, over real HTTP and HTTPS on 127.0.0.1:0.

// Test harness code panics on setup failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use entropy_collector::mixing::Scheme;
use entropy_collector::pipeline::{Pipeline, Round, RoundPolicy, SourceSlot};
use entropy_collector::provenance::SourceHealth;
use entropy_collector::signer::ChunkSigner;
use entropy_collector::simulator::{self, Fault, Simulator, SimulatorOptions};
use entropy_collector::source::quantis::{QuantisOptions, QuantisSource};
use entropy_collector::tls::{TrustAnchor, cert_sha256};
use entropy_proto::v1 as pb;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_util::sync::CancellationToken;

#[path = "it/exit.rs"]
mod exit;
#[path = "it/metrics.rs"]
mod metrics;
#[path = "it/publisher.rs"]
mod publisher;

struct RunningSim {
    sim: Arc<Simulator>,
    url: String,
    trust: TrustAnchor,
    shutdown: CancellationToken,
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start_sim(fault: Fault, https: bool) -> RunningSim {
    let sim =
        Simulator::new(SimulatorOptions { rate_bytes_per_s: 0, latency: Duration::ZERO, fault });
    let listener = simulator::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let (url, trust) = if https {
        let (tls, pem) = simulator::self_signed_tls(&["localhost", "127.0.0.1"]).unwrap();
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        tokio::spawn(sim.clone().serve_https(listener, tls, shutdown.clone()));
        (format!("https://127.0.0.1:{}", addr.port()), TrustAnchor::Pinned(cert_sha256(&der)))
    } else {
        tokio::spawn(sim.clone().serve_http(listener, shutdown.clone()));
        (format!("http://127.0.0.1:{}", addr.port()), TrustAnchor::WebPki)
    };
    RunningSim { sim, url, trust, shutdown }
}

fn quantis(sim: &RunningSim, timeout: Duration) -> QuantisSource {
    quantis_named("quantis-sim", sim, timeout)
}

fn quantis_named(name: &str, sim: &RunningSim, timeout: Duration) -> QuantisSource {
    QuantisSource::new(
        name,
        QuantisOptions {
            base_url: sim.url.clone(),
            trust: sim.trust.clone(),
            allow_http: sim.url.starts_with("http:"),
            request_timeout: timeout,
            attempts: 2,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(20),
        },
    )
    .unwrap()
}

fn pipeline(sources: Vec<SourceSlot>, scheme: Scheme, min_sources: usize) -> Pipeline {
    let signer = ChunkSigner::new("c", "k1", vec![1; 32]).unwrap();
    let policy = RoundPolicy {
        scheme,
        min_sources,
        chunk_bytes: 8192,
        read_timeout: Duration::from_secs(2),
    };
    Pipeline::new(sources, policy, signer)
}

#[tokio::test]
async fn a_healthy_appliance_over_pinned_https_yields_signed_quantum_chunks() {
    let sim = start_sim(Fault::None, true).await;
    let slot = SourceSlot::new(Box::new(quantis(&sim, Duration::from_secs(2))), 7.0, 40);
    let mut p = pipeline(vec![slot], Scheme::Xor, 1);
    // The first 4096 bytes are the start-up test: the first 8 KiB round passes it but is
    // discarded; the next round publishes.
    assert!(matches!(p.round().await, Round::TooFewSources { healthy: 0, needed: 1, starting: 1 }));
    let Round::Chunk(chunk) = p.round().await else { panic!("a chunk once healthy") };
    assert_eq!(chunk.data.len(), 8192);
    assert_eq!(chunk.mixing, pb::Mixing::None as i32);
    assert_eq!(chunk.sources[0].kind, pb::SourceKind::Quantum as i32);
    assert_eq!(chunk.sources[0].health, pb::SourceHealth::Healthy as i32);
    assert!(chunk.sources[0].contributed);
}

#[tokio::test]
async fn a_wrong_pin_or_an_untrusted_certificate_is_refused() {
    let sim = start_sim(Fault::None, true).await;
    let wrong = RunningSim {
        sim: sim.sim.clone(),
        url: sim.url.clone(),
        trust: TrustAnchor::Pinned([7; 32]),
        shutdown: CancellationToken::new(),
    };
    let mut source = quantis(&wrong, Duration::from_secs(2));
    use entropy_collector::source::{Source, SourceError};
    assert!(matches!(source.read(64).await, Err(SourceError::Unreachable { .. })));
    let webpki = RunningSim {
        sim: sim.sim.clone(),
        url: sim.url.clone(),
        trust: TrustAnchor::WebPki,
        shutdown: CancellationToken::new(),
    };
    let mut source = quantis(&webpki, Duration::from_secs(2));
    assert!(matches!(source.read(64).await, Err(SourceError::Unreachable { .. })));
}

/// Runs a few rounds against a simulator with `fault` and returns the source's counters.
async fn rounds_with(fault: Fault) -> (SourceHealth, entropy_collector::pipeline::SourceStats) {
    let sim = start_sim(Fault::None, false).await;
    let slot = SourceSlot::new(Box::new(quantis(&sim, Duration::from_millis(300))), 7.0, 40);
    let mut p = pipeline(vec![slot], Scheme::Xor, 1);
    p.round().await; // start-up test on good data
    assert!(matches!(p.round().await, Round::Chunk(_)), "healthy before the fault");
    sim.sim.set_fault(fault);
    // A replaying device's first block is new data; every round after must publish nothing.
    let rounds = if fault == Fault::Repeat { 4 } else { 3 };
    let mut outcomes = Vec::new();
    for _ in 0..rounds {
        outcomes.push(matches!(p.round().await, Round::Chunk(_)));
    }
    let tail = &outcomes[outcomes.len() - 2..];
    assert_eq!(tail, [false, false], "{fault:?}: rounds published {outcomes:?}");
    let (_, health, stats) = p.sources().remove(0);
    (health, stats)
}

fn failures(stats: &entropy_collector::pipeline::SourceStats, label: &str) -> u64 {
    stats.health_failures.iter().find(|(l, _)| *l == label).map_or(0, |(_, n)| *n)
}

#[tokio::test]
async fn every_simulator_fault_is_caught_and_counted() {
    let (health, s) = rounds_with(Fault::Stuck).await;
    assert!(failures(&s, "constant") >= 1, "stuck: {s:?}");
    assert_eq!(health, SourceHealth::Quarantined);

    let (health, s) = rounds_with(Fault::Bias).await;
    assert!(failures(&s, "bit_proportion") >= 1, "bias: {s:?}");
    assert_eq!(health, SourceHealth::Quarantined);

    let (health, s) = rounds_with(Fault::Html).await;
    assert!(failures(&s, "html") >= 1, "html: {s:?}");
    assert_eq!(health, SourceHealth::Quarantined);

    let (_, s) = rounds_with(Fault::Short).await;
    assert!(failures(&s, "wrong_length") >= 1, "short: {s:?}");

    let (_, s) = rounds_with(Fault::Repeat).await;
    assert!(failures(&s, "block_repetition") >= 1, "repeat: {s:?}");

    let (health, s) = rounds_with(Fault::ServerError).await;
    assert!(s.unreachable >= 1, "5xx: {s:?}");
    assert_eq!(health, SourceHealth::Unreachable);

    let (health, s) = rounds_with(Fault::Hang).await;
    assert!(s.unreachable >= 1, "hang: {s:?}");
    assert_eq!(health, SourceHealth::Unreachable);
}

#[tokio::test]
async fn a_quarantined_source_recovers_after_a_fresh_startup_test() {
    let sim = start_sim(Fault::None, false).await;
    let slot = SourceSlot::new(Box::new(quantis(&sim, Duration::from_secs(1))), 7.0, 40);
    let mut p = pipeline(vec![slot], Scheme::Xor, 1);
    p.round().await;
    sim.sim.set_fault(Fault::Bias);
    assert!(matches!(p.round().await, Round::TooFewSources { .. }));
    sim.sim.set_fault(Fault::None);
    assert!(matches!(p.round().await, Round::TooFewSources { .. }), "recovery test discards");
    assert!(matches!(p.round().await, Round::Chunk(_)), "healthy again");
    assert_eq!(p.sources()[0].2.recoveries, 1);
}

#[tokio::test]
async fn min_sources_is_enforced_and_provenance_names_every_source() {
    let good = start_sim(Fault::None, false).await;
    let bad = start_sim(Fault::Stuck, false).await;
    let slots = vec![
        SourceSlot::new(Box::new(quantis(&good, Duration::from_secs(1))), 7.0, 40),
        SourceSlot::new(Box::new(entropy_collector::source::os::OsSource::new("os")), 8.0, 40),
    ];
    let mut p = pipeline(slots, Scheme::Xor, 2);
    p.round().await;
    let Round::Chunk(chunk) = p.round().await else { panic!("two healthy sources") };
    assert_eq!(chunk.mixing, pb::Mixing::Xor as i32);
    assert!(chunk.sources.iter().all(|s| s.contributed));

    // Replace the OS source by a stuck appliance: one healthy of two needed → nothing.
    let good_and_stuck = || {
        vec![
            SourceSlot::new(Box::new(quantis(&good, Duration::from_secs(1))), 7.0, 40),
            SourceSlot::new(
                Box::new(quantis_named("stuck", &bad, Duration::from_secs(1))),
                7.0,
                40,
            ),
        ]
    };
    let slots = good_and_stuck();
    let mut p = pipeline(slots, Scheme::Hkdf, 2);
    for _ in 0..3 {
        assert!(matches!(p.round().await, Round::TooFewSources { needed: 2, .. }));
    }
    // With min_sources = 1 the healthy one is published alone, and the chunk reports the
    // quarantined one as not contributing.
    let slots = good_and_stuck();
    let mut p = pipeline(slots, Scheme::Hkdf, 1);
    p.round().await;
    let Round::Chunk(chunk) = p.round().await else { panic!("one healthy source allowed") };
    assert_eq!(chunk.mixing, pb::Mixing::HkdfSha256 as i32);
    assert_eq!(chunk.data.len(), 8192 * 7 / 8, "HKDF of one 7-bit/byte source gives 7/8");
    let stuck = chunk.sources.iter().find(|s| s.name == "stuck").unwrap();
    assert!(!stuck.contributed);
    assert_eq!(stuck.health, pb::SourceHealth::Quarantined as i32);
}
