//! The metastable model's claims checked over many seeds: a FIFO server that never slows down
//! still locks in, where the threshold lies and why, which of Bronson et al.'s mitigations
//! break the loop, and the model against queueing theory (M/D/1, Pollaczek–Khinchine).
use herd_sim::Limits;
use herd_sim::metastable::{Metastable, MetastableReport, MetastableScenario};

use crate::metastable_scenes as metastable;

use metastable::{no_budget, run};

use crate::support::chance;

const SEEDS: u64 = 8;

/// A change to a scenario.
type Edit = fn(&mut MetastableScenario);

/// Runs of `s` that recovered, out of [`SEEDS`], and the mean attempts and goodput per second
/// after the outage.
fn over_seeds(s: &MetastableScenario) -> (u64, f64, f64) {
    let runs: Vec<MetastableReport> = (1..=SEEDS).map(|seed| run(s, seed)).collect();
    let recovered = runs.iter().filter(|r| r.recovered_at_s.is_some()).count() as u64;
    let mean = |f: fn(&MetastableReport) -> f64| runs.iter().map(f).sum::<f64>() / SEEDS as f64;
    (
        recovered,
        mean(|r| r.after_outage.attempts_per_s),
        mean(|r| r.after_outage.goodput_per_s),
    )
}

/// The Bronson example with a server that never slows down, over 60 s.
fn never_slows() -> MetastableScenario {
    let mut s = no_budget();
    s.server.slow_factor = 1.0;
    s.horizon_s = 60.0;
    s
}

/// Regression: the docs said metastability needs a server that slows past a knee. With
/// `slow_factor = 1` the FIFO queue alone locks in: once the wait passes the 1 s timeout,
/// every answer is late, every request retries, and 2 × 280 attempts per second exceed the
/// 300 the server answers.
#[test]
fn a_server_that_never_slows_still_locks_in() {
    let (recovered, attempts, goodput) = over_seeds(&never_slows());
    assert_eq!(recovered, 0, "{SEEDS} seeds");
    assert!(attempts > 1.9 * 280.0, "attempts/s {attempts}");
    assert!(goodput < 20.0, "goodput/s {goodput}");
}

/// The threshold without a knee: the two seconds after the outage carry the new requests and
/// the retries of the outage's last second, 2λ per second, so the backlog grows by
/// 2 · (2λ − 300); once it holds more than a timeout's worth of work (300), every answer is
/// late and the loop sustains itself (2λ > 300). So λ* = 300 · (1 + 1/2) / 2 = 225: below it
/// every seed recovers, well above it none does.
#[test]
fn without_a_knee_the_threshold_is_where_the_backlog_outlasts_the_timeout() {
    let mut s = never_slows();
    s.clients.offered_qps = 210.0;
    assert_eq!(over_seeds(&s).0, SEEDS, "210/s");
    s.clients.offered_qps = 250.0;
    assert_eq!(over_seeds(&s).0, 0, "250/s");
}

/// Each mitigation on a server that never slows breaks the loop in every seed: the attempts
/// fall back to about the offered rate and nearly all of it is answered. LIFO answers the
/// newest first, so the loop breaks at once, but the stale attempts it left at the back
/// drain only at 300 − 280 = 20 per second, so the verdict (which also wants at most 100
/// waiting) comes after 60 s; the other three recover by the verdict too.
#[test]
fn every_mitigation_breaks_the_loop_when_the_server_does_not_slow() {
    let mitigations: [(&str, Edit); 4] = [
        ("bounded queue of 300", |s| s.server.max_queue = 300),
        ("server-side deadlines", |s| s.server.drop_expired = true),
        ("LIFO above 100", |s| s.server.lifo_above = 100),
        ("shed above 0.5 s of wait", |s| s.server.shed_wait_s = 0.5),
    ];
    for (name, apply) in mitigations {
        let mut s = never_slows();
        apply(&mut s);
        let (recovered, attempts, goodput) = over_seeds(&s);
        assert!(
            attempts < 1.2 * 280.0 && goodput > 0.95 * 280.0,
            "{name}: {attempts} {goodput}"
        );
        let want = if name.starts_with("LIFO") { 0 } else { SEEDS };
        assert_eq!(recovered, want, "{name}");
    }
}

