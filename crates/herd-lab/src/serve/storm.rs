//! The *Storm* scene: the default storm scenario with the page's knobs (rule, refusal cost,
//! clients, outage, capacity), built as a typed `Scenario` and checked and run as
//! `herd storm` runs a scenario file (`Simulation::new`, then `Simulation::run` watched by the
//! request's cancel flag).
//!
//! A storm that never ends (a refusal that costs work, and clients that retry faster than
//! the server can refuse them) must still be shown, not refused. A waiting client makes at
//! most one attempt per step, so `clients · horizon / step` bounds a run's attempts before it
//! starts: the run's horizon is cut to what [`MAX_STORM_ATTEMPTS`] allows, and the answer says
//! so (`horizon_s`, `cut_short`), so the page can say "nobody served in the first N s".
use herd::RuleName;
use herd_sim::{Cancel, RunResult, Scenario, Simulation, THROTTLE_KINDS, ThrottleTable, Watch};
use serde::{Deserialize, Serialize};

use super::error::{ApiError, FormFields};
use super::limits::{
    MAX_CAPACITY, MAX_OUTAGE_S, MAX_STORM_ATTEMPTS, MAX_STORM_CLIENTS, run_limits,
};
use super::rules::{in_range, rule_name};

/// What the page asks for. Absent fields take the default storm scenario's values (docs/model.md).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StormRequest {
    /// The rule's name.
    pub rule: String,
    /// A refusal's share of an answer's work, `0 <= r < 1` (the page sends 0 or 0.1).
    #[serde(default)]
    pub refusal_cost: f64,
    /// Clients in the burst at t = 0 (1..=200 000).
    #[serde(default = "default_clients")]
    pub clients: u64,
    /// The outage `[0, outage_s)` in seconds (0..=600; 0 = none).
    #[serde(default = "default_outage")]
    pub outage_s: f64,
    /// Answers per 100 ms window (1..=1 000 000).
    #[serde(default = "default_capacity")]
    pub capacity: u64,
    /// The world's seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// A throttle every client shares, by its `[retry.throttle]` kind with its system's
    /// defaults (docs/model.md), or `none`.
    #[serde(default = "default_throttle")]
    pub throttle: String,
}

fn default_throttle() -> String {
    "none".to_owned()
}

fn default_clients() -> u64 {
    Scenario::default().clients.count
}
fn default_outage() -> f64 {
    10.0
}
fn default_capacity() -> u64 {
    Scenario::default().server.capacity
}
fn default_seed() -> u64 {
    1
}

/// A run's figures and series, with the scenario facts the chart needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StormAnswer {
    /// The run, as `herd storm --format json` prints it.
    #[serde(flatten)]
    pub result: RunResult,
    /// The outages, `[start_s, end_s)`, for shading.
    pub outages: Vec<[f64; 2]>,
    /// The refusal cost the run used.
    pub refusal_cost: f64,
    /// How far the run looked, in seconds: the scenario's horizon, or less when following
    /// every client that long would exceed the page's work cap.
    pub horizon_s: f64,
    /// The horizon was cut for the work cap, and clients were still waiting at it.
    pub cut_short: bool,
}

/// Fewest seconds a run must be able to show after the outage; a request whose work cap
/// leaves less is refused before running.
pub const MIN_SHOWN_AFTER_OUTAGE_S: f64 = 5.0;

