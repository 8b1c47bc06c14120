//! One interface for every simulation model, and the list of models this build runs.
//!
//! A model implements [`Model`]: it parses and checks a scenario tree ([`Model::check`]),
//! lists the fields a sweep may vary ([`Model::sweepable`]), names the rules a scenario
//! compares and the metrics it reports, and runs one rule with one seed
//! ([`Model::run`]). `herd storm`, `herd sweep` and the page reach every model through it;
//! nothing else matches on a model's name. The definitions of the models and of their metrics
//! are in `docs/model.md`; `docs/architecture.md` shows how to add one: a folder with the
//! model and its `impl Model`, and one line in [`MODELS`].
//!
//! A scenario tree is TOML (`toml::Value`); its top-level key `model` picks the model, and
//! without it the model is [`DEFAULT_MODEL`]. Every run answers with [`Metrics`]: named
//! numbers in the model's fixed order, where a figure that did not happen in this run (nobody
//! recovered, say) is `None`.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::{Limits, model};
//!
//! let value: toml::Value = toml::from_str("[server]\nrefusal_cost = 0.05\n").unwrap();
//! let checked = model::check(&value, &Limits::default())?;
//! assert_eq!(checked.name(), "storm");
//! let metrics = checked.run(RuleName::Full, 1)?;
//! assert_eq!(metrics.get("served"), Some(Some(2000.0)));
//! assert!(metrics.get("recovered_s").unwrap().is_some());
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
use std::any::Any;
use std::fmt;

use herd::RuleName;
use serde::de::DeserializeOwned;
use toml::Value;

use crate::Simulation;
use crate::contention::Contention;
use crate::error::ScenarioError;
use crate::latency::LatencyModel;
use crate::limits::Limits;
use crate::metastable::Metastable;
use crate::partial::PartialFailure;

mod metrics;

pub use metrics::Metrics;

/// The key of a scenario's top-level table that names its model.
pub const MODEL_KEY: &str = "model";
/// The model of a scenario without a `model` key.
pub const DEFAULT_MODEL: &str = "storm";

/// Every model this build runs: adding a model adds one line here.
pub static MODELS: &[Registration] = &[
    Registration::of::<Simulation>(),
    Registration::of::<Metastable>(),
    Registration::of::<Contention>(),
    Registration::of::<LatencyModel>(),
    Registration::of::<PartialFailure>(),
];

/// What the runs of a scenario compare: a retry rule (the storm, metastable and contention
/// models), or a variant a model names itself (the latency model's hedging policies).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// A retry rule.
    Rule(RuleName),
    /// A variant named by the scenario.
    Named(String),
}

impl Variant {
    /// The name, as the scenario and the output spell it.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Variant::Rule(r) => r.as_str(),
            Variant::Named(n) => n,
        }
    }

    /// The rule, when this variant is one.
    #[must_use]
    pub fn rule(&self) -> Option<RuleName> {
        match self {
            Variant::Rule(r) => Some(*r),
            Variant::Named(_) => None,
        }
    }
}

impl PartialEq<RuleName> for Variant {
    fn eq(&self, rule: &RuleName) -> bool {
        self.rule() == Some(*rule)
    }
}

impl From<RuleName> for Variant {
    fn from(rule: RuleName) -> Self {
        Variant::Rule(rule)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A simulation model: a checked scenario, ready to run any of its rules with any seed.
///
/// The trait assumes no model's concepts beyond a scenario tree, a list of rules to compare
/// and named metrics; each model declares its own.
pub trait Model: fmt::Debug + Send + Sync + Sized + 'static {
    /// The name a scenario gives in its `model` key.
    const NAME: &'static str;
    /// One line: what the model is about.
    const ABOUT: &'static str;
    /// The metrics [`Model::run`] reports, in order (defined in `docs/model.md`).
    const METRICS: &'static [&'static str];

    /// Parses and checks a scenario tree of this model (its `model` key, when present, names
    /// this model) against `limits`.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field that is unknown, of the wrong type, out of range,
    /// contradicting another or too large for `limits`.
    fn check(tree: &Value, limits: &Limits) -> Result<Self, ScenarioError>;

    /// The scenario with every field filled in (defaults for those it did not set) and its
    /// `model` key: the paths a sweep may set.
    ///
    /// # Errors
    ///
    /// The scenario cannot be written as a tree.
    fn sweepable(&self) -> Result<Value, ScenarioError>;

