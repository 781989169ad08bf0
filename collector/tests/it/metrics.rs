//! The real `entropy-collector` binary under traffic and faults, scraped over HTTP: every
//! series of docs/metrics.md's collector table is exposed with its type and labels (and nothing
//! undocumented is), the publish counters match what a gateway answered, health failures and
//! fetch errors land under their source and test, /readyz follows the sources, and the JSON
//! log switch gives one JSON object per line.

use std::io::Read as _;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use entropy_collector::simulator::{self, Fault, Simulator, SimulatorOptions};
use entropy_proto::v1::ingest_service_server::{IngestService, IngestServiceServer};
use entropy_proto::v1::{PublishRequest, PublishResponse};
use entropy_testkit::docs_table::check_documented;
use entropy_testkit::exposition::Exposition;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

/// A stand-in gateway: stores everything, except that every fourth call is answered
/// RESOURCE_EXHAUSTED (a full pool), which the collector must retry.
#[derive(Clone, Default)]
struct FakeGateway(Arc<Answers>);

/// What the fake gateway answered.
#[derive(Default)]
struct Answers {
    calls: AtomicU64,
    stored_calls: AtomicU64,
    stored_bytes: AtomicU64,
    full_calls: AtomicU64,
}

#[tonic::async_trait]
impl IngestService for FakeGateway {
    async fn publish(
        &self,
        request: Request<PublishRequest>,
    ) -> Result<Response<PublishResponse>, Status> {
        let this = &self.0;
        if this.calls.fetch_add(1, Ordering::SeqCst) % 4 == 3 {
            this.full_calls.fetch_add(1, Ordering::SeqCst);
            return Err(Status::resource_exhausted("pool full"));
        }
        this.stored_calls.fetch_add(1, Ordering::SeqCst);
        this.stored_bytes.fetch_add(request.get_ref().data.len() as u64, Ordering::SeqCst);
        Ok(Response::new(PublishResponse {}))
    }
}

async fn start_sim(fault: Fault, shutdown: &CancellationToken) -> (Arc<Simulator>, String) {
    let sim =
        Simulator::new(SimulatorOptions { rate_bytes_per_s: 0, latency: Duration::ZERO, fault });
    let listener = simulator::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(sim.clone().serve_http(listener, shutdown.clone()));
    (sim, url)
}

