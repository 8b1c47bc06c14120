//! The cohort engine's cost against the number of clients, beside the agent engine's.
//!
//! The default storm scenario with `clients` clients and capacity scaled to match (50 per
//! 2000, so the storm keeps its shape), one rule per run, seed 1. The cohort engine's time
//! should not grow with the clients; the agent engine's grows linearly (and stops at 10^6
//! here, since 10^9 agents need over 12 GB).
//!
//! `cargo bench -p herd-sim --bench cohort`
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use herd::RuleName;
use herd_sim::{Engine, Limits, Scenario, Simulation};

fn scaled(clients: u64) -> Scenario {
    let mut s = Scenario::default();
    s.clients.count = clients;
    s.server.capacity = clients / 40;
    s
}

fn engines(c: &mut Criterion) {
    let mut group = c.benchmark_group("storm");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for rule in [
        RuleName::Full,
        RuleName::Decorrelated,
        RuleName::Exponential,
    ] {
        for (label, clients) in [
            ("1e4", 10_000u64),
            ("1e6", 1_000_000),
            ("1e9", 1_000_000_000),
        ] {
            for engine in [Engine::Cohort, Engine::Agent] {
                if engine == Engine::Agent && clients > 1_000_000 {
                    continue;
                }
                let sim = Simulation::with_engine(&scaled(clients), &Limits::unlimited(), engine)
                    .expect("valid scenario");
                let id = BenchmarkId::new(format!("{}/{rule}", engine.as_str()), label);
                group.bench_function(id, |b| {
                    b.iter(|| black_box(sim.run(rule, 1, herd_sim::Watch::none()).expect("runs")));
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, engines);
criterion_main!(benches);
