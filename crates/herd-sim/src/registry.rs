//! The models this build runs, and the one way in: a scenario tree (or file) names its model
//! (`model = "…"`, the storm without it), and [`check`] (or [`check_text`], with lines)
//! returns it checked, behind [`AnyModel`]. Adding a model adds one line to [`MODELS`]; the
//! trait every model implements is in [`crate::model`], which knows no model.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::{Limits, Watch, registry};
//!
//! let value: toml::Value = toml::from_str("[server]\nrefusal_cost = 0.05\n").unwrap();
//! let checked = registry::check(&value, &Limits::default())?;
//! assert_eq!(checked.name(), "storm");
//! let metrics = checked.run(&RuleName::Full.into(), 1, Watch::none())?;
//! assert_eq!(metrics.get("served"), Some(Some(2000.0)));
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
use std::fmt;

use toml::Value;

use crate::Simulation;
use crate::contention::Contention;
use crate::error::ScenarioError;
use crate::latency::LatencyModel;
use crate::limits::Limits;
use crate::metastable::Metastable;
use crate::model::{AnyModel, DEFAULT_MODEL, MODEL_KEY, Model};
use crate::partial::PartialFailure;

/// Every model this build runs: adding a model adds one line here.
pub static MODELS: &[Registration] = &[
    Registration::of::<Simulation>(),
    Registration::of::<Metastable>(),
    Registration::of::<Contention>(),
    Registration::of::<LatencyModel>(),
    Registration::of::<PartialFailure>(),
    #[cfg(feature = "toy-model")]
    Registration::of::<crate::toy::Toy>(),
];

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
    /// [`Model::HEADLINE`].
    pub headline: &'static [&'static str],
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
            headline: M::HEADLINE,
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

/// The models' names, for messages: `storm, metastable, contention, latency`.
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
        .map_err(|e| crate::located::toml_error(text, &e))?;
    check(&tree, limits).map_err(|e| match unknown_key(e.message()) {
        Some(key) if e.field_name().is_none() && e.line().is_none() => {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(key))
                .map(|i| i + 1);
            e.at_line(line)
        }
        _ => crate::located::locate(text, e),
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

#[cfg(test)]
mod tests {
    use herd::RuleName;

    use super::*;
    use crate::model::Metrics;

    fn tree(text: &str) -> Value {
        toml::from_str(text).unwrap()
    }

    fn run(text: &str, rule: RuleName) -> Metrics {
        check(&tree(text), &Limits::default())
            .unwrap()
            .run(&rule.into(), 1, crate::Watch::none())
            .unwrap()
    }

    /// A table's default columns are the model's own: up to four of its metrics, none twice
    /// (the storm's are written by hand).
    #[test]
    fn every_headline_is_a_few_of_the_models_metrics() {
        for m in MODELS {
            assert!(
                (1..=4).contains(&m.headline.len()),
                "{}: {:?}",
                m.name,
                m.headline
            );
            for (i, h) in m.headline.iter().enumerate() {
                assert!(m.metrics.contains(h), "{}: {h} is no metric", m.name);
                assert!(!m.headline[..i].contains(h), "{}: {h} twice", m.name);
            }
        }
        let storm = find("storm").unwrap();
        assert!(!storm.headline.contains(&"half_served_s"));
        assert_eq!(
            find("latency").unwrap().headline,
            &crate::latency::METRICS[..4]
        );
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

    /// A report until a flag is the report when the flag stays down, and nothing once it is
    /// up, for a model whose engine stops mid-run (storm, latency) as for any other.
    /// Every model reads its watch as it runs: a run told to stop at its first progress
    /// report stops with a cancellation, a watched run is the unwatched run bit for bit, and a
    /// report whose flag is set has no result.
    #[test]
    fn every_model_stops_mid_run_when_its_flag_is_set() {
        use crate::{Cancel, Watch};
        for text in [
            "[clients]\ncount = 20000\n[server]\ncapacity = 500\n",
            "model = \"latency\"\nrequests = 10000\nwarmup_requests = 1000\n",
            "model = \"metastable\"\nhorizon_s = 300\n",
            "model = \"contention\"\nruns = 1\n[clients]\ncount = 1000\n",
            "model = \"partial-failure\"\nhorizon_s = 100\n",
        ] {
            let checked = check(&tree(text), &Limits::default()).unwrap();
            let variant = &checked.variants()[0];
            let seed = checked.seed();
            let plain = checked.run(variant, seed, Watch::none()).unwrap();
            let mut shares = Vec::new();
            let mut note = |done: f64| shares.push(done);
            let watched = checked
                .run(
                    variant,
                    seed,
                    Watch::until(&Cancel::new()).progress(&mut note),
                )
                .unwrap();
            assert_eq!(plain, watched, "{text}");
            assert!(shares.len() >= 3, "{text}: {shares:?}");
            assert_eq!(shares.last(), Some(&1.0), "{text}");

            let cancel = Cancel::new();
            let mut stop = |_: f64| cancel.cancel();
            let stopped = checked.run(variant, seed, Watch::until(&cancel).progress(&mut stop));
            assert!(stopped.is_err_and(|e| e.is_cancelled()), "{text}");
            let report = checked.report(&checked.variants(), &[seed], &cancel);
            assert!(report.is_err_and(|e| e.is_cancelled()), "{text}");
        }
    }
}
