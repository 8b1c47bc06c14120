//! What the storm tests share: a run whose clients and attempts are all accounted for.
#![allow(dead_code)] // each test binary uses its own share of these

use herd::RuleName;
use herd_sim::{Engine, Limits, RunResult, Scenario, Simulation};
use rayon::prelude::*;

pub mod chance;

/// Runs `rule` with `seed` and checks [`conserved`].
pub fn run(sim: &Simulation, rule: RuleName, seed: u64) -> RunResult {
    let r = sim.run(rule, seed, herd_sim::Watch::none()).expect("runs");
    conserved(&r);
    r
}

/// Every client was served, gave up or still waits, and the per-window series add up to
/// the run's attempts and answers.
pub fn conserved(r: &RunResult) {
    assert_eq!(
        r.served + r.gave_up + r.waiting,
        r.clients,
        "conservation broken for {} seed {}: {r:?}",
        r.rule,
        r.seed
    );
    assert_eq!(r.series.arrivals.iter().sum::<u64>(), r.requests);
    assert_eq!(r.series.served.iter().sum::<u64>(), r.served);
}

/// Where the cohort engine's seeds start when the two engines are compared; the agent's
/// start at 1, so the two samples are disjoint and independent.
pub const COHORT_SEED_BASE: u64 = 1_000_000;

/// `seeds` runs of `rule` on `engine` (the agent's from seed 1, the cohort's from
/// [`COHORT_SEED_BASE`]), each checked by [`conserved`], in seed order.
pub fn runs(scenario: &Scenario, engine: Engine, rule: RuleName, seeds: u64) -> Vec<RunResult> {
    let sim = Simulation::with_engine(scenario, &Limits::unlimited(), engine).expect("valid");
    let first = match engine {
        Engine::Agent => 1,
        Engine::Cohort => COHORT_SEED_BASE,
    };
    (first..first + seeds)
        .into_par_iter()
        .map(|seed| run(&sim, rule, chance::seed(seed)))
        .collect()
}

/// A sample's mean and the standard error of that mean (from the sample's own variance).
pub fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// The default storm's deterministic rows for seed 1: (rule, half served, all served,
/// requests per client), the same in both engines, both pause modes and at any scale.
pub const DEFAULT_ROWS: [(RuleName, f64, f64, f64); 3] = [
    (RuleName::Immediate, 12.0, 13.9, 120.5),
    (RuleName::Constant, 30.0, 49.0, 30.5),
    (RuleName::Exponential, 405.5, 785.5, 27.5),
];

/// Runs [`DEFAULT_ROWS`]' rules on `sim` with seed 1 and checks their figures (`what` names
/// the run in a failure); returns the runs for further checks.
pub fn default_rows(sim: &Simulation, what: &str) -> Vec<RunResult> {
    DEFAULT_ROWS
        .iter()
        .map(|&(rule, half, all, per_client)| {
            let r = run(sim, rule, 1);
            assert_eq!(
                (r.half_served_s, r.all_served_s, r.requests_per_client),
                (Some(half), Some(all), per_client),
                "{rule} {what}"
            );
            r
        })
        .collect()
}

/// `parse` refuses each `(text, field, line)` case's text with an error that [names
/// `field` at `line`](names_field); returns the errors, in order, for further checks.
pub fn refusals_name_fields<T: std::fmt::Debug>(
    cases: &[(&str, &str, usize)],
    parse: impl Fn(&str) -> Result<T, herd_sim::ScenarioError>,
) -> Vec<herd_sim::ScenarioError> {
    cases
        .iter()
        .map(|&(text, field, line)| {
            let err = parse(text).expect_err(text);
            names_field(&err, text, field, line);
            err
        })
        .collect()
}

/// `err`, the error scenario `text` gets, names `field` at `line`, in one line of text.
pub fn names_field(err: &herd_sim::ScenarioError, text: &str, field: &str, line: usize) {
    assert_eq!(err.field_name(), Some(field), "{text:?}: {err}");
    assert_eq!(err.line(), Some(line), "{text:?}: {err}");
    assert!(!err.to_string().contains('\n'), "{text:?}: {err}");
}

/// The Python interpreter for a reference check named `check`, or `None` (and a SKIPPED line)
/// when the machine has none; under `CI` a missing python3 is a failure (`.ci/run` installs it).
pub fn python(check: &str) -> Option<&'static str> {
    let found = ["python3", "python"].into_iter().find(|p| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").is_err(),
            "python3 is required under CI for the {check}"
        );
        eprintln!("SKIPPED: no python3 on this machine; the {check} did not run");
    }
    found
}
