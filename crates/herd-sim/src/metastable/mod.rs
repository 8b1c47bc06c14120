//! Metastable failures: retries that keep an overloaded server overloaded after the trigger
//! is gone (Bronson, Aghayev, Charapko and Zhu, "Metastable Failures in Distributed Systems",
//! HotOS 2021).
//!
//! # Why a separate model
//!
//! The storm model is about a *burst*: a herd that fails together and comes back. A metastable
//! failure needs what that model does not have: *open-loop* traffic (new requests keep
//! arriving whatever happened to earlier ones) and *timeouts* (a client gives up on an attempt
//! it is still queued for, and retries). That is enough, with a plain FIFO server: once the
//! queue holds more than a timeout's worth of work, every answer comes too late, every request
//! retries, and if the retried load exceeds the capacity the queue never drains. The load
//! stays doubled with the trigger long gone. A server that also *slows down* past a knee
//! (lock contention, thrash) lowers the threshold, but is not needed: the shipped example
//! locks in with `slow_factor = 1` too (`docs/metastable.md` has the threshold over seeds).
//! A retry budget breaks the loop by capping retries to a fraction of new requests; so do
//! server-side mitigations ([`SlowingServer`]: a bounded queue, dropping work whose client
//! has left, LIFO under overload, admission control by waiting time).
//!
//! # The model (`docs/metastable.md` has the details and the numbers)
//!
//! Time runs in steps of `step_ms` (1 ms by default). In each step, in this order:
//!
//! 1. **New requests** arrive: a Poisson number with mean `offered_qps · step`, drawn from the
//!    run's one [`SplitMix64`](herd::rng::SplitMix64). Each deposits in the retry budget and
//!    sends its first attempt.
//! 2. **Retries** due at this step are sent.
//! 3. An attempt sent while the server is down (an outage) is **lost**. Otherwise it is
//!    **refused** at once when the queue is full (`max_queue`) or its oldest attempt has waited
//!    longer than `shed_wait_s`, and joins the server's FIFO **queue** if not.
//! 4. The **server** works for one step: it drops unworked the attempts whose client has timed
//!    out (with `drop_expired`), and completes requests from the head of the queue (from its
//!    tail while more than `lifo_above` wait) while its credit of server time allows. A request costs `1 / capacity_qps` seconds, or
//!    `slow_factor` times that when more than `knee_queue` requests are waiting (lock
//!    contention, cache thrash). A completion within the attempt's timeout answers the request
//!    (**goodput**); a later one is **wasted** work (it counts in **throughput** only). An idle
//!    or down server banks no credit.
//! 5. **Failures**: an attempt refused this step, or sent `timeout_s` ago and not answered,
//!    has failed. The request
//!    gives up after `max_attempts` attempts; otherwise it asks the retry budget (a denial
//!    fails the request) and draws its pause with [`herd::Rule::pause`], rounded up to whole
//!    steps and at least one step.
//!
//! With `[retry.throttle]` instead of a budget (docs/model.md, "Throttles of real systems"),
//! a throttle that gates first attempts may refuse a new request (it fails, counted in
//! `denied_by_budget`) or delay it; the step's failed requests ask it together (Envoy's active
//! requests are the attempts in flight), an answer in time is a success and a refusal or a
//! timeout a rejection by the backend.
//!
//! The budget is herd's own [`RetryBudget`](herd::budget::RetryBudget), driven by a
//! [`FakeClock`](herd::clock::FakeClock) set to the simulated time. A run costs O(steps +
//! attempts).
//!
//! # Examples
//!
//! ```
//! use herd_sim::metastable::{Metastable, MetastableScenario};
//! use herd_sim::{Limits, Watch};
//!
//! // The Bronson example over 60 s: no budget, and the retries keep the server down.
//! let mut scenario = MetastableScenario::default();
//! scenario.horizon_s = 60.0;
//! let model = Metastable::new(&scenario, &Limits::default())?;
//! let report = model.run(scenario.retry.rule, 1, Watch::none())?;
//! assert_eq!(report.recovered_at_s, None);
//! assert!(report.after_outage.attempts_per_s > 1.6 * scenario.clients.offered_qps);
//!
//! // A 10 % retry budget: the server recovers a few seconds after the outage.
//! scenario.retry.budget_percent = 10.0;
//! let model = Metastable::new(&scenario, &Limits::default())?;
//! let report = model.run(scenario.retry.rule, 1, Watch::none())?;
//! assert!(report.recovered_at_s.is_some_and(|t| t < 30.0), "{}", report.outcome);
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
mod engine;
mod model;
mod poisson;
mod report;
mod scenario;

use herd::RuleName;

use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::watch::Watch;

pub use report::{AfterOutage, METRICS, MetastableReport, Window};
pub use scenario::{MetastableRetry, MetastableScenario, OpenLoop, SlowingServer};

/// A checked metastable scenario, ready to run any rule with any seed.
#[derive(Clone, Debug)]
pub struct Metastable {
    plan: scenario::MetastablePlan,
    scenario: MetastableScenario,
}

impl MetastableScenario {
    /// Parses a scenario file (`model = "metastable"` may be present) and checks it.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field and the line.
    pub fn from_toml_str(text: &str) -> Result<Self, ScenarioError> {
        crate::fields::parse(text, |s: &Self| {
            scenario::MetastablePlan::new(s, &Limits::default()).map(|_| ())
        })
    }
}

impl Metastable {
    /// Checks `scenario` against `limits` and converts it to steps.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field that is out of range.
    pub fn new(scenario: &MetastableScenario, limits: &Limits) -> Result<Self, ScenarioError> {
        Ok(Self {
            plan: scenario::MetastablePlan::new(scenario, limits)?,
            scenario: scenario.clone(),
        })
    }

    /// The scenario as given.
    #[must_use]
    pub fn scenario(&self) -> &MetastableScenario {
        &self.scenario
    }

    /// New requests expected over one run (`offered_qps · horizon_s`): a measure of its cost.
    #[must_use]
    pub fn expected_requests(&self) -> u64 {
        (self.plan.arrivals_per_step * self.plan.steps as f64).ceil() as u64
    }

    /// The scenario's rule (one per scenario).
    #[must_use]
    pub fn rules(&self) -> Vec<RuleName> {
        vec![self.scenario.retry.rule]
    }

    /// Runs with `rule` (the scenario's or any other) and the world's generator seeded by
    /// `seed`, followed by `watch` (told the share of the horizon simulated, and its flag
    /// read, about every 65 536 attempts). The same rule and seed give the same report, bit
    /// for bit, whatever watches.
    ///
    /// # Errors
    ///
    /// The rule cannot be built from the scenario's parameters, the run exceeds
    /// [`Limits::max_run_attempts`], or the watch's flag stopped it
    /// ([`ScenarioError::is_cancelled`]).
    pub fn run(
        &self,
        rule: RuleName,
        seed: u64,
        mut watch: Watch<'_>,
    ) -> Result<MetastableReport, ScenarioError> {
        let built = self.plan.rule(rule)?;
        let report = engine::simulate(&self.plan, rule, &built, seed, &mut watch)?;
        watch.report(1.0);
        Ok(report)
    }
}

/// `docs/metastable.md`, included so that its examples are compiled and run as doctests.
#[doc = include_str!("../../../../docs/metastable.md")]
#[cfg(doctest)]
pub struct MetastableGuide;
