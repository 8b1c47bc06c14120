//! The qualitative claims of the metastable scenario, from the shipped
//! files: without a budget the retries lock the load in near twice the offered rate with
//! little goodput; with a 10 % budget the server recovers; below a threshold of offered load
//! it recovers by itself.
use herd::RuleName;
use herd_sim::Limits;
use herd_sim::Watch;
use herd_sim::metastable::{Metastable, MetastableScenario};

use crate::support;

use crate::metastable_scenes as metastable;

use metastable::{no_budget, run, with_budget};

const OUTAGE_END_S: f64 = 20.0;

#[test]
fn the_shipped_files_are_the_defaults_with_and_without_a_budget() {
    let mut plain = no_budget();
    assert_eq!(plain.model.as_deref(), Some("metastable"));
    plain.model = None;
    assert_eq!(plain, MetastableScenario::default());
    let budget = with_budget();
    assert_eq!(budget.retry.budget_percent, 10.0);
    assert_eq!(
        MetastableScenario {
            retry: no_budget().retry,
            ..budget
        },
        no_budget()
    );
}

#[test]
fn without_a_budget_the_load_locks_in_at_twice_the_offered_rate() {
    let s = no_budget();
    let offered = s.clients.offered_qps;
    for seed in [1, 2] {
        let r = run(&s, seed);
        assert_eq!(r.recovered_at_s, None, "seed {seed}: {}", r.outcome);
        assert_eq!(r.outcome, "still overloaded at the horizon");
        let a = &r.after_outage;
        let ratio = a.attempts_per_s / offered;
        assert!(
            (1.6..=2.2).contains(&ratio),
            "seed {seed}: {ratio}x offered"
        );
        assert!(
            a.goodput_per_s < 0.05 * offered,
            "seed {seed}: goodput {}",
            a.goodput_per_s
        );
        // The server is busy all the same: its work goes to clients that already left.
        assert!(a.throughput_per_s > 5.0 * a.goodput_per_s, "seed {seed}");
        assert!(r.wasted > 0 && a.queue_at_horizon > 10_000, "seed {seed}");
        // Little goodput in *every* window from two seconds after the outage to the horizon.
        for w in r.windows.iter().filter(|w| w.start_s >= OUTAGE_END_S + 2.0) {
            assert!(
                (w.goodput as f64) < 0.1 * offered,
                "seed {seed}, window at {} s: goodput {}",
                w.start_s,
                w.goodput
            );
        }
    }
}

#[test]
fn before_the_outage_the_same_system_is_healthy() {
    let r = run(&no_budget(), 1);
    for w in r
        .windows
        .iter()
        .filter(|w| w.start_s >= 1.0 && w.start_s < 10.0)
    {
        assert_eq!(w.retries, 0, "window at {} s", w.start_s);
        assert!(w.queue <= 100, "window at {} s", w.start_s);
        assert!(w.goodput as f64 >= 0.85 * w.first_attempts as f64);
    }
}

#[test]
fn a_ten_percent_retry_budget_recovers_within_seconds() {
    let s = with_budget();
    let offered = s.clients.offered_qps;
    for seed in [1, 2, 3] {
        let r = run(&s, seed);
        let at = r.recovered_at_s.expect("recovers");
        assert!(
            at <= OUTAGE_END_S + 5.0,
            "seed {seed}: recovered only at {at} s"
        );
        assert!(r.outcome.starts_with("recovered at"), "{}", r.outcome);
        let a = &r.after_outage;
        assert!(
            a.goodput_per_s >= 0.9 * offered,
            "seed {seed}: {}",
            a.goodput_per_s
        );
        assert!(
            a.attempts_per_s <= 1.1 * a.first_attempts_per_s,
            "seed {seed}"
        );
        assert!(
            r.denied_by_budget > 0,
            "the budget denied retries during the outage"
        );
    }
}

#[test]
fn low_offered_load_recovers_by_itself_and_280_does_not() {
    let seeds = [1, 2, 3];
    let mut recovered = Vec::new();
    for qps in [150.0, 160.0, 200.0, 280.0] {
        let mut s = no_budget();
        s.clients.offered_qps = qps;
        let model = Metastable::new(&s, &Limits::default()).expect("valid");
        let runs: Vec<_> = seeds
            .iter()
            .map(|&seed| {
                model
                    .run(RuleName::Constant, seed, Watch::none())
                    .expect("runs")
            })
            .collect();
        if qps == 150.0 {
            // At low load, the load after the outage is the offered load: no retries remain.
            for r in &runs {
                let after = &r.after_outage;
                assert!(after.attempts_per_s < 1.1 * 150.0, "{r}");
            }
        }
        recovered.push(runs.iter().filter(|r| r.recovered_at_s.is_some()).count());
    }
    assert_eq!(recovered, [3, 3, 0, 0]);
}

#[test]
fn without_an_outage_there_is_nothing_to_recover_from() {
    let mut s = no_budget();
    s.server.outages.clear();
    s.horizon_s = 30.0;
    let r = run(&s, 1);
    assert_eq!(r.recovered_at_s, Some(0.0), "{}", r.outcome);
    assert_eq!(r.gave_up, 0);
}

