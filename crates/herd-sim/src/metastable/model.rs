//! The metastable model behind the [`Model`] interface. Its metrics (`docs/model.md`,
//! "Metastable metrics") are [`METRICS`]: `recovered_s` is seconds from the end of the last
//! outage to the report's "recovered at" (`None` when still overloaded at the horizon), then
//! the rates after the outage and the counts of the run.
use std::io::{self, Write};

use serde::Serialize;

use super::{METRICS, Metastable, MetastableReport, MetastableScenario};
use crate::model::{
    MetricsResult, Model, ModelReport, ReportResult, Variant, every_variant_and_seed,
};
use crate::watch::{Cancel, Watch};

impl Model for Metastable {
    const NAME: &'static str = "metastable";
    const ABOUT: &'static str = "open-loop traffic, timeouts and a server that slows past its knee";
    const METRICS: &'static [&'static str] = METRICS;

    crate::model_of_scenario!(Metastable, MetastableScenario);

    fn cost(&self) -> u64 {
        self.expected_requests()
    }

    fn run(&self, variant: &Variant, seed: u64, watch: Watch<'_>) -> MetricsResult {
        let rule = variant.rule_of(Self::NAME)?;
        Ok(Metastable::run(self, rule, seed, watch)?.metrics())
    }

    fn report(&self, variants: &[Variant], seeds: &[u64], cancel: &Cancel) -> ReportResult {
        Watch::until(cancel).check()?;
        let results = every_variant_and_seed(variants, seeds, |v, seed| {
            Metastable::run(self, v.rule_of(Self::NAME)?, seed, Watch::until(cancel))
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

    /// One line per window of each run: the run's figures (`after_outage.*` flattened), then
    /// the window's (`window.*`), so that the CSV carries every figure the JSON does.
    fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let runs: Vec<serde_json::Value> = self
            .results
            .iter()
            .map(|r| serde_json::to_value(r).map_err(io::Error::from))
            .collect::<io::Result<_>>()?;
        let Some(first) = runs.first() else {
            return Ok(());
        };
        let run_columns = scalar_columns(first, &["rule", "seed"], &["windows"]);
        let window_columns = first["windows"]
            .get(0)
            .map(|w| scalar_columns(w, &["start_s"], &[]))
            .unwrap_or_default();
        let header: Vec<String> = run_columns
            .iter()
            .cloned()
            .chain(window_columns.iter().map(|c| format!("window.{c}")))
            .collect();
        writeln!(out, "{}", header.join(","))?;
        for run in &runs {
            let prefix: Vec<String> = run_columns.iter().map(|c| csv_value(run, c)).collect();
            for w in run["windows"].as_array().into_iter().flatten() {
                let cells: Vec<String> = prefix
                    .iter()
                    .cloned()
                    .chain(window_columns.iter().map(|c| csv_value(w, c)))
                    .collect();
                writeln!(out, "{}", cells.join(","))?;
            }
        }
        Ok(())
    }
}

/// The scalar fields of a JSON object: `first` in that order, then the others by name, a
/// nested object's as `name.field`; the keys in `skip` (lists printed as rows) left out.
fn scalar_columns(value: &serde_json::Value, first: &[&str], skip: &[&str]) -> Vec<String> {
    let mut columns: Vec<String> = first
        .iter()
        .filter(|k| value.get(**k).is_some())
        .map(|k| (*k).to_owned())
        .collect();
    for (key, v) in value.as_object().into_iter().flatten() {
        if skip.contains(&key.as_str()) || first.contains(&key.as_str()) {
            continue;
        }
        match v {
            serde_json::Value::Object(inner) => {
                columns.extend(inner.keys().map(|k| format!("{key}.{k}")));
            }
            serde_json::Value::Array(_) => {}
            _ => columns.push(key.clone()),
        }
    }
    columns
}

/// The value at a `name` or `name.field` column, as a CSV field (`null` empty, a string
/// quoted when it holds a comma or a quote).
fn csv_value(value: &serde_json::Value, column: &str) -> String {
    let v = column
        .split('.')
        .try_fold(value, |v, key| v.get(key))
        .unwrap_or(&serde_json::Value::Null);
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => crate::model::csv_field(s),
        other => other.to_string(),
    }
}
