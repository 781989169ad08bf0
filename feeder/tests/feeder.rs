//! The feeder against a fake gateway (a real tonic server, tests/support), the real kernel
//! device, and the built binary.

mod support;

use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use entropy_diode_client::ClientBuilder;
use entropy_feeder::entropy::Entropy;
use entropy_feeder::kernel::{KernelRng, LinuxRandom};
use entropy_feeder::metrics::{self, Metrics};
use entropy_feeder::supply::{Supply, SupplyOptions};
use entropy_health::STARTUP_BYTES;
use tokio_util::sync::CancellationToken;

use support::{FakeGateway, Script, metric};

const OPTIONS: SupplyOptions =
    SupplyOptions { chunk_bytes: 4096, buffer_bytes: 65536, min_entropy_bits_per_byte: 7.0 };

async fn supply_on(
    endpoint: &str,
    shutdown: &CancellationToken,
) -> (Arc<Supply>, metrics_exporter_prometheus::PrometheusHandle) {
    let client = ClientBuilder::new(endpoint, "test-key")
        .stream_window(entropy_feeder::supply::stream_window(OPTIONS.chunk_bytes))
        .connect()
        .await
        .expect("client");
    let (recorder, handle) = metrics::recorder();
    let supply = Supply::start(client, OPTIONS, Metrics::new(&recorder), shutdown.clone());
    (supply, handle)
}

/// Waits (polling, bounded) until `done` holds.
async fn eventually(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_failing_stream_hands_out_nothing_and_a_fresh_stream_passes_its_own_start_up() {
    let good = 5 * 4096;
    for (bad, test) in [
        (Script::ThenConstant { good }, "repetition_count"),
        (Script::ThenReplay { good }, "block_repetition"),
    ] {
        let gateway =
            FakeGateway::start("127.0.0.1:0".parse().expect("addr"), vec![bad, Script::Good]).await;
        let shutdown = CancellationToken::new();
        let (supply, handle) = supply_on(&gateway.endpoint(), &shutdown).await;
        // Nobody takes while the first stream runs: its good bytes sit in the buffer when it
        // fails. The second stream is opened only after the first was dealt with.
        eventually("a second stream", Duration::from_secs(20), || gateway.streams() >= 2).await;
        eventually("tested bytes", Duration::from_secs(20), || supply.available() >= 4096).await;

        let first = gateway.sent(0);
        let second = gateway.sent(1);
        let taken = supply.take(4096).await.expect("bytes");
        for piece in taken.chunks(32) {
            assert!(
                !first.windows(32).any(|w| w == piece),
                "{test}: a byte of the failed stream was handed out"
            );
        }
        // Handed out from the second stream, after its own start-up test.
        assert_eq!(&taken[..], &second[STARTUP_BYTES..STARTUP_BYTES + 4096], "{test}");

        let text = handle.render();
        let failures = format!("entropy_feeder_health_failures_total{{test=\"{test}\"}}");
        assert_eq!(metric(&text, &failures), 1.0, "{test}");
        // The failing batch and the 4 messages of the stream's bytes that had passed.
        let health = "entropy_feeder_discarded_bytes_total{reason=\"health\"}";
        assert_eq!(metric(&text, health), good as f64, "{test}: {text}");
        let startup = "entropy_feeder_discarded_bytes_total{reason=\"startup\"}";
        assert_eq!(metric(&text, startup), 2.0 * STARTUP_BYTES as f64, "{test}");
        assert_eq!(metric(&text, "entropy_feeder_stream_reconnects_total"), 1.0, "{test}");
        shutdown.cancel();
        supply.closed().await;
        assert!(supply.take(1).await.is_err(), "closed after shutdown");
    }
}

#[tokio::test]
async fn the_supply_rides_out_a_gateway_outage_without_a_busy_loop_logging_it_once() {
    // The reader runs on this test's (current-thread) runtime: its logs come here.
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt().with_writer(logs.clone()).with_ansi(false).finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let gateway =
        FakeGateway::start("127.0.0.1:0".parse().expect("addr"), vec![Script::Good]).await;
    let shutdown = CancellationToken::new();
    let (supply, handle) = supply_on(&gateway.endpoint(), &shutdown).await;
    supply.take(1000).await.expect("bytes before the outage");

    // Down: the port accepts TCP and closes at once (so attempts can be counted).
    let (addr, stopped) = gateway.stop().await;
    let attempts = Arc::new(AtomicUsize::new(0));
    let down = tokio::net::TcpListener::bind(addr).await.expect("rebind the port");
    let counter = {
        let attempts = attempts.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = down.accept().await {
                attempts.fetch_add(1, Ordering::SeqCst);
                drop(tcp);
            }
        })
    };
    // Drain what was buffered so the reader must go back to the gateway.
    let drain = async {
        loop {
            if supply.take_now(1 << 20).is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    // Longer than the client library's own reconnect budget (5 s): the supply's rule too.
    let _ = tokio::time::timeout(Duration::from_millis(6500), drain).await;
    counter.abort();
    let _ = counter.await;
    let tried = attempts.load(Ordering::SeqCst);
    println!("{tried} connection attempts in 6.5 s of outage");
    // At most 9 per cycle of 5 s + backoff (supply.rs, "Outages"): 9, then after 5.25 s at
    // most 4 more by 6.5 s.
    assert!((1..=13).contains(&tried), "{tried} connection attempts in 6.5 s");

    // Back on the same port: bytes flow again, through a fresh start-up test.
    let gateway = stopped.restart(addr).await;
    let back = tokio::time::timeout(Duration::from_secs(40), supply.take(64)).await;
    back.expect("bytes within 40 s of the gateway's return").expect("not closed");
    assert!(gateway.streams() >= 2);
    let text = handle.render();
    let startup = "entropy_feeder_discarded_bytes_total{reason=\"startup\"}";
    assert!(metric(&text, startup) >= 2.0 * STARTUP_BYTES as f64, "{text}");
    let logged = logs.text();
    assert_eq!(logged.matches("gateway stream failed").count(), 1, "{logged}");
    assert_eq!(logged.matches("flowing again").count(), 1, "{logged}");
    shutdown.cancel();
    supply.closed().await;
}

/// Log lines, captured.
#[derive(Clone, Default)]
struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("logs")).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

