//! A graph's parts as plain data: services, their calls, and the limits on their numbers. They
//! are checked together when a [`Graph`](super::Graph) is built from them (`checked.rs`).

/// The largest number of attempts an edge may allow (1 = no retry).
pub const MAX_ATTEMPTS: u32 = 100;
/// The largest number of services in one graph.
pub const MAX_SERVICES: usize = 1_000;
/// The largest number of calls one service may make per request.
pub const MAX_CALLS: usize = 100;
/// The largest retry budget, in percent of first attempts (herd's `RetryBudget` limit).
pub const MAX_BUDGET_PERCENT: f64 = 1_000.0;

/// One call edge: a service calls `to` with at most `attempts` attempts.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Index of the callee in [`Graph::services`].
    pub to: usize,
    /// Most attempts per call (1 = no retry), in `1..=MAX_ATTEMPTS`.
    pub attempts: u32,
    /// Chance that one attempt fails by itself (its answer is lost on the way back), in
    /// `[0, 1]`.
    pub failure_probability: f64,
    /// Retries on this edge at most this percentage of first attempts, as a long-run ratio;
    /// 0 means no budget.
    pub budget_percent: f64,
}

/// One service of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Service {
    /// Unique, non-empty name.
    pub name: String,
    /// The service fails every request on its own, at once, without making its calls.
    pub fails: bool,
    /// The calls it makes for every request it handles, in order.
    pub calls: Vec<Call>,
}
