//! `[retry.throttle]` in the storm model: every kind runs, deterministically and conserving
//! clients; the ones that refuse do refuse; the cohort engine says why it cannot run them.
use herd::RuleName;
use herd_sim::{Engine, Limits, Scenario, Simulation, THROTTLE_KINDS};

use crate::support;

use support::conserved;

/// A storm with a 20 s outage, 400 clients plus 20 new ones a second, at most 8 attempts.
fn storm(throttle: &str) -> Scenario {
    let text = format!(
        "horizon_s = 120.0\n\
         [clients]\ncount = 400\narrivals_per_s = 20.0\nmax_attempts = 8\n\
         [server]\ncapacity = 3\noutages = [[0.0, 20.0]]\n\
         [retry]\nrules = [\"full\"]\n{throttle}"
    );
    Scenario::from_toml_str(&text, &herd_sim::Limits::default(), |_| {}).expect("valid scenario")
}

fn run(s: &Scenario, seed: u64) -> herd_sim::RunResult {
    let sim = Simulation::new(s, &Limits::unlimited()).expect("valid");
    let r = sim
        .run(RuleName::Full, seed, herd_sim::Watch::none())
        .unwrap();
    conserved(&r);
    r
}

#[test]
fn every_kind_runs_deterministically_and_conserves_clients() {
    for kind in THROTTLE_KINDS {
        let s = storm(&format!("[retry.throttle]\nkind = \"{kind}\"\n"));
        let a = run(&s, 7);
        assert_eq!(a, run(&s, 7), "{kind} is not deterministic");
        let sim = Simulation::new(&s, &Limits::unlimited()).unwrap();
        let (traced, trace) = sim.trace(RuleName::Full, 7).unwrap();
        assert_eq!(a, traced, "{kind}: tracing changed the run");
        assert_eq!(trace.events.len() as u64, a.requests, "{kind}");
    }
}

/// Every kind that limits retries sends fewer attempts per client through the outage than
/// no throttle at all, and the ones that gate first attempts refuse some.
#[test]
fn throttles_cut_the_storm() {
    let none = run(&storm(""), 3);
    for kind in THROTTLE_KINDS {
        let r = run(&storm(&format!("[retry.throttle]\nkind = \"{kind}\"\n")), 3);
        assert!(
            r.requests < none.requests,
            "{kind}: {} attempts, {} without a throttle",
            r.requests,
            none.requests
        );
        if matches!(kind, "sre-adaptive" | "grpc-adaptive" | "envoy-admission") {
            assert!(r.denied_by_budget > 0, "{kind} refused nothing");
        }
    }
}

/// Envoy's `max_retries = 0` allows no retry at all: every failed first attempt gives up.
#[test]
fn envoy_max_retries_zero_allows_no_retry() {
    let r = run(
        &storm("[retry.throttle]\nkind = \"envoy-max-retries\"\nmax_retries = 0\n"),
        1,
    );
    assert_eq!(r.requests, r.clients - r.waiting);
}

#[test]
fn errors_name_the_field_and_line() {
    let err = |t: &str| {
        Scenario::from_toml_str(
            &format!("[retry.throttle]\n{t}"),
            &herd_sim::Limits::default(),
            |_| {},
        )
        .and_then(|s| Simulation::new(&s, &Limits::default()).map(|_| ()))
        .unwrap_err()
        .to_string()
    };
    assert!(err("kind = \"bogus\"").contains("retry.throttle.kind"));
    let e = err("kind = \"aws-standard\"\nk = 2.0");
    assert!(
        e.contains("retry.throttle.k") && e.contains("aws-standard"),
        "{e}"
    );
    let e = err("kind = \"sre-adaptive\"\nk = 0.1");
    assert!(e.contains("retry.throttle.k"), "{e}");
    let e = err("kind = \"ratio\"\nbogus = 1");
    assert!(e.contains("bogus"), "{e}");
    let e = Scenario::from_toml_str(
        "[retry]\nbudget_percent = 10.0\n[retry.throttle]\nkind = \"grpc\"",
        &herd_sim::Limits::default(),
        |_| {},
    )
    .and_then(|s| Simulation::new(&s, &Limits::default()).map(|_| ()))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("retry.throttle") && e.contains("not both"),
        "{e}"
    );
}

#[test]
fn the_cohort_engine_says_a_rate_limiter_needs_the_agent_engine() {
    let s = storm("[retry.throttle]\nkind = \"aws-adaptive\"\n");
    let e = Simulation::with_engine(&s, &Limits::unlimited(), Engine::Cohort)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("retry.throttle.kind") && e.contains("agent engine"),
        "{e}"
    );
    let ratio = storm("[retry.throttle]\nkind = \"ratio\"\n");
    assert!(Simulation::with_engine(&ratio, &Limits::unlimited(), Engine::Cohort).is_ok());
}

/// `herd sweep --set retry.throttle.k=1.5,2,3`: a throttle's settings can be swept even when
/// the scenario gives only its kind, and each value reaches the runs.
#[test]
fn a_sweep_varies_a_throttle_setting() {
    use herd_sim::sweep::{Axis, Sweep};
    let base: toml::Value = toml::from_str(
        "horizon_s = 60.0\n[clients]\ncount = 200\n[server]\ncapacity = 5\noutages = []\n\
         [retry]\nrules = [\"full\"]\n[retry.throttle]\nkind = \"grpc-adaptive\"\n",
    )
    .unwrap();
    let axes: Vec<Axis> = vec!["retry.throttle.k=1,2,3".parse().unwrap()];
    let sweep = Sweep::new(&base, axes, None, None, 1, &Limits::default()).unwrap();
    let rows = sweep.run(&|| {}, &herd_sim::Cancel::new()).unwrap();
    assert_eq!(rows.len(), 3);
    let requests: Vec<f64> = rows
        .iter()
        .map(|r| r.metric("requests_per_client").unwrap().mean.unwrap())
        .collect();
    // A larger K throttles less: more attempts per client.
    assert!(requests[0] < requests[2], "{requests:?}");
    let err = Sweep::new(
        &base,
        vec!["retry.throttle.capacity=5".parse().unwrap()],
        None,
        None,
        1,
        &Limits::default(),
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(err.contains("retry.throttle.capacity"), "{err}");
}
