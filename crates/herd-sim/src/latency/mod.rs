//! The latency model: what hedged requests do to the tail a user sees, and to the load.
//!
//! # Why
//!
//! Retries answer failures; hedges answer slowness. A hedge (a second copy of a request sent
//! when the first is late) cuts the tail that one slow server adds, and a fan-out makes that
//! tail everyone's: a user request that needs ten servers is as slow as the slowest of ten.
//! But every copy is work, and copies sent when the servers are busy make them busier. This
//! model shows both sides on a user's own numbers.
//!
//! # The model
//!
//! Continuous time in nanoseconds.
//!
//! - **Arrivals**: user requests arrive as a Poisson process of `traffic.rate_per_s` (open
//!   loop: a slow answer does not slow arrivals). Each needs `traffic.fan_out`
//!   sub-requests, all sent at its arrival; its **latency** is the time until its last
//!   sub-request is answered.
//! - **Servers**: `servers.count` servers, each with its own FIFO queue, serving one copy at a
//!   time. Each sub-request's first copy goes to a server drawn uniformly at random (two
//!   sub-requests of one user request may meet on one server); a further copy of the same
//!   sub-request goes to a server drawn among those it has not used (while there is one).
//! - **Service**: a copy takes a time drawn when it starts service: `constant`,
//!   `exponential` or `lognormal` with mean `service.mean_ms` (and shape `sigma`).
//! - **Hiccups**: each server runs for an exponential time of mean `hiccups.every_s`, then
//!   pauses for `hiccups.pause_ms` (garbage collection, a background job), and so on; a pause
//!   stops the copy in service too, which resumes when the pause ends. A paused server
//!   starts nothing: a copy that reaches it waits until the pause ends (a stopped process
//!   dequeues nothing, and tied requests cancel when a server begins a copy).
//! - **Policies**, one result row each:
//!   - `none`: one copy per sub-request;
//!   - `delay`: while no copy has answered, a further copy every `delay_ms`, up to
//!     `max_copies` in all;
//!   - `percentile`: the same with the delay at the `quantile` of recent latencies, learned
//!     by herd's own [`LatencyHistogram`](herd::hedge::LatencyHistogram) over windows of 1 s
//!     with at least 100 samples (no hedge until a window has them); each answered
//!     sub-request records its winning copy's own latency, from when that copy was sent (as
//!     the library's hedge and tower's record it);
//!   - `tied`: two copies at once to two servers; when one starts service the other is
//!     cancelled (Dean and Barroso's tied requests);
//!   - `budget_percent` adds herd's [`RetryBudget`](herd::budget::RetryBudget) (that
//!     percentage of sub-requests over 10 s, no reserve), which each hedge must pass.
//!   - `cancel_losers` (default false): once a copy answers, the others leave their queues
//!     and stop in service. When false they run to the end, as wasted work.
//!
//! Every copy occupies a queue and a server like any request. Events at the same
//! nanosecond run in the order they were scheduled; an arrival at the same time as an event
//! goes first.
//!
//! # Figures
//!
//! Per policy: user-latency percentiles p50, p99, p99.9 by nearest rank over the measured
//! requests (exact for the sample), the mean, `extra_load_percent` (copies sent beyond one
//! per sub-request, per sub-request), hedges a budget refused, copies cancelled, and server
//! utilisation (time spent serving, wasted copies included). The first `warmup_requests`
//! are run but not measured.
//!
//! # Randomness
//!
//! One seed, split into streams (`SplitMix64::derive(seed, n)`, docs/rng.md): arrivals,
//! routing, service times, and one per server for its pauses, none overlapping another. Arrivals and pauses do not depend on the policy, so every policy of a run
//! meets the same users and the same hiccups. Exponential draws are `−mean · ln(1 − u)`,
//! normal draws Box–Muller, both through libm (`ln`, `exp`, `cos`), so their last bits may
//! differ across platforms.
//!
//! # Examples
//!
//! ```
//! use herd_sim::Watch;
//! use herd_sim::latency::{LatencyModel, LatencyScenario};
//!
//! let scenario = LatencyScenario { requests: 20_000, warmup_requests: 2_000, ..LatencyScenario::default() };
//! let model = LatencyModel::new(&scenario)?;
//! let (none, _) = model.run(0, scenario.seed, Watch::none())?;
//! let (hedged, _) = model.run(1, scenario.seed, Watch::none())?;
//! assert_eq!((none.policy.as_str(), hedged.policy.as_str()), ("none", "hedge-10ms"));
//! assert!(hedged.p99_ms * 3.0 < none.p99_ms, "a hedge cuts the tail");
//! assert!(hedged.extra_load_percent < 10.0, "for a few percent more requests");
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
pub mod draws;
mod engine;
mod model;
mod report;
mod scenario;

