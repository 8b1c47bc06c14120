//! The partial-failure model of Marc Brooker's "Fixing retries with token buckets and circuit
//! breakers" (2022): a server that fails a fixed share of attempts whatever its load, and
//! clients whose retry strategies turn that share into extra work.
//!
//! # Why
//!
//! The storm asks what retries do to a server that has too little capacity; this model asks
//! what they cost when the server has plenty and simply fails some requests (a bad host, a
//! partial outage). Every failed attempt a client retries is work the server does again, so
//! the *work amplification*, attempts per call, is the price of a retry strategy, and the
//! share of calls that succeed is what it buys. Brooker's experiment compares four strategies
//! on exactly this; herd adds the throttles real systems ship (`[retry.throttle]`'s kinds),
//! run as the library's own types on the run's [`FakeClock`](herd::clock::FakeClock).
//!
//! # The model, event by event
//!
//! Continuous time in integer nanoseconds; `docs/model.md`, "Partial failure", is the
//! definition. Each of `clients.count` clients starts calls as a Poisson process of
//! `clients.calls_per_s / count` a second, its first call one network hop after t = 0, until
//! `horizon_s`; every call started runs to its end. An attempt takes one exponential hop
//! (mean `network.mean_ms`) to the server, which fails it with probability `failure_rate`
//! whatever else is happening, and one more hop back. A failed attempt is retried while the
//! call has made fewer than `max_attempts` attempts and the strategy's gate allows it, after
//! `backoff_ms` doubled per retry of the call.
//!
//! Brooker's code is `mbrooker/simulator_example`, `retry_sim/` (`retry_sim.py`: `Server`,
//! `sim_loop`, `run_sims`, `run_sims_clients`; `client.py`: `Client`, `Call`;
//! `retry_strategy.py`: `NRetriesStrategy`, `AdaptiveRetryStrategy`,
//! `CircuitBreakerRetryStrategy`). What this model takes from it, and where it differs, is in
//! `docs/brooker-2022.md`.
//!
//! # Examples
//!
//! ```
//! use herd_sim::partial::{PartialFailure, PartialScenario};
//! use herd_sim::{Limits, Watch};
//!
//! let scenario = PartialScenario { failure_rate: 0.5, ..PartialScenario::default() };
//! let model = PartialFailure::new(&scenario, &Limits::default())?;
//! let none = model.run("no_retries", 1, Watch::none())?;
//! let three = model.run("three_retries", 1, Watch::none())?;
//! let bucket = model.run("adaptive_10pct", 1, Watch::none())?;
//! assert_eq!(none.attempts, none.calls);
//! assert!(three.work_amplification() > 1.8, "half the attempts fail: 1 + ½ + ¼ + ⅛");
//! assert!(bucket.work_amplification() < 1.2, "a tenth of a token a call");
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
use serde::Serialize;

use crate::error::ScenarioError;
use crate::fields;
use crate::limits::{self, Limits};
use crate::watch::Watch;

mod engine;
pub(crate) mod gate;
mod model;
mod scenario;

use gate::GateSpec;
pub use scenario::{
    BreakerTable, Deposit, PartialClients, PartialNetwork, PartialScenario, Scope, Strategy,
    TokenBucketTable,
};

/// The most clients one run may have (each keeps its own gate).
pub const MAX_CLIENTS: u64 = 100_000;
/// The most attempts a call may make under `max_attempts`.
pub const MAX_ATTEMPTS: u32 = 1000;
/// The most calls one run may start, on average.
pub const MAX_CALLS: f64 = 1e7;

/// The metrics of one run, in order (docs/model.md, "Partial failure").
pub const METRICS: &[&str] = &[
    "work_amplification",
    "success_percent",
    "calls",
    "attempts",
    "successes",
    "retries_denied",
    "first_attempts_refused",
];

/// One run's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PartialRun {
    /// Calls started.
    pub calls: u64,
    /// Attempts sent, first attempts and retries (the server's work).
    pub attempts: u64,
    /// Calls that succeeded.
    pub successes: u64,
    /// Retries the gate denied (calls that then failed).
    pub denied: u64,
    /// Calls whose first attempt the gate refused (they failed without an attempt).
    pub refused: u64,
    /// Retries sent.
    pub retries: u64,
    /// Calls that failed after `max_attempts` attempts.
    pub exhausted: u64,
}

impl PartialRun {
    /// Attempts per call.
    #[must_use]
    pub fn work_amplification(&self) -> f64 {
        self.attempts as f64 / self.calls.max(1) as f64
    }

