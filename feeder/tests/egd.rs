//! The EGD server against a fake supply that hands out a known sequence and logs every hand-out,
//! so each byte a client gets can be traced to the one hand-out it came from.
//!
//! Each test runs on one thread (`#[tokio::test]`), with its own Prometheus recorder installed
//! for that thread, so the metrics it reads are its own. Waits poll a condition under a deadline;
//! no sleep stands in for "it was fast enough".

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use entropy_feeder::egd::{EgdLimits, serve};
use entropy_feeder::entropy::{Closed, Entropy};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

/// Longest any single step of a test may take before it fails (a hang, not a speed test).
const STEP: Duration = Duration::from_secs(20);

/// The fake supply's byte at stream offset `i`: a counter through splitmix64, so any run of 8 or
/// more bytes names its offset (a plain u8 counter repeats every 256 bytes).
fn stream_byte(i: u64) -> u8 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u8
}

fn stream(from: u64, len: usize) -> Vec<u8> {
    (from..from + len as u64).map(stream_byte).collect()
}

#[derive(Default)]
struct FakeState {
    /// Next offset to hand out.
    next: u64,
    /// Bytes released so far: offsets below this are "health-tested and ready".
    released: u64,
    closed: bool,
    /// `take` calls waiting now.
    waiting: usize,
    /// Every hand-out: (offset, length).
    log: Vec<(u64, usize)>,
}

/// An [`Entropy`] that hands out the stream in order, as fast as the test releases it.
#[derive(Default)]
struct Fake {
    state: Mutex<FakeState>,
    changed: Notify,
}

impl Fake {
    fn with(released: u64) -> Arc<Self> {
        let fake = Arc::new(Fake::default());
        fake.release(released);
        fake
    }

    fn release(&self, n: u64) {
        self.state.lock().unwrap().released += n;
        self.changed.notify_waiters();
    }

    fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.changed.notify_waiters();
    }

    fn waiting(&self) -> usize {
        self.state.lock().unwrap().waiting
    }

    fn handed_out(&self) -> u64 {
        self.state.lock().unwrap().next
    }

    fn log(&self) -> Vec<(u64, usize)> {
        self.state.lock().unwrap().log.clone()
    }

    fn hand_out(state: &mut FakeState, n: usize) -> Zeroizing<Vec<u8>> {
        let from = state.next;
        state.next += n as u64;
        state.log.push((from, n));
        Zeroizing::new(stream(from, n))
    }
}

struct Waiting<'a>(&'a Fake);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.state.lock().unwrap().waiting -= 1;
    }
}

impl Entropy for Fake {
    async fn take(&self, n: usize) -> Result<Zeroizing<Vec<u8>>, Closed> {
        self.state.lock().unwrap().waiting += 1;
        let _waiting = Waiting(self);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.state.lock().unwrap();
                if state.closed {
                    return Err(Closed);
                }
                if state.released - state.next >= n as u64 {
                    return Ok(Fake::hand_out(&mut state, n));
                }
            }
            changed.await;
        }
    }

    fn take_now(&self, max: usize) -> Zeroizing<Vec<u8>> {
        let mut state = self.state.lock().unwrap();
        let n = (state.released - state.next).min(max as u64) as usize;
        Fake::hand_out(&mut state, n)
    }

    fn available(&self) -> usize {
        let state = self.state.lock().unwrap();
        (state.released - state.next) as usize
    }
}

/// A running server and what a test needs to talk to it and watch it.
struct Server {
    _dir: tempfile::TempDir,
    path: PathBuf,
    fake: Arc<Fake>,
    shutdown: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
    metrics: PrometheusHandle,
}

/// Installs a recorder for this test's thread. Keep the returned recorder alive (and the guard).
fn recorder() -> PrometheusRecorder {
    PrometheusBuilder::new().build_recorder()
}

fn start(
    fake: Arc<Fake>,
    max_clients: usize,
    idle_timeout: Duration,
    rec: &PrometheusRecorder,
) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("egd.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let shutdown = CancellationToken::new();
    let limits = EgdLimits { max_clients, idle_timeout };
    let task = tokio::spawn(serve(listener, Arc::clone(&fake), limits, shutdown.clone()));
    Server { _dir: dir, path, fake, shutdown, task, metrics: rec.handle() }
}

impl Server {
    async fn connect(&self) -> UnixStream {
        step(UnixStream::connect(&self.path)).await.unwrap()
    }

    /// A metric's value as rendered (0 when not rendered yet).
    fn metric(&self, series: &str) -> f64 {
        metric(&self.metrics, series)
    }

