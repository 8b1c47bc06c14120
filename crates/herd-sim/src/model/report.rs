//! What a front end prints after running a scenario: a [`ModelReport`], whatever the model.
//!
//! `herd storm FILE` and the page run a checked scenario through
//! [`AnyModel::report`](super::AnyModel::report) and print what comes back as a table, JSON
//! or CSV; the report knows its model's figures, the caller does not. A model without a report
//! of its own gets [`MetricsReport`]: one row per variant and seed, one column per metric.
use std::io::{self, Write};

use rayon::prelude::*;
use serde::Serialize;

use super::{Metrics, Model, Variant};
use crate::error::ScenarioError;
use crate::watch::{Cancel, Watch};

/// A model's account of the runs of a comparison, printable three ways.
pub trait ModelReport: Send + Sync {
    /// For people: the model's own table.
    ///
    /// # Errors
    ///
    /// Writing to `out` failed.
    fn write_table(&self, out: &mut dyn Write) -> io::Result<()>;

    /// For programs: one JSON object (`docs/cli.md` lists its fields per model).
    fn to_json(&self) -> serde_json::Value;

    /// For spreadsheets: a header line, then one line per row.
    ///
    /// # Errors
    ///
    /// Writing to `out` failed.
    fn write_csv(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// A CSV field, quoted when it needs it (RFC 4180): every report's and command's CSV writes
/// text through it.
///
/// # Examples
///
/// ```
/// use herd_sim::model::csv_field;
///
/// assert_eq!(csv_field("full"), "full");
/// assert_eq!(csv_field("recovered at 3, then \"not\""), "\"recovered at 3, then \"\"not\"\"\"");
/// ```
#[must_use]
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// One run of a comparison: which variant, which seed, and its metrics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    /// The rule or named variant.
    #[serde(rename = "rule", serialize_with = "variant_name")]
    pub variant: Variant,
    /// The seed.
    pub seed: u64,
    /// The metrics, in the model's order (`null` where a figure did not happen).
    #[serde(serialize_with = "metrics_map")]
    pub metrics: Metrics,
}

fn variant_name<S: serde::Serializer>(v: &Variant, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v.as_str())
}

fn metrics_map<S: serde::Serializer>(m: &Metrics, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(m.len()))?;
    for (name, value) in m.iter() {
        map.serialize_entry(name, &value)?;
    }
    map.end()
}

/// Runs `run` for every variant with every seed, in parallel: the results in the order
/// variant-major, seed-minor.
///
/// # Errors
///
/// The first error `run` returns.
pub fn every_variant_and_seed<T: Send>(
    variants: &[Variant],
    seeds: &[u64],
    run: impl Fn(&Variant, u64) -> Result<T, ScenarioError> + Sync,
) -> Result<Vec<(Variant, u64, T)>, ScenarioError> {
    let jobs: Vec<(&Variant, u64)> = variants
        .iter()
        .flat_map(|v| seeds.iter().map(move |&s| (v, s)))
        .collect();
    jobs.par_iter()
        .map(|&(v, seed)| run(v, seed).map(|r| (v.clone(), seed, r)))
        .collect()
}

/// The report of a model without one of its own: each run's metrics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricsReport {
    /// The model's name.
    pub model: &'static str,
    /// The metric names, in order.
    #[serde(skip)]
    pub metric_names: &'static [&'static str],
    /// One entry per variant and seed, variant-major.
    pub results: Vec<Run>,
}

impl MetricsReport {
    /// Runs every variant of `model` with every seed, each followed by
    /// [`Watch::until`]`(cancel)`.
    ///
    /// # Errors
    ///
    /// As [`Model::run`].
    pub fn run<M: Model>(
        model: &M,
        variants: &[Variant],
        seeds: &[u64],
        cancel: &Cancel,
    ) -> Result<Self, ScenarioError> {
        // A model that does not read the watch as it runs still gives no result once the
        // flag is set.
        Watch::until(cancel).check()?;
        let results = every_variant_and_seed(variants, seeds, |v, seed| {
            model.run(v, seed, Watch::until(cancel))
        })?
        .into_iter()
        .map(|(variant, seed, metrics)| Run {
            variant,
            seed,
            metrics,
        })
        .collect();
        Ok(Self {
            model: M::NAME,
            metric_names: M::METRICS,
            results,
        })
    }

