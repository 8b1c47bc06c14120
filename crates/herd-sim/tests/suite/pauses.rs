//! Pauses in whole steps or continuous (docs/model.md, "Pauses in whole steps or continuous"),
//! measured through the simulator's own path: both engines, the library's rules, the failure
//! step.
//!
//! Each scene is a herd that fails once in an outage and makes exactly one retry
//! (`max_attempts = 2`), so the arrivals at steps 1, 2, 3, … are the counts of the first pause
//! in whole steps. Their law is checked with a chi-square goodness-of-fit test at level 10⁻⁴
//! (the seeds are fixed, so each test is deterministic).
use herd::RuleName;
use herd_sim::Watch;
use herd_sim::{Engine, Limits, Pauses, Scenario, Simulation};

use crate::support;

/// Clients in each herd: 10 000 or more per cell of the law.
const CLIENTS: u64 = 40_000;

/// A herd of `CLIENTS` that fails at step 0 (an outage over the whole 10 s horizon) and
/// retries once, with `base_ms` and steps of 100 ms.
fn one_retry(pauses: Pauses, base_ms: f64) -> Scenario {
    let mut s = Scenario {
        pauses,
        horizon_s: 10.0,
        ..Scenario::default()
    };
    s.clients.count = CLIENTS;
    s.clients.max_attempts = 2;
    s.server.outages = vec![[0.0, 10.0]];
    s.retry.base_ms = base_ms;
    s
}

/// How many first retries came 1, 2, … `steps` steps after the failure, by `engine`.
fn first_pauses(s: &Scenario, engine: Engine, rule: RuleName, steps: usize) -> Vec<u64> {
    let sim = Simulation::with_engine(s, &Limits::unlimited(), engine).expect("valid");
    let r = support::run(&sim, rule, 7);
    assert_eq!(r.gave_up, CLIENTS, "every client retried once and gave up");
    assert_eq!(r.requests, 2 * CLIENTS);
    let counts: Vec<u64> = (1..=steps)
        .map(|n| r.series.arrivals.get(n).copied().unwrap_or(0))
        .collect();
    assert_eq!(
        counts.iter().sum::<u64>(),
        CLIENTS,
        "{rule}: every first pause within 1..={steps} steps: {:?}",
        r.series.arrivals
    );
    counts
}

/// Pearson's chi-square of `counts` against the probabilities `law` (zeros must be empty).
fn chi_square(counts: &[u64], law: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    counts
        .iter()
        .zip(law)
        .map(|(&c, &p)| {
            if p == 0.0 {
                assert_eq!(c, 0, "a pause the law excludes was drawn: {counts:?}");
                0.0
            } else {
                let e = p * n as f64;
                (c as f64 - e).powi(2) / e
            }
        })
        .sum()
}

/// The chi-square quantile at `1 − 10⁻⁶ / 12` for `cells − 1` degrees of freedom (cells
/// with probability > 0): the file makes 12 goodness-of-fit tests (three herds, two pause
/// modes, two engines), so together they fail by chance with probability at most 10⁻⁶.
fn critical(law: &[f64]) -> f64 {
    match law.iter().filter(|&&p| p > 0.0).count() {
        2 => 28.73,
        3 => 32.60,
        4 => 35.78,
        n => panic!("no critical value for {n} cells"),
    }
}

fn fits(s: &Scenario, rule: RuleName, law: &[f64]) {
    for engine in Engine::ALL {
        let counts = first_pauses(s, engine, rule, law.len());
        let x2 = chi_square(&counts, law);
        assert!(
            x2 <= critical(law),
            "{rule} ({}, {engine}): first pauses {counts:?} against {law:?}: chi-square {x2:.1}",
            s.pauses
        );
    }
}

/// [`fits`] in both modes, on herds whose rule has `base_ms`: the first pauses follow
/// `in_steps` with whole-step pauses and `continuous` with continuous ones.
fn fits_both(rule: RuleName, base_ms: f64, in_steps: &[f64], continuous: &[f64]) {
    fits(&one_retry(Pauses::Steps, base_ms), rule, in_steps);
    fits(&one_retry(Pauses::Continuous, base_ms), rule, continuous);
}

/// The seeds' model: decorrelated's first pause is uniform on `base..=3 · base` steps, so 1,
/// 2 or 3 steps, a third each. Continuous pauses in `[100 ms, 300 ms]` round up to 2 or 3
/// steps (1 only for exactly 100 ms, one chance in 2·10⁸). This is the fix: on the old code
/// (continuous only) the one-step retries were missing.
#[test]
fn decorrelated_first_retries_are_one_two_or_three_steps() {
    let third = 1.0 / 3.0;
    fits_both(
        RuleName::Decorrelated,
        100.0,
        &[third, third, third],
        &[0.0, 0.5, 0.5],
    );
}

/// Full jitter after the first failure with `g = base = 4` steps. In whole steps the library
/// draws an integer uniform on `0..=4` and a pause is at least one step: 1 step with
/// probability 2/5, 2, 3 and 4 steps with 1/5 each. Continuous: uniform on `1..=4` steps.
#[test]
fn full_jitter_in_steps_is_the_librarys_integer_draw() {
    let fifth = 0.2;
    fits_both(
        RuleName::Full,
        400.0,
        &[2.0 * fifth, fifth, fifth, fifth],
        &[0.25, 0.25, 0.25, 0.25],
    );
}

