//! `herd lab storm`: the storm model checked against real sockets and real timers.
//!
//! A real HTTP server on 127.0.0.1 enforces a scenario's server (outages, a work budget per
//! window, refusals that cost work, collapse), and the scenario's clients run as real tokio
//! tasks retrying through herd's async retry loop with the scenario's rule. Time is scaled:
//! with `time_scale = 0.1` a 100 ms step lasts 10 ms of real time. The server records
//! arrivals and answers per step; the report puts the storm's figures beside `herd-sim`'s
//! prediction for the same scenario, rule and seed.
//!
//! What is modelled: a burst of clients at `start_s`, outages, capacity per window,
//! `refusal_cost`, `collapse_above`, `max_attempts`. Open-loop arrivals, warm-up,
//! `Retry-After`, timeouts, deadlines and budgets are refused with an error naming the field.
//!
//! Real timers jitter and a loaded machine answers late, so deterministic rules match the
//! simulator closely (an attempt that misses its step shows in the report's "late" count), and
//! jittered rules match in distribution: the lab's clients draw from their own generators, not
//! from the simulator's one world generator.
use herd_sim::Watch;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use herd::RuleName;
use herd::asynchronous::TokioClock;
use herd::policy::RetryPolicy;
use herd_sim::refusal::RefusalCost;
use herd_sim::{Limits, RunResult, Scenario, Simulation};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::task::JoinSet;
use tokio::time::Instant;

mod clients;
pub mod descriptors;
mod measure;
pub(crate) mod report;
mod server;

pub use crate::time_scale::MAX_TIME_SCALE;
pub use report::{LabReport, Range, SeedSpread, StormFigures};

use clients::{ClientEnd, Crowd, Tally};
use server::{Budget, Ledger, Rules, ServerThread, StepClock};

/// The most clients the lab runs: each is a task with a socket.
pub const MAX_CLIENTS: u64 = 5_000;
/// The longest storm the lab plays, in real seconds.
pub const MAX_REAL_S: f64 = 600.0;
/// Seeds simulated to show how much a jittered rule's figures vary with the seed alone.
pub const SPREAD_SEEDS: u32 = 20;
/// The shortest real step: tokio's timers have a millisecond's resolution.
pub const MIN_STEP_REAL_MS: f64 = 2.0;
/// Steps the lab waits past the simulated storm's end for late attempts.
const LATE_STEPS: u64 = 50;

/// The scenario `herd lab storm` plays without a file: the default storm scenario shrunk to fit
/// real sockets (200 clients, capacity 5 per window, a 5 s outage).
pub const DEFAULT_SCENARIO: &str = "\
seed = 1
horizon_s = 600
step_ms = 100
window_ms = 100

[clients]
count = 200

[server]
capacity = 5
outages = [[0, 5]]

[retry]
rules = [\"constant\", \"full\"]
";

/// Why a lab run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum LabStormError {
    /// The scenario or a setting is out of what the lab can play; names the field.
    #[error("{0}")]
    Input(String),
    /// Something failed at run time (binding a socket, a task).
    #[error("{0}")]
    Run(String),
}

/// A checked lab storm: one scenario, one rule, one seed, one time scale.
#[derive(Debug, Clone)]
pub struct LabStorm {
    scenario: Scenario,
    simulation: Simulation,
    rule: RuleName,
    seed: u64,
    time_scale: f64,
}

fn unsupported(field: &str, what: &str) -> LabStormError {
    LabStormError::Input(format!(
        "{field}: lab storm does not model {what}; set it to 0 (herd storm simulates it)"
    ))
}

