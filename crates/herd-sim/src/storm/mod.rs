//! The storm model: clients that fail together, a server with outages, a work budget per
//! window, refusals that cost work, collapse, warm-up, `Retry-After`, timeouts, give-ups and
//! retry budgets (`docs/model.md`). [`Simulation`] is a checked scenario; its agent engine
//! (`engine.rs`) follows every client, its cohort engine ([`cohort`]) moves them in counts.
use std::time::Duration;

use herd::RuleName;

mod attempt_latency;
mod calendar;
pub mod cohort;
mod engine;
mod failure;
mod metrics;
mod model;
mod pause_table;
pub(crate) mod plan;
mod read;
mod record;
pub(crate) mod scenario;
mod server;
mod trace;

pub use metrics::{RunResult, Series};
pub use model::{ENGINE_KEY, METRICS};
pub use scenario::{Clients, Latency, LatencyDistribution, Pauses, Retry, Scenario, Server};
pub use trace::{GiveUp, MAX_TRACE_CLIENTS, MAX_TRACE_EVENTS, Outcome, Trace, TraceEvent};

use crate::Watch;
use crate::error::{self, ScenarioError};
use crate::limits::Limits;
use plan::Plan;

/// A checked scenario, ready to run any rule with any seed. Cheap to share across threads.
#[derive(Clone, Debug)]
pub struct Simulation {
    plan: Plan,
    scenario: Scenario,
    engine: Engine,
    /// For the cohort engine: what its runs share (`None` for the agent engine).
    cohort: Option<cohort::Prepared>,
}

/// Which engine runs a [`Simulation`]: both run the same model and report alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Engine {
    /// Every client exact, a few bytes each (the reference).
    #[default]
    Agent,
    /// Clients in counts, cost independent of their number; see [`cohort`].
    Cohort,
}

impl Engine {
    /// Both engines, the reference first.
    pub const ALL: [Engine; 2] = [Engine::Agent, Engine::Cohort];

    /// The name as written on the command line.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Engine::Agent => "agent",
            Engine::Cohort => "cohort",
        }
    }

    /// The limits a scenario meets when this engine runs it, given the caller's: the same
    /// for the agent engine; for the cohort engine, clients cost no memory and may number up
    /// to [`cohort::MAX_CLIENTS`]. Check a file against them with
    /// [`Scenario::from_toml_str`] before choosing the engine's [`Simulation`].
    ///
    /// # Examples
    ///
    /// ```
    /// use herd_sim::{Engine, Limits, Scenario};
    ///
    /// let text = "[clients]\ncount = 1000000000000\n[server]\ncapacity = 25000000000\n";
    /// let machine = Limits::default();
    /// assert!(Scenario::from_toml_str(text, &Engine::Agent.limits(&machine), |_| {}).is_err());
    /// assert!(Scenario::from_toml_str(text, &Engine::Cohort.limits(&machine), |_| {}).is_ok());
    /// ```
    #[must_use]
    pub fn limits(self, limits: &Limits) -> Limits {
        match self {
            Engine::Agent => *limits,
            Engine::Cohort => cohort::plan_limits(limits),
        }
    }
}

// Parsed from `agent` or `cohort` (any case); anything else is an error naming `engine`.
error::named_by_word!(Engine, "engine", |s| format!(
    "expected agent or cohort, got `{s}`"
));

/// A scenario's times in whole steps, as [`Simulation::timetable`] gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timetable {
    /// One step.
    pub step: Duration,
    /// Steps `0..horizon_steps` are simulated.
    pub horizon_steps: u64,
    /// Steps in one accounting window of the server.
    pub steps_per_window: u64,
    /// The burst's first step.
    pub start_step: u64,
    /// The outages, as steps `[start, end)`, sorted and disjoint.
    pub outages: Vec<(u64, u64)>,
}

impl Simulation {
    /// Checks `scenario` and converts it to steps.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field that is out of range, contradicts another, or
    /// makes the run larger than `limits`.
    pub fn new(scenario: &Scenario, limits: &Limits) -> Result<Self, ScenarioError> {
        Self::with_engine(scenario, limits, Engine::Agent)
    }

    /// Like [`Simulation::new`], for the given engine. The cohort engine accepts up to
    /// [`cohort::MAX_CLIENTS`] clients whatever `limits.max_clients` and `max_bytes` say.
    ///
    /// # Errors
    ///
    /// As [`Simulation::new`]; for [`Engine::Cohort`] also a rule whose pauses span more
    /// steps than it splits a count over (`retry.cap_ms`), or series larger than
    /// `limits.max_bytes` (`horizon_s`).
    pub fn with_engine(
        scenario: &Scenario,
        limits: &Limits,
        engine: Engine,
    ) -> Result<Self, ScenarioError> {
        let (plan, cohort) = match engine {
            Engine::Agent => (Plan::new(scenario, limits)?, None),
            Engine::Cohort => {
                let plan = Plan::new(scenario, &engine.limits(limits))?;
                let prepared = cohort::check(&plan, limits)?;
                (plan, Some(prepared))
            }
        };
        Ok(Self {
            plan,
            scenario: scenario.clone(),
            engine,
            cohort,
        })
    }

