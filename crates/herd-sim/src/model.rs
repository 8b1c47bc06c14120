//! The models a sweep can run, behind one dispatch point.
//!
//! A sweep edits a scenario as a TOML tree (`toml::Value`), so it works for any model whose
//! scenario is TOML. The top-level key `model` picks the model; without it the model is
//! `"storm"`, SPEC §4's retry storm ([`Scenario`] run by [`Simulation`]). Every model answers
//! one run (a rule and a seed) with [`Metrics`]: named numbers in a fixed order, where a
//! figure that did not happen in this run (nobody served half the clients, say) is `None`.
//!
//! Adding a model means adding one arm to each `match` below ([`complete`],
//! [`Model::from_value`] and the methods of [`Model`]) and a variant to [`Model`]. A model
//! whose struct rejects unknown fields gets the tree without `model` (see `without_model`);
//! any other top-level choice (an engine, say) can be a key handled the same way, and
//! [`complete`] should then fill it in, so that `--set key=a,b` compares the choices.
//!
//! # Storm metrics
//!
//! - `half_served_s`, `all_served_s`, `requests_per_client`, `peak_after_outage`: SPEC §4's
//!   definitions (see [`RunResult`]); `all_served_s` is `None` unless every client was served.
//! - `served`, `gave_up`, `denied_by_budget`: clients (the last are the give-ups whose retry
//!   the retry budget denied).
//! - `recovered_s`, *time to recover*: seconds from the end of the last outage (from t = 0
//!   without outages) to the start of the first window, at or after that end, from which every
//!   window up to the horizon serves all the attempts that arrive in it; `None` ("never
//!   recovered") when a client is still waiting at the horizon or the last window with
//!   arrivals still refuses some. With a burst alone it is close to `all_served_s` minus the
//!   outage; with open-loop arrivals it tells a server that catches up from one held in a
//!   storm by its own clients' retries (metastable failure).
//! - `recovered`: 1 when `recovered_s` is defined, else 0; over seeds, its mean is the share
//!   of runs that recovered (the sharpest view of a phase boundary).
//!
//! # Metastable and contention metrics
//!
//! `model = "metastable"` ([`crate::metastable`]): `recovered_s` (seconds from the end of the
//! last outage to the report's "recovered at"; `None` when still overloaded at the horizon),
//! `recovered` (1 or 0), then `attempts_per_s`, `goodput_per_s`, `throughput_per_s` after the
//! outage, `queue_at_horizon`, `served`, `gave_up`, `denied_by_budget`.
//! `model = "contention"` ([`crate::contention`]; one run is one seed at `clients.count`):
//! `calls`, `calls_per_client`, `completion_ms`.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::{Limits, model};
//!
//! let value: toml::Value = toml::from_str("[server]\nrefusal_cost = 0.05\n").unwrap();
//! let metrics = model::run_value(&value, RuleName::Full, 1, &Limits::default())?;
//! assert_eq!(metrics.get("served"), Some(Some(2000.0)));
//! assert!(metrics.get("recovered_s").unwrap().is_some());
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
use herd::RuleName;
use toml::Value;

use crate::contention::{Contention, ContentionScenario};
use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::metastable::{Metastable, MetastableScenario};
use crate::metrics::RunResult;
use crate::scenario::Scenario;
use crate::{Engine, Simulation};

/// The key of a scenario's top-level table that names its model.
pub const MODEL_KEY: &str = "model";
/// The model of a scenario without a `model` key.
pub const DEFAULT_MODEL: &str = "storm";
/// The models this build can run.
pub const MODELS: &[&str] = &["storm", "metastable", "contention"];
/// The key of a storm scenario's top-level table that picks its engine (`agent`, the
/// default, or `cohort`), so that `herd sweep --set engine=agent,cohort` compares them.
pub const ENGINE_KEY: &str = "engine";

/// What a cohort-engine run counts as, in clients, when a sweep bounds its work.
const COHORT_COST_CLIENTS: u64 = 1_000_000;