    async fn stop(self) {
        self.shutdown.cancel();
        step(self.task).await.unwrap().unwrap();
    }
}

fn metric(handle: &PrometheusHandle, series: &str) -> f64 {
    let text = handle.render();
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

async fn step<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(STEP, f).await.expect("step timed out")
}

/// Waits (polling) until `cond` holds; fails after [`STEP`].
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + STEP;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn read_n(client: &mut UnixStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    step(client.read_exact(&mut buf)).await.unwrap();
    buf
}

/// Reads until the server closes (a close with requests unread may come as a reset, after the
/// bytes sent before it); returns what came before.
async fn read_to_close<R: tokio::io::AsyncRead + Unpin>(client: &mut R) -> Vec<u8> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match step(client.read(&mut chunk)).await {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("reading to close: {e}"),
        }
    }
}

const LONG: Duration = Duration::from_secs(30);
const REFUSED_BAD: &str = r#"entropy_feeder_egd_refused_total{reason="bad_command"}"#;
const REFUSED_IDLE: &str = r#"entropy_feeder_egd_refused_total{reason="idle_timeout"}"#;
const REFUSED_FULL: &str = r#"entropy_feeder_egd_refused_total{reason="max_clients"}"#;
const CLIENTS: &str = "entropy_feeder_egd_clients";
const SERVED: &str = "entropy_feeder_egd_served_bytes_total";

#[tokio::test]
async fn entropy_level_is_bits_ready_big_endian() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(1000), 4, LONG, &rec);
    let mut c = server.connect().await;
    c.write_all(&[0x00]).await.unwrap();
    assert_eq!(read_n(&mut c, 4).await, 8000u32.to_be_bytes());
    c.write_all(&[0x02, 250, 0x00]).await.unwrap();
    assert_eq!(read_n(&mut c, 250).await, stream(0, 250));
    assert_eq!(read_n(&mut c, 4).await, 6000u32.to_be_bytes());
    server.fake.release(u64::from(u32::MAX));
    c.write_all(&[0x00]).await.unwrap();
    assert_eq!(read_n(&mut c, 4).await, u32::MAX.to_be_bytes(), "saturates");
    assert_eq!(server.metric(SERVED), 250.0, "levels are not entropy served");
    server.stop().await;
}

#[tokio::test]
async fn nonblocking_read_gives_what_is_ready_with_its_length() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(100), 4, LONG, &rec);
    let mut c = server.connect().await;
    c.write_all(&[0x01, 255]).await.unwrap();
    assert_eq!(read_n(&mut c, 1).await, [100]);
    assert_eq!(read_n(&mut c, 100).await, stream(0, 100));
    c.write_all(&[0x01, 10]).await.unwrap();
    assert_eq!(read_n(&mut c, 1).await, [0], "nothing ready: length 0, no wait");
    server.fake.release(1000);
    c.write_all(&[0x01, 10, 0x01, 255]).await.unwrap();
    assert_eq!(read_n(&mut c, 1).await, [10]);
    assert_eq!(read_n(&mut c, 10).await, stream(100, 10));
    assert_eq!(read_n(&mut c, 1).await, [255]);
    assert_eq!(read_n(&mut c, 255).await, stream(110, 255));
    assert_eq!(server.metric(SERVED), 365.0);
    server.stop().await;
}

#[tokio::test]
async fn blocking_read_waits_for_exactly_its_count_and_pipelined_reads_come_in_order() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(0), 4, LONG, &rec);
    let mut c = server.connect().await;
    c.write_all(&[0x02, 200]).await.unwrap();
    until("the read waits for bytes", || server.fake.waiting() == 1).await;
    server.fake.release(150);
    server.fake.release(50);
    assert_eq!(read_n(&mut c, 200).await, stream(0, 200));
    // QEMU's way: several requests written before any reply is read.
    c.write_all(&[0x02, 255, 0x02, 255, 0x02, 255, 0x02, 1]).await.unwrap();
    server.fake.release(766);
    assert_eq!(read_n(&mut c, 766).await, stream(200, 766));
    assert_eq!(server.fake.log(), [(0, 200), (200, 255), (455, 255), (710, 255), (965, 1)]);
    assert_eq!(server.metric(SERVED), 966.0);
    server.stop().await;
}

