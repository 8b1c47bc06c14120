//! The metastable scenario as written in TOML (`model = "metastable"`), and its checked form.
use std::time::Duration;

use herd::{Rule, RuleName, RuleParams};
use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;
use crate::fields;
use crate::fields::ceil_div;
use crate::limits::Limits;

/// A metastable-failure scenario: open-loop clients with attempt timeouts, a FIFO server that
/// may slow down past a knee and may carry mitigations, an outage, a retry rule and an
/// optional retry budget.
///
/// Every field is optional; the defaults are the Bronson et al. retry example (see
/// `docs/metastable.md`): 280 requests per second, a server answering 300 per second that
/// becomes ten times slower when overloaded, one retry after a 1 s timeout and a 1 s pause,
/// a 10 s outage at t = 10 s, 120 s simulated in 1 ms steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetastableScenario {
    /// `"metastable"` (optional when the scenario is read by this model directly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Seed of the world's generator.
    pub seed: u64,
    /// How long to simulate, in seconds.
    pub horizon_s: f64,
    /// The time step in milliseconds.
    pub step_ms: f64,
    /// The reporting window in seconds (a whole number of steps).
    pub window_s: f64,
    /// A window after the outage is healthy when at least this share of the attempts that
    /// ended in it were answered in time (the rest timed out), and at most
    /// `server.knee_queue` requests wait at its end.
    pub recovered_goodput: f64,
    /// The open-loop clients.
    pub clients: OpenLoop,
    /// The server.
    pub server: SlowingServer,
    /// The retry rule and budget.
    pub retry: MetastableRetry,
}

/// `[clients]`: open-loop traffic (new requests arrive whatever happened to earlier ones).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenLoop {
    /// New requests per second (a Poisson process).
    pub offered_qps: f64,
    /// An attempt not answered within this many seconds has failed; the client stops waiting.
    pub timeout_s: f64,
    /// Attempts per request, the first included (0 = no limit). 2 = "retry once".
    pub max_attempts: u32,
}

/// `[server]`: a FIFO server whose cost per request grows when it is overloaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlowingServer {
    /// Requests per second the server completes while healthy (each costs `1 / capacity_qps`
    /// seconds of server time); counted exactly as the decimal written, so at most nine
    /// digits after the point, as `slow_factor`.
    pub capacity_qps: f64,
    /// How many times more each request costs while more than `knee_queue` requests wait.
    pub slow_factor: f64,
    /// The knee: with more requests than this waiting (in service included), every request
    /// costs `slow_factor` times as much (lock contention, cache thrash).
    pub knee_queue: u64,
    /// `[start_s, end_s)` intervals in which the server is unreachable: attempts sent then are
    /// lost (the client learns it at its timeout) and the server does no work.
    #[serde(deserialize_with = "crate::fields::outage_pairs")]
    pub outages: Vec<[f64; 2]>,
    /// Mitigation, a bounded queue (admission control by queue length): an attempt that
    /// finds this many waiting is refused at once, and its client learns it at once (0 =
    /// unbounded).
    pub max_queue: u64,
    /// Mitigation, server-side deadlines: the server drops, at no cost, queued attempts whose
    /// client has already timed out, instead of doing their work.
    pub drop_expired: bool,
    /// Mitigation, LIFO under overload: while more than this many wait, the server takes the
    /// newest attempt first (0 = always FIFO).
    pub lifo_above: u64,
    /// Mitigation, admission control by latency: an attempt is refused at once while the
    /// oldest queued attempt has waited longer than this many seconds (0 = off).
    pub shed_wait_s: f64,
}

/// `[retry]`: one rule and an optional retry budget shared by all clients.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetastableRetry {
    /// The rule that picks the pause after a timed-out attempt.
    #[serde(with = "crate::rule_serde::one")]
    pub rule: RuleName,
    /// `base` of the exponential family, in milliseconds.
    pub base_ms: f64,
    /// `cap`, the largest pause, in milliseconds.
    pub cap_ms: f64,
    /// The pause of `constant`, in milliseconds.
    pub pause_ms: f64,
    /// Retry budget: retries allowed as a percentage of new requests (0 = no budget).
    pub budget_percent: f64,
    /// Retry budget: retries allowed per second whatever the traffic.
    pub budget_min_per_s: u32,
    /// Retry budget: how long a deposit counts, in seconds.
    pub budget_window_s: f64,
    /// `[retry.throttle]`: a throttle or budget a real system ships, shared by all clients
    /// (exclusive with the retry budget; see docs/model.md, "Throttles of real systems").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttle: Option<crate::throttle::ThrottleTable>,
}