/// The storm engine a tree names (`engine = "…"`), [`Engine::Agent`] without the key.
fn engine_of(value: &Value) -> Result<Engine, ScenarioError> {
    match value.get(ENGINE_KEY) {
        None => Ok(Engine::Agent),
        Some(Value::String(name)) => name.parse(),
        Some(other) => Err(ScenarioError::field(
            ENGINE_KEY,
            format!("expected \"agent\" or \"cohort\", got {other}"),
        )),
    }
}

/// The storm model's metrics, in report order.
pub const STORM_METRICS: &[&str] = &[
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

/// Named figures of one run, in a fixed order; `None` where the figure did not happen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    entries: Vec<(&'static str, Option<f64>)>,
}

impl Metrics {
    /// No metrics yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends (or replaces) a metric.
    pub fn set(&mut self, name: &'static str, value: Option<f64>) {
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name, value)),
        }
    }

    /// The metric's value: `None` for an unknown name, `Some(None)` when it did not happen.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Option<f64>> {
        self.entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
    }

    /// The metrics in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, Option<f64>)> + '_ {
        self.entries.iter().copied()
    }

    /// How many metrics there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The model a scenario tree names (`model = "…"`), [`DEFAULT_MODEL`] without the key.
///
/// # Errors
///
/// `model` is not a string or names no model of [`MODELS`].
pub fn model_name(value: &Value) -> Result<&str, ScenarioError> {
    match value.get(MODEL_KEY) {
        None => Ok(DEFAULT_MODEL),
        Some(Value::String(name)) if MODELS.contains(&name.as_str()) => Ok(name),
        Some(other) => Err(ScenarioError::field(
            MODEL_KEY,
            format!("must be one of {}, got {other}", MODELS.join(", ")),
        )),
    }
}

/// `value` without the `model` and `engine` keys, for the storm scenario, which rejects
/// unknown fields.
fn without_model(value: &Value) -> Value {
    let mut v = value.clone();
    if let Value::Table(t) = &mut v {
        t.remove(MODEL_KEY);
        t.remove(ENGINE_KEY);
    }
    v
}

/// Parses `value` as a storm [`Scenario`], checked, with errors naming the field.
fn storm_scenario(value: &Value) -> Result<Scenario, ScenarioError> {
    // Through text, so that errors name the field as they do for a file; the line numbers
    // of this synthetic text mean nothing to the user and are dropped.
    let text = toml::to_string(&without_model(value))
        .map_err(|e| ScenarioError::general(format!("cannot write the scenario as TOML: {e}")))?;
    // Checked against the limits of the engine the tree names: the cohort engine takes far
    // more clients than the agent engine has memory for.
    let limits = engine_of(value)?.limits(&Limits::default());
    Scenario::from_toml_str_within(&text, &limits).map_err(|e| match e.field_name() {
        Some(f) => ScenarioError::field(f, e.message()),
        None => ScenarioError::general(e.message()),
    })
}

/// The scenario tree with every field the model knows filled in (defaults for the missing
/// ones, and `model` itself) and checked: the set of paths a sweep may set.
///
/// # Errors
///
/// The tree is not a valid scenario of its model, naming the field.
pub fn complete(value: &Value) -> Result<Value, ScenarioError> {
    match model_name(value)? {
        "storm" => {
            let scenario = storm_scenario(value)?;
            let mut full = Value::try_from(&scenario).map_err(|e| {
                ScenarioError::general(format!("cannot write the scenario as TOML: {e}"))
            })?;
            let engine = engine_of(value)?;
            if let Value::Table(t) = &mut full {
                t.insert(MODEL_KEY.to_owned(), Value::String("storm".to_owned()));
                t.insert(
                    ENGINE_KEY.to_owned(),
                    Value::String(engine.as_str().to_owned()),
                );
            }
            Ok(full)
        }
        "metastable" => to_value(&other_scenario(value, MetastableScenario::from_toml_str)?),
        "contention" => to_value(&other_scenario(value, ContentionScenario::from_toml_str)?),
        other => Err(unknown_model(other)),
    }
}

