//! The contention model behind the [`Model`] interface: one run is one seed at
//! `clients.count`, reporting [`METRICS`] (`docs/model.md`, "Contention metrics").
use herd::RuleName;

use std::io::{self, Write};

use super::{Contention, ContentionPoint, ContentionReport, ContentionScenario, METRICS};
use crate::model::{
    MetricsResult, Model, ModelReport, ReportResult, Variant, every_variant_and_seed,
};
use crate::watch::{Cancel, Watch};

impl Model for Contention {
    const NAME: &'static str = "contention";
    const ABOUT: &'static str =
        "clients racing to update one row with optimistic concurrency (Brooker)";
    const METRICS: &'static [&'static str] = METRICS;

    crate::model_of_scenario!(Contention, ContentionScenario);

    fn cost(&self) -> u64 {
        self.scenario().clients.count
    }

    fn runs(&self) -> u32 {
        self.scenario().runs
    }

    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult {
        let clients = self.scenario().clients.count;
        let rule = variant.rule_of(Self::NAME)?;
        Ok(Contention::run(self, rule, seed, clients, watch)?.metrics())
    }

    /// One point per rule at `clients.count`, each the mean over `seeds` (in seed order, so
    /// the mean does not depend on the number of threads).
    fn report(&self, variants: &[Variant], seeds: &[u64], cancel: &Cancel) -> ReportResult {
        let clients = self.scenario().clients.count;
        Watch::until(cancel).check()?;
        let runs = every_variant_and_seed(variants, seeds, |v, seed| {
            Contention::run(
                self,
                v.rule_of(Self::NAME)?,
                seed,
                clients,
                Watch::until(cancel),
            )
        })?;
        let rules: Vec<RuleName> = variants
            .iter()
            .map(|v| v.rule_of(Self::NAME))
            .collect::<Result<_, _>>()?;
        let runs: Vec<_> = runs.into_iter().map(|(_, _, run)| run).collect();
        let points = runs
            .chunks(seeds.len().max(1))
            .filter_map(ContentionPoint::mean)
            .collect();
        let mut report = ContentionReport::new(self, &rules, points);
        report.seed = seeds.first().copied().unwrap_or(report.seed);
        report.runs = u32::try_from(seeds.len()).unwrap_or(u32::MAX);
        Ok(Box::new(report))
    }
}

impl ModelReport for ContentionReport {
    fn write_table(&self, out: &mut dyn Write) -> io::Result<()> {
        write!(out, "{self}")
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "rule,clients,runs,calls,calls_per_client,completion_ms"
        )?;
        for p in &self.points {
            writeln!(
                out,
                "{},{},{},{},{},{}",
                p.rule, p.clients, p.runs, p.calls, p.calls_per_client, p.completion_ms
            )?;
        }
        Ok(())
    }
}
