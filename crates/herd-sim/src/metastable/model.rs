//! The metastable model behind the [`Model`] interface. Its metrics (`docs/model.md`,
//! "Metastable metrics") are [`METRICS`]: `recovered_s` is seconds from the end of the last
//! outage to the report's "recovered at" (`None` when still overloaded at the horizon), then
//! the rates after the outage and the counts of the run.
use std::io::{self, Write};

use serde::Serialize;

use super::{METRICS, Metastable, MetastableReport, MetastableScenario};
use crate::error::ScenarioError;
use crate::model::{Metrics, Model, ModelReport, Variant, every_variant_and_seed};

impl Model for Metastable {
    const NAME: &'static str = "metastable";
    const ABOUT: &'static str = "open-loop traffic, timeouts and a server that slows past its knee";
    const METRICS: &'static [&'static str] = METRICS;

    crate::model_of_scenario!(Metastable, MetastableScenario);

    fn cost(&self) -> u64 {
        self.expected_requests()
    }

    fn run(&self, variant: &Variant, seed: u64) -> Result<Metrics, ScenarioError> {
        let rule = variant.rule_of(Self::NAME)?;
        Ok(Metastable::run(self, rule, seed)?.metrics())
    }

    fn report(
        &self,
        variants: &[Variant],
        seeds: &[u64],
    ) -> Result<Box<dyn ModelReport>, ScenarioError> {
        let results = every_variant_and_seed(variants, seeds, |v, seed| {
            Metastable::run(self, v.rule_of(Self::NAME)?, seed)
        })?
        .into_iter()
        .map(|(_, _, report)| report)
        .collect();
        Ok(Box::new(MetastableRuns {
            scenario: self.scenario().clone(),
            results,
        }))
    }
}

/// The metastable model's report of a comparison: the scenario, and each run's windows.
#[derive(Clone, Debug, Serialize)]
struct MetastableRuns {
    scenario: MetastableScenario,
    results: Vec<MetastableReport>,
}

impl ModelReport for MetastableRuns {
    fn write_table(&self, out: &mut dyn Write) -> io::Result<()> {
        for (i, r) in self.results.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            write!(out, "{r}")?;
        }
        Ok(())
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "rule,seed,start_s,first_attempts,retries,lost,throughput,goodput,timeouts,gave_up,denied_by_budget,queue"
        )?;
        for r in &self.results {
            for w in &r.windows {
                writeln!(
                    out,
                    "{},{},{},{},{},{},{},{},{},{},{},{}",
                    r.rule,
                    r.seed,
                    w.start_s,
                    w.first_attempts,
                    w.retries,
                    w.lost,
                    w.throughput,
                    w.goodput,
                    w.timeouts,
                    w.gave_up,
                    w.denied_by_budget,
                    w.queue
                )?;
            }
        }
        Ok(())
    }
}