    /// Calls that succeeded, per hundred calls.
    #[must_use]
    pub fn success_percent(&self) -> f64 {
        100.0 * self.successes as f64 / self.calls.max(1) as f64
    }

    /// The figures `herd sweep` aggregates, named as in [`METRICS`].
    #[must_use]
    pub fn metrics(&self) -> crate::model::Metrics {
        let mut m = crate::model::Metrics::new();
        m.set("work_amplification", Some(self.work_amplification()));
        m.set("success_percent", Some(self.success_percent()));
        m.set("calls", Some(self.calls as f64));
        m.set("attempts", Some(self.attempts as f64));
        m.set("successes", Some(self.successes as f64));
        m.set("retries_denied", Some(self.denied as f64));
        m.set("first_attempts_refused", Some(self.refused as f64));
        m
    }
}

/// A strategy, checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Checked {
    name: String,
    gate: GateSpec,
    max_attempts: u32,
    backoff_ns: u64,
    shared: bool,
}

/// A checked partial-failure scenario, ready to run any of its strategies with any seed.
#[derive(Clone, Debug)]
pub struct PartialFailure {
    scenario: PartialScenario,
    strategies: Vec<Checked>,
    clients: usize,
    horizon_ns: u64,
    /// Mean gap between one client's calls, in nanoseconds.
    gap_mean_ns: f64,
    /// Mean network hop, in nanoseconds.
    mean_ns: f64,
    failure_rate: f64,
    /// Attempts a run may make before it is stopped.
    max_attempts_run: u64,
}

/// A strategy's `throttle` error, named by the scenario's path.
fn throttle_error(i: usize, e: &ScenarioError) -> ScenarioError {
    match e.field_name() {
        Some(f) => ScenarioError::field(
            f.replacen("retry.throttle", &format!("strategies[{i}].throttle"), 1),
            e.message(),
        ),
        None => e.clone(),
    }
}

fn check_strategy(i: usize, s: &Strategy) -> Result<Checked, ScenarioError> {
    let field = |name: &str| format!("strategies[{i}].{name}");
    if s.name.trim().is_empty() {
        return Err(ScenarioError::field(field("name"), "must not be empty"));
    }
    if s.max_attempts > MAX_ATTEMPTS {
        return Err(ScenarioError::field(
            field("max_attempts"),
            format!("must be at most {MAX_ATTEMPTS}, got {}", s.max_attempts),
        ));
    }
    let backoff_ns = fields::nanos(&field("backoff_ms"), s.backoff_ms / 1000.0)?;
    let gates = [
        s.token_bucket.is_some(),
        s.breaker.is_some(),
        s.throttle.is_some(),
    ];
    if gates.iter().filter(|g| **g).count() > 1 {
        return Err(ScenarioError::field(
            field("throttle"),
            "a strategy has at most one of token_bucket, breaker and throttle",
        ));
    }
    let gate = if let Some(b) = &s.token_bucket {
        let size = fields::number_in(&field("token_bucket.size"), b.size, 0.0, 1e9)?;
        let per_call = fields::number_in(&field("token_bucket.per_call"), b.per_call, 0.0, 1e9)?;
        GateSpec::Bucket {
            size,
            per_call,
            deposit: b.deposit,
        }
    } else if let Some(b) = &s.breaker {
        let name = field("breaker.max_failure_ratio");
        fields::number_in(&name, b.max_failure_ratio, 0.0, 1e6)?;
        let (ratio, k) = fields::decimal(&name, b.max_failure_ratio)?;
        GateSpec::Breaker { ratio, k }
    } else if let Some(t) = &s.throttle {
        GateSpec::Throttle(t.check().map_err(|e| throttle_error(i, &e))?)
    } else {
        GateSpec::None
    };
    if s.max_attempts == 0 && !matches!(gate, GateSpec::Bucket { .. }) {
        return Err(ScenarioError::field(
            field("max_attempts"),
            "0 (no limit) needs a token_bucket, whose tokens bound the retries; give a number of attempts",
        ));
    }
    Ok(Checked {
        name: s.name.clone(),
        gate,
        max_attempts: s.max_attempts,
        backoff_ns,
        shared: s.scope == Scope::Shared,
    })
}

