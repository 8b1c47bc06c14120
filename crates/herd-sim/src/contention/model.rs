//! The contention model behind the [`Model`] interface: one run is one seed at
//! `clients.count`, reporting [`METRICS`] (`docs/model.md`, "Contention metrics").
use herd::RuleName;
use toml::Value;

use super::{Contention, ContentionScenario, METRICS};
use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::model::{self, Metrics, Model};

impl Model for Contention {
    const NAME: &'static str = "contention";
    const ABOUT: &'static str =
        "clients racing to update one row with optimistic concurrency (Brooker)";
    const METRICS: &'static [&'static str] = METRICS;

    fn check(tree: &Value, limits: &Limits) -> Result<Self, ScenarioError> {
        let scenario: ContentionScenario = model::from_tree(tree, &[])?;
        Contention::new(&scenario, limits)
    }

    fn sweepable(&self) -> Result<Value, ScenarioError> {
        model::to_tree(self.scenario(), Self::NAME)
    }

    fn rules(&self) -> Vec<RuleName> {
        Contention::rules(self)
    }

    fn seed(&self) -> u64 {
        self.scenario().seed
    }

    fn cost(&self) -> u64 {
        self.scenario().clients.count
    }

    fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError> {
        let clients = self.scenario().clients.count;
        Ok(Contention::run(self, rule, seed, clients)?.metrics())
    }
}
