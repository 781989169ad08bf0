//! What an audited draw costs: receipts signed per second, log appends per second under each
//! fsync policy, proofs served per second, and (printed, not timed) log bytes per receipt and
//! proof sizes at 10^6 leaves. Numbers and commands: bench/README.md, "Receipts".
//!
//!     taskset -c 0 cargo bench -p entropy-receipts --bench receipts

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use entropy_receipts::merkle::{Hash, Subtrees, consistency_proof, inclusion_proof};
use entropy_receipts::{
    ChunkRef, Commitment, Construction, KeyNameDigest, LogConfig, Provenance, Receipt, ReceiptLog,
    ReceiptSigner, Request, Rpc, Salt, ServedValues, SourceKind, SyncPolicy,
};

fn receipt(signer: &ReceiptSigner, serial: u64, commitment: Commitment) -> Receipt {
    let chunk = |sequence| ChunkRef {
        collector_id: "collector-a".into(),
        epoch: 0x1234_5678,
        sequence,
        signed_at_unix_ms: 1_795_000_000_000,
    };
    Receipt {
        serial,
        issued_at_unix_ms: 1_795_000_000_000,
        gateway_id: "gateway-1".into(),
        key_name_digest: KeyNameDigest::of("lottery-operator"),
        request: Request {
            rpc: Rpc::GetIntegers { min: 1, max: 49, count: 6 },
            accept_kinds: vec![SourceKind::Quantum],
        },
        provenance: Provenance {
            kinds: vec![SourceKind::Quantum],
            mixed: false,
            collector_ids: vec!["collector-a".into()],
            first_chunk: chunk(1),
            last_chunk: chunk(1),
            chunk_count: 1,
            oldest_byte_age_ms: 40,
            construction: Construction::Raw,
        },
        commitment,
        key_id: signer.key_id(),
    }
}

/// One audited draw's receipt work: salt, commitment, receipt, signature.
fn sign_one(signer: &ReceiptSigner, serial: u64) -> entropy_receipts::SignedReceipt {
    let salt = Salt::random().expect("getrandom");
    let c = Commitment::commit(ServedValues::Integers(&[3, 11, 19, 27, 38, 45]), &salt);
    signer.sign(receipt(signer, serial, c)).expect("valid receipt")
}

fn signing(c: &mut Criterion) {
    let signer = ReceiptSigner::from_seed(&[1; 32]);
    let mut g = c.benchmark_group("receipt");
    g.throughput(Throughput::Elements(1));
    g.bench_function("salt+commit+sign", |b| b.iter(|| sign_one(&signer, 7)));
    let signed = sign_one(&signer, 7);
    g.bench_function("verify", |b| {
        b.iter(|| entropy_receipts::verify::verify_receipt(&signed, signer.public_key()).is_ok())
    });
    g.finish();
}

/// Appends per second: `threads` appenders sharing one log, each append signing its receipt.
fn appends(c: &mut Criterion) {
    let signer = ReceiptSigner::from_seed(&[1; 32]);
    let mut g = c.benchmark_group("append");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    let mut kept = None;
    for (name, sync, threads) in [
        ("every-append/1-thread", SyncPolicy::EveryAppend, 1),
        ("group/1-thread", SyncPolicy::Group, 1),
        ("group/8-threads", SyncPolicy::Group, 8),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (log, _) =
            ReceiptLog::open(&LogConfig { dir: dir.path().to_owned(), sync }).expect("open");
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let per = iters.div_ceil(threads);
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            for _ in 0..per {
                                log.append_with(|serial| Ok(sign_one(&signer, serial)))
                                    .expect("append");
                            }
                        });
                    }
                });
                // Time per append, over the appends actually made.
                start.elapsed().mul_f64(iters as f64 / (per * threads) as f64)
            })
        });
        kept = Some((dir, log));
    }
    g.finish();
    // The last log (group commit, 8 threads) holds the most receipts: measure it.
    if let Some((_dir, log)) = kept {
        report_growth(&log);
        proofs_from_disk(c, &log);
    }
}

