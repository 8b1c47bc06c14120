//! The cohort engine's throttles against the agent engine's: every `[retry.throttle]` kind
//! whose state the whole population shares, on one small storm, over many seeds.
//!
//! Each kind runs on both engines (disjoint seed ranges, so the samples are independent) and
//! the means of the figures a throttle moves are compared:
//!
//! ```text
//! |mean_agent − mean_cohort| ≤ K · √(se_agent² + se_cohort²)
//! ```
//!
//! with `se` each mean's standard error, observed from the runs. `K` keeps the chance that
//! any of the file's comparisons fails when the engines agree below 10⁻⁶ (Bonferroni over
//! them, normal tails: each mean is over 200 runs). The seeds are fixed (moved only by
//! `HERD_TEST_SEED`, see support/chance.rs).
use herd::RuleName;
use herd_sim::graph::z_limit;
use herd_sim::{
    Clients, Engine, Limits, Retry, RunResult, Scenario, Server, Simulation, ThrottleTable,
};

use crate::support;

use support::{mean_se, runs};

/// The kinds whose state is shared by the population (all but `aws-adaptive`).
const KINDS: [&str; 9] = [
    "sre-adaptive",
    "grpc-adaptive",
    "aws-standard",
    "aws-standard-2026",
    "envoy-budget",
    "envoy-max-retries",
    "envoy-admission",
    "grpc",
    "ratio",
];

type Figure = (&'static str, fn(&RunResult) -> f64);

const FIGURES: [Figure; 3] = [
    ("requests", |r| r.requests as f64),
    ("served", |r| r.served as f64),
    ("denied_by_budget", |r| r.denied_by_budget as f64),
];

const SEEDS: u64 = 200;

/// A small storm: 1000 clients in a burst at a server that answers 10 per 100 ms
/// window, no outage, an open loop of 40 a second on top, 40 s of horizon, with the throttle `kind`
/// at its system's defaults.
fn scene(kind: &str) -> Scenario {
    let d = Scenario::default();
    let mut retry = Retry {
        cap_ms: 5000.0,
        ..d.retry
    };
    retry.throttle = Some(ThrottleTable {
        kind: kind.to_owned(),
        ..ThrottleTable::default()
    });
    Scenario {
        horizon_s: 40.0,
        clients: Clients {
            count: 1000,
            arrivals_per_s: 40.0,
            ..d.clients
        },
        server: Server {
            capacity: 10,
            outages: Vec::new(),
            ..d.server
        },
        retry,
        ..d
    }
}

#[test]
fn shared_throttles_agree_between_the_engines() {
    let k = z_limit(1e-6, KINDS.len() * FIGURES.len(), None);
    for kind in KINDS {
        let s = scene(kind);
        let agent = runs(&s, Engine::Agent, RuleName::Full, SEEDS);
        let cohort = runs(&s, Engine::Cohort, RuleName::Full, SEEDS);
        // The throttle has to bite for the comparison to mean anything.
        assert!(
            agent.iter().any(|r| r.denied_by_budget > 0),
            "{kind} never denies here"
        );
        for (name, figure) in FIGURES {
            let xa: Vec<f64> = agent.iter().map(figure).collect();
            let xc: Vec<f64> = cohort.iter().map(figure).collect();
            let (ma, sa) = mean_se(&xa);
            let (mc, sc) = mean_se(&xc);
            let tolerance = k * (sa * sa + sc * sc).sqrt();
            eprintln!("{kind} {name}: agent {ma:.2} ± {sa:.2}, cohort {mc:.2} ± {sc:.2}");
            assert!(
                (ma - mc).abs() <= tolerance.max(1e-9),
                "{kind} {name}: agent {ma:.3} ± {sa:.3}, cohort {mc:.3} ± {sc:.3}, |diff| {:.3} \
                 > {tolerance:.3}",
                (ma - mc).abs()
            );
        }
    }
}

#[test]
fn a_per_request_rate_limiter_needs_the_agent_engine() {
    let err = Simulation::with_engine(&scene("aws-adaptive"), &Limits::default(), Engine::Cohort)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("retry.throttle.kind: aws-adaptive needs the agent engine")
            && err.contains("--engine agent")
            && !err.contains('\n'),
        "{err}"
    );
    assert!(
        Simulation::with_engine(&scene("aws-adaptive"), &Limits::default(), Engine::Agent).is_ok()
    );
}
