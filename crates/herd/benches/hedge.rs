//! The cost of hedging when the first copy answers in time, side by side in one binary:
//! a direct call, herd's runner, herd's `HedgeLayer`, and `tower::hedge` (the same service, a
//! percentile delay learned from a histogram in both). Each iteration is one call driven by
//! `block_on` on a current-thread tokio runtime, so the runtime's own cost is in every row;
//! compare the rows, not the absolute figures.
//!
//! Run: `cargo bench -p herd --bench hedge -- --warm-up-time 1 --measurement-time 3`
use std::convert::Infallible;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use herd::asynchronous::TokioClock;
use herd::hedge::{HedgeDelay, HedgeLayer, HedgePolicy};
use tower::{Layer, Service, ServiceExt, service_fn};

#[derive(Clone)]
struct Always;

impl tower::hedge::Policy<u64> for Always {
    fn clone_request(&self, req: &u64) -> Option<u64> {
        Some(*req)
    }
    fn can_retry(&self, _: &u64) -> bool {
        true
    }
}

fn hedge(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let service = service_fn(|x: u64| async move { Ok::<_, Infallible>(x.wrapping_mul(3)) });
    let delay = HedgeDelay::percentile(0.95, Duration::from_millis(1), Duration::from_secs(1));
    let policy = HedgePolicy::builder(delay)
        .clock(TokioClock::new())
        .build()
        .expect("valid policy");

    let mut group = c.benchmark_group("hedge_first_copy_answers");
    group.bench_function("direct", |b| {
        let mut svc = service;
        b.iter(|| {
            rt.block_on(async {
                let svc = svc.ready().await.expect("ready");
                black_box(svc.call(black_box(7)).await.expect("answer"))
            })
        });
    });
    group.bench_function("herd_runner", |b| {
        b.iter(|| {
            rt.block_on(async {
                let answer = policy
                    .hedge(|_| async { Ok::<_, Infallible>(black_box(7u64).wrapping_mul(3)) })
                    .run_async()
                    .await
                    .expect("answer");
                black_box(answer.value)
            })
        });
    });
    group.bench_function("herd_layer", |b| {
        let mut svc = HedgeLayer::new(policy.clone()).layer(service);
        b.iter(|| {
            rt.block_on(async {
                let svc = svc.ready().await.expect("ready");
                black_box(svc.call(black_box(7)).await.expect("answer"))
            })
        });
    });
    group.bench_function("tower_hedge", |b| {
        let mut svc = tower::hedge::Hedge::new(service, Always, 20, 0.95, Duration::from_secs(10));
        b.iter(|| {
            rt.block_on(async {
                let svc = svc.ready().await.expect("ready");
                black_box(svc.call(black_box(7)).await.expect("answer"))
            })
        });
    });
    group.finish();
}

criterion_group!(benches, hedge);
criterion_main!(benches);
