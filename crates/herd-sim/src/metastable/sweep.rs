//! Sweeping the offered load: below which rate does the system recover by itself?
use std::fmt;

use herd::RuleName;
use serde::Serialize;

use super::report::budget_label;
use super::{Metastable, MetastableScenario};
use crate::error::ScenarioError;
use crate::limits::Limits;

/// One offered load of a sweep, over several seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OfferedPoint {
    /// New requests per second.
    pub offered_qps: f64,
    /// Seeds run.
    pub runs: u32,
    /// Runs that recovered before the horizon.
    pub recovered: u32,
    /// Mean recovery time (`recovered_at_s`) over the runs that recovered, in seconds.
    pub recovered_at_s: Option<f64>,
    /// Mean attempts per second after the outage.
    pub attempts_per_s: f64,
    /// Mean goodput per second after the outage.
    pub goodput_per_s: f64,
}

/// The points of a sweep, in the order given; displays as a table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OfferedSweep {
    /// The rule run.
    #[serde(serialize_with = "crate::rule_serde::one::serialize")]
    pub rule: RuleName,
    /// Retry budget percentage (0 = none).
    pub budget_percent: f64,
    /// The points.
    pub points: Vec<OfferedPoint>,
}

impl OfferedSweep {
    /// The highest offered load of the sweep below which every point recovered in every run
    /// (the last point of the leading run of fully recovered points); `None` if the first
    /// point already fails.
    #[must_use]
    pub fn threshold_qps(&self) -> Option<f64> {
        self.points
            .iter()
            .take_while(|p| p.recovered == p.runs)
            .last()
            .map(|p| p.offered_qps)
    }
}

/// Runs `scenario` with `rule` at each offered load and each seed.
///
/// # Errors
///
/// An offered load or the scenario is out of range (naming the field), or a run fails.
pub fn sweep_offered(
    scenario: &MetastableScenario,
    limits: &Limits,
    rule: RuleName,
    offered: &[f64],
    seeds: &[u64],
) -> Result<OfferedSweep, ScenarioError> {
    let mut points = Vec::with_capacity(offered.len());
    for &qps in offered {
        let mut s = scenario.clone();
        s.clients.offered_qps = qps;
        let model = Metastable::new(&s, limits)?;
        let mut point = OfferedPoint {
            offered_qps: qps,
            runs: 0,
            recovered: 0,
            recovered_at_s: None,
            attempts_per_s: 0.0,
            goodput_per_s: 0.0,
        };
        let mut recovered_sum = 0.0;
        for &seed in seeds {
            let r = model.run(rule, seed)?;
            point.runs += 1;
            point.attempts_per_s += r.after_outage.attempts_per_s;
            point.goodput_per_s += r.after_outage.goodput_per_s;
            if let Some(t) = r.recovered_at_s {
                point.recovered += 1;
                recovered_sum += t;
            }
        }
        if point.runs > 0 {
            point.attempts_per_s /= f64::from(point.runs);
            point.goodput_per_s /= f64::from(point.runs);
        }
        if point.recovered > 0 {
            point.recovered_at_s = Some(recovered_sum / f64::from(point.recovered));
        }
        points.push(point);
    }
    Ok(OfferedSweep {
        rule,
        budget_percent: scenario.retry.budget_percent,
        points,
    })
}

impl fmt::Display for OfferedSweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let budget = budget_label(self.budget_percent);
        writeln!(f, "rule {}, {budget}; rates after the outage", self.rule)?;
        writeln!(
            f,
            "{:>12} {:>10} {:>14} {:>12} {:>10}",
            "offered/s", "recovered", "mean at (s)", "attempts/s", "goodput/s"
        )?;
        for p in &self.points {
            let at = p
                .recovered_at_s
                .map_or_else(|| "-".to_owned(), |t| format!("{t:.1}"));
            writeln!(
                f,
                "{:>12} {:>10} {:>14} {:>12.1} {:>10.1}",
                p.offered_qps,
                format!("{}/{}", p.recovered, p.runs),
                at,
                p.attempts_per_s,
                p.goodput_per_s
            )?;
        }
        match self.threshold_qps() {
            Some(t) => writeln!(
                f,
                "recovers by itself in every run up to {t} new requests/s in this sweep"
            ),
            None => writeln!(f, "no offered load of this sweep recovers in every run"),
        }
    }
}