    /// The rules the scenario compares, in its order.
    fn rules(&self) -> Vec<RuleName>;

    /// The scenario's seed: the first of the seeds a comparison runs.
    fn seed(&self) -> u64;

    /// A measure of one run's cost (in clients or requests), for bounding a sweep.
    fn cost(&self) -> u64;

    /// Runs `rule` with the world's generator seeded by `seed`. The same inputs give the same
    /// metrics, bit for bit.
    ///
    /// # Errors
    ///
    /// The rule cannot be built from the scenario, or the run exceeds its limits.
    fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError>;

    /// What the scenario compares, in its order: its rules, unless the model compares
    /// variants of its own.
    fn variants(&self) -> Vec<Variant> {
        self.rules().into_iter().map(Variant::Rule).collect()
    }

    /// Runs one variant with `seed`: a rule through [`Model::run`].
    ///
    /// # Errors
    ///
    /// As [`Model::run`]; a variant this model does not have.
    fn run_variant(&self, variant: &Variant, seed: u64) -> Result<Metrics, ScenarioError> {
        match variant {
            Variant::Rule(rule) => self.run(*rule, seed),
            Variant::Named(name) => Err(ScenarioError::general(format!(
                "the {} model compares retry rules, not \"{name}\"",
                Self::NAME
            ))),
        }
    }
}

/// A checked scenario of some model, as the dispatch holds it: [`Model`] without its
/// constructor, so that models of different types sit behind one pointer.
pub trait AnyModel: fmt::Debug + Send + Sync {
    /// [`Model::NAME`].
    fn name(&self) -> &'static str;
    /// [`Model::METRICS`].
    fn metric_names(&self) -> &'static [&'static str];
    /// [`Model::sweepable`].
    ///
    /// # Errors
    ///
    /// As [`Model::sweepable`].
    fn sweepable(&self) -> Result<Value, ScenarioError>;
    /// [`Model::rules`].
    fn rules(&self) -> Vec<RuleName>;
    /// [`Model::seed`].
    fn seed(&self) -> u64;
    /// [`Model::cost`].
    fn cost(&self) -> u64;
    /// [`Model::run`].
    ///
    /// # Errors
    ///
    /// As [`Model::run`].
    fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError>;
    /// [`Model::variants`].
    fn variants(&self) -> Vec<Variant>;
    /// [`Model::run_variant`].
    ///
    /// # Errors
    ///
    /// As [`Model::run_variant`].
    fn run_variant(&self, variant: &Variant, seed: u64) -> Result<Metrics, ScenarioError>;
    /// The model itself, for a front end that shows one model its own way.
    fn as_any(&self) -> &dyn Any;
}

impl<M: Model> AnyModel for M {
    fn name(&self) -> &'static str {
        M::NAME
    }
    fn metric_names(&self) -> &'static [&'static str] {
        M::METRICS
    }
    fn sweepable(&self) -> Result<Value, ScenarioError> {
        Model::sweepable(self)
    }
    fn rules(&self) -> Vec<RuleName> {
        Model::rules(self)
    }
    fn seed(&self) -> u64 {
        Model::seed(self)
    }
    fn cost(&self) -> u64 {
        Model::cost(self)
    }
    fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError> {
        Model::run(self, rule, seed)
    }
    fn variants(&self) -> Vec<Variant> {
        Model::variants(self)
    }
    fn run_variant(&self, variant: &Variant, seed: u64) -> Result<Metrics, ScenarioError> {
        Model::run_variant(self, variant, seed)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A model's constructor, as [`MODELS`] holds it.
type CheckFn = fn(&Value, &Limits) -> Result<Box<dyn AnyModel>, ScenarioError>;

/// One line of [`MODELS`]: a model's name, metrics and constructor.
#[derive(Clone, Copy)]
pub struct Registration {
    /// [`Model::NAME`].
    pub name: &'static str,
    /// [`Model::ABOUT`].
    pub about: &'static str,
    /// [`Model::METRICS`].
    pub metrics: &'static [&'static str],
    check: CheckFn,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn boxed<M: Model>(tree: &Value, limits: &Limits) -> Result<Box<dyn AnyModel>, ScenarioError> {
    Ok(Box::new(M::check(tree, limits)?))
}

impl Registration {
    /// The registration of model `M`.
    #[must_use]
    pub const fn of<M: Model>() -> Self {
        Self {
            name: M::NAME,
            about: M::ABOUT,
            metrics: M::METRICS,
            check: boxed::<M>,
        }
    }

    /// Parses and checks a scenario tree of this model; see [`Model::check`].
    ///
    /// # Errors
    ///
    /// As [`Model::check`].
    pub fn check(&self, tree: &Value, limits: &Limits) -> Result<Box<dyn AnyModel>, ScenarioError> {
        (self.check)(tree, limits)
    }
}

/// The models' names, for messages: `storm, metastable, contention, latency, partial-failure`.
fn names() -> String {
    let names: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
    names.join(", ")
}

/// The registered model called `name`.
///
/// # Errors
///
/// No model has that name (an error naming the `model` field and the models).
pub fn find(name: &str) -> Result<&'static Registration, ScenarioError> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        ScenarioError::field(
            MODEL_KEY,
            format!("must be one of {}, got \"{name}\"", names()),
        )
    })
}