/// `N` distinct loopback ports nothing listens on: all bound at once (so no two are the same),
/// then released.
fn free_ports<const N: usize>() -> [u16; N] {
    let held: [std::net::TcpListener; N] =
        std::array::from_fn(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    held.map(|l| l.local_addr().unwrap().port())
}

use entropy_testkit::http::get as http_get;

/// Polls `check` on fresh scrapes until it holds (at most ~20 s).
async fn wait_for(addr: SocketAddr, what: &str, check: impl Fn(&Exposition) -> bool) -> Exposition {
    for _ in 0..400 {
        // Until the binary has bound its port, there is nothing to scrape.
        if TcpStream::connect(addr).await.is_ok() {
            let (_, body) = http_get(addr, "/metrics").await;
            let e = Exposition::parse(&body).expect("valid exposition");
            if check(&e) {
                return e;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

#[tokio::test]
async fn the_collector_exposes_its_series_as_documented_and_they_follow_what_happens() {
    let shutdown = CancellationToken::new();
    let (good, good_url) = start_sim(Fault::None, &shutdown).await;
    let (_html, html_url) = start_sim(Fault::Html, &shutdown).await;
    let fake = FakeGateway::default();
    let gw_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gw = format!("http://{}", gw_listener.local_addr().unwrap());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(IngestServiceServer::new(fake.clone()))
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(gw_listener),
                shutdown.clone().cancelled_owned(),
            ),
    );
    let [dead_port, metrics_port] = free_ports();
    let dead = format!("http://127.0.0.1:{dead_port}");
    let metrics: SocketAddr = format!("127.0.0.1:{metrics_port}").parse().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("k1.key");
    std::fs::write(&key, "42".repeat(32)).unwrap();
    let config = dir.path().join("collector.toml");
    std::fs::write(
        &config,
        format!(
            r#"
collector_id = "c-metrics"
key_id = "k1"
key_file = "{key}"
chunk_bytes = 4096
mixing = "xor"
min_sources = 1
buffer_chunks = 4
shutdown_grace_ms = 500
log_format = "json"

[[gateway]]
id = "fake"
endpoint = "{gw}"

[[gateway]]
id = "dead"
endpoint = "{dead}"

[[source]]
name = "quantis-a"
type = "quantis"
url = "{good_url}"
allow_http = true
request_timeout_ms = 2000
attempts = 1

[[source]]
name = "quantis-html"
type = "quantis"
url = "{html_url}"
allow_http = true
request_timeout_ms = 2000
attempts = 1
"#,
            key = key.display()
        ),
    )
    .unwrap();
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_entropy-collector"))
            .arg("--config")
            .arg(&config)
            .args(["--metrics-listen-addr", &metrics.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the collector"),
    );

    // Healthy source, stored chunks: ready.
    let source = |s: &'static str| [("source", s)];
    wait_for(metrics, "a stored chunk", |e| {
        e.sum("entropy_collector_publish_total", &[("gateway", &gw), ("code", "OK")]) >= 2.0
    })
    .await;
    assert_eq!(http_get(metrics, "/healthz").await, (200, "ok\n".to_owned()));
    assert_eq!(http_get(metrics, "/readyz").await, (200, "ready\n".to_owned()));

    // The good source turns biased: a health failure, quarantine, nothing more to publish.
    good.set_fault(Fault::Bias);
    // The last in-flight call is counted on both sides once its answer arrives.
    let e = wait_for(metrics, "quarantine, an empty queue, and counts that agree", |e| {
        let ok = [("gateway", gw.as_str()), ("code", "OK")];
        e.sum("entropy_collector_health_failures_total", &source("quantis-a")) >= 1.0
            && e.sum("entropy_collector_source_up", &source("quantis-a")) == 0.0
            && e.sum("entropy_collector_queue_chunks", &[]) == 0.0
            && e.sum("entropy_collector_publish_total", &ok)
                == fake.0.stored_calls.load(Ordering::SeqCst) as f64
    })
    .await;
    let (code, body) = http_get(metrics, "/readyz").await;
    assert_eq!(code, 503);
    assert!(body.contains("0 healthy sources, min_sources is 1"), "{body}");

    // What the fake gateway answered is what the collector counted.
    let publish = |code: &str| {
        e.sum("entropy_collector_publish_total", &[("gateway", gw.as_str()), ("code", code)])
    };
    assert_eq!(publish("OK"), fake.0.stored_calls.load(Ordering::SeqCst) as f64);
    assert_eq!(publish("RESOURCE_EXHAUSTED"), fake.0.full_calls.load(Ordering::SeqCst) as f64);
    assert!(publish("RESOURCE_EXHAUSTED") >= 1.0, "every fourth call is refused");
    assert_eq!(
        e.sum("entropy_collector_published_bytes_total", &[("gateway", gw.as_str())]),
        fake.0.stored_bytes.load(Ordering::SeqCst) as f64
    );
    let transport = [("gateway", dead.as_str()), ("code", "TRANSPORT")];
    assert!(e.sum("entropy_collector_publish_total", &transport) >= 1.0, "dead gateway");
    assert_eq!(
        e.sum("entropy_collector_published_bytes_total", &[("gateway", dead.as_str())]),
        0.0
    );
    assert!(
        e.sum("entropy_collector_mixed_bytes_total", &[("mixing", "none")])
            >= fake.0.stored_bytes.load(Ordering::SeqCst) as f64,
        "one healthy source passes through unmixed"
    );
    assert_eq!(e.sum("entropy_collector_mixed_bytes_total", &[("mixing", "xor")]), 0.0);
    assert!(e.sum("entropy_collector_source_bytes_total", &source("quantis-a")) >= 8192.0);
    assert!(
        e.sum(
            "entropy_collector_health_failures_total",
            &[("source", "quantis-a"), ("test", "bit_proportion")]
        ) >= 1.0,
        "a 60/40 bias fails the bit proportion test"
    );
    assert!(e.sum("entropy_collector_fetch_errors_total", &source("quantis-html")) >= 1.0);
    assert_eq!(e.sum("entropy_collector_source_bytes_total", &source("quantis-html")), 0.0);
    assert_eq!(e.sum("entropy_collector_source_up", &source("quantis-html")), 0.0);
    assert!(e.sum("entropy_collector_fetch_duration_seconds_count", &source("quantis-a")) >= 2.0);
    assert_eq!(e.sum("entropy_collector_queue_capacity_chunks", &[]), 4.0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let last = e.sum("entropy_collector_last_publish_timestamp_seconds", &[]);
    assert!(last > now.as_secs_f64() - 600.0 && last <= now.as_secs_f64() + 1.0, "{last}");
    assert_eq!(
        e.types.get("entropy_collector_publish_duration_seconds").map(|k| k.as_str()),
        Some("histogram")
    );
    check_docs_match(&e);

    // Stop it and read its log: JSON objects, with the health failure named.
    let pid = child.0.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    let status = child.0.wait().expect("wait");
    assert!(status.success(), "clean exit on SIGTERM: {status}");
    let mut stderr = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    for line in stderr.lines() {
        assert!(line.starts_with('{') && line.ends_with('}'), "not a JSON object: {line}");
    }
    assert!(
        stderr.lines().any(|l| l.contains(r#""level":"WARN""#)
            && l.contains(r#""source":"quantis-a""#)
            && l.contains(r#""test":"bit_proportion""#)),
        "no health failure line in {stderr}"
    );
    shutdown.cancel();
}

/// docs/metrics.md's collector table against `exposed`, both ways.
fn check_docs_match(exposed: &Exposition) {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md"))
        .expect("docs/metrics.md");
    check_documented(exposed, &docs, "## Collector series", "entropy_collector_")
        .unwrap_or_else(|e| panic!("docs/metrics.md: {e}"));
}