/// Parses `value` as a scenario of a model whose struct reads its own `model` key.
fn other_scenario<T>(
    value: &Value,
    parse: fn(&str) -> Result<T, ScenarioError>,
) -> Result<T, ScenarioError> {
    let text = toml::to_string(value)
        .map_err(|e| ScenarioError::general(format!("cannot write the scenario as TOML: {e}")))?;
    parse(&text).map_err(|e| match e.field_name() {
        Some(f) => ScenarioError::field(f, e.message()),
        None => ScenarioError::general(e.message()),
    })
}

fn to_value<T: serde::Serialize>(scenario: &T) -> Result<Value, ScenarioError> {
    Value::try_from(scenario)
        .map_err(|e| ScenarioError::general(format!("cannot write the scenario as TOML: {e}")))
}

fn unknown_model(name: &str) -> ScenarioError {
    ScenarioError::field(
        MODEL_KEY,
        format!("must be one of {}, got \"{name}\"", MODELS.join(", ")),
    )
}

/// A checked scenario of some model, ready to run any rule with any seed.
#[derive(Clone, Debug)]
pub enum Model {
    /// SPEC §4's retry storm.
    Storm(Simulation),
    /// Metastable failures: open-loop traffic, timeouts and a queue (a slowdown optional).
    Metastable(Metastable),
    /// Brooker's optimistic-concurrency contention; one run is one seed at `clients.count`.
    Contention(Contention),
}

impl Model {
    /// Checks the scenario tree and prepares its model.
    ///
    /// # Errors
    ///
    /// The tree is not a valid scenario of its model, or too large for `limits`.
    pub fn from_value(value: &Value, limits: &Limits) -> Result<Self, ScenarioError> {
        match model_name(value)? {
            "storm" => Ok(Model::Storm(Simulation::with_engine(
                &storm_scenario(value)?,
                limits,
                engine_of(value)?,
            )?)),
            "metastable" => Ok(Model::Metastable(Metastable::new(
                &other_scenario(value, MetastableScenario::from_toml_str)?,
                limits,
            )?)),
            "contention" => Ok(Model::Contention(Contention::new(
                &other_scenario(value, ContentionScenario::from_toml_str)?,
                limits,
            )?)),
            other => Err(unknown_model(other)),
        }
    }

    /// The metrics [`Model::run`] reports, in order.
    #[must_use]
    pub fn metric_names(&self) -> &'static [&'static str] {
        match self {
            Model::Storm(_) => STORM_METRICS,
            Model::Metastable(_) => crate::metastable::METRICS,
            Model::Contention(_) => crate::contention::METRICS,
        }
    }

    /// The rules the scenario lists.
    #[must_use]
    pub fn rules(&self) -> Vec<RuleName> {
        match self {
            Model::Storm(sim) => sim.rules(),
            Model::Metastable(m) => m.rules(),
            Model::Contention(c) => c.rules(),
        }
    }

    /// Clients over one run: a measure of its cost, for bounding a sweep.
    #[must_use]
    pub fn clients(&self) -> u64 {
        match self {
            // A cohort run's cost follows the states clients occupy, not their number; it
            // is counted as at most a million clients (about what it costs at any size).
            Model::Storm(sim) if sim.engine() == Engine::Cohort => {
                sim.clients().min(COHORT_COST_CLIENTS)
            }
            Model::Storm(sim) => sim.clients(),
            Model::Metastable(m) => m.expected_requests(),
            Model::Contention(c) => c.scenario().clients.count,
        }
    }

    /// Runs `rule` with `seed`. The same inputs give the same metrics, bit for bit.
    ///
    /// # Errors
    ///
    /// The rule cannot be built from the scenario, or the run exceeds its limits.
    pub fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError> {
        match self {
            Model::Storm(sim) => {
                let result = sim.run(rule, seed)?;
                Ok(storm_metrics(&result, recovered_s(sim, &result)))
            }
            Model::Metastable(m) => Ok(m.run(rule, seed)?.metrics()),
            Model::Contention(c) => Ok(c.run(rule, seed, c.scenario().clients.count)?.metrics()),
        }
    }
}

