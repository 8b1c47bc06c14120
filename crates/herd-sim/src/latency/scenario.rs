//! The latency scenario as written in TOML (`model = "latency"`), and its checked form.
use serde::{Deserialize, Serialize};

use crate::error::{Field, ScenarioError};
use crate::limits;

/// The most user requests one run may measure (latencies are kept to compute exact
/// percentiles: 8 bytes each).
pub const MAX_REQUESTS: u64 = 20_000_000;
/// The most servers in the pool.
pub const MAX_SERVERS: u32 = 100_000;
/// The widest fan-out.
pub const MAX_FAN_OUT: u32 = 10_000;
/// The most events one policy's run may take, estimated before it starts (arrivals, copies
/// sent and answered, and the servers' pauses drawn): at tens of millions of events a second,
/// a few minutes of one core. A run estimated past it is refused, naming the field that
/// makes it so.
pub const MAX_EVENTS: u64 = 10_000_000_000;
/// The longest stretch of simulated time a run may cover, in seconds (about three years):
/// times are whole nanoseconds, and a run that long is a typo (a rate of `1e-300`).
pub const MAX_SPAN_S: f64 = 1e8;

/// A latency scenario. Every field is optional; the defaults are a fan-out at moderate load
/// where hiccups make the tail: 600 user requests a second, each needing 10 sub-requests,
/// on 20 servers (30 % utilisation), service times exponential with mean 1 ms, and every
/// server pausing for 100 ms about once every 10 s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LatencyScenario {
    /// `"latency"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The run's seed.
    pub seed: u64,
    /// User requests whose latency is measured.
    pub requests: u64,
    /// User requests run first and not measured, so the queues reach their steady state.
    pub warmup_requests: u64,
    /// Arrivals.
    pub traffic: Traffic,
    /// The server pool.
    pub servers: Servers,
    /// The time one copy takes to serve once it starts.
    pub service: ServiceTime,
    /// Pauses of whole servers (garbage collection, background work).
    pub hiccups: Hiccups,
    /// The policies to compare, one result row each.
    pub policies: Vec<PolicySpec>,
    /// `[retry]`: `[retry.throttle]` bounds the hedges of every hedging policy without a
    /// `budget_percent` of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<LatencyRetry>,
}

/// `[retry]` of a latency scenario: only `[retry.throttle]`, a throttle or budget a real
/// system ships, which every hedge must pass (docs/model.md, "Throttles of real systems").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LatencyRetry {
    /// The throttle (`None`: hedges are bounded only by each policy's `budget_percent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttle: Option<crate::throttle::ThrottleTable>,
}

/// `[traffic]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Traffic {
    /// User requests per second, a Poisson process (open loop).
    pub rate_per_s: f64,
    /// Sub-requests per user request; the user's latency is the slowest sub-request's.
    pub fan_out: u32,
}

/// `[servers]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Servers {
    /// Servers in the pool, each serving one copy at a time from its own FIFO queue.
    pub count: u32,
}

/// The law of a service time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Every copy takes exactly the mean.
    Constant,
    /// Exponential with the given mean.
    Exponential,
    /// Log-normal with the given mean and shape `sigma` (the standard deviation of its log).
    Lognormal,
}

/// `[service]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceTime {
    /// `constant`, `exponential` or `lognormal`.
    pub distribution: Distribution,
    /// The mean service time, in milliseconds.
    pub mean_ms: f64,
    /// The log-normal's shape (ignored by the other laws).
    pub sigma: f64,
}

/// `[hiccups]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Hiccups {
    /// The mean time a server runs between pauses, in seconds (exponential); 0 = never.
    pub every_s: f64,
    /// How long each pause lasts, in milliseconds.
    pub pause_ms: f64,
}

/// How a policy hedges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    /// One copy per sub-request.
    None,
    /// A further copy after `delay_ms` while none has answered.
    Delay,
    /// A further copy after the `quantile` of recent sub-request latencies.
    Percentile,
    /// Two copies at once to two servers; the one that starts service second is cancelled
    /// (Dean and Barroso's tied requests).
    Tied,
}

