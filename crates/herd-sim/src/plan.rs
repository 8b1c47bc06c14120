//! A checked scenario, converted to whole steps: what the engine runs.
//!
//! Every time in a scenario becomes an integer number of steps here, once:
//!
//! - an instant `t` (the burst's start, an outage's ends) becomes the first step at or after
//!   it, `ceil(t / step)`, so an outage `[a, b)` covers exactly the steps whose start time lies
//!   in `[a, b)`;
//! - a length (a pause, `retry_after_s`, `timeout_s`) is rounded up to whole steps;
//! - the deadline admits an attempt at step `m` when `(m − first) · step < deadline`.

use herd::{Rule, RuleName, RuleParams};

use crate::error::ScenarioError;
use crate::fields;
use crate::fields::ceil_div;
use crate::limits::Limits;
use crate::refusal::RefusalCost;
use crate::scenario::Scenario;

/// The scenario in steps. Built only by [`Plan::new`], so every field is valid.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) step_ns: u64,
    /// The horizon: steps `0..steps` are simulated.
    pub(crate) steps: u64,
    pub(crate) steps_per_window: u64,
    pub(crate) windows: u64,
    pub(crate) start_step: u64,
    pub(crate) burst: u64,
    /// Open-loop arrivals per step (fractional; arrivals are the increments of its floor).
    pub(crate) arrivals_per_step: f64,
    pub(crate) open_loop_total: u64,
    pub(crate) max_attempts: u32,
    pub(crate) deadline_steps: Option<u64>,
    /// The longest `Retry-After` honoured, in steps (`None`: any).
    pub(crate) max_server_delay_steps: Option<u64>,
    pub(crate) capacity: u64,
    pub(crate) refusal_cost: RefusalCost,
    pub(crate) collapse_above: Option<u64>,
    /// Down steps, `[start, end)`, sorted and disjoint.
    pub(crate) outages: Vec<(u64, u64)>,
    pub(crate) warmup_ns: u64,
    pub(crate) retry_after_steps: u64,
    pub(crate) timeout_steps: u64,
    pub(crate) params: RuleParams,
    pub(crate) rules: Vec<(RuleName, Rule)>,
    pub(crate) budget_percent: f64,
    pub(crate) max_run_attempts: u64,
}

/// Builds `rule` from `params`, naming the scenario field at fault.
pub(crate) fn build_rule(name: RuleName, params: &RuleParams) -> Result<Rule, ScenarioError> {
    fields::rule_of(name, params, "retry.rules")
}

fn nanos_of_millis(field: &'static str, ms: f64) -> Result<u64, ScenarioError> {
    fields::millis(field, ms).map(|d| d.as_nanos() as u64)
}

impl Plan {
    /// The step after `step` at which something happens, or `None` when the run is over:
    /// the earlier of `next_due` (the first step a waiting client knocks at) and, with
    /// open-loop arrivals, `step + 1`; none at or past the horizon. Time jumps over the rest.
    pub(crate) fn next_step(&self, step: u64, next_due: Option<u64>) -> Option<u64> {
        let arrivals = (self.open_loop_total > 0 && step + 1 < self.steps).then_some(step + 1);
        let next = match (next_due, arrivals) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        (next < self.steps).then_some(next)
    }

