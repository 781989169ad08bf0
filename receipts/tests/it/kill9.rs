//! kill -9 during appends, many times: every acknowledged receipt survives, unchanged; no
//! acknowledged serial is ever given to another receipt; the log reopens and verifies.
//!
//! The child is this test binary run again with `--exact kill9::child` and the environment
//! variable below set: it appends in a loop (four threads under group commit, or one thread
//! with an fsync per append) and writes "serial leaf-hash\n" to an acknowledgement file after
//! each append returns, in one `write` (O_APPEND), so a kill leaves whole lines or a partial last
//! one, which is ignored. The parent kills it with SIGKILL after a seeded random delay (0..40 ms,
//! so some kills land during start-up and recovery), then reopens the log and checks.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use entropy_receipts::merkle::leaf_hash;
use entropy_receipts::verify::audit_key;
use entropy_receipts::{
    Commitment, KeyNameDigest, LogConfig, LogReader, ReceiptLog, ReceiptSigner, Rpc, Salt,
    ServedValues, SyncPolicy,
};

const CHILD_ENV: &str = "ENTROPY_RECEIPTS_KILL9_CHILD";
const ROUNDS: u64 = 30;
const SEED: u64 = 0x5eed_0032;

fn signer() -> ReceiptSigner {
    ReceiptSigner::from_seed(&[9; 32])
}

/// The child: `ENTROPY_RECEIPTS_KILL9_CHILD=<log dir>|<acks file>|<group|every>`. Does nothing
/// when the variable is not set (an ordinary test run).
#[test]
fn child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let mut parts = spec.split('|');
    let (dir, acks, policy) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let sync = if policy == "group" { SyncPolicy::Group } else { SyncPolicy::EveryAppend };
    let (log, _) = ReceiptLog::open(&LogConfig { dir: dir.into(), sync }).unwrap();
    let threads = if sync == SyncPolicy::Group { 4 } else { 1 };
    let signer = signer();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut acks =
                    std::fs::OpenOptions::new().append(true).create(true).open(acks).unwrap();
                loop {
                    let salt = Salt::random().unwrap();
                    let values = [7u8; 32];
                    let c = Commitment::commit(ServedValues::Bytes(&values), &salt);
                    let a = log
                        .append_with(|serial| {
                            let rpc = Rpc::GetRandom { num_bytes: 32 };
                            signer.sign(crate::receipt(&signer, serial, "crash", rpc, c))
                        })
                        .unwrap();
                    let line = format!("{} {}\n", a.serial, hex::encode(a.leaf_hash));
                    acks.write_all(line.as_bytes()).unwrap();
                }
            });
        }
    });
}

/// splitmix64: the test's seeded delays.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn read_acks(path: &Path) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // Only whole lines: a kill may cut the last one.
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    whole
        .lines()
        .map(|l| {
            let (s, h) = l.split_once(' ').unwrap();
            (s.parse().unwrap(), h.to_owned())
        })
        .collect()
}

#[test]
fn kill_9_loses_no_acknowledged_receipt_and_reuses_no_serial() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().join("log");
    let exe = std::env::current_exe().unwrap();
    let signer = signer();
    let pk = signer.public_key().clone();
    let mut rng = SEED;
    let mut acked: HashMap<u64, String> = HashMap::new();
    let mut killed_mid_run = 0;

    for round in 0..ROUNDS {
        let acks_path = dir.path().join(format!("acks-{round}"));
        let policy = if round % 2 == 0 { "group" } else { "every" };
        let mut child = Command::new(&exe)
            .args(["--exact", "kill9::child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, format!("{}|{}|{policy}", log_dir.display(), acks_path.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // One round in three is killed 0..30 ms after the spawn (often during start-up or
        // recovery); the others 0..30 ms after the child's first acknowledgement, mid-appends.
        let delay = Duration::from_millis(next(&mut rng) % 30);
        if round % 3 != 0 {
            let waited = std::time::Instant::now();
            while read_acks(&acks_path).is_empty() {
                assert!(
                    waited.elapsed() < Duration::from_secs(20),
                    "round {round}: child never appended"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let round_acks = read_acks(&acks_path);
        if !round_acks.is_empty() {
            killed_mid_run += 1;
        }
        for (serial, leaf) in round_acks {
            // An acknowledged serial is acknowledged once, for one receipt.
            if let Some(prev) = acked.insert(serial, leaf.clone()) {
                panic!("round {round}: serial {serial} acknowledged twice ({prev} and {leaf})");
            }
        }

        // Reopen as the writer does: recovery cuts a torn tail, nothing else.
        let (log, rec) =
            ReceiptLog::open(&LogConfig { dir: log_dir.clone(), sync: SyncPolicy::Group }).unwrap();
        let size = rec.receipts;
        let head = log.signed_head(&signer, round as i64).unwrap();
        drop(log);

        // Every acknowledged receipt is there, byte for byte (its leaf hash), at its serial.
        let mut leaves = Vec::new();
        for item in LogReader::open(&log_dir).unwrap() {
            let (serial, r) = item.unwrap();
            assert_eq!(serial, leaves.len() as u64);
            leaves.push(hex::encode(leaf_hash(&r.to_bytes())));
        }
        assert_eq!(leaves.len() as u64, size);
        for (serial, leaf) in &acked {
            assert!(
                *serial < size,
                "round {round}: acknowledged serial {serial} lost (size {size})"
            );
            assert_eq!(&leaves[*serial as usize], leaf, "round {round}: serial {serial} changed");
        }
        // The log verifies: every signature, and the root the head signed.
        let all = audit_key(
            LogReader::open(&log_dir).unwrap(),
            &head,
            &pk,
            &KeyNameDigest::of("crash"),
            0..u64::MAX,
        )
        .unwrap();
        assert_eq!(all.len() as u64, size);
    }
    // The test means something only if kills landed while appends were being acknowledged.
    assert!(killed_mid_run >= ROUNDS * 2 / 3, "only {killed_mid_run} rounds acknowledged anything");
    assert!(!acked.is_empty());
}
