//! What a run measured: the storm's figures (docs/model.md) and the load per window.
//!
//! Definitions (docs/model.md): *served at* is the time of a client's successful attempt; *half
//! served by* is the served-at times sorted ascending, element `clients / 2` (0-based); *all
//! served by* is the largest served-at time, only when everyone was served; *requests per
//! client* is all attempts / clients; *peak after outage* is the most arrivals in one window
//! starting at or after the end of the last outage (over all windows without outages).
use herd::RuleName;
use serde::Serialize;

use crate::storm::plan::Plan;

/// The result of one run of one rule with one seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    /// The rule.
    #[serde(serialize_with = "crate::rule_serde::one::serialize")]
    pub rule: RuleName,
    /// The seed of the world's generator.
    pub seed: u64,
    /// Clients over the run: the burst plus open-loop arrivals.
    pub clients: u64,
    /// Clients served.
    pub served: u64,
    /// Clients that gave up (attempt limit, deadline, or a retry the budget denied).
    pub gave_up: u64,
    /// Of `gave_up`, those whose retry the retry budget denied.
    pub denied_by_budget: u64,
    /// Clients still waiting at the horizon. `served + gave_up + waiting == clients`.
    pub waiting: u64,
    /// When half the clients had been served, in seconds; `None` if they never were.
    pub half_served_s: Option<f64>,
    /// When the last client was served, in seconds; `None` unless every client was served.
    pub all_served_s: Option<f64>,
    /// The time of the last attempt, in seconds; `None` if nobody called.
    pub last_attempt_s: Option<f64>,
    /// All attempts, first attempts and retries.
    pub requests: u64,
    /// `requests / clients`.
    pub requests_per_client: f64,
    /// The most arrivals in one window at or after the end of the last outage.
    pub peak_after_outage: u64,
    /// Arrivals and answers per window; serialized as `null` when the series was not kept
    /// ([`Series::drop_windows`]), never as empty lists, which mean a run in which no window
    /// had an attempt.
    #[serde(serialize_with = "series_or_null")]
    pub series: Series,
}

/// `series` as JSON: the series, or `null` when it was not kept.
fn series_or_null<S: serde::Serializer>(series: &Series, s: S) -> Result<S::Ok, S::Error> {
    series.kept().serialize(s)
}

/// Load per window, from t = 0 up to the last window in which anyone called.
///
/// Window `i` covers `[i · window_s, (i + 1) · window_s)`; windows after the last attempt are
/// left out (they would all be zero), so the length varies between runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// The window's length in seconds.
    pub window_s: f64,
    /// The server's capacity: answers per window.
    pub capacity: f64,
    /// Attempts that arrived in each window.
    pub arrivals: Vec<u64>,
    /// Attempts served in each window.
    pub served: Vec<u64>,
    /// Whether the windows were dropped after the run ([`Series::drop_windows`]).
    #[serde(skip)]
    dropped: bool,
}

impl Series {
    /// A series of `arrivals` and `served` per window of `window_s` seconds, at `capacity`
    /// answers per window.
    #[must_use]
    pub fn new(window_s: f64, capacity: f64, arrivals: Vec<u64>, served: Vec<u64>) -> Self {
        Self {
            window_s,
            capacity,
            arrivals,
            served,
            dropped: false,
        }
    }

    /// Frees the per-window lists of a run whose series is not shown (`herd storm --runs`
    /// keeps the first seed's only) and marks the series as not kept: the lists are then
    /// empty, and the run's JSON says `"series": null`, never empty lists, which would read
    /// as a run in which no window had an attempt.
    pub fn drop_windows(&mut self) {
        self.arrivals = Vec::new();
        self.served = Vec::new();
        self.dropped = true;
    }

    /// The series, or `None` when its windows were dropped.
    #[must_use]
    pub fn kept(&self) -> Option<&Self> {
        (!self.dropped).then_some(self)
    }
}

/// Accumulates a run's figures step by step.
#[derive(Debug)]
pub(crate) struct Meter<'p> {
    plan: &'p Plan,
    arrivals: Vec<u64>,
    served_per_window: Vec<u64>,
    pub(crate) requests: u64,
    pub(crate) served: u64,
    half_index: u64,
    half_step: Option<u64>,
    last_served_step: Option<u64>,
    last_attempt_step: Option<u64>,
}

impl<'p> Meter<'p> {
    pub(crate) fn new(plan: &'p Plan) -> Self {
        let windows = usize::try_from(plan.windows).unwrap_or(usize::MAX);
        Self {
            plan,
            arrivals: vec![0; windows],
            served_per_window: vec![0; windows],
            requests: 0,
            served: 0,
            half_index: plan.total_clients() / 2,
            half_step: None,
            last_served_step: None,
            last_attempt_step: None,
        }
    }

    /// `arrivals` attempts at `step`, of which `served` were served.
    #[inline]
    pub(crate) fn record(&mut self, step: u64, arrivals: u64, served: u64) {
        let w = (step / self.plan.steps_per_window) as usize;
        self.arrivals[w] += arrivals;
        self.served_per_window[w] += served;
        self.requests += arrivals;
        self.last_attempt_step = Some(step);
        if served > 0 {
            if self.half_step.is_none() && self.served + served > self.half_index {
                self.half_step = Some(step);
            }
            self.served += served;
            self.last_served_step = Some(step);
        }
    }

    pub(crate) fn finish(
        mut self,
        rule: RuleName,
        seed: u64,
        gave_up: u64,
        denied_by_budget: u64,
        waiting: u64,
    ) -> RunResult {
        let plan = self.plan;
        let clients = plan.total_clients();
        let after = plan.after_last_outage().div_ceil(plan.steps_per_window) as usize;
        let peak_after_outage = self
            .arrivals
            .get(after..)
            .map_or(0, |tail| tail.iter().copied().max().unwrap_or(0));
        let used = self
            .arrivals
            .iter()
            .rposition(|&a| a > 0)
            .map_or(0, |i| i + 1);
        self.arrivals.truncate(used);
        self.served_per_window.truncate(used);
        let seconds = |s: u64| plan.seconds(s);
        RunResult {
            rule,
            seed,
            clients,
            served: self.served,
            gave_up,
            denied_by_budget,
            waiting,
            half_served_s: self.half_step.map(seconds),
            all_served_s: (clients > 0 && self.served == clients)
                .then_some(self.last_served_step)
                .flatten()
                .map(seconds),
            last_attempt_s: self.last_attempt_step.map(seconds),
            requests: self.requests,
            requests_per_client: if clients == 0 {
                0.0
            } else {
                self.requests as f64 / clients as f64
            },
            peak_after_outage,
            series: Series::new(
                plan.window_s(),
                plan.capacity as f64,
                self.arrivals,
                self.served_per_window,
            ),
        }
    }
}