/// The model a scenario tree names (`model = "…"`), [`DEFAULT_MODEL`] without the key.
///
/// # Errors
///
/// `model` is not a string or names no registered model.
pub fn of_tree(tree: &Value) -> Result<&'static Registration, ScenarioError> {
    match tree.get(MODEL_KEY) {
        None => find(DEFAULT_MODEL),
        Some(Value::String(name)) => find(name),
        Some(other) => Err(ScenarioError::field(
            MODEL_KEY,
            format!("must be one of {}, got {other}", names()),
        )),
    }
}

/// Parses and checks a scenario tree of whichever model it names, against `limits`.
///
/// # Errors
///
/// As [`of_tree`] and [`Model::check`].
pub fn check(tree: &Value, limits: &Limits) -> Result<Box<dyn AnyModel>, ScenarioError> {
    of_tree(tree)?.check(tree, limits)
}

/// Parses and checks a scenario file of whichever model it names: like [`check`], with
/// errors located at their line of `text`.
///
/// # Errors
///
/// As [`check`], and a TOML syntax error.
pub fn check_text(text: &str, limits: &Limits) -> Result<Box<dyn AnyModel>, ScenarioError> {
    let tree: Value = toml::from_str::<toml::Table>(text)
        .map(Value::Table)
        .map_err(|e| crate::scenario::toml_error(text, &e))?;
    check(&tree, limits).map_err(|e| match unknown_key(e.message()) {
        Some(key) if e.field_name().is_none() && e.line().is_none() => {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(key))
                .map(|i| i + 1);
            e.at_line(line)
        }
        _ => crate::scenario::locate(text, e),
    })
}

/// The key serde names in "unknown field `key`, expected …".
fn unknown_key(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(key, _)| key)
}

/// The scenario tree with every field its model knows filled in and checked (against the
/// machine's limits): the set of paths a sweep may set.
///
/// # Errors
///
/// The tree is not a valid scenario of its model, naming the field.
pub fn complete(tree: &Value) -> Result<Value, ScenarioError> {
    check(tree, &Limits::default())?.sweepable()
}

/// Reads a model's scenario struct from a tree (without the keys in `skip`, which the
/// dispatch reads), with errors naming the field as a file's would.
pub(crate) fn from_tree<T: DeserializeOwned>(
    tree: &Value,
    skip: &[&str],
) -> Result<T, ScenarioError> {
    let parsed = if skip.iter().any(|k| tree.get(k).is_some()) {
        let mut tree = tree.clone();
        if let Value::Table(t) = &mut tree {
            for k in skip {
                t.remove(*k);
            }
        }
        T::deserialize(tree)
    } else {
        T::deserialize(tree.clone())
    };
    parsed.map_err(|e| {
        // The tree's deserializer ends its message with "in `dotted.path`".
        let text = e.to_string();
        let (message, path) = match text.trim_end().rsplit_once("\nin `") {
            Some((m, p)) => (m.to_owned(), p.strip_suffix('`').map(str::to_owned)),
            None => (text.trim_end().to_owned(), None),
        };
        match path {
            // serde names an unknown field itself, as in a file.
            Some(path) if !message.contains("unknown field") => ScenarioError::field(path, message),
            _ => ScenarioError::general(message),
        }
    })
}

