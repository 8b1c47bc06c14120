//! One interface for every simulation model.
//!
//! A model implements [`Model`]: it parses and checks a scenario tree ([`Model::check`]),
//! lists the fields a sweep may vary ([`Model::sweepable`]), names the variants a scenario
//! compares and the metrics it reports, runs one variant with one seed ([`Model::run`]) and
//! tells a comparison its own way ([`Model::report`]). `herd storm`, `herd sweep` and the page
//! reach every model through it, from [`crate::registry`], the list of models; nothing else
//! matches on a model's name. The definitions of the models and of their metrics are in
//! `docs/model.md`; `docs/architecture.md` shows how to add one: a folder with the model and
//! its `impl Model`, and one line in [`crate::registry::MODELS`].
//!
//! A scenario tree is TOML (`toml::Value`); its top-level key `model` picks the model, and
//! without it the model is [`DEFAULT_MODEL`]. Every run answers with [`Metrics`]: named
//! numbers in the model's fixed order, where a figure that did not happen in this run (nobody
//! recovered, say) is `None`.
use std::fmt;

use herd::RuleName;
use serde::de::DeserializeOwned;
use toml::Value;

use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::watch::{Cancel, Watch};

mod metrics;
mod report;

pub use metrics::Metrics;
pub use report::{MetricsReport, ModelReport, Run, csv_field, every_variant_and_seed};

/// What [`Model::run`] answers: one run's metrics, or why there are none.
pub type MetricsResult = Result<Metrics, ScenarioError>;
/// What [`Model::report`] answers: the model's own report of a comparison, or the first
/// run's error.
pub type ReportResult = Result<Box<dyn ModelReport>, ScenarioError>;

/// The key of a scenario's top-level table that names its model.
pub const MODEL_KEY: &str = "model";
/// The model of a scenario without a `model` key.
pub const DEFAULT_MODEL: &str = "storm";

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

    /// The rule of a model that compares retry rules (`model` names it in the error).
    ///
    /// # Errors
    ///
    /// This variant is a named one, which such a model does not have.
    pub fn rule_of(&self, model: &str) -> Result<RuleName, ScenarioError> {
        match self {
            Variant::Rule(r) => Ok(*r),
            Variant::Named(name) => Err(ScenarioError::general(format!(
                "the {model} model compares retry rules, not \"{name}\""
            ))),
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
    /// The metrics a table shows when the caller names none (`herd sweep`'s table), at most
    /// four of [`Model::METRICS`]: by default the first four.
    const HEADLINE: &'static [&'static str] = if Self::METRICS.len() > 4 {
        Self::METRICS.split_at(4).0
    } else {
        Self::METRICS
    };

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

    /// How many seeds a comparison runs when the caller does not say (`--runs`): one, unless
    /// the scenario asks for more (the contention model's `runs`).
    fn runs(&self) -> u32 {
        1
    }

    /// What the scenario compares, in its order: its rules, unless the model compares
    /// variants of its own (the latency model's hedging policies).
    fn variants(&self) -> Vec<Variant> {
        self.rules().into_iter().map(Variant::Rule).collect()
    }

    /// Runs `variant` with the world's generator seeded by `seed`. The same inputs give the
    /// same metrics, bit for bit, whatever `watch` follows. A model whose engine reads the
    /// watch as it goes (the storm's, the latency model's, the metastable model's) stops
    /// within a few thousand events of its flag being set; the others look before they
    /// start.
    ///
    /// # Errors
    ///
    /// A variant this model does not have ([`Variant::rule_of`] names the model for a rule
    /// model), a rule that cannot be built from the scenario, a run over its limits, or the
    /// watch's flag set ([`ScenarioError::is_cancelled`]).
    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult;

    /// Runs every variant with every seed (in parallel) and gathers the model's own report:
    /// by default each run's [`Metrics`] ([`MetricsReport`]); a model with a richer account
    /// of a run (the metastable model's windows, the contention model's comparison) returns
    /// its own. Callers print it through [`ModelReport`] and never need the model's type.
    ///
    /// Every run is bounded by the limits the scenario was checked against; `cancel` bounds
    /// them in wall-clock time too (a server whose client left, Ctrl-C): each run is
    /// followed by [`Watch::until`]`(cancel)`, and a report given up has no result.
    ///
    /// # Errors
    ///
    /// As [`Model::run`], for the first run that fails; an error for which
    /// [`ScenarioError::is_cancelled`] holds when `cancel` was set before the report was
    /// whole.
    fn report(&self, variants: &[Variant], seeds: &[u64], cancel: &Cancel) -> ReportResult {
        Ok(Box::new(MetricsReport::run(self, variants, seeds, cancel)?))
    }
}

/// A checked scenario of some model, as the dispatch holds it: [`Model`] without its
/// constructor, so that models of different types sit behind one pointer.
pub trait AnyModel: fmt::Debug + Send + Sync {
    /// [`Model::NAME`].
    fn name(&self) -> &'static str;
    /// [`Model::METRICS`].
    fn metric_names(&self) -> &'static [&'static str];
    /// [`Model::HEADLINE`].
    fn headline(&self) -> &'static [&'static str];
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
    /// [`Model::runs`].
    fn runs(&self) -> u32;
    /// [`Model::variants`].
    fn variants(&self) -> Vec<Variant>;
    /// [`Model::run`].
    ///
    /// # Errors
    ///
    /// As [`Model::run`].
    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult;
    /// [`Model::report`].
    ///
    /// # Errors
    ///
    /// As [`Model::report`].
    fn report(&self, variants: &[Variant], seeds: &[u64], cancel: &Cancel) -> ReportResult;
}

impl<M: Model> AnyModel for M {
    fn name(&self) -> &'static str {
        M::NAME
    }
    fn metric_names(&self) -> &'static [&'static str] {
        M::METRICS
    }
    fn headline(&self) -> &'static [&'static str] {
        M::HEADLINE
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
    fn runs(&self) -> u32 {
        Model::runs(self)
    }
    fn variants(&self) -> Vec<Variant> {
        Model::variants(self)
    }
    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult {
        Model::run(self, variant, seed, watch)
    }
    fn report(&self, variants: &[Variant], seeds: &[u64], cancel: &Cancel) -> ReportResult {
        Model::report(self, variants, seeds, cancel)
    }
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