/// `[[policies]]`: one policy to compare.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicySpec {
    /// Its name in the results.
    pub name: String,
    /// `none`, `delay`, `percentile` or `tied`.
    pub kind: PolicyKind,
    /// Copies per sub-request, the first included (`delay`, `percentile`; at most 5).
    pub max_copies: u32,
    /// The hedging delay in milliseconds (`delay`).
    pub delay_ms: f64,
    /// Which percentile (`percentile`), in (0, 1).
    pub quantile: f64,
    /// A budget of hedges as a percentage of sub-requests (herd's `RetryBudget` with no
    /// reserve over a 10 s window); absent = unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_percent: Option<f64>,
    /// Whether a copy that lost is cancelled (dropped from its queue, or stopped in service)
    /// rather than left to finish as wasted work. Default false: a client that drops a
    /// request (as `tower::hedge` and herd's layer do) does not stop the server's work.
    pub cancel_losers: bool,
}

impl Default for PolicySpec {
    fn default() -> Self {
        Self {
            name: String::new(),
            kind: PolicyKind::None,
            max_copies: 2,
            delay_ms: 10.0,
            quantile: 0.95,
            budget_percent: None,
            cancel_losers: false,
        }
    }
}

impl PolicySpec {
    fn named(name: &str, kind: PolicyKind) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            ..Self::default()
        }
    }
}

impl Default for LatencyScenario {
    fn default() -> Self {
        Self {
            model: None,
            seed: 1,
            requests: 200_000,
            warmup_requests: 20_000,
            traffic: Traffic::default(),
            servers: Servers::default(),
            service: ServiceTime::default(),
            hiccups: Hiccups::default(),
            policies: vec![
                PolicySpec::named("none", PolicyKind::None),
                PolicySpec {
                    delay_ms: 10.0,
                    ..PolicySpec::named("hedge-10ms", PolicyKind::Delay)
                },
                PolicySpec {
                    delay_ms: 10.0,
                    max_copies: 3,
                    ..PolicySpec::named("hedge-10ms-3-copies", PolicyKind::Delay)
                },
                PolicySpec {
                    quantile: 0.99,
                    ..PolicySpec::named("hedge-p99", PolicyKind::Percentile)
                },
                PolicySpec {
                    delay_ms: 10.0,
                    budget_percent: Some(2.0),
                    ..PolicySpec::named("hedge-10ms-budget-2%", PolicyKind::Delay)
                },
                PolicySpec::named("tied", PolicyKind::Tied),
            ],
            retry: None,
        }
    }
}

impl Default for Traffic {
    fn default() -> Self {
        Self {
            rate_per_s: 600.0,
            fan_out: 10,
        }
    }
}

impl Default for Servers {
    fn default() -> Self {
        Self { count: 20 }
    }
}

impl Default for ServiceTime {
    fn default() -> Self {
        Self {
            distribution: Distribution::Exponential,
            mean_ms: 1.0,
            sigma: 1.0,
        }
    }
}

impl Default for Hiccups {
    fn default() -> Self {
        Self {
            every_s: 10.0,
            pause_ms: 100.0,
        }
    }
}

/// A checked policy, times in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Policy {
    pub(crate) name: String,
    pub(crate) kind: PolicyKind,
    pub(crate) max_copies: u32,
    pub(crate) delay_ns: u64,
    pub(crate) quantile: f64,
    pub(crate) budget_percent: Option<f64>,
    pub(crate) cancel_losers: bool,
}

/// A checked scenario, times in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LatencyPlan {
    pub(crate) seed: u64,
    pub(crate) requests: u64,
    pub(crate) warmup: u64,
    /// Mean time between user arrivals.
    pub(crate) interarrival_ns: f64,
    pub(crate) fan_out: u32,
    pub(crate) servers: u32,
    pub(crate) distribution: Distribution,
    pub(crate) service_mean_ns: f64,
    pub(crate) sigma: f64,
    /// Mean up-time between pauses, or `None` for no hiccups.
    pub(crate) hiccup_every_ns: Option<f64>,
    pub(crate) hiccup_ns: u64,
    pub(crate) policies: Vec<Policy>,
    /// `[retry.throttle]`, checked: the hedges of every hedging policy without its own
    /// budget pass it.
    pub(crate) throttle: Option<crate::throttle::ThrottleSpec>,
}