#[tokio::test]
async fn written_entropy_is_read_and_discarded_and_the_client_stays_in_step() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(1000), 4, LONG, &rec);
    let mut c = server.connect().await;
    let mut write = vec![0x03, 0x00, 0x28, 5, 0xde, 0xad, 0xbe, 0xef, 0x00];
    write.extend([0x03, 0, 0, 0]); // writing nothing is a command too
    write.extend([0x03, 0x07, 0xf8, 255]);
    write.extend([0xaa; 255]);
    write.extend([0x02, 16]);
    c.write_all(&write).await.unwrap();
    assert_eq!(read_n(&mut c, 16).await, stream(0, 16), "no reply to writes; the read is next");
    c.write_all(&[0x01, 255]).await.unwrap();
    assert_eq!(read_n(&mut c, 1).await, [255]);
    let got = read_n(&mut c, 255).await;
    assert_eq!(got, stream(16, 255), "written bytes never come back");
    assert_eq!(server.fake.available(), 1000 - 16 - 255, "nor were they added to the supply");
    server.stop().await;
}

#[tokio::test]
async fn pid_is_this_process_in_ascii_with_its_length() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(0), 4, LONG, &rec);
    let mut c = server.connect().await;
    c.write_all(&[0x04]).await.unwrap();
    let len = read_n(&mut c, 1).await[0];
    let pid = read_n(&mut c, usize::from(len)).await;
    assert_eq!(String::from_utf8(pid).unwrap(), std::process::id().to_string());
    server.stop().await;
}

#[tokio::test]
async fn zero_length_reads_take_nothing() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(500), 4, LONG, &rec);
    let mut c = server.connect().await;
    // 0x01 0 answers a zero length; 0x02 0 answers nothing; the level comes right after.
    c.write_all(&[0x01, 0, 0x02, 0, 0x00]).await.unwrap();
    assert_eq!(read_n(&mut c, 5).await, [0, 0, 0, 0x0f, 0xa0]);
    assert!(server.fake.log().iter().all(|&(_, n)| n == 0), "no byte handed out");
    assert_eq!(server.fake.available(), 500);
    server.stop().await;
}

#[tokio::test]
async fn unknown_commands_close_the_connection() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(1000), 4, LONG, &rec);
    for bad in [0x05u8, 0x20, 0xff] {
        let mut c = server.connect().await;
        // A good command, then the bad one, then one that must never be answered.
        c.write_all(&[0x01, 4, bad, 0x02, 8]).await.unwrap();
        let got = read_to_close(&mut c).await;
        assert_eq!(got.len(), 5, "the reply before the bad command, nothing after");
    }
    until("refusals counted", || server.metric(REFUSED_BAD) == 3.0).await;
    assert_eq!(server.fake.handed_out(), 12, "the reads after the bad commands took nothing");
    until("clients gone", || server.metric(CLIENTS) == 0.0).await;
    server.stop().await;
}

#[tokio::test]
async fn a_command_split_across_writes_is_put_back_together() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(2000), 4, Duration::from_secs(10), &rec);
    let mut c = server.connect().await;
    let pause = Duration::from_millis(30);
    let mut pieces: Vec<&[u8]> = vec![&[0x02], &[200], &[0x01], &[100], &[0x03, 0x00], &[0x08, 3]];
    pieces.extend([&[1u8, 2][..], &[3], &[0x00]]);
    for piece in pieces {
        c.write_all(piece).await.unwrap();
        tokio::time::sleep(pause).await;
    }
    assert_eq!(read_n(&mut c, 200).await, stream(0, 200));
    assert_eq!(read_n(&mut c, 1).await, [100]);
    assert_eq!(read_n(&mut c, 100).await, stream(200, 100));
    assert_eq!(read_n(&mut c, 4).await, ((2000u32 - 300) * 8).to_be_bytes());
    assert_eq!(server.metric(REFUSED_IDLE), 0.0);
    server.stop().await;
}

#[tokio::test]
async fn a_command_left_unfinished_is_closed_after_the_idle_timeout() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let idle = Duration::from_millis(300);
    let server = start(Fake::with(1000), 4, idle, &rec);
    for partial in [&[0x02][..], &[0x01], &[0x03, 0, 8, 4, 1, 2]] {
        let mut c = server.connect().await;
        let sent = Instant::now();
        c.write_all(partial).await.unwrap();
        assert!(read_to_close(&mut c).await.is_empty());
        assert!(sent.elapsed() >= idle, "closed before the timeout: {:?}", sent.elapsed());
    }
    until("refusals counted", || server.metric(REFUSED_IDLE) == 3.0).await;
    assert_eq!(server.fake.handed_out(), 0);
    server.stop().await;
}

