//! The *Dots* scene: a hundred clients fail at the same instant; where does each come back?
//!
//! Row k holds, for every client, the time of its retry after its k-th failure, assuming every
//! attempt fails: the sum of its first k pauses. Without jitter every client draws the same
//! pauses, so a whole row collapses to one dot; with jitter the row spreads out. The pauses
//! are drawn by [`herd::Rule::pause`], the code production clients run, from one
//! [`SplitMix64`] seeded by the request's seed, client after client (as `herd rules` does).
use std::collections::HashSet;
use std::time::Duration;

use herd::rng::SplitMix64;
use herd::{Rule, RuleName, RuleState};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::limits::{MAX_DOT_CLIENTS, MAX_DOT_FAILURES};
use super::rules::{build_rule, in_range, rule_name};

/// What the page asks for.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DotsRequest {
    /// The rule's name.
    pub rule: String,
    /// Clients that failed together (1..=1000; 100 by default).
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// Failures, one row each (1..=12; 6 by default).
    #[serde(default = "default_failures")]
    pub failures: u32,
    /// `base` in ms (100 by default).
    pub base_ms: Option<f64>,
    /// `cap` in ms (20 000 by default).
    pub cap_ms: Option<f64>,
    /// `constant`'s pause in ms (1 000 by default).
    pub pause_ms: Option<f64>,
    /// The generator's seed (1 by default).
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_clients() -> u32 {
    100
}
fn default_failures() -> u32 {
    6
}
fn default_seed() -> u64 {
    1
}

/// The retry times of every client after each failure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dots {
    /// The rule.
    #[serde(serialize_with = "super::rules::serialize_name")]
    pub rule: RuleName,
    /// Clients.
    pub clients: u32,
    /// The seed.
    pub seed: u64,
    /// One row per failure, the first failure first.
    pub rows: Vec<DotRow>,
}

/// The retries after one failure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DotRow {
    /// The failure number k (1-based).
    pub failure: u32,
    /// Each client's retry time in ms after the shared first failure, client 0 first.
    pub retry_ms: Vec<f64>,
    /// How many different retry times the row holds (1 when the herd is intact).
    pub distinct: usize,
    /// The earliest retry time in ms.
    pub min_ms: f64,
    /// The latest retry time in ms.
    pub max_ms: f64,
}

impl DotsRequest {
    /// Checks the request and computes the scene.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] naming the parameter out of range.
    pub fn compute(&self) -> Result<Dots, ApiError> {
        let name = rule_name(&self.rule)?;
        let rule = build_rule(name, self.base_ms, self.cap_ms, self.pause_ms)?;
        let clients = in_range("clients", self.clients, 1, MAX_DOT_CLIENTS)?;
        let failures = in_range("failures", self.failures, 1, MAX_DOT_FAILURES)?;
        Ok(dots(&rule, clients, failures, self.seed))
    }
}

/// Computes the scene for a built rule.
#[must_use]
pub fn dots(rule: &Rule, clients: u32, failures: u32, seed: u64) -> Dots {
    let mut rng = SplitMix64::new(seed);
    // times[k][c]: client c's retry time after failure k+1, in nanoseconds.
    let mut times = vec![Vec::with_capacity(clients as usize); failures as usize];
    for _ in 0..clients {
        let mut state = RuleState::default();
        let mut at = Duration::ZERO;
        for row in &mut times {
            at = at.saturating_add(rule.pause(&mut state, &mut rng));
            row.push(at);
        }
    }
    let rows = times
        .into_iter()
        .zip(1..)
        .map(|(row, failure)| {
            let distinct = row.iter().collect::<HashSet<_>>().len();
            let to_ms = |d: &Duration| d.as_nanos() as f64 / 1e6;
            let min_ms = row.iter().min().map_or(0.0, to_ms);
            let max_ms = row.iter().max().map_or(0.0, to_ms);
            DotRow {
                failure,
                retry_ms: row.iter().map(to_ms).collect(),
                distinct,
                min_ms,
                max_ms,
            }
        })
        .collect();
    Dots {
        rule: rule.name(),
        clients,
        seed,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(rule: &str) -> DotsRequest {
        DotsRequest {
            rule: rule.to_owned(),
            clients: 100,
            failures: 6,
            base_ms: None,
            cap_ms: None,
            pause_ms: None,
            seed: 1,
        }
    }

    #[test]
    fn without_jitter_every_row_is_one_dot() {
        for rule in ["immediate", "constant", "exponential"] {
            let dots = request(rule).compute().unwrap();
            assert!(dots.rows.iter().all(|r| r.distinct == 1), "{rule}");
        }
        let exp = request("exponential").compute().unwrap();
        let firsts: Vec<f64> = exp.rows.iter().map(|r| r.retry_ms[0]).collect();
        assert_eq!(firsts, [100.0, 300.0, 700.0, 1500.0, 3100.0, 6300.0]);
    }

    #[test]
    fn jitter_spreads_the_herd() {
        for rule in ["full", "equal", "decorrelated"] {
            let dots = request(rule).compute().unwrap();
            assert!(dots.rows.iter().all(|r| r.distinct > 90), "{rule}");
        }
    }

    #[test]
    fn same_seed_same_dots() {
        assert_eq!(
            request("full").compute().unwrap(),
            request("full").compute().unwrap()
        );
    }

    #[test]
    fn out_of_range_parameters_are_named() {
        let mut r = request("full");
        r.clients = 0;
        assert!(r.compute().unwrap_err().message.starts_with("clients"));
        let mut r = request("full");
        r.failures = 13;
        assert!(r.compute().unwrap_err().message.starts_with("failures"));
        let mut r = request("full");
        r.cap_ms = Some(10.0);
        assert!(r.compute().unwrap_err().message.starts_with("cap_ms"));
        assert!(
            request("bogus")
                .compute()
                .unwrap_err()
                .message
                .starts_with("rule")
        );
    }
}
