//! The partial-failure model behind the [`Model`] interface: its variants are the scenario's
//! strategies, one run is one strategy with one seed, reporting [`METRICS`] (docs/model.md,
//! "Partial failure").
use super::{METRICS, PartialFailure, PartialScenario};
use crate::error::ScenarioError;
use crate::model::{MetricsResult, Model, Variant};
use crate::watch::Watch;

impl Model for PartialFailure {
    const NAME: &'static str = "partial-failure";
    const ABOUT: &'static str = "a server that fails a share of attempts whatever its load: what each retry strategy costs (Brooker 2022)";
    const METRICS: &'static [&'static str] = METRICS;

    crate::model_of_named_variants!(PartialFailure::new, PartialScenario, strategies);

    fn cost(&self) -> u64 {
        self.cost_estimate()
    }

    /// A strategy by name; a retry rule is an error naming the strategies.
    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult {
        if let Variant::Rule(rule) = variant {
            return Err(ScenarioError::general(format!(
                "the partial-failure model compares retry strategies (strategies[].name), not retry rules such as {rule}"
            )));
        }
        Ok(PartialFailure::run(self, variant.as_str(), seed, watch)?.metrics())
    }
}