#[tokio::test]
async fn with_the_ring_full_the_gateway_is_held_a_stream_window_past_it() {
    let gateway =
        FakeGateway::start("127.0.0.1:0".parse().expect("addr"), vec![Script::Good]).await;
    let shutdown = CancellationToken::new();
    let (supply, _) = supply_on(&gateway.endpoint(), &shutdown).await;
    let full = OPTIONS.buffer_bytes;
    eventually("a full buffer", Duration::from_secs(20), || supply.available() == full).await;
    // Nothing is taken: what the gateway could send beyond the ring is the stream window (in
    // the client's receive buffer, untested), plus what the fake queues on its side (its
    // channel of 4 messages, one in hand, the encoder's buffer).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The promise (supply.rs): two messages, at least HTTP/2's initial 65,535 bytes.
    let window = (2 * OPTIONS.chunk_bytes as usize).max(65_535);
    let fake_side = 6 * OPTIONS.chunk_bytes as usize + (32 << 10);
    let bound = STARTUP_BYTES + full + window + fake_side;
    let sent = gateway.sent(0).len();
    assert!(sent <= bound, "the gateway sent {sent} bytes, more than {bound}");
    shutdown.cancel();
    supply.closed().await;
}

#[tokio::test]
async fn takes_are_served_once_each_in_order_and_a_dropped_take_loses_nothing() {
    let gateway =
        FakeGateway::start("127.0.0.1:0".parse().expect("addr"), vec![Script::Good]).await;
    let shutdown = CancellationToken::new();
    let (supply, _) = supply_on(&gateway.endpoint(), &shutdown).await;
    let full = OPTIONS.buffer_bytes;
    eventually("a full buffer", Duration::from_secs(20), || supply.available() == full).await;
    // The gateway stops; what it sent still arrives (its send buffer and the client's receive
    // buffer drain as the supply reads: the stop waits for that), then the stream ends and
    // nothing more comes.
    let stopping = tokio::spawn(gateway.stop());
    let mut all = Vec::new();
    let dry = loop {
        let before = supply.available();
        match tokio::time::timeout(Duration::from_secs(1), supply.take(1000)).await {
            Ok(bytes) => all.extend_from_slice(&bytes.expect("bytes")),
            // This take waited a second with `before` (< 1000) bytes there and was dropped.
            Err(_) if supply.available() == before => break before,
            Err(_) => {}
        }
    };
    let (_, stopped) = stopping.await.expect("the gateway stopped");
    let rest = supply.take_now(full);
    assert_eq!(rest.len(), dry, "the dropped take lost bytes");
    all.extend_from_slice(&rest);
    let sent = stopped.sent(0);
    let at = STARTUP_BYTES;
    assert!(all.len() >= full, "{} bytes handed out", all.len());
    assert!(all == sent[at..at + all.len()], "in order, none skipped, none repeated");
    shutdown.cancel();
    supply.closed().await;
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

#[test]
fn the_real_ioctl_feeds_dev_random_with_and_without_credit() {
    let random = LinuxRandom::open(Path::new("/dev/random")).expect("open /dev/random");
    let result = random.check_access().and_then(|()| random.add_entropy(&[0x5a; 64], 0));
    if !is_root() {
        println!("SKIP: not root; RNDADDENTROPY needs CAP_SYS_ADMIN");
        let e = result.expect_err("EPERM without CAP_SYS_ADMIN");
        assert!(e.to_string().contains("CAP_SYS_ADMIN"), "{e}");
        return;
    }
    result.expect("credit 0");
    random.add_entropy(&[0xa5; 64], 128).expect("credit 128 bits");
    random.add_entropy(&[0x3c; 4096], 32768).expect("the largest write, fully credited");
}

#[test]
fn a_running_kernel_from_5_18_on_does_not_ask() {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut parts = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let random = LinuxRandom::open(Path::new("/dev/random")).expect("open /dev/random");
    let asking = random.asking_within(Duration::from_millis(100)).expect("poll");
    if version >= (5, 18) {
        assert!(!asking, "kernel {release}: POLLOUT after the CRNG is ready");
    } else {
        println!("SKIP: kernel {release} asks by write_wakeup_threshold (asking: {asking})");
    }
}

fn feeder(config: &str, args: &[&str]) -> (Output, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("feeder.toml");
    std::fs::write(&path, config).expect("write config");
    let start = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_entropy-feeder"))
        .arg("--config")
        .arg(&path)
        .args(args)
        .env("ENTROPY_API_KEY", "test-key-secret")
        .env_remove("RUST_LOG")
        .output()
        .expect("run entropy-feeder");
    (output, start.elapsed())
}

#[tokio::test]
async fn boot_mode_against_a_silent_gateway_exits_75_within_its_timeout() {
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr: SocketAddr = silent.local_addr().expect("addr");
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            held.push(tcp);
        }
    });
    let config = format!("gateway_endpoint = \"http://{addr}\"\nboot_timeout_ms = 1500\n");
    let (output, took) = tokio::task::spawn_blocking(move || feeder(&config, &["--boot", "256"]))
        .await
        .expect("run");
    holder.abort();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{stderr}");
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    assert!(took < Duration::from_millis(3500), "{took:?}: past the timeout + 2 s");
    assert!(stderr.contains("fed 0 of 256 bytes"), "{stderr}");
    assert!(!stderr.contains("test-key-secret"), "the key in the logs");
}