#[tokio::test]
async fn a_client_idle_between_commands_is_kept() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let idle = Duration::from_millis(100);
    let server = start(Fake::with(1000), 4, idle, &rec);
    let mut c = server.connect().await;
    c.write_all(&[0x02, 10]).await.unwrap();
    assert_eq!(read_n(&mut c, 10).await, stream(0, 10));
    // QEMU connects once and may ask for nothing for a long while.
    tokio::time::sleep(idle * 5).await;
    c.write_all(&[0x02, 10]).await.unwrap();
    assert_eq!(read_n(&mut c, 10).await, stream(10, 10));
    assert_eq!(server.metric(REFUSED_IDLE), 0.0);
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_does_not_read_its_replies_is_closed_and_loses_at_most_one() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let idle = Duration::from_millis(300);
    let server = start(Fake::with(10_000_000), 4, idle, &rec);
    let c = server.connect().await;
    let asked = 4000usize;
    let requests: Vec<u8> = [0x02, 255].repeat(asked);
    // The server stops reading requests while a reply is stuck, so write them from a task.
    let (mut rd, mut wr) = c.into_split();
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(&requests).await;
        wr
    });
    until("the client is closed", || server.metric(REFUSED_IDLE) == 1.0).await;
    until("the gauge drops", || server.metric(CLIENTS) == 0.0).await;
    let got = read_to_close(&mut rd).await;
    let handed_out = server.fake.handed_out() as usize;
    assert!(got.len() < asked * 255, "it was not served everything");
    assert_eq!(got, stream(0, got.len()), "what it was sent is in order");
    assert!(
        handed_out - got.len() <= 255,
        "taken but never sent: {} bytes (more than one reply)",
        handed_out - got.len()
    );
    assert!(got.len() <= 16 << 10, "parked in the socket: {} bytes", got.len());
    let served = server.metric(SERVED) as usize;
    assert!(served <= got.len() && got.len() - served < 255, "served {served}, got {}", got.len());
    drop((rd, step(writer).await.unwrap()));
    server.stop().await;
}

#[tokio::test]
async fn connections_beyond_max_clients_are_closed_at_once() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(1000), 2, LONG, &rec);
    let mut a = server.connect().await;
    let mut b = server.connect().await;
    for c in [&mut a, &mut b] {
        c.write_all(&[0x02, 1]).await.unwrap();
        read_n(c, 1).await;
    }
    assert_eq!(server.metric(CLIENTS), 2.0);
    let mut third = server.connect().await;
    let _ = third.write_all(&[0x02, 1]).await;
    assert!(read_to_close(&mut third).await.is_empty(), "closed, unanswered");
    assert_eq!(server.metric(REFUSED_FULL), 1.0);
    drop(a);
    until("a slot is free", || server.metric(CLIENTS) == 1.0).await;
    let mut fourth = server.connect().await;
    fourth.write_all(&[0x02, 5]).await.unwrap();
    assert_eq!(read_n(&mut fourth, 5).await, stream(2, 5));
    b.write_all(&[0x02, 5]).await.unwrap();
    assert_eq!(read_n(&mut b, 5).await, stream(7, 5));
    assert_eq!(server.metric(REFUSED_FULL), 1.0);
    server.stop().await;
}

/// Each reply a client got must be one hand-out, whole, and no hand-out may be matched twice.
fn match_replies(log: &[(u64, usize)], replies: &[Vec<u8>]) -> HashSet<u64> {
    let mut used = HashSet::new();
    for reply in replies {
        let found = log.iter().find(|&&(from, n)| {
            n == reply.len() && !used.contains(&from) && stream(from, n) == *reply
        });
        let &(from, _) = found.unwrap_or_else(|| {
            panic!("a reply of {} bytes matches no unused hand-out", reply.len())
        });
        used.insert(from);
    }
    used
}

