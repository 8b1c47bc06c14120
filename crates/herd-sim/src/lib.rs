//! # herd-sim — what a retry rule does to a recovering server
//!
//! The retry-storm simulator of SPEC §4: clients, a server with outages, a work budget per
//! window, refusals that cost work, collapse, warm-up, `Retry-After`, timeouts, give-ups and
//! retry budgets. Every pause is drawn by [`herd::Rule::pause`], the very code a production
//! client runs, and every random draw comes from one [`herd::rng::SplitMix64`] seeded by the
//! run's seed, so a run is reproducible bit for bit on any machine.
//!
//! The engine tracks every client exactly and costs O(attempts + steps): waiting clients sit
//! in a calendar keyed by the step at which they next knock, carrying their retry state with
//! them (4 bytes for rules without memory, 12 with it), and time jumps over empty steps.
//! `docs/storm.md` sets out the order of events within a step, the server's accounting and
//! every rounding.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::{Limits, Scenario, Simulation};
//!
//! // SPEC §4's default scenario: 2000 clients, an outage over the first 10 s.
//! let sim = Simulation::new(&Scenario::default(), &Limits::default())?;
//! let result = sim.run(RuleName::Immediate, 1)?;
//! assert_eq!(result.half_served_s, Some(12.0));
//! assert_eq!(result.all_served_s, Some(13.9));
//! assert_eq!(result.requests_per_client, 120.5);
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

mod budget;
mod calendar;
mod engine;
mod error;
mod limits;
mod metrics;
mod plan;
mod record;
mod scenario;
mod server;
mod trace;

use herd::{Rule, RuleName};

/// The storm guide, `docs/storm.md`: every choice the model leaves open (compiled and tested
/// with the crate's docs).
#[doc = include_str!("../../../docs/storm.md")]
pub mod guide {}

pub use error::ScenarioError;
pub use limits::Limits;
pub use metrics::{RunResult, Series};
pub use scenario::{Clients, Retry, Scenario, Server};
pub use trace::{GiveUp, MAX_TRACE_CLIENTS, MAX_TRACE_EVENTS, Outcome, Trace, TraceEvent};

use plan::Plan;

/// A checked scenario, ready to run any rule with any seed. Cheap to share across threads.
#[derive(Clone, Debug)]
pub struct Simulation {
    plan: Plan,
    scenario: Scenario,
}

impl Simulation {
    /// Checks `scenario` and converts it to steps.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field that is out of range, contradicts another, or
    /// makes the run larger than `limits`.
    pub fn new(scenario: &Scenario, limits: &Limits) -> Result<Self, ScenarioError> {
        let plan = Plan::new(scenario, limits)?;
        Ok(Self {
            plan,
            scenario: scenario.clone(),
        })
    }

    /// The scenario as given.
    #[must_use]
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The scenario's rules, in its order.
    #[must_use]
    pub fn rules(&self) -> Vec<RuleName> {
        self.plan.rules.iter().map(|(n, _)| *n).collect()
    }

    /// Clients over a run: the burst plus the open-loop arrivals before the horizon.
    #[must_use]
    pub fn clients(&self) -> u64 {
        self.plan.total_clients()
    }

    fn rule(&self, name: RuleName) -> Result<Rule, ScenarioError> {
        match self.plan.rules.iter().find(|(n, _)| *n == name) {
            Some((_, rule)) => Ok(*rule),
            None => plan::build_rule(name, &self.plan.params),
        }
    }

    /// Runs `rule` (any rule, listed in the scenario or not) with the world's generator
    /// seeded by `seed`. The same inputs give the same result, bit for bit.
    ///
    /// # Errors
    ///
    /// The rule cannot be built from the scenario's parameters (`retry.pause_ms = 0` for
    /// `constant`, say), or the run exceeds [`Limits::max_attempts`].
    pub fn run(&self, rule: RuleName, seed: u64) -> Result<RunResult, ScenarioError> {
        let built = self.rule(rule)?;
        engine::simulate(&self.plan, rule, &built, seed, &mut trace::Silent)
    }

    /// Runs `rule` like [`Simulation::run`], calling `progress` now and then (about every
    /// million attempts) with the share of the horizon simulated so far, and with 1.0 at the
    /// end. The result is the same as [`Simulation::run`]'s.
    ///
    /// # Errors
    ///
    /// As [`Simulation::run`].
    pub fn run_with_progress(
        &self,
        rule: RuleName,
        seed: u64,
        progress: impl FnMut(f64),
    ) -> Result<RunResult, ScenarioError> {
        let built = self.rule(rule)?;
        engine::simulate(
            &self.plan,
            rule,
            &built,
            seed,
            &mut trace::Progress(progress),
        )
    }

    /// Runs `rule` like [`Simulation::run`] and records every attempt. For small scenes:
    /// at most [`MAX_TRACE_CLIENTS`] clients and [`MAX_TRACE_EVENTS`] attempts.
    ///
    /// # Errors
    ///
    /// As [`Simulation::run`], and when the scene is too large to trace.
    pub fn trace(&self, rule: RuleName, seed: u64) -> Result<(RunResult, Trace), ScenarioError> {
        if self.plan.total_clients() > MAX_TRACE_CLIENTS {
            return Err(ScenarioError::field(
                "clients.count",
                format!(
                    "{} clients; a trace follows at most {MAX_TRACE_CLIENTS}",
                    self.plan.total_clients()
                ),
            ));
        }
        let built = self.rule(rule)?;
        let mut plan = self.plan.clone();
        plan.max_attempts_total = plan.max_attempts_total.min(MAX_TRACE_EVENTS);
        let mut recorder = trace::Recorder {
            step_ns: plan.step_ns,
            events: Vec::new(),
        };
        let result = engine::simulate(&plan, rule, &built, seed, &mut recorder)?;
        Ok((result, recorder.into_trace()))
    }
}

/// Runs one rule of a scenario with one seed, under the machine's [`Limits`].
///
/// # Errors
///
/// As [`Simulation::new`] and [`Simulation::run`].
pub fn run(scenario: &Scenario, rule: RuleName, seed: u64) -> Result<RunResult, ScenarioError> {
    Simulation::new(scenario, &Limits::default())?.run(rule, seed)
}
#[doc = include_str!("../../../docs/amplify.md")]
pub mod graph;