impl PartialFailure {
    /// Checks a scenario against `limits`.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field out of range, a strategy's bad gate, two
    /// strategies of one name, or a run too large for `limits`.
    pub fn new(scenario: &PartialScenario, limits: &Limits) -> Result<Self, ScenarioError> {
        fields::model(scenario.model.as_deref(), "partial-failure")?;
        let horizon_ns = fields::nanos(
            "horizon_s",
            fields::seconds("horizon_s", scenario.horizon_s, false)?,
        )?;
        let failure_rate = fields::number_in("failure_rate", scenario.failure_rate, 0.0, 1.0)?;
        let count = scenario.clients.count;
        if count == 0 || count > MAX_CLIENTS || count > limits.max_clients {
            return Err(ScenarioError::field(
                "clients.count",
                format!(
                    "must be between 1 and {}, got {count}",
                    MAX_CLIENTS.min(limits.max_clients)
                ),
            ));
        }
        let rate = scenario.clients.calls_per_s;
        if !rate.is_finite() || rate <= 0.0 || rate > 1e9 {
            return Err(ScenarioError::field(
                "clients.calls_per_s",
                format!("must be a number above 0 and at most 10^9, got {rate}"),
            ));
        }
        let mean_ms = fields::number_in("network.mean_ms", scenario.network.mean_ms, 0.0, 1e9)?;
        if scenario.strategies.is_empty() {
            return Err(ScenarioError::field(
                "strategies",
                "must name at least one strategy",
            ));
        }
        let mut strategies: Vec<Checked> = Vec::new();
        for (i, s) in scenario.strategies.iter().enumerate() {
            let c = check_strategy(i, s)?;
            if strategies.iter().any(|o| o.name == c.name) {
                return Err(ScenarioError::field(
                    format!("strategies[{i}].name"),
                    format!("\"{}\" names two strategies", c.name),
                ));
            }
            strategies.push(c);
        }
        // The work, bounded before the run: the calls, and per call the attempts its
        // strategy allows (a token bucket without a limit: one first attempt plus, over the
        // run, every client's full bucket and the tokens calls add).
        let calls = rate * horizon_ns as f64 / 1e9;
        if calls > MAX_CALLS {
            return Err(ScenarioError::field(
                "clients.calls_per_s",
                format!(
                    "{rate} calls a second for {} s is about {calls:.0} calls; at most {MAX_CALLS:e} (fewer calls a second or a shorter horizon_s)",
                    scenario.horizon_s
                ),
            ));
        }
        let calls_bound = calls + 10.0 * calls.sqrt() + 10.0;
        let attempts = strategies
            .iter()
            .map(|s| match s.gate {
                GateSpec::Bucket { size, per_call, .. } if s.max_attempts == 0 => {
                    calls_bound * (1.0 + per_call) + count as f64 * size
                }
                _ => calls_bound * f64::from(s.max_attempts),
            })
            .fold(0.0, f64::max);
        limits::within(
            attempts.min(u64::MAX as f64) as u64,
            limits.max_run_attempts,
            "attempts",
            "clients.calls_per_s",
            "fewer calls a second, a shorter horizon_s or fewer max_attempts",
        )?;
        Ok(Self {
            scenario: scenario.clone(),
            strategies,
            clients: count as usize,
            horizon_ns,
            gap_mean_ns: 1e9 * count as f64 / rate,
            mean_ns: mean_ms * 1e6,
            failure_rate,
            max_attempts_run: limits.max_run_attempts,
        })
    }

    /// The scenario as written.
    #[must_use]
    pub fn scenario(&self) -> &PartialScenario {
        &self.scenario
    }

    /// The strategies' names, in order.
    #[must_use]
    pub fn strategies(&self) -> Vec<&str> {
        self.strategies.iter().map(|s| s.name.as_str()).collect()
    }

    /// Runs the strategy called `name` with `seed`, followed by `watch` (told the share of
    /// the horizon simulated, and its flag read, about every 65 536 events). The same
    /// strategy and seed give the same run, bit for bit, whatever watches.
    ///
    /// # Errors
    ///
    /// No strategy has that name; the run makes more attempts than the limits allow; the
    /// watch's flag stopped it ([`ScenarioError::is_cancelled`]).
    pub fn run(
        &self,
        name: &str,
        seed: u64,
        mut watch: Watch<'_>,
    ) -> Result<PartialRun, ScenarioError> {
        let strategy = self
            .strategies
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                ScenarioError::field(
                    "strategies",
                    format!(
                        "has no strategy named \"{name}\": {}",
                        self.strategies().join(", ")
                    ),
                )
            })?;
        engine::run(self, strategy, seed, &mut watch)
    }

    /// An estimate of one run's attempts, for bounding a sweep.
    fn cost_estimate(&self) -> u64 {
        let calls = self.scenario.clients.calls_per_s * self.horizon_ns as f64 / 1e9;
        (calls * 2.0) as u64 + self.clients as u64
    }
}