    /// The engine that runs this simulation.
    #[must_use]
    pub fn engine(&self) -> Engine {
        self.engine
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

    /// A rough rank of how long one run of `rule` takes on this engine, higher for longer,
    /// so that a caller with many runs can start the longest first and not leave one core
    /// finishing it alone. A rank, not a figure. The cohort engine's time is its cohorts:
    /// rules whose memory depends on the draw (`decorrelated`, `decorrelated-v2`) make the
    /// most (0.9 s each for a billion clients of the default scenario), the other
    /// jittered rules fewer (0.3 s at most), the rules that draw nothing almost none. The
    /// agent engine's time is its attempts, which a rule's name does not predict: every rule
    /// ranks alike.
    #[must_use]
    pub fn cost_rank(&self, rule: RuleName) -> u8 {
        match self.engine {
            Engine::Agent => 0,
            Engine::Cohort => match rule {
                RuleName::Decorrelated | RuleName::DecorrelatedV2 => 2,
                rule if rule.is_jittered() => 1,
                _ => 0,
            },
        }
    }

    /// Clients over a run: the burst plus the open-loop arrivals before the horizon.
    #[must_use]
    pub fn clients(&self) -> u64 {
        self.plan.total_clients()
    }

    /// The scenario's times in steps, exactly as this simulation counts them (whole
    /// nanoseconds, lengths and instants rounded up to steps in integers): for servers and
    /// clients outside the simulator that must keep its time (`herd lab storm`).
    #[must_use]
    pub fn timetable(&self) -> Timetable {
        let p = &self.plan;
        Timetable {
            step: Duration::from_nanos(p.step_ns),
            horizon_steps: p.steps,
            steps_per_window: p.steps_per_window,
            start_step: p.start_step,
            outages: p.outages.clone(),
        }
    }

    fn rule(&self, name: RuleName) -> Result<plan::PlannedRule, ScenarioError> {
        self.plan.rule(name)
    }

    /// The library rule `name` exactly as this simulation draws it, and how many of its
    /// nanoseconds make one step: with `pauses = "steps"` a rule of whole-step draws is built
    /// with `base`, `cap` and `pause` in steps (one nanosecond of its `Duration`s standing for
    /// one step, so the second number is 1); otherwise in nanoseconds (the step in
    /// nanoseconds). A pause `p` it draws is `max(1, ceil(p / per_step))` steps. For clients
    /// outside the simulator that must pause as the simulator does (`herd lab storm`).
    ///
    /// # Errors
    ///
    /// As [`Simulation::run`]: the rule cannot be built from the scenario's parameters.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{RuleName, rng::SplitMix64};
    /// use herd_sim::{Limits, Scenario, Simulation};
    ///
    /// let sim = Simulation::new(&Scenario::default(), &Limits::default())?;
    /// let (rule, per_step) = sim.rule_in_steps(RuleName::Decorrelated)?;
    /// assert_eq!(per_step, 1);
    /// // base 100 ms and steps of 100 ms: the first pause is 1, 2 or 3 steps.
    /// let first = rule.schedule(SplitMix64::new(7)).next().unwrap();
    /// assert!((1..=3).contains(&first.as_nanos()));
    /// # Ok::<(), herd_sim::ScenarioError>(())
    /// ```
    pub fn rule_in_steps(&self, name: RuleName) -> Result<(herd::Rule, u64), ScenarioError> {
        self.rule(name).map(|p| (p.rule, p.per_step))
    }

    /// Runs `rule` (any rule, listed in the scenario or not) with the world's generator
    /// seeded by `seed`, followed by `watch`: the agent engine reports the share of the
    /// horizon simulated and looks at the flag about every 65 536 attempts; a cohort run takes
    /// milliseconds, so it looks only before it starts and reports only its end. The same
    /// rule and seed give the same result, bit for bit, whatever watches.
    ///
    /// # Errors
    ///
    /// The rule cannot be built from the scenario's parameters (`retry.pause_ms = 0` for
    /// `constant`, say), the run exceeds [`Limits::max_run_attempts`], or the watch's flag
    /// stopped it ([`ScenarioError::is_cancelled`]).
    pub fn run(
        &self,
        rule: RuleName,
        seed: u64,
        mut watch: Watch<'_>,
    ) -> Result<RunResult, ScenarioError> {
        let built = self.rule(rule)?;
        watch.check()?;
        match &self.cohort {
            None => engine::simulate(&self.plan, rule, &built, seed, &mut watch),
            Some(prepared) => {
                let result = cohort::simulate(&self.plan, rule, &built, seed, prepared)?;
                watch.report(1.0);
                Ok(result)
            }
        }
    }

    /// Runs `rule` like [`Simulation::run`] and records every attempt. For small scenes:
    /// at most [`MAX_TRACE_CLIENTS`] clients and [`MAX_TRACE_EVENTS`] attempts.
    ///
    /// # Errors
    ///
    /// As [`Simulation::run`], and when the scene is too large to trace.
    pub fn trace(&self, rule: RuleName, seed: u64) -> Result<(RunResult, Trace), ScenarioError> {
        if self.engine == Engine::Cohort {
            return Err(ScenarioError::general(
                "the cohort engine follows counts, not clients, so it cannot trace; use the agent engine",
            ));
        }
        if self.plan.total_clients() > MAX_TRACE_CLIENTS {
            return Err(ScenarioError::field(
                Scenario::CLIENTS_COUNT.path(),
                format!(
                    "{} clients; a trace follows at most {MAX_TRACE_CLIENTS}",
                    self.plan.total_clients()
                ),
            ));
        }
        let built = self.rule(rule)?;
        let mut plan = self.plan.clone();
        plan.max_run_attempts = plan.max_run_attempts.min(MAX_TRACE_EVENTS);
        let mut recorder = trace::Recorder {
            step_ns: plan.step_ns,
            events: Vec::new(),
        };
        let result = engine::simulate(&plan, rule, &built, seed, &mut recorder)?;
        Ok((result, recorder.into_trace()))
    }
}