impl Default for MetastableScenario {
    fn default() -> Self {
        Self {
            model: None,
            seed: 1,
            horizon_s: 120.0,
            step_ms: 1.0,
            window_s: 1.0,
            recovered_goodput: 0.9,
            clients: OpenLoop::default(),
            server: SlowingServer::default(),
            retry: MetastableRetry::default(),
        }
    }
}

impl Default for OpenLoop {
    fn default() -> Self {
        Self {
            offered_qps: 280.0,
            timeout_s: 1.0,
            max_attempts: 2,
        }
    }
}

impl Default for SlowingServer {
    fn default() -> Self {
        Self {
            capacity_qps: 300.0,
            slow_factor: 10.0,
            knee_queue: 100,
            outages: vec![[10.0, 20.0]],
            max_queue: 0,
            drop_expired: false,
            lifo_above: 0,
            shed_wait_s: 0.0,
        }
    }
}

impl Default for MetastableRetry {
    fn default() -> Self {
        Self {
            rule: RuleName::Constant,
            base_ms: 100.0,
            cap_ms: 20_000.0,
            pause_ms: 1000.0,
            budget_percent: 0.0,
            budget_min_per_s: 0,
            budget_window_s: 10.0,
            throttle: None,
        }
    }
}

/// The most simulated steps one run may take (the step loop visits every step).
const MAX_STEPS: u64 = 1_000_000_000;
/// Memory a run needs per request, for refusing runs that cannot fit.
const BYTES_PER_REQUEST: f64 = 48.0;
/// Memory an attempt needs while it waits in the queue and for its timeout.
const BYTES_PER_ATTEMPT: f64 = 16.0;
/// The most attempts one run may simulate (about ten seconds of work in a release build).
const MAX_ATTEMPTS: u64 = 200_000_000;

/// The attempts a run may make: the hard cap, the limits', and what memory left after the
/// requests can hold if every attempt were still queued.
fn max_run_attempts(expected_requests: f64, limits: &Limits) -> u64 {
    let spare = (limits.max_bytes as f64 - expected_requests * BYTES_PER_REQUEST).max(0.0);
    MAX_ATTEMPTS
        .min(limits.max_run_attempts)
        .min((spare / BYTES_PER_ATTEMPT) as u64)
}

/// The server's time in exact integer units. `capacity_qps` and `slow_factor` are read as the
/// decimals they were written as (at most nine digits after the point), so a step's work and
/// a request's cost are whole numbers of units, and a request is served at the very step its
/// cost is covered. In `f64`, 300 requests a second in 1 ms steps adds 0.3 a step, which
/// after ten steps is 2.9999999999999996, not 3: a tenth of the steps would finish one
/// request too few.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ServerWork {
    /// Units of server time one step brings.
    pub(crate) per_step: u128,
    /// Units one request costs while the queue is at most `knee_queue`.
    pub(crate) healthy: u128,
    /// Units one request costs past the knee: `slow_factor` times `healthy`.
    pub(crate) slow: u128,
}

impl ServerWork {
    /// With `capacity · step = n / d` requests a step (exactly, see [`fields::per_step`])
    /// and `slow_factor = f / 10^j`, in units of `1 / (d · 10^j)` of a healthy request: a
    /// step brings `n · 10^j`, a request costs `d · 10^j`, or `f · d` past the knee; all
    /// three divided by their greatest common divisor.
    pub(crate) fn new(
        capacity: f64,
        slow_factor: f64,
        step_ns: u64,
    ) -> Result<Self, ScenarioError> {
        let (n, d) = fields::per_step("server.capacity_qps", capacity, step_ns)?;
        let (f, j) = fields::decimal("server.slow_factor", slow_factor)?;
        // n < 2^90, d <= 10^18 < 2^60, f <= 10^15 < 2^50, 10^j <= 10^9 < 2^30: no product
        // (nor the credit, below a cost plus a step's work) overflows.
        let scale = 10u128.pow(j);
        let (per_step, healthy, slow) = (n * scale, d * scale, f * d);
        let g = fields::gcd(fields::gcd(per_step, healthy), slow);
        Ok(Self {
            per_step: per_step / g,
            healthy: healthy / g,
            slow: slow / g,
        })
    }
}

