//! The contention model behind the [`Model`] interface: one run is one seed at
//! `clients.count`, reporting [`METRICS`] (`docs/model.md`, "Contention metrics").
use herd::RuleName;

use super::{Contention, ContentionScenario, METRICS};
use crate::error::ScenarioError;
use crate::model::{Metrics, Model};

impl Model for Contention {
    const NAME: &'static str = "contention";
    const ABOUT: &'static str =
        "clients racing to update one row with optimistic concurrency (Brooker)";
    const METRICS: &'static [&'static str] = METRICS;

    crate::model_of_scenario!(Contention, ContentionScenario);

    fn cost(&self) -> u64 {
        self.scenario().clients.count
    }

    fn run(&self, rule: RuleName, seed: u64) -> Result<Metrics, ScenarioError> {
        let clients = self.scenario().clients.count;
        Ok(Contention::run(self, rule, seed, clients)?.metrics())
    }
}
