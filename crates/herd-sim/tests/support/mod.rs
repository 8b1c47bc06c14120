//! What the storm tests share: a run whose clients and attempts are all accounted for.
#![allow(dead_code)] // each test binary uses its own share of these

use herd::RuleName;
use herd_sim::{RunResult, Simulation};

/// Runs `rule` with `seed` and checks [`conserved`].
pub fn run(sim: &Simulation, rule: RuleName, seed: u64) -> RunResult {
    let r = sim.run(rule, seed).expect("runs");
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

/// `err`, the error scenario `text` gets, names `field` at `line`, in one line of text.
pub fn names_field(err: &herd_sim::ScenarioError, text: &str, field: &str, line: usize) {
    assert_eq!(err.field_name(), Some(field), "{text:?}: {err}");
    assert_eq!(err.line(), Some(line), "{text:?}: {err}");
    assert!(!err.to_string().contains('\n'), "{text:?}: {err}");
}
