//! The *Hedging* scene: the default latency scenario (docs/model.md, "Latency") with the
//! page's knobs (hedge delay, utilisation, fan-out) and its five policies, built as a typed
//! `LatencyScenario` and checked as a scenario file of it is (`LatencyModel::within`).
//!
//! Every policy of one answer meets the same users and the same server pauses (the model's
//! common random numbers), so the page can draw the chosen policy's tail over the tail
//! without hedging and say, at each utilisation, whether hedging still pays.
//!
//! The work is bounded before anything runs: a run sends at most `(requests + warm-up) ·
//! fan_out · copies` copies per policy, so the measured requests are cut to what
//! [`MAX_HEDGE_COPIES`] allows over the five policies, and the answer says so
//! (`requests_capped`). A request that asks for more requests than the cap allows is refused
//! with a 400 naming `requests`.
use herd_sim::latency::{
    LatencyModel, LatencyResult, LatencyScenario, PolicyKind, PolicySpec, tail,
};
use herd_sim::model::Model;
use herd_sim::{Cancel, Limits, ScenarioError, Watch};
use serde::{Deserialize, Serialize};

use super::error::{ApiError, FormFields};
use super::limits::{
    MAX_HEDGE_COPIES, MAX_HEDGE_DELAY_MS, MAX_HEDGE_FAN_OUT, MAX_HEDGE_REQUESTS,
    MAX_HEDGE_UTILISATION, MIN_HEDGE_REQUESTS,
};
use super::rules::in_range;

/// The scene's policies, in the order of its table: `(name, copies a sub-request may send)`.
///
/// - `none`: one copy per sub-request;
/// - `delay`: a second copy after `delay_ms` while the first has not answered;
/// - `percentile`: a second copy after the p99 of recent sub-request latencies, learned by
///   herd's `LatencyHistogram`;
/// - `budget`: `delay`, with herd's `RetryBudget` allowing hedges for 2 % of sub-requests;
/// - `tied`: two copies at once; when one starts service the other is cancelled.
pub const POLICIES: [(&str, u64); 5] = [
    ("none", 1),
    ("delay", 2),
    ("percentile", 2),
    ("budget", 2),
    ("tied", 2),
];

/// The `budget` policy's budget: hedges for this percentage of sub-requests.
pub const BUDGET_PERCENT: f64 = 2.0;
/// The `percentile` policy's quantile.
pub const QUANTILE: f64 = 0.99;
/// Points on each policy's tail curve (at most; fewer for small samples).
const TAIL_POINTS: usize = 160;

/// What the page asks for. Absent fields take the default latency scenario's values.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgeRequest {
    /// The policy drawn in colour (one of [`POLICIES`]); every policy is run.
    #[serde(default = "default_policy")]
    pub policy: String,
    /// The hedge delay of `delay` and `budget`, in ms (0..=1000).
    #[serde(default = "default_delay")]
    pub delay_ms: f64,
    /// Server utilisation without hedging, a fraction in (0, 1]: it sets the arrival rate.
    #[serde(default = "default_utilisation")]
    pub utilisation: f64,
    /// Sub-requests per user request (1..=50).
    #[serde(default = "default_fan_out")]
    pub fan_out: u32,
    /// User requests to measure; absent, the page's default cut to the work cap.
    #[serde(default)]
    pub requests: Option<u64>,
    /// The run's seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_policy() -> String {
    "delay".to_owned()
}
fn default_delay() -> f64 {
    10.0
}
fn default_utilisation() -> f64 {
    0.3
}
fn default_fan_out() -> u32 {
    LatencyScenario::default().traffic.fan_out
}
fn default_seed() -> u64 {
    LatencyScenario::default().seed
}

/// User requests measured when the request does not say (fewer when the cap requires).
pub const DEFAULT_HEDGE_REQUESTS: u64 = 20_000;

/// One policy's figures and its tail.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyAnswer {
    /// The policy's figures, as `herd hedge --format json` prints them.
    #[serde(flatten)]
    pub result: LatencyResult,
    /// Whether this policy's p99.9 is below the p99.9 without hedging; `None` for `none`.
    pub pays: Option<bool>,
    /// The tail: `[latency_ms, share]` pairs, `share` being the fraction of measured user
    /// requests at least that slow (1 down to one request's share), latencies ascending.
    pub tail: Vec<[f64; 2]>,
}

/// Every policy's figures and tail, with the scenario facts the chart needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HedgeAnswer {
    /// The policy drawn in colour.
    pub policy: String,
    /// The hedge delay (ms) of `delay` and `budget`.
    pub delay_ms: f64,
    /// The utilisation asked for (without hedging).
    pub utilisation: f64,
    /// The arrival rate it gives, user requests per second.
    pub rate_per_s: f64,
    /// Sub-requests per user request.
    pub fan_out: u32,
    /// Servers in the pool.
    pub servers: u32,
    /// User requests measured per policy.
    pub requests: u64,
    /// The page's default was cut to stay within [`MAX_HEDGE_COPIES`].
    pub requests_capped: bool,
    /// The run's seed.
    pub seed: u64,
    /// One entry per policy, in [`POLICIES`] order.
    pub results: Vec<PolicyAnswer>,
}

