//! What the metrics and the log line cost one unary call: a whole [`Call::run`] (start,
//! authorize with the key's cached handles, run the handler, finish: histogram by method and
//! code, per-key counters, a debug line that the `info` filter drops) against the bare checks
//! the handler made before metrics existed (scope and request quota). Both build the request
//! the call reads the key from.
//!
//! Run: `cargo bench -p entropy-bench --bench metrics`.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use entropy_gateway::domain::auth::{KeyGrant, Scope};
use entropy_gateway::domain::quota::{KeyQuota, Limits};
use entropy_gateway::grpc::observe::{Call, Reply};
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
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let request = || tonic::Request::from_parts(Default::default(), extensions.clone(), ());
    group.bench_function("observed", |b| {
        b.iter(|| {
            let call = Call::run(
                &metrics,
                (Method::GetRandom, Scope::EntropyRead),
                request(),
                async |caller, _request| {
                    std::hint::black_box(&caller);
                    Ok(Reply::new(GetRandomResponse { data: vec![0; 32], ..Default::default() }))
                },
            );
            std::hint::black_box(runtime.block_on(call))
        });
    });
    group.bench_function("bare", |b| {
        b.iter(|| {
            let request = request();
            let grant = request.extensions().get::<Arc<KeyGrant>>().cloned().expect("grant");
            assert!(grant.allows(Scope::EntropyRead));
            grant.quota.admit_request().expect("no limit");
            std::hint::black_box(grant)
        });
    });
    group.finish();
}

criterion_group!(benches, per_call);
criterion_main!(benches);