    pub(crate) fn new(s: &Scenario, limits: &Limits) -> Result<Self, ScenarioError> {
        let step_ns = nanos_of_millis("step_ms", s.step_ms)?;
        if step_ns == 0 {
            return Err(ScenarioError::field(
                "step_ms",
                format!("must be at least 1 ns (0.000001 ms), got {}", s.step_ms),
            ));
        }
        let window_ns = nanos_of_millis("window_ms", s.window_ms)?;
        if window_ns == 0 || window_ns % step_ns != 0 {
            return Err(ScenarioError::field(
                "window_ms",
                format!(
                    "must be a positive multiple of step_ms ({}), got {}",
                    s.step_ms, s.window_ms
                ),
            ));
        }
        let steps_per_window = window_ns / step_ns;

        let horizon_ns = fields::nanos("horizon_s", s.horizon_s)?;
        let steps = ceil_div(horizon_ns, step_ns);
        if steps == 0 {
            return Err(ScenarioError::field(
                "horizon_s",
                "must be longer than zero",
            ));
        }
        if steps > limits.max_steps {
            return Err(ScenarioError::field(
                "horizon_s",
                format!(
                    "{} s in steps of {} ms is {steps} steps; at most {} (use a longer step_ms)",
                    s.horizon_s, s.step_ms, limits.max_steps
                ),
            ));
        }
        let windows = ceil_div(steps, steps_per_window);

        let c = &s.clients;
        let start_ns = fields::nanos("clients.start_s", c.start_s)?;
        let start_step = ceil_div(start_ns, step_ns);
        if start_step >= steps {
            return Err(ScenarioError::field(
                "clients.start_s",
                format!(
                    "must be before the horizon ({} s), got {}",
                    s.horizon_s, c.start_s
                ),
            ));
        }
        if !c.arrivals_per_s.is_finite() || c.arrivals_per_s < 0.0 {
            return Err(ScenarioError::field(
                "clients.arrivals_per_s",
                format!("must be a finite number >= 0, got {}", c.arrivals_per_s),
            ));
        }
        let arrivals_per_step = c.arrivals_per_s * step_ns as f64 / fields::NANOS_PER_SEC;
        let open_loop = (arrivals_per_step * (steps - start_step) as f64).floor();
        if c.count as f64 + open_loop > limits.max_clients as f64 {
            let field = if c.count > limits.max_clients {
                "clients.count"
            } else {
                "clients.arrivals_per_s"
            };
            return Err(ScenarioError::field(
                field,
                format!(
                    "{} clients in the burst and {open_loop} open-loop arrivals; at most {} in all",
                    c.count, limits.max_clients
                ),
            ));
        }
        let open_loop_total = open_loop as u64;
        let deadline_ns = fields::nanos("clients.deadline_s", c.deadline_s)?;
        let deadline_steps = (deadline_ns > 0).then(|| ceil_div(deadline_ns, step_ns));
        let max_server_delay_ns =
            fields::nanos("clients.max_server_delay_s", c.max_server_delay_s)?;
        let max_server_delay_steps =
            (max_server_delay_ns > 0).then(|| ceil_div(max_server_delay_ns, step_ns));

        let v = &s.server;
        let refusal_cost = RefusalCost::new(v.refusal_cost)
            .map_err(|e| ScenarioError::field("server.refusal_cost", e.to_string()))?;
        let mut outages: Vec<(u64, u64)> =
            fields::outages("server.outages", &v.outages, horizon_ns)?
                .into_iter()
                .map(|(a, b)| (ceil_div(a, step_ns), ceil_div(b, step_ns)))
                .collect();
        outages.retain(|(a, b)| a < b);
        let warmup_ns = fields::nanos("server.warmup_s", v.warmup_s)?;
        let retry_after_steps = ceil_div(
            fields::nanos("server.retry_after_s", v.retry_after_s)?,
            step_ns,
        );
        let timeout_steps = ceil_div(fields::nanos("server.timeout_s", v.timeout_s)?, step_ns);

        let r = &s.retry;
        let params = fields::rule_params(r.base_ms, r.cap_ms, r.pause_ms)?;
        if r.rules.is_empty() {
            return Err(ScenarioError::field(
                "retry.rules",
                "must name at least one rule",
            ));
        }
        let mut rules = Vec::with_capacity(r.rules.len());
        for &name in &r.rules {
            if rules.iter().any(|(n, _)| *n == name) {
                return Err(ScenarioError::field(
                    "retry.rules",
                    format!("`{name}` is listed twice"),
                ));
            }
            rules.push((name, build_rule(name, &params)?));
        }
        if !r.budget_percent.is_finite() || !(0.0..=1000.0).contains(&r.budget_percent) {
            return Err(ScenarioError::field(
                "retry.budget_percent",
                format!(
                    "must be a percentage between 0 and 1000, got {}",
                    r.budget_percent
                ),
            ));
        }

        let plan = Plan {
            step_ns,
            steps,
            steps_per_window,
            windows,
            start_step,
            burst: c.count,
            arrivals_per_step,
            open_loop_total,
            max_attempts: c.max_attempts,
            deadline_steps,
            max_server_delay_steps,
            capacity: v.capacity,
            refusal_cost,
            collapse_above: (v.collapse_above > 0).then_some(v.collapse_above),
            outages,
            warmup_ns,
            retry_after_steps,
            timeout_steps,
            params,
            rules,
            budget_percent: r.budget_percent,
            max_run_attempts: limits.max_run_attempts,
        };
        plan.check_memory(s, limits)?;
        Ok(plan)
    }

    /// The burst plus the open-loop arrivals before the horizon.
    pub(crate) fn total_clients(&self) -> u64 {
        self.burst + self.open_loop_total
    }

    /// Bytes of state per client at worst: its record (4 bytes, 12 with a rule's memory word,
    /// 4 more under a deadline) held up to three times over while a step moves a whole herd
    /// from one bucket to another (the step's list, the bucket it goes to, vector slack).
    fn bytes_per_client(&self) -> u64 {
        let memory = self.rules.iter().any(|(_, r)| r.uses_memory());
        let record =
            if memory { 12 } else { 4 } + if self.deadline_steps.is_some() { 4 } else { 0 };
        3 * record
    }