/// Copies the five policies may send at most, over `requests` measured user requests.
#[must_use]
pub fn copies_estimate(requests: u64, fan_out: u32) -> u64 {
    let copies: u64 = POLICIES.iter().map(|(_, c)| c).sum();
    requests
        .saturating_add(warmup(requests))
        .saturating_mul(u64::from(fan_out))
        .saturating_mul(copies)
}

/// The most measured requests whose copies fit [`MAX_HEDGE_COPIES`] at `fan_out`.
#[must_use]
pub fn affordable(fan_out: u32) -> u64 {
    // `copies_estimate` grows with the requests: the largest that fits, by bisection.
    let (mut fits, mut too_many) = (0, MAX_HEDGE_COPIES + 1);
    while too_many - fits > 1 {
        let mid = fits + (too_many - fits) / 2;
        if copies_estimate(mid, fan_out) <= MAX_HEDGE_COPIES {
            fits = mid;
        } else {
            too_many = mid;
        }
    }
    fits
}

/// User requests run before measuring, as the default scenario does: a tenth.
fn warmup(requests: u64) -> u64 {
    requests / 10
}

impl HedgeRequest {
    /// Checks the page's knobs against the page's ranges (tighter than the simulator's) and
    /// its work cap: the chosen policy's index and the requests to measure.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] naming the parameter out of range, or `requests` when they would
    /// exceed the page's work cap.
    pub fn check(&self) -> Result<(usize, u64, bool), ApiError> {
        let chosen = POLICIES
            .iter()
            .position(|(name, _)| *name == self.policy)
            .ok_or_else(|| {
                let names: Vec<&str> = POLICIES.iter().map(|(n, _)| *n).collect();
                ApiError::bad_request(format!(
                    "policy: unknown policy `{}`; one of {}",
                    self.policy,
                    names.join(", ")
                ))
            })?;
        in_range("delay_ms", self.delay_ms, 0.0, MAX_HEDGE_DELAY_MS)?;
        if !(self.utilisation > 0.0 && self.utilisation <= MAX_HEDGE_UTILISATION) {
            return Err(ApiError::bad_request(format!(
                "utilisation must be above 0 and at most {MAX_HEDGE_UTILISATION}, got {}",
                self.utilisation
            )));
        }
        in_range("fan_out", self.fan_out, 1, MAX_HEDGE_FAN_OUT)?;
        let (requests, capped) = self.requests()?;
        Ok((chosen, requests, capped))
    }

    /// The requests to measure: as asked, or the default cut to the work cap (and whether it
    /// was cut).
    fn requests(&self) -> Result<(u64, bool), ApiError> {
        let affordable = affordable(self.fan_out);
        match self.requests {
            Some(asked) => {
                in_range("requests", asked, MIN_HEDGE_REQUESTS, MAX_HEDGE_REQUESTS)?;
                if copies_estimate(asked, self.fan_out) > MAX_HEDGE_COPIES {
                    return Err(ApiError::bad_request(format!(
                        "requests: {asked} requests at fan-out {} may send {} copies over the \
                         five policies, more than the page's {MAX_HEDGE_COPIES}; at most \
                         {affordable} at this fan-out",
                        self.fan_out,
                        copies_estimate(asked, self.fan_out)
                    )));
                }
                Ok((asked, false))
            }
            None => {
                let requests = DEFAULT_HEDGE_REQUESTS.min(affordable);
                if requests < MIN_HEDGE_REQUESTS {
                    return Err(ApiError::bad_request(format!(
                        "fan_out: at fan-out {} the page can measure only {requests} requests, \
                         fewer than {MIN_HEDGE_REQUESTS}",
                        self.fan_out
                    )));
                }
                Ok((requests, requests < DEFAULT_HEDGE_REQUESTS))
            }
        }
    }

    /// The arrival rate that gives this utilisation without hedging, in the default pool:
    /// `utilisation · servers / (fan_out · mean service time)`, as `herd hedge --utilisation`.
    #[must_use]
    pub fn rate_per_s(&self) -> f64 {
        let mut pool = LatencyScenario::default();
        pool.traffic.fan_out = self.fan_out;
        pool.rate_at_utilisation(self.utilisation)
    }

