//! The latency model behind the [`Model`] interface: its variants are the scenario's hedging
//! policies, one run is one policy with one seed, reporting [`METRICS`] (docs/model.md,
//! "Latency").
use super::{LatencyModel, LatencyScenario};
use crate::error::ScenarioError;
use crate::limits::{self, Limits};
use crate::model::{Metrics, MetricsResult, Model, Variant};
use crate::watch::Watch;

/// The metrics of one run, in order.
pub const METRICS: &[&str] = &[
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "mean_ms",
    "extra_load_percent",
    "hedges_refused",
    "cancelled",
    "utilisation_percent",
];

impl LatencyModel {
    /// Checks `scenario` as a scenario file of it is checked: its fields, then its events
    /// against `limits` (the field to lower named in the error).
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field out of range, or the run's events over `limits`.
    pub fn within(scenario: &LatencyScenario, limits: &Limits) -> Result<Self, ScenarioError> {
        let checked = LatencyModel::new(scenario)?;
        let field = checked.work_field();
        limits::within(
            checked.work_estimate(),
            limits.max_run_attempts,
            "events",
            field,
            super::scenario::advice(field),
        )?;
        Ok(checked)
    }
}

impl Model for LatencyModel {
    const NAME: &'static str = "latency";
    const ABOUT: &'static str =
        "hedged requests: the tail latency of a fan-out on servers that pause, and its cost";
    const METRICS: &'static [&'static str] = METRICS;

    crate::model_of_named_variants!(LatencyModel::within, LatencyScenario, policies);

    fn cost(&self) -> u64 {
        self.work_estimate()
    }

    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult {
        let name = variant.as_str();
        let index = self
            .policies()
            .iter()
            .position(|p| *p == name)
            .ok_or_else(|| {
                ScenarioError::field(
                    "policies",
                    format!(
                        "has no policy named \"{name}\": {}",
                        self.policies().join(", ")
                    ),
                )
            })?;
        let (result, _) = LatencyModel::run(self, index, seed, watch)?;
        let mut metrics = Metrics::new();
        metrics.set("p50_ms", Some(result.p50_ms));
        metrics.set("p99_ms", Some(result.p99_ms));
        metrics.set("p999_ms", Some(result.p999_ms));
        metrics.set("mean_ms", Some(result.mean_ms));
        metrics.set("extra_load_percent", Some(result.extra_load_percent));
        metrics.set("hedges_refused", Some(result.hedges_refused as f64));
        metrics.set("cancelled", Some(result.cancelled as f64));
        metrics.set("utilisation_percent", Some(result.utilisation_percent));
        Ok(metrics)
    }
}