#[tokio::test]
async fn clients_at_once_never_get_the_same_byte() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(0), 8, LONG, &rec);
    let fake = Arc::clone(&server.fake);
    let mut clients = Vec::new();
    for k in 0..6u64 {
        let mut c = server.connect().await;
        clients.push(tokio::spawn(async move {
            let mut replies = Vec::new();
            for i in 0..150u64 {
                let n = 1 + ((k * 131 + i * 71) % 255) as u8;
                if i % 5 == 4 {
                    c.write_all(&[0x01, n]).await.unwrap();
                    let len = read_n(&mut c, 1).await[0];
                    assert!(len <= n);
                    let got = read_n(&mut c, usize::from(len)).await;
                    if !got.is_empty() {
                        replies.push(got);
                    }
                } else {
                    c.write_all(&[0x02, n]).await.unwrap();
                    replies.push(read_n(&mut c, usize::from(n)).await);
                }
            }
            replies
        }));
    }
    // The supply trickles in, so reads wait and race each other.
    let feeder = tokio::spawn(async move {
        for _ in 0..2000 {
            fake.release(97);
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let mut replies = Vec::new();
    for c in clients {
        replies.extend(step(c).await.unwrap());
    }
    feeder.abort();
    let log = server.fake.log();
    let matched = match_replies(&log, &replies);
    let nonempty: Vec<_> = log.iter().filter(|&&(_, n)| n > 0).collect();
    assert_eq!(matched.len(), nonempty.len(), "every hand-out reached exactly one client");
    let served: usize = replies.iter().map(Vec::len).sum();
    assert_eq!(served as u64, server.fake.handed_out());
    assert_eq!(server.metric(SERVED) as usize, served);
    server.stop().await;
}

#[tokio::test]
async fn a_client_gone_while_its_read_waits_costs_no_byte() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(100), 4, LONG, &rec);
    let mut gone = server.connect().await;
    gone.write_all(&[0x02, 200]).await.unwrap();
    until("its read waits", || server.fake.waiting() == 1).await;
    drop(gone);
    until("its wait is dropped", || server.fake.waiting() == 0).await;
    until("it is gone", || server.metric(CLIENTS) == 0.0).await;
    server.fake.release(1000);
    let mut next = server.connect().await;
    next.write_all(&[0x02, 255]).await.unwrap();
    assert_eq!(read_n(&mut next, 255).await, stream(0, 255), "continues where nothing was lost");
    assert_eq!(server.fake.log(), [(0, 255)]);
    server.stop().await;
}

#[tokio::test]
async fn bytes_taken_for_a_client_that_hung_up_are_never_served_again() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(1_000_000), 4, LONG, &rec);
    // Ask and hang up at once, many times: some replies are taken and then cannot be written.
    for _ in 0..50 {
        let mut c = server.connect().await;
        c.write_all(&[0x02, 255, 0x02, 255, 0x02, 255]).await.unwrap();
        drop(c);
    }
    until("they are gone", || server.metric(CLIENTS) == 0.0).await;
    let before = server.fake.handed_out();
    let mut c = server.connect().await;
    let mut replies = Vec::new();
    for _ in 0..20 {
        c.write_all(&[0x02, 255]).await.unwrap();
        replies.push(read_n(&mut c, 255).await);
    }
    let log = server.fake.log();
    let later: Vec<_> = log.iter().copied().filter(|&(from, _)| from >= before).collect();
    assert_eq!(match_replies(&later, &replies).len(), 20, "only bytes handed out after them");
    assert_eq!(replies.concat(), stream(before, 20 * 255));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_stops_accepting_and_closes_every_client() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(10), 4, LONG, &rec);
    let mut idle = server.connect().await;
    let mut waiting = server.connect().await;
    idle.write_all(&[0x04]).await.unwrap();
    let len = read_n(&mut idle, 1).await[0];
    read_n(&mut idle, usize::from(len)).await;
    waiting.write_all(&[0x02, 100]).await.unwrap();
    until("the read waits", || server.fake.waiting() == 1).await;
    let path: PathBuf = server.path.clone();
    let fake = Arc::clone(&server.fake);
    let handle = server.metrics.clone();
    server.stop().await;
    assert!(read_to_close(&mut idle).await.is_empty());
    assert!(read_to_close(&mut waiting).await.is_empty());
    assert_eq!(fake.waiting(), 0, "the waiting read was dropped");
    assert_eq!(fake.handed_out(), 0);
    assert_eq!(metric(&handle, CLIENTS), 0.0);
    assert!(refuses(&path).await, "nothing accepts after shutdown");
}

async fn refuses(path: &Path) -> bool {
    match UnixStream::connect(path).await {
        Err(_) => true,
        Ok(mut c) => read_to_close(&mut c).await.is_empty(),
    }
}

#[tokio::test]
async fn a_closed_supply_closes_its_clients() {
    let rec = recorder();
    let _g = metrics::set_default_local_recorder(&rec);
    let server = start(Fake::with(0), 4, LONG, &rec);
    let mut c = server.connect().await;
    c.write_all(&[0x02, 10]).await.unwrap();
    until("the read waits", || server.fake.waiting() == 1).await;
    server.fake.close();
    assert!(read_to_close(&mut c).await.is_empty());
    server.stop().await;
}
