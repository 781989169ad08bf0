//! Pool throughput: how fast verified bytes go in and come out, by request size.
//!
//! `put_take`: one put of N bytes followed by one take of N (the copy in, the copy out and the
//! zeroize of the freed arena region, the chunk's origin record), single-threaded: the pool's own cost per byte.
//! `contended_take`: 8 tasks on a 2-worker runtime draining a pre-filled pool in N-byte takes,
//! i.e. the semaphore and mutex under contention, as concurrent GetRandom calls use them.
//!
//! Run: `cargo bench -p entropy-bench --bench pool`; results in bench/results/pool.md.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use entropy_gateway::domain::pool::{ChunkOrigin, Kinds, Pool};

/// The record every stored chunk carries (one allocation per put, as ingest does).
fn origin() -> Arc<ChunkOrigin> {
    Arc::new(ChunkOrigin {
        collector: "bench".into(),
        epoch: 1,
        sequence: 0,
        signed_at_unix_ms: 0,
        kinds: Kinds::QUANTUM,
        mixed: false,
    })
}

const SIZES: &[usize] = &[32, 1024, 64 << 10, 1 << 20];

fn put_take(c: &mut Criterion) {
    let mut group = c.benchmark_group("put_take");
    for &n in SIZES {
        let pool = Pool::new(16 << 20);
        let data = vec![0xA5u8; n];
        group.throughput(Throughput::Bytes(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter(|| {
                pool.put(&data, origin()).expect("room");
                let drawn = pool.try_take(n).expect("bytes");
                std::hint::black_box(drawn);
            });
        });
    }
    group.finish();
}

fn contended_take(c: &mut Criterion) {
    const TAKERS: usize = 8;
    const TAKES_PER_TAKER: usize = 64;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().expect("runtime");
    let mut group = c.benchmark_group("contended_take");
    for &n in &SIZES[..3] {
        let total = n * TAKERS * TAKES_PER_TAKER;
        let refill = vec![0x5Au8; total];
        group.throughput(Throughput::Bytes(total as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            let pool = Arc::new(Pool::new(total.max(1 << 20)));
            b.iter(|| {
                pool.put(&refill, origin()).expect("room");
                runtime.block_on(async {
                    let mut tasks = Vec::with_capacity(TAKERS);
                    for _ in 0..TAKERS {
                        let pool = pool.clone();
                        tasks.push(tokio::spawn(async move {
                            for _ in 0..TAKES_PER_TAKER {
                                std::hint::black_box(pool.take(n, None).await.expect("bytes"));
                            }
                        }));
                    }
                    for t in tasks {
                        t.await.expect("join");
                    }
                });
            });
        });
    }
    group.finish();
}

criterion_group!(benches, put_take, contended_take);
criterion_main!(benches);
