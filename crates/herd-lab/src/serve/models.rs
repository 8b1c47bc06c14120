//! The generic model routes: any model of [`herd_sim::registry::MODELS`] on the page's API,
//! reached the way `herd storm FILE` reaches it (a scenario names its model; the registry
//! checks it and the model reports), so a model added to the registry is served with no code
//! here that names it.
//!
//! - `GET /api/models`: each registered model's `name`, `about` and `metrics`
//!   ([`ModelInfo`]).
//! - `POST /api/model`: a scenario (TOML text, or the same tree as a JSON object), a variant
//!   and a seed ([`ModelRequest`]) → the model's report of that one run, as
//!   `herd storm FILE --format json` prints it ([`ModelAnswer`]).
//!
//! A run is bounded before it starts: the scenario is checked against the page's limits
//! ([`Limits::interactive`], with the storm scene's attempt cap) before it takes a simulation
//! slot, the body is at most [`ServeLimits::max_body_bytes`](super::ServeLimits) (413 past
//! it), and the run is cancelled when its client leaves or past the page's time limit, as
//! every scene is. A bad scenario is a 400 naming the request's field (`scenario`,
//! `variant`) and the scenario's own field and line.
use herd_sim::model::{AnyModel, Variant};
use herd_sim::registry::{self, MODELS};
use herd_sim::{Cancel, ScenarioError};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::limits::run_limits;

/// One registered model, as `GET /api/models` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelInfo {
    /// The name a scenario gives in its `model` key.
    pub name: &'static str,
    /// One line: what the model is about.
    pub about: &'static str,
    /// The metrics one run reports, in order (docs/model.md defines them).
    pub metrics: &'static [&'static str],
}

/// Every model this build runs, in the registry's order.
#[must_use]
pub fn models() -> Vec<ModelInfo> {
    MODELS
        .iter()
        .map(|m| ModelInfo {
            name: m.name,
            about: m.about,
            metrics: m.metrics,
        })
        .collect()
}

/// What `POST /api/model` asks for.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// The scenario: a scenario file's text (TOML; errors name the line), or the same tree
    /// as a JSON object (`{"model": "metastable", "horizon_s": 40}`). Its `model` key picks
    /// the model (the storm without it).
    pub scenario: serde_json::Value,
    /// What to run: a retry rule for a model that compares rules (any rule, as
    /// `herd storm --rule`), else one of the scenario's variants; absent, the scenario's
    /// first.
    #[serde(default)]
    pub variant: Option<String>,
    /// The run's seed; absent, the scenario's.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// The answer of `POST /api/model`.
#[derive(Clone, Debug, Serialize)]
pub struct ModelAnswer {
    /// The model that ran.
    pub model: &'static str,
    /// The variant that ran.
    pub variant: String,
    /// The seed it ran with.
    pub seed: u64,
    /// The model's metrics, in order.
    pub metrics: &'static [&'static str],
    /// The model's report of the run, as `herd storm FILE --format json` prints it.
    pub report: serde_json::Value,
}

/// A scenario error as the API says it: the request's field, then the scenario's field and
/// line.
fn scenario_error(e: &ScenarioError) -> ApiError {
    if e.is_cancelled() {
        return ApiError::busy(e.to_string());
    }
    ApiError::bad_request(format!("scenario: {e}"))
}

impl ModelRequest {
    /// Parses and checks the scenario against the page's limits (its work bounded before
    /// anything runs), and picks the variant and seed.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] naming `scenario` (with the scenario's field and line) or
    /// `variant`.
    pub fn check(&self) -> Result<(Box<dyn AnyModel>, Variant, u64), ApiError> {
        let limits = run_limits();
        let checked = match &self.scenario {
            serde_json::Value::String(text) => registry::check_text(text, &limits),
            serde_json::Value::Object(_) => {
                let tree: toml::Value =
                    serde_json::from_value(self.scenario.clone()).map_err(|e| {
                        ApiError::bad_request(format!("scenario: not a scenario tree: {e}"))
                    })?;
                registry::check(&tree, &limits)
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "scenario: must be a scenario file's text or a JSON object, got {other}"
                )));
            }
        }
        .map_err(|e| scenario_error(&e))?;
        let variants = checked.variants();
        let variant = match self.variant.as_deref() {
            None => variants.first().cloned().ok_or_else(|| {
                ApiError::bad_request("variant: the scenario compares nothing; name one")
            })?,
            Some(name) if !checked.rules().is_empty() => {
                Variant::Rule(super::rules::rule_name(name).map_err(|e| {
                    ApiError::bad_request(e.message.replacen("rule:", "variant:", 1))
                })?)
            }
            Some(name) => variants
                .iter()
                .find(|v| v.as_str() == name)
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<&str> = variants.iter().map(Variant::as_str).collect();
                    ApiError::bad_request(format!(
                        "variant: model \"{}\" has no variant \"{name}\" here; it has {}",
                        checked.name(),
                        names.join(", ")
                    ))
                })?,
        };
        let seed = self.seed.unwrap_or_else(|| checked.seed());
        Ok((checked, variant, seed))
    }

    /// Checks the request and runs the one variant with the one seed, stopping when
    /// `cancel` is set (CPU work: call it off the executor).
    ///
    /// # Errors
    ///
    /// As [`ModelRequest::check`], a 400 when the run fails (past its limits, say), and a
    /// 503 when cancelled (nobody reads it).
    pub fn run(&self, cancel: &Cancel) -> Result<ModelAnswer, ApiError> {
        let (checked, variant, seed) = self.check()?;
        let report = checked
            .report(std::slice::from_ref(&variant), &[seed], cancel)
            .map_err(|e| scenario_error(&e))?;
        Ok(ModelAnswer {
            model: checked.name(),
            variant: variant.as_str().to_owned(),
            seed,
            metrics: checked.metric_names(),
            report: report.to_json(),
        })
    }
}
