//! The metastable model behind the [`Model`] interface. Its metrics (`docs/model.md`,
//! "Metastable metrics") are [`METRICS`]: `recovered_s` is seconds from the end of the last
//! outage to the report's "recovered at" (`None` when still overloaded at the horizon), then
//! the rates after the outage and the counts of the run.
use herd::RuleName;
use toml::Value;

use super::{METRICS, Metastable, MetastableScenario};
use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::model::{self, Metrics, Model};

impl Model for Metastable {
    const NAME: &'static str = "metastable";
    const ABOUT: &'static str = "open-loop traffic, timeouts and a server that slows past its knee";
    const METRICS: &'static [&'static str] = METRICS;

    fn check(tree: &Value, limits: &Limits) -> Result<Self, ScenarioError> {
        let scenario: MetastableScenario = model::from_tree(tree, &[])?;
        Metastable::new(&scenario, limits)
    }

    fn sweepable(&self) -> Result<Value, ScenarioError> {
        model::to_tree(self.scenario(), Self::NAME)
    }

    fn rules(&self) -> Vec<RuleName> {
        Metastable::rules(self)
    }

    fn seed(&self) -> u64 {
        self.scenario().seed
    }

    fn cost(&self) -> u64 {
        self.expected_requests()
    }

    fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError> {
        Ok(Metastable::run(self, rule, seed)?.metrics())
    }
}
