//! Sub-requests per second of the latency model: the default scenario (fan-out 10 over 20
//! servers that pause, 200 000 measured user requests, 2.2 M sub-requests in all), one
//! benchmark per policy, seed 1, on one core.
//!
//!     cargo bench -p herd-sim --bench latency -- --warm-up-time 1 --measurement-time 5
//!
//! Criterion reports throughput in elements per second; an element is one sub-request
//! (each may send more than one copy).
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use herd_sim::latency::{LatencyModel, LatencyScenario};

fn latency(c: &mut Criterion) {
    let scenario = LatencyScenario::default();
    let model = LatencyModel::new(&scenario).expect("valid scenario");
    let subs = (scenario.requests + scenario.warmup_requests) * u64::from(scenario.traffic.fan_out);
    let mut group = c.benchmark_group("latency_default");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(subs));
    for (i, name) in model.policies().into_iter().enumerate() {
        group.bench_function(name, |b| {
            b.iter(|| model.run(i, 1, herd_sim::Watch::none()).expect("policy"))
        });
    }
    group.finish();
}

criterion_group!(benches, latency);
criterion_main!(benches);
