//! Cost per megabyte of each collector stage, on 1 MiB of input.
//!
//! Run: `cargo bench -p entropy-bench --bench stages`; results in
//! bench/results/collector.md beside the end-to-end throughput measured by
//! bench/collector_throughput.sh.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use entropy_collector::mixing::{Input, Scheme, mix};
use entropy_collector::signer::ChunkSigner;
use entropy_health::HealthMonitor;
use entropy_proto::v1::Mixing;

const MIB: usize = 1 << 20;

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    getrandom::fill(&mut v).expect("os rng");
    v
}

fn stages(c: &mut Criterion) {
    let a = random(MIB);
    let b = random(MIB);
    let mut group = c.benchmark_group("collector_stage_per_MiB");
    group.throughput(Throughput::Bytes(MIB as u64));

    group.bench_function("health_tests", |bench| {
        let mut monitor = HealthMonitor::new(7.0, 40);
        monitor.check(&random(8192)); // past the start-up test
        // Fresh data each time would measure the RNG; the same MiB again would trip the
        // block-repetition test, so alternate between halves shifted by one byte.
        let shifted: Vec<u8> = a.iter().map(|x| x.wrapping_add(1)).collect();
        let mut flip = false;
        bench.iter(|| {
            flip = !flip;
            std::hint::black_box(monitor.check(if flip { &a } else { &shifted }))
        });
    });
    group.bench_function("mix_xor_2_sources", |bench| {
        let inputs = [Input { bytes: &a, min_entropy: 7.0 }, Input { bytes: &b, min_entropy: 7.0 }];
        bench.iter(|| std::hint::black_box(mix(Scheme::Xor, &inputs)));
    });
    group.bench_function("mix_hkdf_2_sources", |bench| {
        let inputs = [Input { bytes: &a, min_entropy: 7.0 }, Input { bytes: &b, min_entropy: 7.0 }];
        bench.iter(|| std::hint::black_box(mix(Scheme::Hkdf, &inputs)));
    });
    group.bench_function("sign_crc32c_hmac_sha256", |bench| {
        let mut signer = ChunkSigner::new("bench", "k1", vec![7; 32]).expect("signer");
        bench.iter(|| std::hint::black_box(signer.sign(a.clone(), Mixing::None, Vec::new())));
    });
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
