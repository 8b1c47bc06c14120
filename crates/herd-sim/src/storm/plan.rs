//! A checked scenario, converted to whole steps: what the engine runs.
//!
//! Every time in a scenario becomes an integer number of steps here, once:
//!
//! - an instant `t` (the burst's start, an outage's ends) becomes the first step at or after
//!   it, `ceil(t / step)`, so an outage `[a, b)` covers exactly the steps whose start time lies
//!   in `[a, b)`;
//! - a length (a pause, `retry_after_s`, `timeout_s`) is rounded up to whole steps;
//! - the deadline admits an attempt at step `m` when `(m − first) · step < deadline`.
//!
//! The rules are built here too, in the unit their pauses are drawn in ([`PlannedRule`]):
//! with `pauses = "steps"` a rule of whole-step draws gets `base`, `cap` and `pause` as whole
//! numbers of steps (one unit of the rule, a "nanosecond" of its `Duration`s, standing for
//! one step), so that the library's integer draws are whole steps.

use std::time::Duration;

use herd::{Rule, RuleName, RuleParams};

use crate::error::ScenarioError;
use crate::fields;
use crate::fields::ceil_div;
use crate::limits::Limits;
use crate::refusal::RefusalCost;
use crate::storm::attempt_latency::AttemptLatency;
use crate::storm::scenario::{Pauses, Scenario};

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
    /// Open-loop arrivals per step, exactly `numerator / denominator` (arrivals are the
    /// increments of its floor).
    pub(crate) arrivals_per_step: (u128, u128),
    pub(crate) open_loop_total: u64,
    pub(crate) max_attempts: u32,
    pub(crate) deadline_steps: Option<u64>,
    /// The longest `Retry-After` honoured, in steps (`None`: any).
    pub(crate) max_server_delay_steps: Option<u64>,
    /// The latency of a retry (`None`: none at all).
    pub(crate) latency: Option<AttemptLatency>,
    pub(crate) capacity: u64,
    pub(crate) refusal_cost: RefusalCost,
    pub(crate) collapse_above: Option<u64>,
    /// Down steps, `[start, end)`, sorted and disjoint.
    pub(crate) outages: Vec<(u64, u64)>,
    pub(crate) warmup_ns: u64,
    pub(crate) retry_after_steps: u64,
    pub(crate) timeout_steps: u64,
    pub(crate) params: RuleParams,
    pub(crate) pauses: Pauses,
    pub(crate) rules: Vec<(RuleName, PlannedRule)>,
    pub(crate) budget_percent: f64,
    /// `[retry.throttle]`, checked (`None`: none).
    pub(crate) throttle: Option<crate::throttle::ThrottleSpec>,
    pub(crate) max_run_attempts: u64,
}

/// A rule as both engines run it: built in the unit its pauses are drawn in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlannedRule {
    /// The library's rule, its `Duration`s in the unit below.
    pub(crate) rule: Rule,
    /// `base`, `cap` and `pause` in the same unit.
    pub(crate) params: RuleParams,
    /// The rule's nanoseconds that make one step: 1 when it draws whole steps, else the
    /// step in nanoseconds. A pause `p` is `max(1, ceil(p / per_step))` steps.
    pub(crate) per_step: u64,
}

/// Whether `pauses = "steps"` draws `name` in whole steps. The rules of integer draws do;
/// `grpc`, `grpc-retry`, `randomized` and `decorrelated-v2` compute real-valued formulas (a multiplier, `tanh`) and
/// truncate them to the rule's unit, so in whole steps `grpc` with a one-step base would
/// never grow (`1 · 1.6` truncates to 1): they draw in nanoseconds in both modes.
pub(crate) const fn draws_whole_steps(name: RuleName) -> bool {
    !matches!(
        name,
        RuleName::Grpc | RuleName::DecorrelatedV2 | RuleName::GrpcRetry | RuleName::Randomized
    )
}

