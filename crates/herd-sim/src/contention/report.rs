//! The comparison table: one point per rule and client count.
use std::fmt;

use herd::RuleName;
use serde::Serialize;

use super::{Contention, ContentionPoint};
use crate::figure;

/// The comparison at one or more client counts: one point per rule and count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContentionReport {
    /// Network delay of one hop: mean and standard deviation, in milliseconds.
    pub delay_ms: [f64; 2],
    /// `base` and `cap` in milliseconds.
    pub base_cap_ms: [f64; 2],
    /// The first seed; each point averages `runs` seeds from it.
    pub seed: u64,
    /// Runs per point.
    pub runs: u32,
    /// The rules, in column order.
    #[serde(serialize_with = "crate::rule_serde::list::serialize")]
    pub rules: Vec<RuleName>,
    /// The points, client-count-major, rule-minor.
    pub points: Vec<ContentionPoint>,
}

impl ContentionReport {
    /// Collects `points` (any order) for the scenario of `model`.
    #[must_use]
    pub fn new(model: &Contention, rules: &[RuleName], mut points: Vec<ContentionPoint>) -> Self {
        points.sort_by_key(|p| {
            (
                p.clients,
                rules
                    .iter()
                    .position(|r| *r == p.rule)
                    .unwrap_or(usize::MAX),
            )
        });
        let s = model.scenario();
        Self {
            delay_ms: [s.network.delay_mean_ms, s.network.delay_sd_ms],
            base_cap_ms: [s.retry.base_ms, s.retry.cap_ms],
            seed: s.seed,
            runs: s.runs,
            rules: rules.to_vec(),
            points,
        }
    }

    /// The point for `rule` at `clients`.
    #[must_use]
    pub fn point(&self, rule: RuleName, clients: u64) -> Option<&ContentionPoint> {
        self.points
            .iter()
            .find(|p| p.rule == rule && p.clients == clients)
    }

    fn client_counts(&self) -> Vec<u64> {
        let mut counts: Vec<u64> = self.points.iter().map(|p| p.clients).collect();
        counts.dedup();
        counts
    }
}

/// The column heading of a rule: `immediate` is the article's "no backoff".
fn heading(rule: RuleName) -> String {
    match rule {
        RuleName::Immediate => "immediate (no backoff)".to_owned(),
        other => other.as_str().to_owned(),
    }
}

impl fmt::Display for ContentionReport {
    /// With one client count: one row per rule. With several: two tables (write calls, then
    /// completion time), one row per client count and one column per rule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "optimistic concurrency on one row: delay N({} ms, {} ms) per hop, base {} ms, \
             cap {} ms, mean of {} runs from seed {}",
            self.delay_ms[0],
            self.delay_ms[1],
            self.base_cap_ms[0],
            self.base_cap_ms[1],
            self.runs,
            self.seed
        )?;
        let counts = self.client_counts();
        if counts.len() == 1 {
            writeln!(
                f,
                "{:<24} {:>8} {:>12} {:>12} {:>16}",
                "rule", "clients", "write calls", "per client", "completion (ms)"
            )?;
            for p in &self.points {
                writeln!(
                    f,
                    "{:<24} {:>8} {:>12} {:>12} {:>16}",
                    heading(p.rule),
                    p.clients,
                    figure::number(p.calls),
                    figure::number(p.calls_per_client),
                    figure::number(p.completion_ms)
                )?;
            }
            return Ok(());
        }
        for (title, value) in [
            (
                "write calls (work)",
                (|p: &ContentionPoint| p.calls) as fn(&ContentionPoint) -> f64,
            ),
            ("completion time (ms)", |p: &ContentionPoint| {
                p.completion_ms
            }),
        ] {
            writeln!(f, "\n{title}")?;
            write!(f, "{:>8}", "clients")?;
            for r in &self.rules {
                write!(
                    f,
                    " {:>13}",
                    if *r == RuleName::Immediate {
                        "no backoff"
                    } else {
                        r.as_str()
                    }
                )?;
            }
            writeln!(f)?;
            for &n in &counts {
                write!(f, "{n:>8}")?;
                for &r in &self.rules {
                    match self.point(r, n) {
                        Some(p) => write!(f, " {:>13}", figure::number(value(p)))?,
                        None => write!(f, " {:>13}", "-")?,
                    }
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }
}