/// With the shipped server (ten times slower past a queue of 100) only a mitigation that
/// keeps the queue at or below the knee breaks the loop: a bounded queue of 100. Dropping
/// expired work and LIFO leave more than 100 live attempts waiting, so the server stays slow.
#[test]
fn past_a_knee_only_a_queue_bound_at_the_knee_breaks_the_loop() {
    let mut s = no_budget();
    s.horizon_s = 60.0;
    s.server.max_queue = 100;
    assert_eq!(over_seeds(&s).0, SEEDS, "bounded queue of 100");
    let mut s = no_budget();
    s.horizon_s = 60.0;
    s.server.drop_expired = true;
    s.server.lifo_above = 100;
    assert_eq!(over_seeds(&s).0, 0, "deadlines and LIFO");
}

#[test]
fn refused_attempts_are_accounted_for() {
    let mut s = never_slows();
    s.server.max_queue = 50;
    s.server.shed_wait_s = 0.1;
    let r = run(&s, 3);
    assert!(r.refused > 0);
    assert_eq!(r.served + r.gave_up + r.pending, r.new_requests, "{r:?}");
}

/// No retries, no outage, no slowdown, no timeout in sight: the server is an M/D/1 queue,
/// whose mean response time is `1/μ + ρ / (2μ(1 − ρ))` (Pollaczek–Khinchine with a
/// deterministic service time). At λ = 240, μ = 300 that is 10 ms. The model counts time in
/// steps of 0.05 ms, sending at a step's start and answering at its end, which adds at most
/// two steps (0.1 ms); the rest must be within the standard errors over the seeds that make
/// a false failure at most 10⁻⁶ likely (Student's t with `SEEDS − 1` degrees of freedom).
#[test]
fn without_retries_the_server_is_an_m_d_1_queue() {
    let mut s = no_budget();
    s.step_ms = 0.05;
    s.horizon_s = 30.0;
    s.clients.offered_qps = 240.0;
    s.clients.max_attempts = 1;
    s.clients.timeout_s = 1000.0;
    s.server.slow_factor = 1.0;
    s.server.outages.clear();
    let (mu, rho) = (300.0_f64, 0.8_f64);
    let want = 1.0 / mu + rho / (2.0 * mu * (1.0 - rho));
    let means: Vec<f64> = (1..=SEEDS)
        .map(|seed| {
            run(&s, chance::seed(seed))
                .mean_response_s
                .expect("answers")
        })
        .collect();
    let n = means.len() as f64;
    let mean = means.iter().sum::<f64>() / n;
    let se = (means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
    let granularity = 2.0 * s.step_ms / 1000.0;
    eprintln!("M/D/1: {want:.6} s; model {mean:.6} s ± {se:.6} over {SEEDS} seeds");
    assert!(
        (mean - want).abs()
            <= herd_sim::graph::z_limit(1e-6, 1, Some(SEEDS as u32 - 1)) * se + granularity,
        "mean response {mean:.6} s ± {se:.6}, M/D/1 {want:.6} s"
    );
}

#[test]
fn bad_mitigation_values_name_their_field() {
    let mut s = no_budget();
    s.server.shed_wait_s = -1.0;
    let err = Metastable::new(&s, &Limits::default()).unwrap_err();
    assert_eq!(err.field_name(), Some("server.shed_wait_s"), "{err}");
    let err =
        MetastableScenario::from_toml_str("model = \"metastable\"\n[server]\nmax_queue = -5\n")
            .unwrap_err();
    assert_eq!(err.field_name(), Some("server.max_queue"), "{err}");
}