    fn check_memory(&self, s: &Scenario, limits: &Limits) -> Result<(), ScenarioError> {
        let clients = u128::from(self.total_clients()) * u128::from(self.bytes_per_client());
        // Two counters per window (arrivals, served).
        let series = u128::from(self.windows) * 16;
        let need = clients + series;
        if need <= u128::from(limits.max_bytes) {
            return Ok(());
        }
        let mib = |b: u128| b >> 20;
        if series >= clients {
            Err(ScenarioError::field(
                "horizon_s",
                format!(
                    "{} s in windows of {} ms is {} windows, needing {} MiB; only {} MiB available (use a longer window_ms or a shorter horizon)",
                    s.horizon_s,
                    s.window_ms,
                    self.windows,
                    mib(need),
                    mib(u128::from(limits.max_bytes))
                ),
            ))
        } else {
            Err(ScenarioError::field(
                if s.clients.count >= self.open_loop_total {
                    "clients.count"
                } else {
                    "clients.arrivals_per_s"
                },
                format!(
                    "{} clients need {} MiB; only {} MiB available",
                    self.total_clients(),
                    mib(need),
                    mib(u128::from(limits.max_bytes))
                ),
            ))
        }
    }

    /// Open-loop arrivals at step `n`: the increment of `floor(arrivals_per_step · k)`.
    pub(crate) fn open_loop_at(&self, n: u64) -> u64 {
        if self.open_loop_total == 0 || n < self.start_step {
            return 0;
        }
        let k = (n - self.start_step) as f64;
        let before = (self.arrivals_per_step * k).floor();
        let after = (self.arrivals_per_step * (k + 1.0)).floor();
        (after - before) as u64
    }

    /// Seconds since t = 0 at the start of step `n`, exact for whole milliseconds.
    pub(crate) fn seconds(&self, n: u64) -> f64 {
        (u128::from(n) * u128::from(self.step_ns)) as f64 / fields::NANOS_PER_SEC
    }

    /// The window length in seconds.
    pub(crate) fn window_s(&self) -> f64 {
        self.seconds(self.steps_per_window)
    }

    /// The first up step after the last outage (0 without outages).
    pub(crate) fn after_last_outage(&self) -> u64 {
        self.outages.last().map_or(0, |&(_, end)| end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(edit: impl FnOnce(&mut Scenario)) -> Result<Plan, ScenarioError> {
        let mut s = Scenario::default();
        edit(&mut s);
        Plan::new(&s, &Limits::unlimited())
    }

    #[test]
    fn default_in_steps() {
        let p = plan(|_| {}).unwrap();
        assert_eq!(p.step_ns, 100_000_000);
        assert_eq!(p.steps, 36_000);
        assert_eq!(p.windows, 36_000);
        assert_eq!(p.outages, vec![(0, 100)]);
        assert_eq!(p.total_clients(), 2000);
    }

    #[test]
    fn contradictions_name_their_field() {
        let field = |e: ScenarioError| e.field_name().unwrap().to_owned();
        assert_eq!(
            field(plan(|s| s.window_ms = 150.0).unwrap_err()),
            "window_ms"
        );
        assert_eq!(
            field(plan(|s| s.retry.cap_ms = 50.0).unwrap_err()),
            "retry.cap_ms"
        );
        assert_eq!(
            field(plan(|s| s.server.refusal_cost = 1.0).unwrap_err()),
            "server.refusal_cost"
        );
        assert_eq!(
            field(plan(|s| s.server.outages = vec![[0.0, 10.0], [5.0, 12.0]]).unwrap_err()),
            "server.outages"
        );
        assert_eq!(field(plan(|s| s.step_ms = -1.0).unwrap_err()), "step_ms");
        assert_eq!(
            field(plan(|s| s.horizon_s = f64::NAN).unwrap_err()),
            "horizon_s"
        );
        assert_eq!(
            field(plan(|s| s.retry.rules.clear()).unwrap_err()),
            "retry.rules"
        );
    }

    #[test]
    fn open_loop_arrivals_add_up() {
        let p = plan(|s| {
            s.clients.arrivals_per_s = 7.5;
            s.horizon_s = 10.0;
        })
        .unwrap();
        let sum: u64 = (0..p.steps).map(|n| p.open_loop_at(n)).sum();
        assert_eq!(sum, p.open_loop_total);
        assert_eq!(sum, 75);
    }
}
