//! How long [`entropy_quality::analyze`] takes on the sample sizes the gateway will check:
//! 1 MiB and 16 MiB of OS random data, what a healthy source looks like. The work is nearly the
//! same for any bytes: only the long-run search looks closer at a block that holds two 0x00 or
//! two 0xff bytes in a row.
//!
//!     nice -n 19 cargo bench -p entropy-quality --bench analyze
//!
//! The medians measured are in quality/README.md.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn analyze(c: &mut Criterion) {
    let mut group = c.benchmark_group("analyze");
    for mib in [1usize, 16] {
        let mut sample = vec![0u8; mib << 20];
        getrandom::fill(&mut sample).expect("the OS random generator");
        group.throughput(Throughput::Bytes(sample.len() as u64));
        if mib >= 16 {
            group.sample_size(20);
        }
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{mib}MiB")),
            &sample,
            |b, sample| b.iter(|| entropy_quality::analyze(black_box(sample))),
        );
    }
    group.finish();
}

criterion_group!(benches, analyze);
criterion_main!(benches);
