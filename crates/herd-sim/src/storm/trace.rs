//! Every attempt of a small scene, for timelines (the interactive page's six clients).
//!
//! A trace is the same run as [`Simulation::run`](crate::Simulation::run) with the same seed
//! (the engine is shared; recording draws no random numbers), plus one event per attempt.
use serde::Serialize;

/// The most clients a trace may follow.
pub const MAX_TRACE_CLIENTS: u64 = 10_000;
/// The most events a trace may record.
pub const MAX_TRACE_EVENTS: u64 = 1_000_000;

/// What became of one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Answered.
    Served,
    /// Refused: the window's budget was spent.
    Refused,
    /// Refused: more arrivals than `collapse_above` in the step.
    Collapsed,
    /// Failed: the server was in an outage.
    Down,
}

/// Why a client stopped after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GiveUp {
    /// It had made `max_attempts` attempts.
    MaxAttempts,
    /// Its next attempt would come after its deadline.
    Deadline,
    /// The retry budget denied the retry.
    Budget,
    /// The server's `Retry-After` was longer than `max_server_delay_s`, or did not end before
    /// the deadline: `herd::server_delay::decide` stopped the call, as herd's retry loops do
    /// (their `StopReason::ServerDelay`).
    ServerDelay,
}

/// One attempt.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TraceEvent {
    /// The client: 0-based, the burst first, then open-loop arrivals in order.
    pub client: u32,
    /// The step of the attempt.
    pub step: u64,
    /// The time of the attempt in seconds.
    pub t_s: f64,
    /// What became of it.
    pub outcome: Outcome,
    /// Set when the client gave up after this attempt.
    pub gave_up: Option<GiveUp>,
}

/// Every attempt of a run, in order of time, then client.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trace {
    /// The step in seconds.
    pub step_s: f64,
    /// The attempts.
    pub events: Vec<TraceEvent>,
}

/// Receives every attempt as the engine decides it.
pub(crate) trait Observer {
    /// False for the no-op observer, so that recording compiles away in plain runs.
    const ACTIVE: bool;
    fn attempt(&mut self, client: u32, step: u64, outcome: Outcome, gave_up: Option<GiveUp>);
    /// Called now and then with the share of the horizon simulated so far, and with 1.0 at
    /// the end.
    #[inline]
    fn progress(&mut self, _done: f64) {}
    /// Asked at the same moments as [`progress`](Self::progress): whether the run should stop
    /// now (its [`Watch`](crate::Watch)'s flag was set).
    #[inline]
    fn stop(&self) -> bool {
        false
    }
}

/// Records nothing; reports progress to the watch and stops when its flag is set.
impl Observer for crate::Watch<'_> {
    const ACTIVE: bool = false;
    #[inline]
    fn attempt(&mut self, _: u32, _: u64, _: Outcome, _: Option<GiveUp>) {}
    fn progress(&mut self, done: f64) {
        self.report(done);
    }
    fn stop(&self) -> bool {
        self.stopped()
    }
}

/// Records every attempt.
pub(crate) struct Recorder {
    pub(crate) step_ns: u64,
    pub(crate) events: Vec<TraceEvent>,
}

impl Observer for Recorder {
    const ACTIVE: bool = true;
    fn attempt(&mut self, client: u32, step: u64, outcome: Outcome, gave_up: Option<GiveUp>) {
        self.events.push(TraceEvent {
            client,
            step,
            t_s: (u128::from(step) * u128::from(self.step_ns)) as f64 / 1e9,
            outcome,
            gave_up,
        });
    }
}

impl Recorder {
    pub(crate) fn into_trace(mut self) -> Trace {
        self.events.sort_by_key(|e| (e.step, e.client));
        Trace {
            step_s: self.step_ns as f64 / 1e9,
            events: self.events,
        }
    }
}