#[test]
fn runs_are_reproducible_from_the_seed() {
    let mut s = no_budget();
    s.horizon_s = 30.0;
    assert_eq!(run(&s, 7), run(&s, 7));
    assert_ne!(run(&s, 7).windows, run(&s, 8).windows);
}

#[test]
fn every_request_is_accounted_for() {
    for s in [no_budget(), with_budget()] {
        let r = run(&s, 4);
        let windows_gave_up: u64 = r.windows.iter().map(|w| w.gave_up).sum();
        assert_eq!(windows_gave_up, r.gave_up);
        // served + gave up + denied + still pending = every request.
        assert_eq!(r.served + r.gave_up + r.pending, r.new_requests, "{r:?}");
    }
}

#[test]
fn bad_values_name_their_field() {
    let cases = [
        ("[server]\nslow_factor = 0.5\n", "server.slow_factor", 2),
        ("[server]\noutages = [[5, 3]]\n", "server.outages", 2),
        ("[clients]\ntimeout_s = 0\n", "clients.timeout_s", 2),
        ("[clients]\noffered_qps = 1e12\n", "clients.offered_qps", 2),
        (
            "[retry]\nrule = \"constant\"\npause_ms = 0\n",
            "retry.pause_ms",
            3,
        ),
        (
            "[retry]\nbudget_percent = 5\nbudget_window_s = 0\n",
            "retry.budget_window_s",
            3,
        ),
        ("model = \"storm\"\n", "model", 1),
        ("window_s = 0\n", "window_s", 1),
    ];
    support::refusals_name_fields(&cases, MetastableScenario::from_toml_str);
    let err = MetastableScenario::from_toml_str("[server]\nknee = 3\n").expect_err("unknown");
    assert!(err.to_string().contains("unknown field `knee`"), "{err}");
}

#[test]
fn a_run_that_cannot_fit_in_memory_is_refused_up_front() {
    let small = Limits {
        max_bytes: 1 << 20,
        ..Limits::default()
    };
    let err = Metastable::new(&no_budget(), &small).expect_err("1.6 MB of requests in 1 MiB");
    assert_eq!(err.field_name(), Some("clients.offered_qps"));
    assert!(err.to_string().contains("GiB"), "{err}");
}

/// Retries without an attempt limit or a budget grow without bound while the server is stuck;
/// the run stops with an error naming the field instead of exhausting the machine.
#[test]
fn unlimited_retries_stop_at_the_attempt_cap_with_an_error() {
    let mut s = no_budget();
    s.clients.max_attempts = 0;
    s.retry.rule = RuleName::Immediate;
    let small = Limits {
        max_run_attempts: 50_000,
        ..Limits::default()
    };
    let err = Metastable::new(&s, &small)
        .expect("valid")
        .run(s.retry.rule, 1, Watch::none())
        .expect_err("more than 50 000 attempts");
    assert_eq!(err.field_name(), Some("clients.max_attempts"), "{err}");
    assert!(err.to_string().contains("50000 attempts"), "{err}");
}

/// The server's time is kept in exact units: 300 requests a second in 1 ms steps is 0.3 of a
/// request a step, so a server that is never idle completes exactly ⌊0.3·n⌋ requests in its
/// first `n` steps: 3 in every 10 ms window. In `f64` the tenth step's credit was
/// 2.9999999999999996, and the first second completed 299. The same for a capacity and a
/// slow factor with decimals past the knee (0.7 a step at a cost of 2.5: 7 every 25 steps).
#[test]
fn the_server_completes_exactly_the_work_its_capacity_allows() {
    for (capacity, slow_factor, knee, per_window, steps) in [
        (300.0, 1.0, 0, 3, 10),
        (700.0, 2.5, 0, 7, 25),
        (123.4, 1.0, 1_000_000, 1234, 10_000),
    ] {
        let mut s = no_budget();
        s.step_ms = 1.0;
        s.horizon_s = 2.0 * steps as f64 / 1000.0;
        s.window_s = steps as f64 / 1000.0;
        // Always a queue, from the first step: a thousand new requests a millisecond.
        s.clients.offered_qps = 1e6;
        s.clients.max_attempts = 1;
        s.clients.timeout_s = 1000.0;
        s.server.capacity_qps = capacity;
        s.server.slow_factor = slow_factor;
        s.server.knee_queue = knee;
        s.server.outages.clear();
        let report = run(&s, 1);
        let done: Vec<u64> = report.windows.iter().map(|w| w.throughput).collect();
        assert_eq!(
            done,
            [per_window, per_window],
            "capacity {capacity}, slow factor {slow_factor}"
        );
    }
    // Counted exactly, so at most nine digits after the point, or an error naming the field.
    for (field, edit) in [
        ("server.capacity_qps", "capacity_qps = 300.0000000001"),
        ("server.slow_factor", "slow_factor = 1.0000000001"),
    ] {
        let text = format!("[server]\n{edit}\n");
        let err = MetastableScenario::from_toml_str(&text).expect_err(&text);
        assert_eq!(err.field_name(), Some(field), "{err}");
        assert!(
            err.to_string().contains("at most 9 digits after the point"),
            "{err}"
        );
    }
}
