//! The storm model behind the [`Model`] interface: how a scenario tree becomes a
//! [`Simulation`], and the metrics only this model defines (`recovered_s`, …).
//!
//! A storm tree is a [`Scenario`] plus one key of its own, `engine` (`agent`, the default, or
//! `cohort`), so that `herd sweep --set engine=agent,cohort` compares the two engines. The
//! metrics are defined in `docs/model.md`, "Storm metrics":
//!
//! - `half_served_s`, `all_served_s`, `requests_per_client`, `peak_after_outage`: as in
//!   [`RunResult`]; `all_served_s` is `None` unless every client was served;
//! - `served`, `gave_up`, `denied_by_budget`: clients (the last are the give-ups whose retry
//!   the retry budget denied);
//! - `recovered_s`, *time to recover*: seconds from the end of the last outage (from t = 0
//!   without outages) to the start of the first window, at or after that end, from which every
//!   window up to the horizon serves all the attempts that arrive in it; `None` ("never
//!   recovered") when a client is still waiting at the horizon or the last window with
//!   arrivals still refuses some;
//! - `recovered`: 1 when `recovered_s` is defined, else 0; over seeds, its mean is the share
//!   of runs that recovered (the sharpest view of a phase boundary).
use herd::RuleName;
use toml::Value;

use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::model::{self, MODEL_KEY, Metrics, MetricsResult, Model, Variant};
use crate::storm::metrics::RunResult;
use crate::storm::scenario::Scenario;
use crate::{Engine, Simulation, Watch};

/// The key of a storm scenario's top-level table that picks its engine.
pub const ENGINE_KEY: &str = "engine";

/// What a cohort-engine run counts as, in clients, when a sweep bounds its work: its cost
/// follows the states clients occupy, not their number (about this much at any size).
const COHORT_COST_CLIENTS: u64 = 1_000_000;

/// The storm model's metrics, in report order.
pub const METRICS: &[&str] = &[
    "recovered_s",
    "recovered",
    "half_served_s",
    "all_served_s",
    "requests_per_client",
    "peak_after_outage",
    "served",
    "gave_up",
    "denied_by_budget",
];

/// The storm engine a tree names (`engine = "…"`), [`Engine::Agent`] without the key.
fn engine_of(tree: &Value) -> Result<Engine, ScenarioError> {
    match tree.get(ENGINE_KEY) {
        None => Ok(Engine::Agent),
        Some(Value::String(name)) => name.parse(),
        Some(other) => Err(ScenarioError::field(
            ENGINE_KEY,
            format!("expected \"agent\" or \"cohort\", got {other}"),
        )),
    }
}

impl Model for Simulation {
    const NAME: &'static str = "storm";
    const ABOUT: &'static str =
        "a burst of clients that fail together and retry against a recovering server";
    const METRICS: &'static [&'static str] = METRICS;
    /// The table of a sweep: when the storm ended, its cost and its peak.
    const HEADLINE: &'static [&'static str] = &[
        "recovered_s",
        "all_served_s",
        "requests_per_client",
        "peak_after_outage",
    ];

    fn check(tree: &Value, limits: &Limits) -> Result<Self, ScenarioError> {
        let engine = engine_of(tree)?;
        let scenario: Scenario = model::from_tree(tree, &[MODEL_KEY, ENGINE_KEY])?;
        Simulation::with_engine(&scenario, limits, engine)
    }

    fn sweepable(&self) -> Result<Value, ScenarioError> {
        // A throttle's settings all written out, so that a sweep can set any of them.
        let mut scenario = self.scenario().clone();
        if let Some(throttle) = &scenario.retry.throttle {
            scenario.retry.throttle = Some(throttle.filled()?);
        }
        let mut tree = model::to_tree(&scenario, Self::NAME)?;
        if let Value::Table(t) = &mut tree {
            let engine = Value::String(self.engine().as_str().to_owned());
            t.insert(ENGINE_KEY.to_owned(), engine);
        }
        Ok(tree)
    }

    fn rules(&self) -> Vec<RuleName> {
        Simulation::rules(self)
    }

    fn seed(&self) -> u64 {
        self.scenario().seed
    }

    fn cost(&self) -> u64 {
        match self.engine() {
            Engine::Agent => self.clients(),
            Engine::Cohort => self.clients().min(COHORT_COST_CLIENTS),
        }
    }

    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult {
        let result = Simulation::run(self, variant.rule_of(Self::NAME)?, seed, watch)?;
        Ok(metrics(&result, recovered_s(self, &result)))
    }
}