/// Runs one rule of a scenario tree with one seed: [`Model::from_value`] then [`Model::run`].
///
/// # Errors
///
/// As [`Model::from_value`] and [`Model::run`].
pub fn run_value(
    value: &Value,
    rule: RuleName,
    seed: u64,
    limits: &Limits,
) -> Result<Metrics, ScenarioError> {
    Model::from_value(value, limits)?.run(rule, seed)
}

fn storm_metrics(r: &RunResult, recovered: Option<f64>) -> Metrics {
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

    fn tree(text: &str) -> Value {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn default_model_is_storm_and_others_are_named() {
        assert_eq!(model_name(&tree("")).unwrap(), "storm");
        let err = model_name(&tree("model = \"nope\"")).unwrap_err();
        assert_eq!(err.field_name(), Some("model"));
        assert!(err.to_string().contains("storm"), "{err}");
    }

    #[test]
    fn model_key_is_accepted_by_the_storm_model() {
        let m = run_value(
            &tree("model = \"storm\"\nhorizon_s = 60\n"),
            RuleName::Immediate,
            1,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(m.get("all_served_s"), Some(Some(13.9)));
        // The last refusals are in window [13.8 s, 13.9 s): recovered 3.9 s after the outage.
        assert_eq!(m.get("recovered_s"), Some(Some(3.9)));
        assert_eq!(m.len(), STORM_METRICS.len());
        let names: Vec<_> = m.iter().map(|(n, _)| n).collect();
        assert_eq!(names, STORM_METRICS);
    }

    #[test]
    fn metastable_and_contention_scenarios_run_through_the_dispatch() {
        let meta = tree("model = \"metastable\"\nhorizon_s = 40\n[retry]\nbudget_percent = 10\n");
        let m = run_value(&meta, RuleName::Constant, 1, &Limits::default()).unwrap();
        assert_eq!(m.get("recovered_s"), Some(Some(1.0)));
        assert_eq!(m.len(), crate::metastable::METRICS.len());
        let full = complete(&tree("model = \"metastable\"\n")).unwrap();
        assert_eq!(full["clients"]["offered_qps"].as_float(), Some(280.0));
        assert_eq!(full["model"].as_str(), Some("metastable"));

        let contention =
            tree("model = \"contention\"\n[clients]\ncount = 2\n[network]\ndelay_sd_ms = 0\n");
        let c = run_value(&contention, RuleName::Immediate, 1, &Limits::default()).unwrap();
        assert_eq!(c.get("calls"), Some(Some(3.0)));
        assert_eq!(c.get("completion_ms"), Some(Some(80.0)));
        let err = complete(&tree("model = \"contention\"\n[clients]\ncount = 0\n")).unwrap_err();
        assert_eq!(err.field_name(), Some("clients.count"));
    }

    #[test]
    fn complete_fills_in_defaults() {
        let full = complete(&tree("[server]\ncapacity = 7\n")).unwrap();
        assert_eq!(full["server"]["capacity"].as_integer(), Some(7));
        assert_eq!(full["clients"]["count"].as_integer(), Some(2000));
        assert_eq!(full["model"].as_str(), Some("storm"));
        let err = complete(&tree("[server]\nrefusal_cost = 1.5\n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "server.refusal_cost: must be at least 0 and below 1, got 1.5"
        );
    }

    #[test]
    fn never_recovered_when_clients_still_wait() {
        // Exponential needs 785 s to serve everyone; a 60 s horizon leaves clients waiting.
        let m = run_value(
            &tree("horizon_s = 60\n"),
            RuleName::Exponential,
            1,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(m.get("recovered_s"), Some(None));
        assert_eq!(m.get("all_served_s"), Some(None));
    }

    #[test]
    fn open_loop_storm_that_never_ends_is_not_recovered() {
        // 45 new requests per second against 50 per second and immediate retries with
        // costly refusals: the backlog never drains.
        let text = "horizon_s = 120\nwindow_ms = 1000\n[clients]\ncount = 500\narrivals_per_s = 45\n[server]\ncapacity = 50\nrefusal_cost = 0.5\n";
        let m = run_value(&tree(text), RuleName::Immediate, 1, &Limits::default()).unwrap();
        assert_eq!(m.get("recovered_s"), Some(None), "{m:?}");
    }
}