    /// The latency scenario this request describes: the default latency scenario's pool,
    /// service and pauses, with the page's traffic and its five policies. The seed is not
    /// part of it: it is the run's, as with `herd hedge --seed`.
    #[must_use]
    pub fn scenario(&self, requests: u64) -> LatencyScenario {
        let policy = |name: &str, kind: PolicyKind| PolicySpec {
            name: name.to_owned(),
            kind,
            ..PolicySpec::default()
        };
        let delayed = |name: &str| PolicySpec {
            delay_ms: self.delay_ms,
            ..policy(name, PolicyKind::Delay)
        };
        let mut scenario = LatencyScenario {
            model: Some(<LatencyModel as Model>::NAME.to_owned()),
            requests,
            warmup_requests: warmup(requests),
            ..LatencyScenario::default()
        };
        scenario.traffic.rate_per_s = self.rate_per_s();
        scenario.traffic.fan_out = self.fan_out;
        scenario.policies = vec![
            policy("none", PolicyKind::None),
            delayed("delay"),
            PolicySpec {
                quantile: QUANTILE,
                ..policy("percentile", PolicyKind::Percentile)
            },
            PolicySpec {
                budget_percent: Some(BUDGET_PERCENT),
                ..delayed("budget")
            },
            policy("tied", PolicyKind::Tied),
        ];
        scenario
    }

    /// Checks the request and the scenario it describes, as a scenario file of the latency
    /// model is checked (`LatencyModel::within`, which estimates the run's events and refuses
    /// what the page's cap does not allow): the chosen policy's
    /// index, the requests to measure, whether they were cut, and the checked model. Cheap:
    /// nothing runs.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] naming the parameter at fault (`utilisation` for a rate whose run
    /// would cover more simulated time, or take more events, than allowed).
    pub fn model(&self) -> Result<(usize, u64, bool, LatencyModel), ApiError> {
        let (chosen, requests, capped) = self.check()?;
        let limits = Limits {
            // Events per policy; the five policies' copies together are bounded by `check`.
            max_run_attempts: MAX_HEDGE_COPIES,
            ..Limits::interactive()
        };
        let latency =
            LatencyModel::within(&self.scenario(requests), &limits).map_err(scenario_error)?;
        Ok((chosen, requests, capped, latency))
    }

    /// Checks the request and runs every policy of the latency model on its scenario, as
    /// `herd hedge` runs a scenario file (CPU work: call it off the executor), stopped within
    /// a few thousand events when `cancel` is set (the client left, the server is stopping,
    /// or the page's time limit passed).
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] for a bad parameter, or when the run would exceed the page's cap; a
    /// 503 when cancelled (nobody reads it).
    pub fn run(&self, cancel: &Cancel) -> Result<HedgeAnswer, ApiError> {
        let (chosen, requests, capped, latency) = self.model()?;
        let mut results = Vec::with_capacity(POLICIES.len());
        for index in 0..POLICIES.len() {
            let (result, latencies) = latency
                .run(index, self.seed, Watch::until(cancel))
                .map_err(scenario_error)?;
            results.push((result, tail(&latencies, TAIL_POINTS)));
        }
        let none_p999 = results[0].0.p999_ms;
        let results = results
            .into_iter()
            .enumerate()
            .map(|(i, (result, tail))| PolicyAnswer {
                pays: (i > 0).then_some(result.p999_ms < none_p999),
                result,
                tail,
            })
            .collect();
        Ok(HedgeAnswer {
            policy: POLICIES[chosen].0.to_owned(),
            delay_ms: self.delay_ms,
            utilisation: self.utilisation,
            rate_per_s: latency.scenario().traffic.rate_per_s,
            fan_out: self.fan_out,
            servers: latency.scenario().servers.count,
            requests,
            requests_capped: capped,
            seed: self.seed,
            results,
        })
    }
}

/// The hedging form's parameters, by the scenario field each one sets (`utilisation` sets the
/// rate).
const HEDGE_FORM: &FormFields = &[
    (LatencyScenario::REQUESTS, "requests"),
    (LatencyScenario::WARMUP_REQUESTS, "requests"),
    (LatencyScenario::FAN_OUT, "fan_out"),
    (LatencyScenario::RATE_PER_S, "utilisation"),
    (LatencyScenario::POLICY_DELAY_MS, "delay_ms"),
];

/// A 400 for a latency scenario the simulator refused, named by the page's parameter.
fn scenario_error(e: ScenarioError) -> ApiError {
    ApiError::scenario(&e, HEDGE_FORM)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field the form sets, refused by the simulator, is named as the page names it.
    #[test]
    fn a_refused_field_is_named_as_the_form_names_it() {
        let request: HedgeRequest = serde_json::from_value(serde_json::json!({})).unwrap();
        let base = request.scenario(1000);
        type Spoil = fn(&mut LatencyScenario);
        let cases: [(&str, Spoil); 5] = [
            ("requests", |s| s.requests = 0),
            ("requests", |s| s.warmup_requests = u64::MAX),
            ("fan_out", |s| s.traffic.fan_out = 0),
            ("utilisation", |s| s.traffic.rate_per_s = -1.0),
            ("delay_ms", |s| s.policies[3].delay_ms = f64::NAN),
        ];
        for (parameter, spoil) in cases {
            let mut scenario = base.clone();
            spoil(&mut scenario);
            let err = LatencyModel::new(&scenario).unwrap_err();
            let api = scenario_error(err.clone());
            assert!(
                api.message.starts_with(&format!("{parameter}: ")),
                "{err} was answered {}",
                api.message
            );
        }
    }
}