fn report_growth(log: &ReceiptLog) {
    let n = log.size();
    let bytes: u64 = ["receipts.log", "leaves.bin"]
        .iter()
        .map(|f| std::fs::metadata(log.dir().join(f)).map_or(0, |m| m.len()))
        .sum();
    println!(
        "log growth: {n} receipts, {bytes} bytes on disk = {:.1} bytes per receipt = {:.0} MB per million draws",
        bytes as f64 / n as f64,
        bytes as f64 / n as f64
    );
}

fn proofs_from_disk(c: &mut Criterion, log: &ReceiptLog) {
    let n = log.size();
    let signer = ReceiptSigner::from_seed(&[1; 32]);
    let mut g = c.benchmark_group(format!("proofs-from-log-of-{n}"));
    g.bench_function("inclusion", |b| b.iter(|| log.inclusion_proof(n / 3, n).expect("proof")));
    g.bench_function("consistency", |b| b.iter(|| log.consistency_proof(n / 3, n).expect("proof")));
    g.bench_function("signed-head", |b| b.iter(|| log.signed_head(&signer, 0).expect("head")));
    g.finish();
}

/// A tree whose subtrees all hash to zeros: proof lengths depend on sizes alone.
struct Shape;

impl Subtrees for Shape {
    type Error = std::convert::Infallible;
    fn perfect(&self, _: u64, _: u32) -> Result<Hash, Self::Error> {
        Ok([0; 32])
    }
}

fn proof_sizes(_: &mut Criterion) {
    let n = 1_000_000u64;
    let (mut inc_max, mut con_max, mut inc_sum, mut con_sum, mut k) = (0, 0, 0, 0, 0u64);
    for m in (0..n).step_by(997) {
        let ok = |r: Result<Vec<Hash>, std::convert::Infallible>| r.unwrap_or_else(|e| match e {});
        let i = ok(inclusion_proof(&Shape, m, n)).len();
        let c = ok(consistency_proof(&Shape, m.max(1), n)).len();
        inc_max = inc_max.max(i);
        con_max = con_max.max(c);
        inc_sum += i;
        con_sum += c;
        k += 1;
    }
    println!(
        "proof sizes at 10^6 leaves ({k} sampled indexes): inclusion {:.1} hashes avg, {inc_max} max ({} bytes); consistency {:.1} avg, {con_max} max ({} bytes)",
        inc_sum as f64 / k as f64,
        inc_max * 32,
        con_sum as f64 / k as f64,
        con_max * 32
    );
}

/// Opening (recovery) time: a log of 100,000 receipts written straight to the file (framed as the
/// log frames them, no fsync per record), opened once without `leaves.bin` (rebuilt) and once
/// with it.
fn open_time(_: &mut Criterion) {
    use std::io::Write as _;
    let n = 100_000u64;
    let signer = ReceiptSigner::from_seed(&[1; 32]);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(dir.path().join(entropy_receipts::record::LOG_FILE)).expect("create"),
    );
    f.write_all(entropy_receipts::record::MAGIC).expect("write");
    for serial in 0..n {
        let payload = sign_one(&signer, serial).to_bytes();
        f.write_all(&entropy_receipts::record::frame(&payload)).expect("write");
    }
    drop(f);
    let config = LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::Group };
    for what in ["without leaves.bin", "with leaves.bin"] {
        let start = Instant::now();
        let (log, rec) = ReceiptLog::open(&config).expect("open");
        let took = start.elapsed();
        assert_eq!(rec.receipts, n);
        println!(
            "open {what}: {n} receipts in {:.0} ms = {:.1} s per million ({} leaf hashes rewritten)",
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e6 / n as f64,
            rec.leaves_rewritten
        );
        drop(log);
    }
}

criterion_group!(benches, signing, appends, proof_sizes, open_time);
criterion_main!(benches);
