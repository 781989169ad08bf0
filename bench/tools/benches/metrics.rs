//! What the metrics and the log line cost one unary call: a whole [`Call`] (start, authorize
//! with the key's cached handles, note the bytes, finish: histogram by method and code, served
//! and per-key counters, a debug line that the `info` filter drops) against the bare checks the
//! handler made before metrics existed (scope and request quota).
//!
//! Run: `cargo bench -p entropy-bench --bench metrics`.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use entropy_gateway::domain::auth::{KeyGrant, Scope};
use entropy_gateway::domain::quota::{KeyQuota, Limits};
use entropy_gateway::grpc::observe::Call;
use entropy_gateway::metrics::{GatewayMetrics, Method};
use entropy_proto::v1::GetRandomResponse;

fn grant() -> Arc<KeyGrant> {
    Arc::new(KeyGrant {
        name: "alice".into(),
        scopes: vec![Scope::EntropyRead, Scope::StatusRead],
        quota: Arc::new(KeyQuota::new(Limits::default())),
    })
}

fn per_call(c: &mut Criterion) {
    let metrics = Arc::new(GatewayMetrics::new());
    let mut extensions = tonic::Extensions::new();
    extensions.insert(grant());
    // As in the binary: a subscriber at info, so the per-call debug line is filtered out.
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt().with_env_filter("info").with_writer(std::io::sink).finish(),
    );
    let mut group = c.benchmark_group("unary_call");
    group.bench_function("observed", |b| {
        b.iter(|| {
            let mut call = Call::start(&metrics, Method::GetRandom);
            let grant = call.authorize(&extensions, Scope::EntropyRead).expect("allowed");
            call.drew(32);
            std::hint::black_box(&grant);
            let response = GetRandomResponse { data: vec![0; 32], ..Default::default() };
            let result: Result<tonic::Response<GetRandomResponse>, tonic::Status> =
                Ok(tonic::Response::new(response));
            std::hint::black_box(call.finish(result))
        });
    });
    group.bench_function("bare", |b| {
        b.iter(|| {
            let grant = extensions.get::<Arc<KeyGrant>>().cloned().expect("grant");
            assert!(grant.allows(Scope::EntropyRead));
            grant.quota.admit_request().expect("no limit");
            std::hint::black_box(grant)
        });
    });
    group.finish();
}

criterion_group!(benches, per_call);
criterion_main!(benches);