impl LabStorm {
    /// Checks that the lab can play `scenario` with `rule` at `time_scale`.
    ///
    /// # Errors
    ///
    /// [`LabStormError::Input`] naming the field: an invalid scenario, more than [`MAX_CLIENTS`]
    /// clients, a feature the lab does not model, or a time scale that makes a step shorter
    /// than [`MIN_STEP_REAL_MS`] or the storm longer than [`MAX_REAL_S`].
    pub fn new(
        scenario: Scenario,
        rule: RuleName,
        seed: u64,
        time_scale: f64,
    ) -> Result<Self, LabStormError> {
        let simulation = Simulation::new(&scenario, &Limits::default())
            .map_err(|e| LabStormError::Input(e.to_string()))?;
        let count = scenario.clients.count;
        if !(1..=MAX_CLIENTS).contains(&count) {
            return Err(LabStormError::Input(format!(
                "clients.count: lab storm runs 1 to {MAX_CLIENTS} clients (each a task with a socket), got {count}"
            )));
        }
        let c = &scenario.clients;
        let s = &scenario.server;
        // Settings the lab does not play, each with what it would model; all must be 0.
        let unmodelled = [
            (
                c.arrivals_per_s,
                "clients.arrivals_per_s",
                "open-loop arrivals",
            ),
            (c.deadline_s, "clients.deadline_s", "deadlines"),
            (s.warmup_s, "server.warmup_s", "warm-up"),
            (s.retry_after_s, "server.retry_after_s", "Retry-After"),
            (
                c.max_server_delay_s,
                "clients.max_server_delay_s",
                "Retry-After",
            ),
            (s.timeout_s, "server.timeout_s", "attempt timeouts"),
            (
                scenario.retry.budget_percent,
                "retry.budget_percent",
                "retry budgets",
            ),
        ];
        if let Some(&(_, field, what)) = unmodelled.iter().find(|(value, ..)| *value > 0.0) {
            return Err(unsupported(field, what));
        }
        if c.latency.mean_ms != 0.0 || c.latency.sd_ms != 0.0 {
            // Loopback has its own latency; the simulated one is not added to it.
            return Err(unsupported("clients.latency", "an added network latency"));
        }
        crate::time_scale::check(time_scale).map_err(LabStormError::Input)?;
        let step_real_ms = scenario.step_ms * time_scale;
        if step_real_ms < MIN_STEP_REAL_MS {
            return Err(LabStormError::Input(format!(
                "time scale {time_scale}: a {} ms step would last {step_real_ms} ms of real time; \
                 at least {MIN_STEP_REAL_MS} ms (timers are not finer)",
                scenario.step_ms
            )));
        }
        Ok(Self {
            scenario,
            simulation,
            rule,
            seed,
            time_scale,
        })
    }

    /// The rule.
    #[must_use]
    pub fn rule(&self) -> RuleName {
        self.rule
    }

    /// The seed.
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The scenario.
    #[must_use]
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The simulator's prediction for this scenario, rule and seed.
    ///
    /// # Errors
    ///
    /// [`LabStormError::Input`] when the simulator refuses the run (the rule's parameters, say).
    pub fn simulate(&self) -> Result<RunResult, LabStormError> {
        self.simulation
            .run(self.rule, self.seed, Watch::none())
            .map_err(|e| LabStormError::Input(e.to_string()))
    }