/// The scenario in steps, checked: what the engine runs.
#[derive(Clone, Debug)]
pub(crate) struct MetastablePlan {
    pub(crate) step_ns: u64,
    pub(crate) steps: u64,
    pub(crate) steps_per_window: u64,
    /// New requests per second, as given.
    pub(crate) offered_qps: f64,
    /// Mean new requests per step.
    pub(crate) arrivals_per_step: f64,
    pub(crate) timeout_steps: u64,
    pub(crate) max_attempts: u32,
    /// Server time per step and per request, in exact units.
    pub(crate) work: ServerWork,
    pub(crate) knee_queue: u64,
    /// Refuse an attempt that finds this many waiting (`u64::MAX`: unbounded).
    pub(crate) max_queue: u64,
    pub(crate) drop_expired: bool,
    /// Serve newest first while more than this many wait (`u64::MAX`: never).
    pub(crate) lifo_above: u64,
    /// Refuse arrivals while the oldest queued attempt has waited more steps than this.
    pub(crate) shed_wait_steps: Option<u64>,
    /// Down steps `[start, end)`, sorted.
    pub(crate) outages: Vec<(u64, u64)>,
    pub(crate) params: RuleParams,
    pub(crate) budget: Option<herd::budget::BudgetConfig>,
    /// `[retry.throttle]`, checked (`None`: none).
    pub(crate) throttle: Option<crate::throttle::ThrottleSpec>,
    /// The healthy share of answered attempts, exactly `numerator / 10^decimals`.
    pub(crate) recovered_goodput: (u128, u32),
    pub(crate) max_run_attempts: u64,
}