fn positive(field: &str, x: f64, max: f64) -> Result<f64, ScenarioError> {
    if !x.is_finite() || x <= 0.0 || x > max {
        return Err(ScenarioError::field(
            field,
            format!("must be a number above 0 and at most {max}, got {x}"),
        ));
    }
    Ok(x)
}

fn non_negative(field: &str, x: f64, max: f64) -> Result<f64, ScenarioError> {
    if !x.is_finite() || x < 0.0 || x > max {
        return Err(ScenarioError::field(
            field,
            format!("must be a number between 0 and {max}, got {x}"),
        ));
    }
    Ok(x)
}

fn count(field: &str, x: u64, low: u64, high: u64) -> Result<u64, ScenarioError> {
    if x < low || x > high {
        return Err(ScenarioError::field(
            field,
            format!("must be a whole number between {low} and {high}, got {x}"),
        ));
    }
    Ok(x)
}

/// Milliseconds to nanoseconds, rounded to the nearest nanosecond.
fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

impl LatencyScenario {
    /// `requests`: the user requests measured.
    pub const REQUESTS: Field = Field::new("requests");
    /// `warmup_requests`: the user requests run before measuring.
    pub const WARMUP_REQUESTS: Field = Field::new("warmup_requests");
    /// `traffic.rate_per_s`: the arrival rate (also named when a run would cover too long).
    pub const RATE_PER_S: Field = Field::new("traffic.rate_per_s");
    /// `traffic.fan_out`: sub-requests per user request.
    pub const FAN_OUT: Field = Field::new("traffic.fan_out");
    /// `policies[].delay_ms`: a policy's hedge delay.
    pub const POLICY_DELAY_MS: Field = Field::new("policies[].delay_ms");

    /// The arrival rate (user requests a second) at which this pool is busy `utilisation`
    /// of the time without hedging: `utilisation · servers / (fan_out · mean service time)`.
    /// What `herd hedge --utilisation` and the page's slider set.
    #[must_use]
    pub fn rate_at_utilisation(&self, utilisation: f64) -> f64 {
        utilisation * f64::from(self.servers.count)
            / (f64::from(self.traffic.fan_out.max(1)) * self.service.mean_ms / 1000.0)
    }

    /// Reads a scenario from TOML text; its values are checked by
    /// [`LatencyModel::new`](crate::latency::LatencyModel::new) (or the registry's one way in).
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field (and line) at fault.
    pub fn from_toml_str(text: &str) -> Result<Self, ScenarioError> {
        let scenario: Self =
            toml::from_str(text).map_err(|e| crate::located::toml_error(text, &e))?;
        if let Some(model) = &scenario.model
            && model != "latency"
        {
            return Err(ScenarioError::field(
                "model",
                format!("this is the latency model's scenario, not \"{model}\""),
            ));
        }
        Ok(scenario)
    }

