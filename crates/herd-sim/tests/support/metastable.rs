//! What the metastable tests share: the shipped scenarios and a run of one.
#![allow(dead_code)] // each test binary uses its own share of these

use herd_sim::Limits;
use herd_sim::metastable::{Metastable, MetastableReport, MetastableScenario};

fn shipped(text: &str) -> MetastableScenario {
    MetastableScenario::from_toml_str(text).expect("shipped scenario parses")
}

/// `scenarios/metastable-retry.toml`: retries without a budget.
pub fn no_budget() -> MetastableScenario {
    shipped(include_str!("../../../../scenarios/metastable-retry.toml"))
}

/// `scenarios/metastable-retry-budget.toml`: the same with a 10 % retry budget.
pub fn with_budget() -> MetastableScenario {
    shipped(include_str!(
        "../../../../scenarios/metastable-retry-budget.toml"
    ))
}

/// Runs the scenario's rule with `seed`.
pub fn run(s: &MetastableScenario, seed: u64) -> MetastableReport {
    Metastable::new(s, &Limits::default())
        .expect("valid")
        .run(s.retry.rule, seed, herd_sim::Watch::none())
        .expect("runs")
}
