//! Retry amplification over a service graph (docs/model.md, "Service graph").
//!
//! Retries at every layer multiply: three attempts at each of three layers is 27 queries on
//! the database for one page view. This module computes, per entry request, how many requests
//! each service receives, exactly, and checks the figures with a Monte Carlo run.
//!
//! # The model
//!
//! - A **call** edge `a → b` has `attempts` = the most attempts per call (1 = no retry), an
//!   optional `failure_probability` p and an optional `budget_percent`.
//! - A service marked `fails = true` answers every request with a failure, at once, without
//!   making its calls.
//! - Any other service makes **all** its calls for every request it receives (as a fan-out
//!   does), each with its own retries, and its answer fails when any call still fails after
//!   its retries.
//! - One attempt of a call fails **by itself** with probability p, independently: the callee
//!   receives the attempt and does all its work, and the answer is lost on the way back (a
//!   timeout, a reset). Otherwise the attempt fails exactly when the callee's answer fails.
//! - A call is retried while its last attempt failed and fewer than `attempts` were made.
//! - **Independence:** every call to a service is an independent execution of that service's
//!   subtree. A service reached on two paths (a diamond) runs once per call on each path and
//!   receives the sum. This is what makes the exact figures exact and the Monte Carlo agree.
//!
//! With q the chance that one attempt fails, a call with k attempts makes
//! `1 + q + … + q^(k−1) = (1 − q^k)/(1 − q)` attempts on average and fails with `q^k`, where
//! `q = 1 − (1 − p)(1 − f)` and f the chance that one execution of the callee fails (computed
//! callees first). Expected counts then flow down the graph in topological order.
//!
//! **Budgets.** The graph's budget is a *ratio budget*, a model of its own and not
//! `herd::RetryBudget` (which counts deposits over a time window, with a reserve; the graph
//! has no time): see docs/model.md, "Service graph". `budget_percent = β·100` on an edge
//! allows at most β retries per first attempt on that edge, as a long-run ratio: a token
//! bucket per edge, starting empty, uncapped, that gains β tokens per first attempt; a retry
//! needs one whole token and spends it. The closed form (`min(D, β)` retries per call,
//! `D = q + … + q^(k−1)`) treats every call as meeting an independent, average bucket, which
//! a caller's successive retries do not; so graphs with budgets are computed from the
//! stationary law of the buckets' tokens (see `stationary.rs`), and labelled approximate
//! (with [`Exactness::Approximate`](crate::graph::Exactness::Approximate)) only when that
//! chain is beyond reach; `herd amplify` then prints a Monte Carlo estimate instead. The Monte Carlo runs the bucket itself, in the same whole units.
//! `budget_percent = 0` (the default) means no budget.
//!
//! **Throttles.** Instead of edge budgets, a graph file's `[retry.throttle]` (the same table,
//! parser and checks as every model's; docs/model.md, "Throttles of real systems") puts one
//! throttle of that kind on every edge, shared by the calls on it and driven through the
//! library's `Budget` interface as a retry loop drives it: a call starts (`on_request`), each
//! attempt's answer is a success or a failure, a retry needs `try_retry_permit` and holds
//! the permit until its answer. The graph has no time, so a throttle's clock stands still
//! (its windows hold the whole run; `aws-adaptive`, which refills by the second, is
//! refused), and requests run one at a time (Envoy's active requests on an edge are its one
//! attempt under way). The figures then come from the Monte Carlo run alone
//! (`Exactness::Approximate`).
//!
//! # Layer-aware retries
//!
//! With [`Options::layer_aware`], a failure that a layer gives up on after being allowed to
//! retry (attempts ≥ 2, attempts used up or budget refused) comes back marked "retries
//! exhausted", a service whose answer fails because a call failed with the mark passes the
//! mark up, and a caller does not retry a marked failure. A failure of a service that fails on
//! its own, a lost answer, or a failure from an edge with one attempt, is unmarked and is
//! retried as usual. With 3 attempts at every layer of BFF → search → inventory → stock-db the
//! counts drop from 1, 3, 9, 27 to 1, 1, 1, 3.
//!
//! `docs/amplify.md` has the derivation and a worked example.

// From the base up: plain data and the error; the checks and the validated graph built on
// them; the file reader; then what is computed from a graph.
mod advice;
mod checked;
mod error;
mod exact;
mod file;
mod model;
mod monte_carlo;
mod odds;
mod stationary;
mod validate;

pub use advice::{Advice, Amplification, advise, amplification};
pub use checked::Graph;
pub use error::GraphError;
pub use exact::{CallFigures, Exactness, Prediction, call_figures, predict};
pub use model::{Call, MAX_ATTEMPTS, MAX_BUDGET_PERCENT, MAX_CALLS, MAX_SERVICES, Service};
pub use monte_carlo::{
    BATCHES, MAX_SIMULATED_CALLS, MonteCarlo, SimulatedService, Z, known_error, simulate,
    tolerance, tolerance_at, z_limit,
};
pub use odds::{AnswerOdds, Options};
