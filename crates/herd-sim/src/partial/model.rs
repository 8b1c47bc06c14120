//! The partial-failure model behind the [`Model`] interface: its variants are the scenario's
//! strategies, one run is one strategy with one seed, reporting [`METRICS`] (docs/model.md,
//! "Partial failure").
use herd::RuleName;
use toml::Value;

use super::{METRICS, PartialFailure, PartialScenario};
use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::model::{self, Metrics, Model, Variant};

impl Model for PartialFailure {
    const NAME: &'static str = "partial-failure";
    const ABOUT: &'static str = "a server that fails a share of attempts whatever its load: what each retry strategy costs (Brooker 2022)";
    const METRICS: &'static [&'static str] = METRICS;

    fn check(tree: &Value, limits: &Limits) -> Result<Self, ScenarioError> {
        let scenario: PartialScenario = model::from_tree(tree, &[])?;
        PartialFailure::new(&scenario, limits)
    }

    fn sweepable(&self) -> Result<Value, ScenarioError> {
        model::to_tree(self.scenario(), Self::NAME)
    }

    /// None: the model compares retry strategies, see [`Model::variants`].
    fn rules(&self) -> Vec<RuleName> {
        Vec::new()
    }

    fn seed(&self) -> u64 {
        self.scenario().seed
    }

    fn cost(&self) -> u64 {
        self.cost_estimate()
    }

    fn variants(&self) -> Vec<Variant> {
        self.strategies()
            .into_iter()
            .map(|s| Variant::Named(s.to_owned()))
            .collect()
    }

    /// A strategy by name; a retry rule is an error naming the strategies.
    fn run(&self, variant: &Variant, seed: u64) -> Result<Metrics, ScenarioError> {
        if let Variant::Rule(rule) = variant {
            return Err(ScenarioError::general(format!(
                "the partial-failure model compares retry strategies (strategies[].name), not retry rules such as {rule}"
            )));
        }
        Ok(self.run_strategy(variant.as_str(), seed)?.metrics())
    }
}