    /// For a jittered rule, the simulated figures over [`SPREAD_SEEDS`] seeds from the seed on.
    ///
    /// # Errors
    ///
    /// As [`LabStorm::simulate`].
    pub fn seed_spread(&self) -> Result<Option<SeedSpread>, LabStormError> {
        if !self.rule.is_jittered() {
            return Ok(None);
        }
        let runs = (0..u64::from(SPREAD_SEEDS))
            .map(|i| {
                self.simulation
                    .run(self.rule, self.seed.wrapping_add(i), Watch::none())
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| LabStormError::Input(e.to_string()))?;
        Ok(Some(SeedSpread::of(&runs)))
    }

    fn step(&self) -> Duration {
        self.simulation.timetable().step
    }

    /// An estimate's length in whole steps (not a time of the model: those come from the
    /// simulator's [`Timetable`](herd_sim::Timetable), counted in integers).
    fn steps_about(&self, seconds: f64) -> u64 {
        (seconds / self.step().as_secs_f64()).ceil() as u64
    }

    fn rules(&self) -> Result<Rules, LabStormError> {
        let s = &self.scenario.server;
        let times = self.simulation.timetable();
        let refusal_cost = RefusalCost::new(s.refusal_cost)
            .map_err(|e| LabStormError::Input(format!("server.refusal_cost: {e}")))?;
        Ok(Rules {
            capacity: s.capacity,
            refusal_cost,
            collapse_above: (s.collapse_above > 0).then_some(s.collapse_above),
            outages: times.outages,
            steps_per_window: times.steps_per_window,
        })
    }

    /// The rule exactly as the simulator draws it (in whole steps under `pauses = "steps"`),
    /// and how many of its nanoseconds make one step.
    fn rule_in_steps(&self) -> Result<(herd::Rule, u64), LabStormError> {
        self.simulation
            .rule_in_steps(self.rule)
            .map_err(|e| LabStormError::Input(e.to_string()))
    }

    fn policy(&self) -> Result<RetryPolicy<TokioClock>, LabStormError> {
        let (rule, _) = self.rule_in_steps()?;
        let attempts = match self.scenario.clients.max_attempts {
            0 => u32::MAX,
            n => n,
        };
        RetryPolicy::builder(rule)
            .max_attempts(attempts)
            .clock(TokioClock::new())
            .build()
            .map_err(|e| LabStormError::Input(e.to_string()))
    }

    /// Plays the storm on loopback and reports measured beside simulated. Takes about the
    /// simulated storm's length times the time scale.
    ///
    /// # Errors
    ///
    /// [`LabStormError::Input`] when the storm would take longer than [`MAX_REAL_S`];
    /// [`LabStormError::Run`] when a socket cannot be bound.
    pub async fn run(&self) -> Result<LabReport, LabStormError> {
        let simulated = self.simulate()?;
        let sim_end_s = simulated.last_attempt_s.unwrap_or(0.0);
        // The whole wait, the steps allowed for late attempts included.
        let real_s = (sim_end_s * 1.5 + LATE_STEPS as f64 * self.scenario.step_ms / 1000.0)
            * self.time_scale;
        if real_s > MAX_REAL_S {
            return Err(LabStormError::Input(format!(
                "the storm lasts {sim_end_s:.1} s, up to {real_s:.0} s of real time at time scale \
                 {}; at most {MAX_REAL_S} s: lower the time scale or shorten the scenario",
                self.time_scale
            )));
        }
        // Give the real storm room to run late, but not forever.
        let horizon_steps = self.simulation.timetable().horizon_steps;
        let max_steps = (self.steps_about(sim_end_s * 1.5) + LATE_STEPS).min(horizon_steps);

        let rules = self.rules()?;
        let mut server =
            ServerThread::spawn(Budget::new(rules.clone()), self.seed, max_steps).await?;
        let addr = server.addr;

        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let http = Client::builder(TokioExecutor::new()).build(connector);
        let uri = |path: &str| {
            format!("http://{addr}{path}")
                .parse::<hyper::Uri>()
                .map_err(|e| LabStormError::Run(e.to_string()))
        };
        let step_real = Duration::from_secs_f64(self.step().as_secs_f64() * self.time_scale);

        // Open one pooled connection per client before the clock starts.
        let clients = self.scenario.clients.count;
        let ping = uri("/ping")?;
        let mut warming = JoinSet::new();
        for _ in 0..clients {
            warming.spawn(clients::warm_up(http.clone(), ping.clone()));
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), warming.join_all()).await;

        // Room to start every task before step 0; at most a second, so that a slow time
        // scale does not keep a short storm silent.
        let lead = (step_real * 5).clamp(Duration::from_millis(100), Duration::from_secs(1));
        let clock = StepClock {
            epoch: Instant::now() + lead,
            step: step_real,
        };
        let crowd = Arc::new(Crowd {
            http,
            url: uri("/work")?,
            policy: self.policy()?,
            clock,
            per_step: self.rule_in_steps()?.1,
            start_step: self.simulation.timetable().start_step,
            seed: self.seed,
            tally: Tally::default(),
        });
        server.start(clock);
        let started = Instant::now();
        let mut tasks = JoinSet::new();
        for id in 0..clients {
            tasks.spawn(Arc::clone(&crowd).client(id));
        }
        let deadline = clock.at(max_steps, 0.0) + Duration::from_secs(1);
        let mut ends: Vec<ClientEnd> = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, tasks.join_next()).await {
                Ok(Some(Ok(end))) => ends.push(end),
                Ok(Some(Err(e))) => {
                    return Err(LabStormError::Run(format!("a client task failed: {e}")));
                }
                Ok(None) => break,
                Err(_) => {
                    tasks.abort_all();
                    break;
                }
            }
        }
        let real_s = started.elapsed().as_secs_f64();
        let ledger = server.finish().await?;
        let mut report = self.report(
            &simulated,
            (&rules, &ledger),
            &ends,
            &crowd.tally,
            clients,
            real_s,
        );
        drop(crowd);
        report.seed_spread = self.seed_spread()?;
        report.verdict = Some(crate::judge::storm(&report));
        Ok(report)
    }

    fn report(
        &self,
        simulated: &RunResult,
        // The server's rules and what it saw.
        (rules, ledger): (&Rules, &Ledger),
        ends: &[ClientEnd],
        tally: &Tally,
        clients: u64,
        real_s: f64,
    ) -> LabReport {
        let clients_served = ends.iter().filter(|e| e.served).count() as u64;
        let gave_up = ends.iter().filter(|e| !e.served).count() as u64;
        let measured =
            measure::measure(ledger, rules, self.step(), clients, clients_served, gave_up);
        LabReport {
            rule: self.rule.as_str().to_owned(),
            seed: self.seed,
            clients,
            time_scale: self.time_scale,
            step_real_ms: self.scenario.step_ms * self.time_scale,
            window_s: simulated.series.window_s,
            capacity: simulated.series.capacity,
            first_window_after_outage: measured.first_window_after_outage,
            measured: measured.figures,
            simulated: StormFigures::simulated(simulated),
            seed_spread: None,
            measured_arrivals: measured.arrivals,
            measured_served: measured.served,
            simulated_arrivals: simulated.series.arrivals.clone(),
            simulated_served: simulated.series.served.clone(),
            client_attempts: tally.attempts.load(Ordering::Relaxed),
            late_attempts: tally.late.load(Ordering::Relaxed),
            transport_errors: tally.transport_errors.load(Ordering::Relaxed),
            worst_tick_lag_ms: ledger.worst_tick_lag.as_secs_f64() * 1000.0,
            real_s,
            verdict: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lab's server keeps the simulator's time: an outage ending at 8.3 s covers steps
    /// 0..83 of 100 ms, as the simulator counts them in integer nanoseconds. The lab used to
    /// convert in `f64`, where `8.3 · 10^9 / 10^8` is 83.00000000000001, and kept its server
    /// down a step longer than the prediction it was judged against.
    #[test]
    fn the_server_keeps_the_simulators_steps() {
        let mut s = Scenario::default();
        s.clients.count = 10;
        s.server.outages = vec![[0.0, 8.3], [16.1, 17.1]];
        s.clients.start_s = 0.3;
        let lab = LabStorm::new(s, RuleName::Constant, 1, 1.0).expect("valid");
        let rules = lab.rules().expect("rules");
        assert_eq!(rules.outages, [(0, 83), (161, 171)]);
        assert_eq!(rules.steps_per_window, 1);
        assert_eq!(lab.simulation.timetable().start_step, 3);
    }
}