impl MetastablePlan {
    pub(crate) fn new(s: &MetastableScenario, limits: &Limits) -> Result<Self, ScenarioError> {
        fields::model(s.model.as_deref(), "metastable")?;
        let horizon_s = fields::seconds("horizon_s", s.horizon_s, false)?;
        let step = fields::millis("step_ms", s.step_ms)?;
        let step_ns = u64::try_from(step.as_nanos()).unwrap_or(u64::MAX);
        if step_ns == 0 {
            return Err(ScenarioError::field("step_ms", "must be longer than zero"));
        }
        let horizon_ns = fields::nanos("horizon_s", horizon_s)?;
        let steps = ceil_div(horizon_ns, step_ns);
        if steps > MAX_STEPS.min(limits.max_steps) {
            return Err(ScenarioError::field(
                "horizon_s",
                format!(
                    "{steps} steps of {} ms is too many (at most {})",
                    s.step_ms,
                    MAX_STEPS.min(limits.max_steps)
                ),
            ));
        }
        let window_s = fields::seconds("window_s", s.window_s, false)?;
        // The nearest whole number of steps, halves up.
        let steps_per_window = (fields::nanos("window_s", window_s)? + step_ns / 2) / step_ns;
        if steps_per_window == 0 || steps_per_window > steps {
            return Err(ScenarioError::field(
                "window_s",
                format!("must be at least one step and at most the horizon, got {window_s}"),
            ));
        }
        let recovered_goodput = fields::decimal(
            "recovered_goodput",
            fields::number_in("recovered_goodput", s.recovered_goodput, 0.0, 1.0)?,
        )?;

        let c = &s.clients;
        let offered = fields::number_in("clients.offered_qps", c.offered_qps, 0.0, 1e9)?;
        let expected = offered * horizon_s;
        if expected > limits.max_clients as f64 {
            return Err(ScenarioError::field(
                "clients.offered_qps",
                format!(
                    "{offered} per second over {horizon_s} s is about {expected:.0} requests, \
                     more than this machine's limit of {}",
                    limits.max_clients
                ),
            ));
        }
        // Each request keeps its retry state; each attempt sits in the queue and in the
        // timeout line: about 48 bytes per request.
        if expected * BYTES_PER_REQUEST > limits.max_bytes as f64 {
            return Err(ScenarioError::field(
                "clients.offered_qps",
                format!(
                    "{offered} per second over {horizon_s} s needs about {:.1} GiB, more than \
                     the {:.1} GiB available",
                    expected * BYTES_PER_REQUEST / f64::from(1u32 << 30),
                    limits.max_bytes as f64 / f64::from(1u32 << 30)
                ),
            ));
        }
        let timeout_s = fields::seconds("clients.timeout_s", c.timeout_s, false)?;
        let timeout_steps =
            ceil_div(fields::nanos("clients.timeout_s", timeout_s)?, step_ns).max(1);

        let v = &s.server;
        let capacity = fields::number_in("server.capacity_qps", v.capacity_qps, 1e-9, 1e12)?;
        let slow_factor = fields::number_in("server.slow_factor", v.slow_factor, 1.0, 1e6)?;
        let work = ServerWork::new(capacity, slow_factor, step_ns)?;
        let shed_wait_s = fields::seconds("server.shed_wait_s", v.shed_wait_s, true)?;
        let shed_wait_ns = fields::nanos("server.shed_wait_s", shed_wait_s)?;
        let shed_wait_steps = (shed_wait_ns > 0).then(|| ceil_div(shed_wait_ns, step_ns));
        let mut outages = Vec::new();
        for (start, end) in fields::outages("server.outages", &v.outages, horizon_ns)? {
            outages.push((ceil_div(start, step_ns), ceil_div(end, step_ns).min(steps)));
        }

        let r = &s.retry;
        let params = fields::rule_params(r.base_ms, r.cap_ms, r.pause_ms)?;
        fields::rule_of(r.rule, &params)?;
        let budget_percent =
            fields::number_in("retry.budget_percent", r.budget_percent, 0.0, 1000.0)?;
        let budget = if budget_percent > 0.0 || r.budget_min_per_s > 0 {
            let window = fields::seconds("retry.budget_window_s", r.budget_window_s, false)?;
            if !(0.001..=86_400.0).contains(&window) {
                return Err(ScenarioError::field(
                    "retry.budget_window_s",
                    format!("must be between 0.001 and 86400 seconds, got {window}"),
                ));
            }
            Some(
                herd::budget::BudgetConfig::default()
                    .percent(budget_percent)
                    .min_per_sec(r.budget_min_per_s)
                    .window(Duration::from_secs_f64(window)),
            )
        } else {
            None
        };
        let throttle = r
            .throttle
            .as_ref()
            .map(crate::throttle::ThrottleTable::check)
            .transpose()?;
        if throttle.is_some() && budget.is_some() {
            return Err(ScenarioError::field(
                "retry.throttle",
                "set either a retry budget (budget_percent, budget_min_per_s) or a throttle, not both",
            ));
        }

        Ok(Self {
            step_ns,
            steps,
            steps_per_window,
            offered_qps: offered,
            arrivals_per_step: offered * step_ns as f64 / 1e9,
            timeout_steps,
            max_attempts: c.max_attempts,
            work,
            knee_queue: v.knee_queue,
            max_queue: if v.max_queue == 0 {
                u64::MAX
            } else {
                v.max_queue
            },
            drop_expired: v.drop_expired,
            lifo_above: if v.lifo_above == 0 {
                u64::MAX
            } else {
                v.lifo_above
            },
            shed_wait_steps,
            outages,
            params,
            budget,
            throttle,
            recovered_goodput,
            max_run_attempts: max_run_attempts(expected, limits),
        })
    }

    /// The rule `name` with this scenario's parameters.
    pub(crate) fn rule(&self, name: RuleName) -> Result<Rule, ScenarioError> {
        fields::rule_of(name, &self.params)
    }

    /// The first step after the last outage (0 without outages).
    pub(crate) fn after_last_outage(&self) -> u64 {
        self.outages.iter().map(|&(_, end)| end).max().unwrap_or(0)
    }

    /// Steps to seconds.
    pub(crate) fn seconds(&self, steps: u64) -> f64 {
        (steps as f64 * self.step_ns as f64 / 1e9 * 1e6).round() / 1e6
    }
}
