//! `--format json` and `--format csv`, and the summary of several runs.
use std::io::{self, Write};

use herd::RuleName;
use herd_sim::{RunResult, Scenario};
use serde::Serialize;

/// Mean, min and max of one figure over runs; absent values (`null`) are left out and
/// counted apart.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct Spread {
    pub(crate) mean: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// Runs in which the figure had a value (all served happened, say).
    pub(crate) runs: usize,
}

impl Spread {
    pub(crate) fn of(values: impl IntoIterator<Item = Option<f64>>) -> Option<Self> {
        let mut n = 0usize;
        let (mut sum, mut min, mut max) = (0.0, f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().flatten() {
            n += 1;
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        (n > 0).then(|| Spread {
            mean: sum / n as f64,
            min,
            max,
            runs: n,
        })
    }
}

/// One rule's figures over all its runs.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    pub(crate) rule: &'static str,
    pub(crate) runs: usize,
    pub(crate) served: Option<Spread>,
    pub(crate) gave_up: Option<Spread>,
    pub(crate) waiting: Option<Spread>,
    pub(crate) half_served_s: Option<Spread>,
    pub(crate) all_served_s: Option<Spread>,
    pub(crate) requests_per_client: Option<Spread>,
    pub(crate) peak_after_outage: Option<Spread>,
}

pub(crate) fn summarise(rule: RuleName, results: &[RunResult]) -> Summary {
    let runs: Vec<&RunResult> = results.iter().filter(|r| r.rule == rule).collect();
    let spread = |f: &dyn Fn(&RunResult) -> Option<f64>| Spread::of(runs.iter().map(|r| f(r)));
    Summary {
        rule: rule.as_str(),
        runs: runs.len(),
        served: spread(&|r| Some(r.served as f64)),
        gave_up: spread(&|r| Some(r.gave_up as f64)),
        waiting: spread(&|r| Some(r.waiting as f64)),
        half_served_s: spread(&|r| r.half_served_s),
        all_served_s: spread(&|r| r.all_served_s),
        requests_per_client: spread(&|r| Some(r.requests_per_client)),
        peak_after_outage: spread(&|r| Some(r.peak_after_outage as f64)),
    }
}

#[derive(Serialize)]
struct StormJson<'a> {
    scenario: &'a Scenario,
    results: &'a [RunResult],
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<Vec<Summary>>,
}

/// `{"scenario": {…}, "results": […]}`, plus `"summary"` per rule when there were several
/// runs per rule.
pub(crate) fn json(
    out: &mut impl Write,
    scenario: &Scenario,
    rules: &[RuleName],
    results: &[RunResult],
) -> io::Result<()> {
    let several = results.len() > rules.len();
    let report = StormJson {
        scenario,
        results,
        summary: several.then(|| rules.iter().map(|&r| summarise(r, results)).collect()),
    };
    serde_json::to_writer(&mut *out, &report).map_err(io::Error::from)?;
    writeln!(out)
}

/// The CSV header; the columns match the JSON fields of a result (without the series).
pub(crate) const CSV_HEADER: &str = "rule,seed,clients,served,gave_up,denied_by_budget,waiting,half_served_s,all_served_s,last_attempt_s,requests,requests_per_client,peak_after_outage";

/// One line per run; an absent time is an empty field.
pub(crate) fn csv(out: &mut impl Write, results: &[RunResult]) -> io::Result<()> {
    let opt = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    writeln!(out, "{CSV_HEADER}")?;
    for r in results {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.rule,
            r.seed,
            r.clients,
            r.served,
            r.gave_up,
            r.denied_by_budget,
            r.waiting,
            opt(r.half_served_s),
            opt(r.all_served_s),
            opt(r.last_attempt_s),
            r.requests,
            r.requests_per_client,
            r.peak_after_outage
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_skips_absent_values() {
        let s = Spread::of([Some(1.0), None, Some(3.0)]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.runs), (2.0, 1.0, 3.0, 2));
        assert!(Spread::of([None, None]).is_none());
    }
}
