//! Micro-benchmarks of a gateway's chunk verification (bounds, CRC32C, HMAC-SHA256, freshness) per MiB, and unbiased integer
//! sampling (rejection sampling) per value.
//!
//! Run: `cargo bench -p entropy-bench --bench micro` (bench/run.sh runs it with the others).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use entropy_gateway::domain::ingest::keys::MacKeys;
use entropy_gateway::domain::ingest::verify::{VerifyPolicy, verify};
use entropy_gateway::domain::sampling::IntRange;
use entropy_ops::clock::unix_ms_now;
use entropy_proto::v1::PublishRequest;
use entropy_testkit::chunk::Signer;

const KEY: [u8; 32] = [7; 32];

/// A signed chunk of `n` patterned bytes (the shared fixture), dated now.
fn chunk(n: usize) -> PublishRequest {
    let data: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8).collect();
    let signer = Signer { collector_id: "bench", gateway_id: "bench", key_id: "k1", key: &KEY };
    signer.signed(unix_ms_now(), data, |_| {})
}

fn verification(c: &mut Criterion) {
    let mut keys = MacKeys::default();
    keys.insert("k1", KEY.to_vec()).expect("valid key");
    let policy = VerifyPolicy {
        max_chunk_bytes: 1 << 20,
        freshness_window: Duration::from_secs(600),
        max_future_skew: Duration::from_secs(2),
        started_unix_ms: 0,
        accepts_from_unix_ms: 2_000,
        gateway_id: "bench".into(),
    };
    let mut group = c.benchmark_group("verify_chunk");
    for n in [1024usize, 64 << 10, 1 << 20] {
        let base = chunk(n);
        group.throughput(Throughput::Bytes(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_batched(
                || base.clone(),
                |req| {
                    let ok = verify(req, &keys, &policy, unix_ms_now()).expect("verifies");
                    black_box(ok);
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

fn integers(c: &mut Criterion) {
    let mut group = c.benchmark_group("int_sample");
    // A die (1 byte per draw, 1/256 rejected), a range that rejects almost half of its 1-byte
    // draws, and the full i64 range (8 bytes, never rejected).
    let cases = [("1..=6", 1i64, 6i64), ("0..=128", 0, 128), ("i64", i64::MIN, i64::MAX)];
    let bytes: Vec<u8> =
        (0..1 << 16).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    for (name, min, max) in cases {
        let range = IntRange::new(min, max).expect("min <= max");
        let k = range.bytes_per_draw();
        group.throughput(Throughput::Elements(1000));
        group.bench_function(name, |b| {
            b.iter(|| {
                let (mut got, mut at, mut sum) = (0, 0, 0i64);
                while got < 1000 {
                    if at + k > bytes.len() {
                        at = 0;
                    }
                    if let Some(v) = range.sample(&bytes[at..at + k]) {
                        sum = sum.wrapping_add(v);
                        got += 1;
                    }
                    at += k;
                }
                black_box(sum)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, verification, integers);
criterion_main!(benches);