fn metrics(r: &RunResult, recovered: Option<f64>) -> Metrics {
    let mut m = Metrics::new();
    m.set("recovered_s", recovered);
    m.set(
        "recovered",
        Some(if recovered.is_some() { 1.0 } else { 0.0 }),
    );
    m.set("half_served_s", r.half_served_s);
    m.set("all_served_s", r.all_served_s);
    m.set("requests_per_client", Some(r.requests_per_client));
    m.set("peak_after_outage", Some(r.peak_after_outage as f64));
    m.set("served", Some(r.served as f64));
    m.set("gave_up", Some(r.gave_up as f64));
    m.set("denied_by_budget", Some(r.denied_by_budget as f64));
    m
}

/// Time to recover, as defined in the module docs.
fn recovered_s(sim: &Simulation, r: &RunResult) -> Option<f64> {
    if r.waiting > 0 {
        return None;
    }
    let plan = &sim.plan;
    let end_step = plan.after_last_outage();
    let first_window = end_step.div_ceil(plan.steps_per_window);
    let series = &r.series;
    // The series stops at the last window with arrivals; later windows are all quiet.
    let last_bad = series
        .arrivals
        .iter()
        .zip(&series.served)
        .rposition(|(a, s)| s < a);
    let window = match last_bad {
        Some(i) => (i as u64 + 1).max(first_window),
        None => first_window,
    };
    if window >= plan.windows {
        return None;
    }
    let start = window * plan.steps_per_window;
    Some(plan.seconds(start.saturating_sub(end_step)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;

    fn run(text: &str, rule: RuleName) -> Metrics {
        let tree: Value = toml::from_str(text).unwrap();
        registry::check(&tree, &Limits::default())
            .unwrap()
            .run(&rule.into(), 1, crate::Watch::none())
            .unwrap()
    }

    #[test]
    fn never_recovered_when_clients_still_wait() {
        // Exponential needs 785 s to serve everyone; a 60 s horizon leaves clients waiting.
        let m = run("horizon_s = 60\n", RuleName::Exponential);
        assert_eq!(m.get("recovered_s"), Some(None));
        assert_eq!(m.get("all_served_s"), Some(None));
    }

    #[test]
    fn open_loop_storm_that_never_ends_is_not_recovered() {
        // 45 new requests per second against 50 per second and immediate retries with
        // costly refusals: the backlog never drains.
        let text = "horizon_s = 120\nwindow_ms = 1000\n[clients]\ncount = 500\narrivals_per_s = 45\n[server]\ncapacity = 50\nrefusal_cost = 0.5\n";
        let m = run(text, RuleName::Immediate);
        assert_eq!(m.get("recovered_s"), Some(None), "{m:?}");
    }

    #[test]
    fn the_engine_key_picks_the_engine_and_is_swept_back() {
        let tree: Value = toml::from_str("engine = \"cohort\"\n").unwrap();
        let checked = registry::check(&tree, &Limits::default()).unwrap();
        assert_eq!(
            checked.sweepable().unwrap()[ENGINE_KEY].as_str(),
            Some("cohort")
        );
        let bad: Value = toml::from_str("engine = \"warp\"\n").unwrap();
        let err = registry::check(&bad, &Limits::default()).unwrap_err();
        assert_eq!(err.field_name(), Some("engine"));
    }
}