pub use crate::budget::BUDGET_WINDOW;
pub use engine::{LEARNING_MIN_SAMPLES, LEARNING_WINDOW};
pub use model::METRICS;
pub use report::{LatencyResult, nearest_rank, tail};
pub use scenario::{
    Distribution, Hiccups, LatencyRetry, LatencyScenario, MAX_EVENTS, MAX_FAN_OUT, MAX_REQUESTS,
    MAX_SERVERS, MAX_SPAN_S, PolicyKind, PolicySpec, Servers, ServiceTime, Traffic,
};

use crate::error::ScenarioError;
use crate::watch::Watch;

/// A checked latency scenario, ready to run.
#[derive(Clone, Debug)]
pub struct LatencyModel {
    scenario: LatencyScenario,
    plan: scenario::LatencyPlan,
}

impl LatencyModel {
    /// Checks `scenario`.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the first field out of range.
    pub fn new(scenario: &LatencyScenario) -> Result<Self, ScenarioError> {
        Ok(Self {
            scenario: scenario.clone(),
            plan: scenario.plan()?,
        })
    }

    /// The scenario as given.
    #[must_use]
    pub fn scenario(&self) -> &LatencyScenario {
        &self.scenario
    }

    /// The policies' names, in the scenario's order.
    #[must_use]
    pub fn policies(&self) -> Vec<&str> {
        self.plan.policies.iter().map(|p| p.name.as_str()).collect()
    }

    /// Runs policy number `index` (in [`LatencyModel::policies`]) with `seed`, followed by
    /// `watch` (told the share of user requests arrived, warm-up included, and its flag read
    /// every few thousand events), and returns its figures and every measured user latency
    /// in nanoseconds, sorted. The same policy and seed give the same result, bit for bit,
    /// whatever watches.
    ///
    /// # Errors
    ///
    /// There is no such policy (naming `policies`), or the watch's flag stopped the run
    /// ([`ScenarioError::is_cancelled`]).
    pub fn run(
        &self,
        index: usize,
        seed: u64,
        mut watch: Watch<'_>,
    ) -> Result<(LatencyResult, Vec<u64>), ScenarioError> {
        let policy = self.plan.policies.get(index).ok_or_else(|| {
            ScenarioError::field(
                "policies",
                format!(
                    "has {} policies, numbered from 0; there is no policy {index}",
                    self.plan.policies.len()
                ),
            )
        })?;
        let plan = scenario::LatencyPlan {
            seed,
            ..self.plan.clone()
        };
        engine::run(&plan, policy, &mut watch)
    }

    /// The events one policy's run takes, estimated before it runs (the costliest policy's:
    /// arrivals, copies sent and answered, the servers' pauses), for bounding work; never
    /// above [`MAX_EVENTS`], which the scenario's check enforces.
    #[must_use]
    pub fn work_estimate(&self) -> u64 {
        self.plan.estimate().events
    }

    /// The field whose change shrinks [`LatencyModel::work_estimate`] most.
    #[must_use]
    pub fn work_field(&self) -> &'static str {
        self.plan.estimate().events_field
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cancel;

    #[test]
    fn a_cancelled_run_stops_without_a_result() {
        let model = LatencyModel::new(&LatencyScenario::default()).expect("default");
        let cancel = Cancel::new();
        cancel.cancel();
        let err = model.run(0, 1, Watch::until(&cancel)).unwrap_err();
        assert!(err.is_cancelled(), "{err}");
        let small = LatencyScenario {
            requests: 2_000,
            warmup_requests: 0,
            ..LatencyScenario::default()
        };
        let model = LatencyModel::new(&small).expect("small");
        let mut shares = Vec::new();
        let mut note = |done: f64| shares.push(done);
        let ran = model
            .run(1, 7, Watch::until(&Cancel::new()).progress(&mut note))
            .expect("not cancelled");
        assert_eq!(ran, model.run(1, 7, Watch::none()).unwrap());
        // Told every 4096 events, never decreasing, and 1 at the end.
        assert!(shares.len() >= 2, "{shares:?}");
        assert!(shares.windows(2).all(|w| w[0] <= w[1]), "{shares:?}");
        assert!(shares[0] > 0.0 && shares[0] < 1.0, "{shares:?}");
        assert_eq!(shares.last(), Some(&1.0));
        let err = model.run(99, 7, Watch::none()).unwrap_err();
        assert!(
            err.is_at(crate::Field::new("policies")) && !err.is_cancelled(),
            "{err}"
        );
    }
}