    pub(crate) fn plan(&self) -> Result<LatencyPlan, ScenarioError> {
        let requests = count(Self::REQUESTS.path(), self.requests, 1, MAX_REQUESTS)?;
        let warmup = count(
            Self::WARMUP_REQUESTS.path(),
            self.warmup_requests,
            0,
            MAX_REQUESTS,
        )?;
        let rate = positive(Self::RATE_PER_S.path(), self.traffic.rate_per_s, 1e9)?;
        let fan_out = count(
            Self::FAN_OUT.path(),
            self.traffic.fan_out.into(),
            1,
            MAX_FAN_OUT.into(),
        )?;
        let servers = count(
            "servers.count",
            self.servers.count.into(),
            1,
            MAX_SERVERS.into(),
        )?;
        let mean_ms = positive("service.mean_ms", self.service.mean_ms, 1e6)?;
        let sigma = if self.service.distribution == Distribution::Lognormal {
            positive("service.sigma", self.service.sigma, 5.0)?
        } else {
            0.0
        };
        let every = non_negative("hiccups.every_s", self.hiccups.every_s, 1e9)?;
        let pause = non_negative("hiccups.pause_ms", self.hiccups.pause_ms, 1e9)?;
        if every > 0.0 && pause == 0.0 {
            return Err(ScenarioError::field(
                "hiccups.pause_ms",
                "must be above 0 when hiccups.every_s is set",
            ));
        }
        if self.policies.is_empty() {
            return Err(ScenarioError::field(
                "policies",
                "needs at least one policy",
            ));
        }
        let throttle = self
            .retry
            .as_ref()
            .and_then(|r| r.throttle.as_ref())
            .map(crate::throttle::ThrottleTable::check)
            .transpose()?;
        let mut policies = Vec::with_capacity(self.policies.len());
        for (i, p) in self.policies.iter().enumerate() {
            let field = |f: &str| format!("policies[{i}].{f}");
            if p.name.trim().is_empty() {
                return Err(ScenarioError::field(field("name"), "must not be empty"));
            }
            if self.policies[..i].iter().any(|q| q.name == p.name) {
                return Err(ScenarioError::field(
                    field("name"),
                    format!("\"{}\" names two policies", p.name),
                ));
            }
            let hedges = p.kind != PolicyKind::None;
            let max_copies = match p.kind {
                PolicyKind::None => 1,
                PolicyKind::Tied => 2,
                PolicyKind::Delay | PolicyKind::Percentile => count(
                    &field("max_copies"),
                    p.max_copies.into(),
                    1,
                    herd::hedge::MAX_COPIES.into(),
                )? as u32,
            };
            if hedges && servers < 2 {
                return Err(ScenarioError::field(
                    field("kind"),
                    "hedging needs at least 2 servers (servers.count)",
                ));
            }
            let delay_ms = non_negative(&Self::POLICY_DELAY_MS.of_item(i), p.delay_ms, 1e9)?;
            let quantile = if p.kind == PolicyKind::Percentile {
                if !(p.quantile > 0.0 && p.quantile < 1.0) {
                    return Err(ScenarioError::field(
                        field("quantile"),
                        format!("must be a number in (0, 1), got {}", p.quantile),
                    ));
                }
                p.quantile
            } else {
                0.0
            };
            let budget_percent = match p.budget_percent {
                Some(b) => Some(non_negative(&field("budget_percent"), b, 1000.0)?),
                None => None,
            };

            policies.push(Policy {
                name: p.name.clone(),
                kind: p.kind,
                max_copies,
                delay_ns: ms_to_ns(delay_ms),
                quantile,
                budget_percent,
                cancel_losers: p.cancel_losers,
            });
        }
        let plan = LatencyPlan {
            seed: self.seed,
            requests,
            warmup,
            interarrival_ns: 1e9 / rate,
            fan_out: fan_out as u32,
            servers: servers as u32,
            distribution: self.service.distribution,
            service_mean_ns: mean_ms * 1e6,
            sigma,
            hiccup_every_ns: (every > 0.0).then_some(every * 1e9),
            hiccup_ns: ms_to_ns(pause),
            policies,
            throttle,
        };
        let estimate = plan.estimate();
        if estimate.span_s > MAX_SPAN_S {
            return Err(ScenarioError::field(
                estimate.span_field,
                format!(
                    "the run would cover about {:.3e} s of simulated time, more than the \
                     {MAX_SPAN_S:e} s a run may ({})",
                    estimate.span_s,
                    advice(estimate.span_field)
                ),
            ));
        }
        limits::within(
            estimate.events,
            MAX_EVENTS,
            "events",
            estimate.events_field,
            advice(estimate.events_field),
        )?;
        Ok(plan)
    }
}

/// How to shrink a run through `field`.
pub(crate) fn advice(field: &str) -> &'static str {
    match field {
        "traffic.rate_per_s" => "a higher rate or fewer requests",
        "hiccups.every_s" => "longer up-times between pauses, shorter pauses, or no hiccups",
        "service.mean_ms" => "shorter service times, more servers or fewer requests",
        _ => "fewer requests, a smaller fan-out or fewer copies",
    }
}

/// What a run will cost, estimated from its checked plan before it starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Estimate {
    /// Events of the costliest policy: arrivals, copies sent and answered, pauses drawn.
    pub(crate) events: u64,
    /// The field that contributes most of them.
    pub(crate) events_field: &'static str,
    /// Simulated seconds the run covers: the arrivals' span, or the time the servers need
    /// for the work sent (pauses included) when that is longer.
    pub(crate) span_s: f64,
    /// The field that makes the span what it is.
    pub(crate) span_field: &'static str,
}

