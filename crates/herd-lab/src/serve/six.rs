//! The *Six clients* scene (`scenarios/six-clients.toml`), every
//! attempt traced by `herd-sim`, laid out as a clients × ticks grid so the page only draws.
use herd::RuleName;
use herd_sim::{Limits, Outcome, Scenario, Simulation};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::rules::rule_name;

/// The scene, exactly as shipped for `herd storm scenarios/six-clients.toml`.
const SCENE: &str = include_str!("../../../../scenarios/six-clients.toml");
/// The grid shows at least this many ticks, so rules can be compared column by column.
const MIN_TICKS: u64 = 16;
/// And at most this many (the scene's horizon is 60 ticks).
const MAX_TICKS: u64 = 60;

/// What the page asks for.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SixRequest {
    /// The rule's name.
    pub rule: String,
    /// The world's seed (the scene's own, 1, by default).
    pub seed: Option<u64>,
}

/// The timeline: one row per client, one column per tick (tick t is column t − 1).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SixTimeline {
    /// The rule.
    #[serde(serialize_with = "super::rules::serialize_name")]
    pub rule: RuleName,
    /// The seed.
    pub seed: u64,
    /// Clients (6).
    pub clients: u64,
    /// Columns in the grid.
    pub ticks: u64,
    /// `rows[c][t − 1]`: what became of client c's call at tick t: `""` (no call),
    /// `"served"`, `"refused"`, `"collapsed"` or `"down"`.
    pub rows: Vec<Vec<&'static str>>,
    /// Calls per tick.
    pub calls_per_tick: Vec<u64>,
    /// Ticks in which the server is down.
    pub down_ticks: Vec<u64>,
    /// Answers per tick when up.
    pub capacity_per_tick: u64,
    /// A tick with more calls than this answers none (0 = off).
    pub collapse_above: u64,
    /// Clients served.
    pub served: u64,
    /// Clients that gave up.
    pub gave_up: u64,
    /// All calls.
    pub calls: u64,
    /// The tick of the last call.
    pub last_call_tick: Option<u64>,
}

fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Served => "served",
        Outcome::Refused => "refused",
        Outcome::Collapsed => "collapsed",
        Outcome::Down => "down",
    }
}

/// The shipped scene.
///
/// # Errors
///
/// Only if the shipped file were broken (a test checks it is not).
pub fn scene() -> Result<Scenario, ApiError> {
    Scenario::from_toml_str(SCENE, &herd_sim::Limits::default(), |_| {})
        .map_err(|e| ApiError::internal(format!("scenarios/six-clients.toml: {e}")))
}

impl SixRequest {
    /// Checks the request and traces the scene.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] for an unknown rule.
    pub fn run(&self) -> Result<SixTimeline, ApiError> {
        let rule = rule_name(&self.rule)?;
        let scenario = scene()?;
        let seed = self.seed.unwrap_or(scenario.seed);
        let simulation = Simulation::new(&scenario, &Limits::interactive())
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let (result, trace) = simulation
            .trace(rule, seed)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        // One step is one tick; the scene's steps are 1 s, so tick = step.
        let last_call_tick = trace.events.iter().map(|e| e.step).max();
        let ticks = last_call_tick
            .unwrap_or(0)
            .saturating_add(1)
            .clamp(MIN_TICKS, MAX_TICKS);
        let clients = result.clients;
        let width = usize::try_from(ticks).unwrap_or(usize::MAX);
        let mut rows = vec![vec![""; width]; usize::try_from(clients).unwrap_or(0)];
        let mut calls_per_tick = vec![0; width];
        for event in &trace.events {
            let (Ok(c), Ok(t)) = (usize::try_from(event.client), usize::try_from(event.step))
            else {
                continue;
            };
            if t == 0 || t > width || c >= rows.len() {
                continue;
            }
            rows[c][t - 1] = outcome_name(event.outcome);
            calls_per_tick[t - 1] += 1;
        }
        let step_s = scenario.step_ms / 1000.0;
        let down_ticks = (1..=ticks)
            .filter(|&t| {
                let at = t as f64 * step_s;
                scenario
                    .server
                    .outages
                    .iter()
                    .any(|[start, end]| at >= *start && at < *end)
            })
            .collect();
        Ok(SixTimeline {
            rule,
            seed,
            clients,
            ticks,
            rows,
            calls_per_tick,
            down_ticks,
            capacity_per_tick: scenario.server.capacity,
            collapse_above: scenario.server.collapse_above,
            served: result.served,
            gave_up: result.gave_up,
            calls: result.requests,
            last_call_tick,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rule: &str) -> SixTimeline {
        SixRequest {
            rule: rule.to_owned(),
            seed: None,
        }
        .run()
        .unwrap()
    }

    #[test]
    fn spec_figures() {
        let immediate = run("immediate");
        assert_eq!((immediate.served, immediate.calls), (0, 24));
        assert_eq!(immediate.last_call_tick, Some(4));
        let exponential = run("exponential");
        assert_eq!((exponential.served, exponential.calls), (0, 24));
        assert_eq!(exponential.last_call_tick, Some(15));
        assert_eq!(run("full").served, 6);
    }

    #[test]
    fn the_grid_matches_the_counts() {
        let t = run("exponential");
        assert_eq!(t.down_ticks, [1, 2]);
        assert_eq!(t.calls_per_tick.iter().sum::<u64>(), t.calls);
        // Everyone calls at ticks 1, 3, 7 and 15 (waits 2, 4, 8).
        for row in &t.rows {
            let called: Vec<usize> = (0..row.len())
                .filter(|&i| !row[i].is_empty())
                .map(|i| i + 1)
                .collect();
            assert_eq!(called, [1, 3, 7, 15]);
        }
        assert_eq!(t.rows[0][0], "down");
        assert_eq!(t.rows[0][2], "collapsed");
    }
}
