//! Attempts per second of the storm engine: the default scenario scaled to 1 000 000 clients
//! (capacity scaled alike, 50 per 2000 clients), one benchmark per rule, seed 1.
//!
//!     cargo bench -p herd-sim --bench engine
//!
//! Criterion reports throughput in elements per second; an element is one attempt.
use herd_sim::Watch;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use herd::RuleName;
use herd_sim::{Limits, Scenario, Simulation};

const CLIENTS: u64 = 1_000_000;

fn scaled(clients: u64) -> Scenario {
    let mut s = Scenario::default();
    s.clients.count = clients;
    s.server.capacity = (50 * clients / 2000).max(1);
    s
}

fn engine(c: &mut Criterion) {
    let sim = Simulation::new(&scaled(CLIENTS), &Limits::unlimited()).expect("valid scenario");
    let mut group = c.benchmark_group("storm_1M_clients");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for rule in RuleName::ALL {
        let attempts = sim.run(rule, 1, Watch::none()).expect("runs").requests;
        group.throughput(Throughput::Elements(attempts));
        group.bench_function(rule.as_str(), |b| {
            b.iter(|| sim.run(rule, 1, Watch::none()).expect("runs"));
        });
    }
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
