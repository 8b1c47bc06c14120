//! The metastable model behind the [`Model`] interface. Its metrics (`docs/model.md`,
//! "Metastable metrics") are [`METRICS`]: `recovered_s` is seconds from the end of the last
//! outage to the report's "recovered at" (`None` when still overloaded at the horizon), then
//! the rates after the outage and the counts of the run.
use herd::RuleName;

use super::{METRICS, Metastable, MetastableScenario};
use crate::error::ScenarioError;
use crate::model::{Metrics, Model};

impl Model for Metastable {
    const NAME: &'static str = "metastable";
    const ABOUT: &'static str = "open-loop traffic, timeouts and a server that slows past its knee";
    const METRICS: &'static [&'static str] = METRICS;

    crate::model_of_scenario!(Metastable, MetastableScenario);

    fn cost(&self) -> u64 {
        self.expected_requests()
    }

    fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError> {
        Ok(Metastable::run(self, rule, seed)?.metrics())
    }
}
