//! `[retry.throttle]`: the throttles and budgets real systems ship (`herd::throttle`), shared
//! by every client of the storm, on simulated time.
//!
//! The table names one `kind` and that system's own settings, in snake case; a setting that
//! is not the kind's is an error naming it. Each kind runs the library's own type on a
//! `FakeClock` set to each step's time, so the simulator and a Rust client share one
//! implementation:
//!
//! | kind | library type | settings (defaults: the system's own) |
//! |---|---|---|
//! | `sre-adaptive` | `SreThrottle` (the book) | `k`, `padding`, `history_s`, `bins` |
//! | `grpc-adaptive` | `SreThrottle` (grpc-go's RLS throttler) | the same |
//! | `aws-standard`, `aws-standard-2026` | `AwsRetryQuota` | `capacity`, `retry_cost`, `no_retry_increment` |
//! | `aws-adaptive` | `AwsRateLimiter` | none |
//! | `envoy-budget` | `EnvoyRetryLimit` with a budget | `budget_percent`, `min_retry_concurrency` |
//! | `envoy-max-retries` | `EnvoyRetryLimit` | `max_retries` |
//! | `envoy-admission` | `AdmissionControl` | `sampling_window_s`, `sr_threshold`, `aggression`, `rps_threshold`, `max_rejection_probability` |
//! | `grpc` | `GrpcThrottle` (`retryThrottling`) | `max_tokens`, `token_ratio` |
//! | `ratio` | `RetryBudget` (Finagle, tower, Linkerd) | `retry_ratio`, `min_retries_per_second`, `ttl_s` |
//!
//! How the storm feeds them (docs/model.md, "Throttles"): the server's refusals are transient
//! errors (an AWS retry costs `retry_cost`), a served attempt is a success, a refused or
//! failed one a rejection by the backend. The kinds that gate first attempts (`sre-adaptive`,
//! `grpc-adaptive`, `envoy-admission`) may refuse a new client's first attempt (a give-up,
//! counted in `denied_by_budget`); `aws-adaptive` delays first attempts and retries by what
//! the rate limiter asks, rounded up to whole steps. Envoy's active requests are a step's
//! arrivals; a retry holds its place from the decision until its attempt is answered.
//!
//! The same table serves every model with clients: the cohort engine feeds counts to
//! [`CohortThrottle`] (`cohort.rs`); the metastable model drives [`SimThrottle`] with its
//! own events; the latency model and the service graph's Monte Carlo take the library's
//! type through its `Budget` interface ([`ThrottleSpec::budget`]), as a Rust client's hedge
//! or retry loop does (docs/model.md, "Throttles in the other models").

mod cohort;
mod library;
mod run;
mod table;

pub(crate) use cohort::{CohortThrottle, check as cohort_check};
pub(crate) use library::LibraryThrottle;
pub(crate) use run::{FirstAttempt, SimThrottle};
pub use table::{KINDS, ThrottleTable};
pub(crate) use table::{ThrottleSpec, fill_tree};
