//! `herd lab storm` on a small storm: the real server's figures equal the simulator's within
//! the slack real timers need.
//!
//! This test sleeps in real time by necessity (it checks the simulator against real timers);
//! it is kept short (about three seconds), bounded, and on loopback only.
use std::time::Duration;

use herd::RuleName;
use herd_lab::storm::{LabReport, LabStorm, LabStormError};
use herd_sim::Scenario;

/// 40 clients, an outage over the first second, 4 answers per 100 ms window, constant 500 ms.
const SMALL: &str = include_str!("../data/small_storm.toml");

fn small() -> Scenario {
    Scenario::from_toml_str(SMALL, &herd_sim::Limits::default(), |_| {}).expect("valid scenario")
}

/// Plays `lab`, which must be playable, and must end within `seconds` of real time.
async fn play(lab: Result<LabStorm, LabStormError>, seconds: u64) -> LabReport {
    let lab = lab.expect("playable");
    tokio::time::timeout(Duration::from_secs(seconds), lab.run())
        .await
        .expect("the storm ends")
        .expect("the storm runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deterministic_rule_measures_what_the_simulator_predicts() {
    // 100 ms steps played as 50 ms: coarse enough for a debug build on a busy machine.
    let report = play(LabStorm::new(small(), RuleName::Constant, 1, 0.5), 60).await;
    let (m, s) = (&report.measured, &report.simulated);
    eprintln!("{}", report.render());

    // Every client served, every request accounted for.
    assert_eq!(m.served, 40);
    assert_eq!(s.served, 40);
    assert_eq!(report.client_attempts, m.requests, "no request lost");
    assert_eq!(report.transport_errors, 0);
    assert!(report.seed_spread.is_none(), "constant draws nothing");

    // An attempt that misses its step by a real timer's lag shifts the herd by one step; allow
    // one pause (500 ms) on the times and 15 % on the counts.
    let near = |a: Option<f64>, b: Option<f64>, slack: f64| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= slack,
        _ => false,
    };
    assert!(
        near(m.half_served_s, s.half_served_s, 0.5),
        "half served: {:?} vs {:?}",
        m.half_served_s,
        s.half_served_s
    );
    assert!(
        near(m.all_served_s, s.all_served_s, 1.0),
        "all served: {:?} vs {:?}",
        m.all_served_s,
        s.all_served_s
    );
    let ratio = m.requests_per_client / s.requests_per_client;
    assert!(
        (0.85..=1.15).contains(&ratio),
        "requests per client: {} vs {}",
        m.requests_per_client,
        s.requests_per_client
    );
    let peak = m.peak_after_outage as f64 / s.peak_after_outage as f64;
    assert!(
        (0.75..=1.25).contains(&peak),
        "peak after outage: {} vs {}",
        m.peak_after_outage,
        s.peak_after_outage
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jittered_rule_falls_within_the_simulated_seeds_and_gets_a_verdict() {
    let report = play(LabStorm::new(small(), RuleName::Full, 1, 0.5), 60).await;
    eprintln!("{}", report.render());
    assert_eq!(report.transport_errors, 0);
    assert_eq!(
        report.client_attempts, report.measured.requests,
        "no request lost"
    );
    assert_eq!(report.measured.served, 40);
    let spread = report.seed_spread.as_ref().expect("full is jittered");
    let rpc = spread
        .requests_per_client
        .expect("everyone served in every seed");
    let m = report.measured.requests_per_client;
    assert!(
        m >= rpc.min * 0.85 && m <= rpc.max * 1.15,
        "requests per client {m} outside {rpc:?}"
    );
    let verdict = report.verdict.as_ref().expect("judged");
    assert!(
        verdict.tolerance.contains("simulated seeds"),
        "{}",
        verdict.line()
    );
    assert!(report.render().contains("verdict: "));
}

/// A storm that lasts 0 s (no outage, room for everyone) at the slowest time scale: the lab
/// ends about a step after it starts. Before, it waited five steps before starting (5 s here)
/// and a larger scale waited minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_that_lasts_no_time_ends_at_once_at_the_slowest_scale() {
    let mut s = small();
    s.server.outages.clear();
    s.server.capacity = 100;
    let lab = LabStorm::new(s, RuleName::Constant, 1, herd_lab::storm::MAX_TIME_SCALE);
    let started = std::time::Instant::now();
    let report = play(lab, 30).await;
    assert_eq!(report.measured.served, 40);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn transport_errors_make_a_run_not_comparable() {
    use herd_lab::judge::{Verdict, storm as judge};
    let lab = LabStorm::new(small(), RuleName::Constant, 1, 0.5).expect("playable");
    let sim = lab.simulate().expect("simulates");
    let figures = herd_lab::storm::StormFigures::simulated(&sim);
    let mut report = herd_lab::storm::LabReport {
        rule: "constant".into(),
        seed: 1,
        clients: 40,
        time_scale: 0.5,
        step_real_ms: 50.0,
        window_s: 0.1,
        capacity: 4.0,
        first_window_after_outage: 10,
        measured: figures.clone(),
        simulated: figures,
        seed_spread: None,
        measured_arrivals: Vec::new(),
        measured_served: Vec::new(),
        simulated_arrivals: Vec::new(),
        simulated_served: Vec::new(),
        client_attempts: sim.requests,
        late_attempts: 0,
        transport_errors: 0,
        worst_tick_lag_ms: 0.0,
        real_s: 1.0,
        verdict: None,
    };
    assert_eq!(judge(&report).verdict, Verdict::Agrees);
    report.measured.requests_per_client *= 1.5;
    let j = judge(&report);
    assert_eq!(j.verdict, Verdict::Differs);
    assert!(j.line().contains("requests per client"), "{}", j.line());
    report.transport_errors = 3;
    let j = judge(&report);
    assert_eq!(j.verdict, Verdict::NotComparable);
    assert!(
        j.line().starts_with("verdict: NOT COMPARABLE"),
        "{}",
        j.line()
    );
}

fn input_error(scenario: Scenario, time_scale: f64) -> String {
    match LabStorm::new(scenario, RuleName::Full, 1, time_scale) {
        Err(LabStormError::Input(msg)) => msg,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn what_the_lab_cannot_play_is_refused_naming_the_field() {
    let mut s = small();
    s.clients.count = 5_001;
    assert!(input_error(s, 0.1).starts_with("clients.count: lab storm runs 1 to 5000"));

    let mut s = small();
    s.server.warmup_s = 2.0;
    assert!(input_error(s, 0.1).starts_with("server.warmup_s:"));

    let mut s = small();
    s.clients.arrivals_per_s = 10.0;
    assert!(input_error(s, 0.1).starts_with("clients.arrivals_per_s:"));

    // Loopback's own latency is what the lab measures; a simulated one is not added.
    let mut s = small();
    s.clients.latency.sd_ms = 30.0;
    assert!(input_error(s, 0.1).starts_with("clients.latency: lab storm does not model"));

    assert!(input_error(small(), 0.001).starts_with("time scale 0.001: a 100 ms step"));
    assert!(input_error(small(), f64::NAN).starts_with("time_scale must be in (0, 10]"));
    // Before: a panic in Duration::from_secs_f64.
    assert!(input_error(small(), 1e25).starts_with("time_scale must be in (0, 10]"));

    let mut s = small();
    s.server.refusal_cost = 1.5;
    assert!(input_error(s, 0.1).starts_with("server.refusal_cost"));
}

#[tokio::test]
async fn a_storm_too_long_for_real_time_is_refused_before_it_starts() {
    let mut s = small();
    s.retry.pause_ms = 600_000.0;
    s.horizon_s = 3_600.0;
    let lab = LabStorm::new(s, RuleName::Constant, 1, 1.0).expect("playable in principle");
    match lab.run().await {
        Err(LabStormError::Input(msg)) => assert!(msg.starts_with("the storm lasts"), "{msg}"),
        other => panic!("expected an input error, got {other:?}"),
    }
}