#[tokio::test]
async fn boot_mode_feeds_the_kernel_from_a_gateway_and_exits_0() {
    if !is_root() {
        println!("SKIP: not root; RNDADDENTROPY needs CAP_SYS_ADMIN");
        return;
    }
    let gateway =
        FakeGateway::start("127.0.0.1:0".parse().expect("addr"), vec![Script::Good]).await;
    let config = format!("gateway_endpoint = \"{}\"\n", gateway.endpoint());
    let (output, took) = tokio::task::spawn_blocking(move || feeder(&config, &["--boot", "4096"]))
        .await
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("boot feed done"), "{stderr}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn bad_config_exits_64_naming_the_key_and_print_config_never_shows_the_key() {
    let (output, _) = feeder("gateway_endpoint = \"http://127.0.0.1:1\"\nchunk_bytes = 1\n", &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("chunk_bytes") && stderr.contains("256..=65536"), "{stderr}");

    let (output, _) = feeder("gateway_endpoint = \"http://127.0.0.1:1\"\n", &["--print-config"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout.contains("feed_bytes = 64"), "{stdout}");
    assert!(!stdout.contains("test-key-secret"), "{stdout}");

    let (output, _) = feeder("gateway_endpoint = \"http://127.0.0.1:1\"\n", &["--boot", "0"]);
    assert_eq!(output.status.code(), Some(64), "--boot 0 is a usage error");
}

/// `GET path` on `addr`, the body.
fn http_get(addr: SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect to the metrics endpoint");
    tcp.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    write!(tcp, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("request");
    let mut text = String::new();
    tcp.read_to_string(&mut text).expect("response");
    text
}

#[tokio::test]
async fn the_daemon_feeds_only_when_asked_or_refreshing_serves_metrics_and_stops_on_sigterm() {
    if !is_root() {
        println!("SKIP: not root; the daemon checks for CAP_SYS_ADMIN at start");
        return;
    }
    let gateway =
        FakeGateway::start("127.0.0.1:0".parse().expect("addr"), vec![Script::Good]).await;
    for refresh_ms in [0, 1000] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let config = format!(
            "gateway_endpoint = \"{}\"\nmetrics_listen_addr = \"{port}\"\nrefresh_interval_ms = {refresh_ms}\n",
            gateway.endpoint()
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("feeder.toml");
        std::fs::write(&path, config).expect("write config");
        let child = Command::new(env!("CARGO_BIN_EXE_entropy-feeder"))
            .arg("--config")
            .arg(&path)
            .env("ENTROPY_API_KEY", "test-key-secret")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the daemon");
        tokio::time::sleep(Duration::from_millis(2600)).await;
        let page =
            tokio::task::spawn_blocking(move || http_get(port, "/metrics")).await.expect("get");
        let fed = metric(&page, "entropy_feeder_kernel_fed_bytes_total");
        let asks = metric(&page, "entropy_feeder_kernel_asks_total");
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
        if refresh_ms == 0 {
            // A running kernel (>= 5.18, CRNG ready) never asks: nothing written.
            assert_eq!(fed, 64.0 * asks, "one 64-byte write per ask, kernel {release}");
        } else {
            assert!(fed >= 128.0 + 64.0 * asks, "two refreshes in 2.6 s: {fed}");
            let credited = metric(&page, "entropy_feeder_kernel_credited_bits_total");
            assert_eq!(credited, fed * 2.0, "2 bits per byte");
        }
        assert_eq!(metric(&page, "entropy_feeder_up"), 1.0);
        let ready =
            tokio::task::spawn_blocking(move || http_get(port, "/readyz")).await.expect("get");
        assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
        let pid = child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
        assert!(killed.success());
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("entropy feeder stopped"), "{stderr}");
    }
}