impl LatencyPlan {
    /// The run's cost, from its means (an estimate, not a bound: a run's draws scatter around
    /// it by a few percent). Every copy costs a dispatch and an answer (a hedge timer at
    /// most one more); a server draws one pause per up-time and pause
    /// (`every + pause`) of the simulated span, and its span is at least the work sent to it
    /// divided by the share of time it is up.
    pub(crate) fn estimate(&self) -> Estimate {
        let users = (self.requests + self.warmup) as f64;
        let copies_each = self
            .policies
            .iter()
            .map(|p| p.max_copies)
            .max()
            .unwrap_or(1);
        let copies = users * f64::from(self.fan_out) * f64::from(copies_each);
        let arrivals_ns = users * self.interarrival_ns;
        let work_ns = copies * self.service_mean_ns / f64::from(self.servers);
        let (busy_ns, pauses) = match self.hiccup_every_ns {
            Some(every) => {
                let cycle = every + self.hiccup_ns as f64;
                let busy = work_ns * cycle / every;
                let span = arrivals_ns.max(busy);
                (busy, f64::from(self.servers) * span / cycle)
            }
            None => (work_ns, 0.0),
        };
        let span_s = arrivals_ns.max(busy_ns) / 1e9;
        let span_field = if arrivals_ns >= busy_ns {
            LatencyScenario::RATE_PER_S.path()
        } else if self.hiccup_every_ns.is_some() && busy_ns > 2.0 * work_ns {
            "hiccups.every_s"
        } else {
            "service.mean_ms"
        };
        let others = users + 3.0 * copies;
        let events_field = if pauses > others {
            "hiccups.every_s"
        } else {
            LatencyScenario::REQUESTS.path()
        };
        Estimate {
            // `as` saturates: an infinite estimate is `u64::MAX`, past any limit.
            events: (others + pauses).ceil() as u64,
            events_field,
            span_s,
            span_field,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(edit: impl FnOnce(&mut LatencyScenario)) -> ScenarioError {
        let mut scenario = LatencyScenario::default();
        edit(&mut scenario);
        scenario.plan().expect_err("refused before it runs")
    }

    /// A rate of 1e-300 passed the "above 0" check and the run never ended: its arrivals
    /// were spread over 10^300 s, and the pauses in between drawn one by one.
    #[test]
    fn a_vanishing_rate_is_refused_naming_the_rate() {
        for rate in [1e-300, 1e-320, 1e-5] {
            let err = refusal(|s| s.traffic.rate_per_s = rate);
            assert_eq!(err.field_name(), Some("traffic.rate_per_s"), "{err}");
            assert!(err.message().contains("1e8 s"), "{err}");
        }
    }

    /// Up-times of 1 ns between 100 ms pauses made each 1 ms of service take 10^5 s and a
    /// million pauses: the run never ended.
    #[test]
    fn pauses_that_leave_no_time_to_work_are_refused_naming_the_hiccups() {
        let err = refusal(|s| s.hiccups.every_s = 1e-9);
        assert_eq!(err.field_name(), Some("hiccups.every_s"), "{err}");
        let err = refusal(|s| {
            s.hiccups.every_s = 1e-7;
            s.hiccups.pause_ms = 1e-6;
        });
        assert_eq!(err.field_name(), Some("hiccups.every_s"), "{err}");
        assert!(err.message().contains(&MAX_EVENTS.to_string()), "{err}");
    }

    #[test]
    fn too_many_copies_are_refused_naming_the_requests() {
        let err = refusal(|s| {
            s.requests = MAX_REQUESTS;
            s.traffic.fan_out = MAX_FAN_OUT;
            s.traffic.rate_per_s = 1e9;
        });
        assert_eq!(err.field_name(), Some("requests"), "{err}");
    }

    /// The estimate is of the right size: the default run's events are its arrivals and
    /// copies (a few pauses), within the copies the costliest policy may send.
    #[test]
    fn the_default_estimate_counts_arrivals_and_copies() {
        let plan = LatencyScenario::default().plan().expect("default runs");
        let estimate = plan.estimate();
        let users = 220_000.0;
        let copies = users * 10.0 * 3.0;
        let events = estimate.events as f64;
        assert!(events >= users + 3.0 * copies, "{estimate:?}");
        assert!(events < users + 3.0 * copies + 1000.0, "{estimate:?}");
        assert!(
            (estimate.span_s - users / 600.0).abs() < 1e-6,
            "{estimate:?}"
        );
    }
}