impl StormRequest {
    /// Checks the page's knobs against the page's ranges (tighter than the simulator's) and
    /// its work cap: the rule, and the horizon the run may look ([`StormRequest::horizon_s`]).
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] naming the parameter out of range, or when the run would exceed the
    /// page's work cap.
    pub fn check(&self) -> Result<(RuleName, f64), ApiError> {
        let rule = rule_name(&self.rule)?;
        in_range("clients", self.clients, 1, MAX_STORM_CLIENTS)?;
        in_range("capacity", self.capacity, 1, MAX_CAPACITY)?;
        if !self.outage_s.is_finite() {
            return Err(ApiError::bad_request("outage_s must be a finite number"));
        }
        in_range("outage_s", self.outage_s, 0.0, MAX_OUTAGE_S)?;
        if self.throttle != "none" && !THROTTLE_KINDS.contains(&self.throttle.as_str()) {
            return Err(ApiError::bad_request(format!(
                "throttle must be none or one of {}, got {:?}",
                THROTTLE_KINDS.join(", "),
                self.throttle
            )));
        }
        if !(self.refusal_cost.is_finite() && (0.0..1.0).contains(&self.refusal_cost)) {
            return Err(ApiError::bad_request(format!(
                "refusal_cost must be in [0, 1), got {}",
                self.refusal_cost
            )));
        }
        Ok((rule, self.horizon_s()?))
    }

    /// The storm scenario this request describes: the default storm scenario with the
    /// page's knobs, looking `horizon_s` ahead. The seed is not part of it: it is the run's,
    /// as with `herd storm --seed`.
    #[must_use]
    pub fn scenario(&self, rule: RuleName, horizon_s: f64) -> Scenario {
        let mut scenario = Scenario {
            horizon_s,
            ..Scenario::default()
        };
        scenario.clients.count = self.clients;
        scenario.server.capacity = self.capacity;
        scenario.server.refusal_cost = self.refusal_cost;
        scenario.server.outages = if self.outage_s > 0.0 {
            vec![[0.0, self.outage_s]]
        } else {
            Vec::new()
        };
        scenario.retry.rules = vec![rule];
        scenario.retry.throttle = (self.throttle != "none").then(|| ThrottleTable {
            kind: self.throttle.clone(),
            ..ThrottleTable::default()
        });
        scenario
    }

    /// Checks the request and runs the storm model on its scenario, as `herd storm` does:
    /// the same checks ([`Simulation::new`]) and the same run (CPU work: call it off the
    /// executor), stopped when `cancel` is set (the client left, the server is stopping, or
    /// the page's time limit passed).
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] for a bad parameter, or when the run would exceed the page's caps;
    /// a 503 when cancelled (nobody reads it).
    pub fn run(&self, cancel: &Cancel) -> Result<StormAnswer, ApiError> {
        let (rule, horizon_s) = self.check()?;
        let limits = run_limits();
        let storm =
            Simulation::new(&self.scenario(rule, horizon_s), &limits).map_err(scenario_error)?;
        let result = storm
            .run(rule, self.seed, Watch::until(cancel))
            .map_err(scenario_error)?;
        let cut_short = horizon_s < Scenario::default().horizon_s && result.waiting > 0;
        Ok(StormAnswer {
            result,
            outages: storm.scenario().server.outages.clone(),
            refusal_cost: self.refusal_cost,
            horizon_s,
            cut_short,
        })
    }

    /// The horizon the work cap allows, estimated before running: at most one attempt per
    /// waiting client per step of the default scenario.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] when that horizon would not reach
    /// [`MIN_SHOWN_AFTER_OUTAGE_S`] past the outage (too many clients to follow).
    pub fn horizon_s(&self) -> Result<f64, ApiError> {
        let defaults = Scenario::default();
        let step_s = defaults.step_ms / 1000.0;
        let clients = self.clients.max(1) as f64;
        // Whole seconds, a little under the bound, so that the cap is never reached.
        let affordable = (MAX_STORM_ATTEMPTS as f64 * step_s / clients * 0.95).floor();
        let needed = self.outage_s + MIN_SHOWN_AFTER_OUTAGE_S;
        if affordable < needed {
            let most = (MAX_STORM_ATTEMPTS as f64 * step_s * 0.95 / needed).floor();
            return Err(ApiError::bad_request(format!(
                "clients: the page can follow {} clients for only {affordable} s, less than the \
                 outage and {MIN_SHOWN_AFTER_OUTAGE_S} s after it; at most {most} clients with a \
                 {} s outage",
                self.clients, self.outage_s
            )));
        }
        Ok(defaults.horizon_s.min(affordable))
    }
}

/// The storm form's parameters, by the scenario field each one sets.
pub(super) const STORM_FORM: &FormFields = &[
    (Scenario::CLIENTS_COUNT, "clients"),
    (Scenario::REFUSAL_COST, "refusal_cost"),
    (Scenario::OUTAGES, "outage_s"),
];

/// A 400 for a storm scenario the simulator refused, named by the page's parameter.
pub(super) fn scenario_error(e: herd_sim::ScenarioError) -> ApiError {
    ApiError::scenario(&e, STORM_FORM)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field the form sets, refused by the simulator, is named as the page names it.
    #[test]
    fn a_refused_field_is_named_as_the_form_names_it() {
        use herd_sim::Limits;
        let request: StormRequest =
            serde_json::from_value(serde_json::json!({ "rule": "full" })).unwrap();
        let base = request.scenario(RuleName::Full, 60.0);
        let few = Limits {
            max_clients: base.clients.count,
            ..Limits::interactive()
        };
        type Spoil = fn(&mut Scenario);
        let cases: [(&str, Spoil); 3] = [
            ("clients", |s| s.clients.count += 1),
            ("refusal_cost", |s| s.server.refusal_cost = 1.5),
            ("outage_s", |s| s.server.outages = vec![[5.0, 1.0]]),
        ];
        for (parameter, spoil) in cases {
            let mut scenario = base.clone();
            spoil(&mut scenario);
            let err = Simulation::new(&scenario, &few).unwrap_err();
            let api = scenario_error(err.clone());
            assert!(
                api.message.starts_with(&format!("{parameter}: ")),
                "{err} was answered {}",
                api.message
            );
        }
    }
}