    /// The rows, the metrics by `show` (full precision for CSV, the precision policy of
    /// [`crate::figure`] for people).
    fn write_rows(
        &self,
        out: &mut dyn Write,
        sep: &str,
        show: fn(&str, f64) -> String,
    ) -> io::Result<()> {
        writeln!(out, "rule{sep}seed{sep}{}", self.metric_names.join(sep))?;
        for r in &self.results {
            let values: Vec<String> = self
                .metric_names
                .iter()
                .map(|n| {
                    r.metrics
                        .get(n)
                        .flatten()
                        .map_or_else(String::new, |x| show(n, x))
                })
                .collect();
            writeln!(out, "{}{sep}{}{sep}{}", r.variant, r.seed, values.join(sep))?;
        }
        Ok(())
    }
}

impl ModelReport for MetricsReport {
    fn write_table(&self, out: &mut dyn Write) -> io::Result<()> {
        // A metric named `…_percent` is a percentage: 99.99 must not print as 100.
        self.write_rows(out, "  ", |name, x| {
            let kind = if name.ends_with("_percent") {
                crate::figure::Kind::Percent
            } else {
                crate::figure::Kind::Ratio
            };
            crate::figure::bare(x, kind)
        })
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        self.write_rows(out, ",", |_, x| x.to_string())
    }
}

#[cfg(test)]
mod tests {
    use herd::RuleName;

    use super::*;
    use crate::limits::Limits;
    use crate::model::MetricsResult;

    /// A model nothing else knows: a coin that lands heads on odd seeds.
    #[derive(Debug)]
    struct Coin;

    impl Model for Coin {
        const NAME: &'static str = "coin";
        const ABOUT: &'static str = "a coin";
        const METRICS: &'static [&'static str] = &["heads", "never"];
        fn check(_: &toml::Value, _: &Limits) -> Result<Self, ScenarioError> {
            Ok(Coin)
        }
        fn sweepable(&self) -> Result<toml::Value, ScenarioError> {
            Ok(toml::Value::Table(toml::Table::new()))
        }
        fn rules(&self) -> Vec<RuleName> {
            vec![RuleName::Immediate]
        }
        fn seed(&self) -> u64 {
            1
        }
        fn cost(&self) -> u64 {
            1
        }
        fn run(&self, _: &Variant, seed: u64, _: Watch<'_>) -> MetricsResult {
            let mut m = Metrics::new();
            m.set("heads", Some((seed % 2) as f64));
            m.set("never", None);
            Ok(m)
        }
    }

    #[test]
    fn a_model_without_a_report_prints_its_metrics_per_variant_and_seed() {
        let variants = [
            Variant::Rule(RuleName::Immediate),
            Variant::Rule(RuleName::Full),
        ];
        let report = Model::report(&Coin, &variants, &[1, 2], &Cancel::new()).unwrap();
        let mut csv = Vec::new();
        report.write_csv(&mut csv).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "rule,seed,heads,never\nimmediate,1,1,\nimmediate,2,0,\nfull,1,1,\nfull,2,0,\n"
        );
        let value = Model::report(&Coin, &variants[..1], &[3], &Cancel::new())
            .unwrap()
            .to_json();
        assert_eq!(value["model"], "coin");
        assert_eq!(value["results"][0]["rule"], "immediate");
        assert_eq!(value["results"][0]["seed"], 3);
        assert_eq!(value["results"][0]["metrics"]["heads"], 1.0);
        assert!(value["results"][0]["metrics"]["never"].is_null());
    }

    #[test]
    fn a_report_whose_flag_is_set_has_no_result() {
        let variants = [Variant::Rule(RuleName::Immediate)];
        let cancel = Cancel::new();
        cancel.cancel();
        let report = Model::report(&Coin, &variants, &[3], &cancel);
        assert!(report.is_err_and(|e| e.is_cancelled()));
    }
}

#[cfg(test)]
mod figures {
    use super::*;

    /// The table prints figures by the precision policy, a `…_percent` metric as a
    /// percentage (99.99 is not 100); CSV keeps every digit.
    #[test]
    fn the_table_rounds_and_csv_does_not() {
        let mut metrics = Metrics::new();
        metrics.set("success_percent", Some(10093.0 / 10094.0 * 100.0));
        metrics.set("work_amplification", Some(11220.0 / 10094.0));
        let report = MetricsReport {
            model: "partial-failure",
            metric_names: &["success_percent", "work_amplification"],
            results: vec![Run {
                variant: Variant::Named("three_retries".to_owned()),
                seed: 1,
                metrics,
            }],
        };
        let mut table = Vec::new();
        report.write_table(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert_eq!(
            table.lines().nth(1),
            Some("three_retries  1  99.99  1.11"),
            "{table}"
        );
        let mut csv = Vec::new();
        report.write_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert!(csv.contains(&(11220.0f64 / 10094.0).to_string()), "{csv}");
    }
}