/// Equal jitter with `g = 4` steps: `g/2 + uniform(0..=g/2)` is 2, 3 or 4 steps in whole
/// steps; continuous, `200 ms + U[0, 200 ms]` rounds up to 3 or 4 steps.
#[test]
fn equal_jitter_in_steps_starts_at_half_the_growth() {
    let third = 1.0 / 3.0;
    fits_both(
        RuleName::Equal,
        400.0,
        &[0.0, third, third, third],
        &[0.0, 0.0, 0.5, 0.5],
    );
}

/// gRPC's rule is real-valued (a multiplier, ± jitter), so it draws in nanoseconds in both
/// modes: whole steps would truncate its growth (`1 step · 1.6` is 1 step, for ever).
#[test]
fn grpc_draws_alike_in_both_modes() {
    let run = |pauses| {
        let s = Scenario {
            pauses,
            ..Scenario::default()
        };
        Simulation::new(&s, &Limits::default())
            .unwrap()
            .run(RuleName::Grpc, 3, Watch::none())
            .unwrap()
    };
    let steps = run(Pauses::Steps);
    let continuous = run(Pauses::Continuous);
    assert_eq!(steps, continuous);
    assert!(
        steps.requests_per_client < 20.0,
        "{}",
        steps.requests_per_client
    );
}

/// The shipped default draws whole steps, and its deterministic rows are the seeds' table in
/// both modes (their pauses are whole steps either way).
#[test]
fn the_default_scenario_draws_whole_steps() {
    let file = Scenario::from_toml_str(
        include_str!("../../../../scenarios/default.toml"),
        &herd_sim::Limits::default(),
        |_| {},
    )
    .unwrap();
    assert_eq!(file.pauses, Pauses::Steps);
    assert_eq!(Scenario::default().pauses, Pauses::Steps);
    assert_eq!(
        Scenario::from_toml_str("", &herd_sim::Limits::default(), |_| {})
            .unwrap()
            .pauses,
        Pauses::Steps
    );
    for pauses in Pauses::ALL {
        let s = Scenario {
            pauses,
            ..Scenario::default()
        };
        let sim = Simulation::new(&s, &Limits::default()).unwrap();
        support::default_rows(&sim, &pauses.to_string());
    }
}

/// In whole steps, a time a rule uses must be a whole number of steps: one line naming the
/// field (and the line of the file), never a silent rounding. The times a rule does not use,
/// and gRPC's, are not checked; continuous pauses take any time.
#[test]
fn times_that_are_not_whole_steps_name_their_field() {
    let errors = support::refusals_name_fields(
        &[
            (
                "[retry]\nrules = [\"full\"]\nbase_ms = 150\n",
                "retry.base_ms",
                3,
            ),
            (
                "[retry]\nrules = [\"decorrelated\"]\ncap_ms = 20050\n",
                "retry.cap_ms",
                3,
            ),
            (
                "[retry]\nrules = [\"constant\"]\npause_ms = 1234\n",
                "retry.pause_ms",
                3,
            ),
        ],
        |t: &str| Scenario::from_toml_str(t, &herd_sim::Limits::default(), |_| {}),
    );
    assert!(
        errors[0]
            .to_string()
            .contains("150 ms is not a whole number of steps of 100 ms"),
        "{}",
        errors[0]
    );
    // Unused by the rules listed, or a rule of real-valued formulas: accepted.
    assert!(
        Scenario::from_toml_str(
            "[retry]\nrules = [\"full\"]\npause_ms = 1234\n",
            &herd_sim::Limits::default(),
            |_| {}
        )
        .is_ok()
    );
    assert!(
        Scenario::from_toml_str(
            "[retry]\nrules = [\"grpc\"]\nbase_ms = 150\n",
            &herd_sim::Limits::default(),
            |_| {}
        )
        .is_ok()
    );
    assert!(
        Scenario::from_toml_str(
            "pauses = \"continuous\"\n[retry]\nbase_ms = 150\n",
            &herd_sim::Limits::default(),
            |_| {}
        )
        .is_ok()
    );
    // A rule run that the scenario does not list is checked when it is built.
    let s = Scenario::from_toml_str(
        "[retry]\nrules = [\"immediate\"]\nbase_ms = 150\n",
        &herd_sim::Limits::default(),
        |_| {},
    )
    .unwrap();
    let sim = Simulation::new(&s, &Limits::default()).unwrap();
    let err = sim.run(RuleName::Full, 1, Watch::none()).unwrap_err();
    assert_eq!(err.field_name(), Some("retry.base_ms"), "{err}");
}

#[test]
fn an_unknown_mode_names_pauses() {
    let text = "seed = 2\npauses = \"ticks\"\n";
    let err = Scenario::from_toml_str(text, &herd_sim::Limits::default(), |_| {}).unwrap_err();
    support::names_field(&err, text, "pauses", 2);
    assert!(
        err.to_string().contains("\"steps\" or \"continuous\""),
        "{err}"
    );
    let tree: toml::Value = toml::from_str("pauses = 3\n").unwrap();
    let err = herd_sim::registry::check(&tree, &Limits::default()).unwrap_err();
    assert_eq!(err.field_name(), Some("pauses"), "{err}");
    assert_eq!("Continuous".parse::<Pauses>().unwrap(), Pauses::Continuous);
}