/// Builds `name` from `params` (nanoseconds) for steps of `step_ns` under `pauses`, naming
/// the scenario field at fault: in whole steps, a parameter the rule uses (`retry.base_ms`
/// and `retry.cap_ms`, or `retry.pause_ms` for `constant`) must be a whole number of steps.
pub(crate) fn build_rule(
    name: RuleName,
    params: &RuleParams,
    pauses: Pauses,
    step_ns: u64,
) -> Result<PlannedRule, ScenarioError> {
    // Checked in nanoseconds first, so that a rule's own error speaks milliseconds.
    let rule = fields::rule_of(name, params)?;
    if pauses == Pauses::Continuous || !draws_whole_steps(name) {
        return Ok(PlannedRule {
            rule,
            params: *params,
            per_step: step_ns,
        });
    }
    let used: &[(&'static str, Duration)] = match name {
        RuleName::Immediate => &[],
        RuleName::Constant => &[("retry.pause_ms", params.pause)],
        _ => &[("retry.base_ms", params.base), ("retry.cap_ms", params.cap)],
    };
    for &(field, value) in used {
        let ns = value.as_nanos();
        if ns % u128::from(step_ns) != 0 {
            return Err(ScenarioError::field(
                field,
                format!(
                    "{} ms is not a whole number of steps of {} ms; with pauses = \"steps\" \
                     rule {name} draws whole steps (use a multiple of step_ms, or pauses = \"continuous\")",
                    herd::rule::format_ms(value),
                    herd::rule::format_ms(Duration::from_nanos(step_ns)),
                ),
            ));
        }
    }
    // Unused parameters are truncated: the rule does not read them.
    let in_steps = |d: Duration| {
        Duration::from_nanos(u64::try_from(d.as_nanos() / u128::from(step_ns)).unwrap_or(u64::MAX))
    };
    let steps = params
        .base(in_steps(params.base))
        .cap(in_steps(params.cap))
        .pause(in_steps(params.pause));
    Ok(PlannedRule {
        rule: fields::rule_of(name, &steps)?,
        params: steps,
        per_step: 1,
    })
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
        if window_ns > horizon_ns {
            // Every figure per window (the peak after an outage, the chart's axis) would
            // come from one window past the end of the run.
            return Err(ScenarioError::field(
                "window_ms",
                format!(
                    "a window of {} ms is longer than the horizon ({} s)",
                    s.window_ms, s.horizon_s
                ),
            ));
        }
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
        let arrivals_per_step =
            fields::per_step("clients.arrivals_per_s", c.arrivals_per_s, step_ns)?;
        let (num, den) = arrivals_per_step;
        // Exact: num < 2^90 and fewer than 2^32 steps.
        let open_loop =
            u64::try_from(num * u128::from(steps - start_step) / den).unwrap_or(u64::MAX);
        if c.count.saturating_add(open_loop) > limits.max_clients {
            let field = if c.count > limits.max_clients {
                Scenario::CLIENTS_COUNT.path()
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
        let open_loop_total = open_loop;
        let deadline_ns = fields::nanos("clients.deadline_s", c.deadline_s)?;
        let deadline_steps = (deadline_ns > 0).then(|| ceil_div(deadline_ns, step_ns));
        let max_server_delay_ns =
            fields::nanos("clients.max_server_delay_s", c.max_server_delay_s)?;
        let max_server_delay_steps =
            (max_server_delay_ns > 0).then(|| ceil_div(max_server_delay_ns, step_ns));
        // A longer delay lands past the horizon and past the deadline alike.
        let latency_reach = steps.saturating_add(deadline_steps.unwrap_or(0));
        let latency = AttemptLatency::new(&c.latency, step_ns, latency_reach)?;

        let v = &s.server;
        let refusal_cost = RefusalCost::new(v.refusal_cost)
            .map_err(|e| ScenarioError::field(Scenario::REFUSAL_COST, e.to_string()))?;
        let mut outages: Vec<(u64, u64)> =
            fields::outages(Scenario::OUTAGES.path(), &v.outages, horizon_ns)?
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
        let params = fields::rule_params(r.base_ms, r.cap_ms, r.pause_ms)?
            .multiplier(fields::multiplier("retry.multiplier", r.multiplier)?)
            .jitter(fields::fraction("retry.jitter", r.jitter)?);
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
            rules.push((name, build_rule(name, &params, s.pauses, step_ns)?));
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
        let throttle = r
            .throttle
            .as_ref()
            .map(crate::throttle::ThrottleTable::check)
            .transpose()?;
        if throttle.is_some() && r.budget_percent > 0.0 {
            return Err(ScenarioError::field(
                "retry.throttle",
                "set either budget_percent or a throttle, not both",
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
            latency,
            capacity: v.capacity,
            refusal_cost,
            collapse_above: (v.collapse_above > 0).then_some(v.collapse_above),
            outages,
            warmup_ns,
            retry_after_steps,
            timeout_steps,
            params,
            pauses: s.pauses,
            rules,
            budget_percent: r.budget_percent,
            throttle,
            max_run_attempts: limits.max_run_attempts,
        };
        plan.check_memory(s, limits)?;
        Ok(plan)
    }

    /// `name` as the engines run it: the plan's own when the scenario lists it, else built
    /// from the scenario's parameters.
    pub(crate) fn rule(&self, name: RuleName) -> Result<PlannedRule, ScenarioError> {
        match self.rules.iter().find(|(n, _)| *n == name) {
            Some((_, rule)) => Ok(*rule),
            None => build_rule(name, &self.params, self.pauses, self.step_ns),
        }
    }

    /// The burst plus the open-loop arrivals before the horizon.
    pub(crate) fn total_clients(&self) -> u64 {
        self.burst + self.open_loop_total
    }

    /// Bytes of state per client at worst: its record (4 bytes, 12 with a rule's memory word,
    /// 4 more under a deadline) held up to three times over while a step moves a whole herd
    /// from one bucket to another (the step's list, the bucket it goes to, vector slack).
    fn bytes_per_client(&self) -> u64 {
        let memory = self.rules.iter().any(|(_, r)| r.rule.uses_memory());
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
                    Scenario::CLIENTS_COUNT.path()
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
        let (num, den) = self.arrivals_per_step;
        let k = u128::from(n - self.start_step);
        // At most `num / den + 1` < 2^90: fits.
        ((num * (k + 1)) / den - (num * k) / den) as u64
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

    /// A window of 10^12 ms over an hour ran, and reported a peak of 0 on an axis of
    /// 0 to 10^9 s.
    #[test]
    fn a_window_longer_than_the_horizon_is_refused() {
        let err = plan(|s| s.window_ms = 1e12).unwrap_err();
        assert_eq!(err.field_name(), Some("window_ms"), "{err}");
        assert!(
            err.message().contains("longer than the horizon (3600 s)"),
            "{err}"
        );
        assert!(plan(|s| s.window_ms = 3_600_000.0).is_ok());
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

    /// The open loop is exact: 7 a second in 100 ms steps is 7/10 a step, so after `k` steps
    /// exactly `⌊7k/10⌋` clients have arrived. In `f64`, `0.7000000000000001 · k` put 289 of
    /// the first 20 000 steps' arrivals a step early.
    #[test]
    fn open_loop_arrivals_are_exact_at_every_step() {
        for (rate, step_ms, num, den) in [(7.0, 100.0, 7, 10), (33.3, 100.0, 333, 100)] {
            let p = plan(|s| {
                s.clients.count = 0;
                s.clients.arrivals_per_s = rate;
                s.step_ms = step_ms;
                s.window_ms = step_ms;
                s.horizon_s = 2000.0;
            })
            .unwrap();
            let mut arrived = 0;
            for k in 0..20_000u64 {
                arrived += p.open_loop_at(k);
                assert_eq!(arrived, num * (k + 1) / den, "{rate}/s, step {k}");
            }
        }
        let err = plan(|s| s.clients.arrivals_per_s = 1.000_000_000_1).unwrap_err();
        assert_eq!(err.field_name(), Some("clients.arrivals_per_s"));
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