/// A scenario struct as a tree, with its `model` key set to `name`.
pub(crate) fn to_tree<T: serde::Serialize>(
    scenario: &T,
    name: &str,
) -> Result<Value, ScenarioError> {
    let mut tree = Value::try_from(scenario)
        .map_err(|e| ScenarioError::general(format!("cannot write the scenario as TOML: {e}")))?;
    if let Value::Table(t) = &mut tree {
        t.insert(MODEL_KEY.to_owned(), Value::String(name.to_owned()));
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Value {
        toml::from_str(text).unwrap()
    }

    fn run(text: &str, rule: RuleName) -> Metrics {
        check(&tree(text), &Limits::default())
            .unwrap()
            .run(rule, 1)
            .unwrap()
    }

    #[test]
    fn default_model_is_storm_and_others_are_named() {
        assert_eq!(of_tree(&tree("")).unwrap().name, "storm");
        let err = of_tree(&tree("model = \"nope\"")).unwrap_err();
        assert_eq!(err.field_name(), Some("model"));
        assert_eq!(
            err.to_string(),
            "model: must be one of storm, metastable, contention, latency, partial-failure, got \"nope\""
        );
        let err = of_tree(&tree("model = 3")).unwrap_err();
        assert_eq!(err.field_name(), Some("model"));
    }

    #[test]
    fn every_registered_model_has_a_unique_name_and_metrics() {
        for (i, m) in MODELS.iter().enumerate() {
            assert!(MODELS[..i].iter().all(|o| o.name != m.name), "{m:?}");
            assert!(!m.metrics.is_empty() && !m.about.is_empty(), "{m:?}");
            let full = complete(&tree(&format!("model = \"{}\"", m.name))).unwrap();
            assert_eq!(full[MODEL_KEY].as_str(), Some(m.name));
            let checked = check(&full, &Limits::default()).unwrap();
            assert_eq!(checked.metric_names(), m.metrics);
        }
    }

    #[test]
    fn model_key_is_accepted_by_the_storm_model() {
        let m = run("model = \"storm\"\nhorizon_s = 60\n", RuleName::Immediate);
        assert_eq!(m.get("all_served_s"), Some(Some(13.9)));
        // The last refusals are in window [13.8 s, 13.9 s): recovered 3.9 s after the outage.
        assert_eq!(m.get("recovered_s"), Some(Some(3.9)));
        let names: Vec<_> = m.iter().map(|(n, _)| n).collect();
        assert_eq!(names, <Simulation as Model>::METRICS);
    }

    #[test]
    fn metastable_and_contention_scenarios_run_through_the_dispatch() {
        let m = run(
            "model = \"metastable\"\nhorizon_s = 40\n[retry]\nbudget_percent = 10\n",
            RuleName::Constant,
        );
        assert_eq!(m.get("recovered_s"), Some(Some(1.0)));
        assert_eq!(m.len(), <Metastable as Model>::METRICS.len());
        let full = complete(&tree("model = \"metastable\"\n")).unwrap();
        assert_eq!(full["clients"]["offered_qps"].as_float(), Some(280.0));
        assert_eq!(full["model"].as_str(), Some("metastable"));

        let c = run(
            "model = \"contention\"\n[clients]\ncount = 2\n[network]\ndelay_sd_ms = 0\n",
            RuleName::Immediate,
        );
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
    fn tree_errors_name_the_field_as_a_file_would() {
        let err = complete(&tree("[server]\ncapacity = \"many\"\n")).unwrap_err();
        assert_eq!(err.field_name(), Some("server.capacity"));
        assert!(err.message().starts_with("invalid type"), "{err}");
        let err = complete(&tree("[server]\ncapacityy = 1\n")).unwrap_err();
        assert_eq!(err.field_name(), None);
        assert!(
            err.message().starts_with("unknown field `capacityy`"),
            "{err}"
        );
        let err = check_text(
            "[server]\ncapacity = 0\nrefusal_cost = 2\n",
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "server.refusal_cost (line 3): must be at least 0 and below 1, got 2"
        );
        let err =
            check_text("[server]\ncapacity = 1\nspeed = 2\n", &Limits::default()).unwrap_err();
        assert_eq!(err.line(), Some(3), "{err}");
    }
}
