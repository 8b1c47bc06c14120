//! One run's throttle in the cohort engine: the same mechanism as [`SimThrottle`], fed with
//! counts (docs/model.md, "Throttles of real systems").
//!
//! The counting kinds keep the library's state in its own integers, so that a million
//! answers cost one operation, and the tests below check each against the library on random
//! histories, answer for answer:
//!
//! - `grpc`: the bucket in thousandths of a token. A step's successes come first (the agent
//!   engine answers its served clients first), each adding `token_ratio` up to `max_tokens`,
//!   then its failures, each taking one token down to 0: `min(max, t + s·ratio)` then
//!   `t − 1000·f` floored at 0, the same as one at a time. A step's retries are all allowed
//!   or none (more than half the bucket left).
//! - `aws-standard`, `aws-standard-2026`: the quota's tokens. Every refill (a first attempt's
//!   success, a successful retry's returned cost) adds and clamps at the capacity, which
//!   commutes; of `n` retries, `min(n, tokens / retry_cost)` are paid for. A retry's cost is
//!   held from its admission until its attempt is answered, as the agent's permit is.
//! - `envoy-budget`, `envoy-max-retries`: retries in flight (admitted, not yet answered)
//!   against Envoy's limit at the step's active requests (its arrivals).
//! - `ratio`: the library's budget as a ledger of its integer units ([`BudgetLedger`]), its
//!   reserve included.
//!
//! `sre-adaptive`, `grpc-adaptive` and `envoy-admission` decide each request with its own
//! draw, from a probability that each decision moves: they run the library's type itself,
//! one request at a time (each decision is a word of the world's generator, so the cohort
//! engine's bound on its draws bounds them). Their cost grows with the attempts, as the
//! agent engine's does. `aws-adaptive` hands each request its own wait from a rate limiter
//! that every request moves: it needs the agent engine.
use herd::rng::Rng;
use herd::throttle::EnvoyRetryLimitConfig;

use super::{FirstAttempt, SimThrottle, ThrottleSpec};
use crate::budget::BudgetLedger;
use crate::error::ScenarioError;

/// One run's throttle, fed with counts.
pub(crate) struct CohortThrottle {
    step_ns: u64,
    kind: Counts,
}

enum Counts {
    /// The library's type, one request at a time (SRE, admission control).
    Each(SimThrottle),
    Grpc {
        milli: u64,
        max: u64,
        ratio: u64,
    },
    Aws {
        tokens: u64,
        capacity: u64,
        cost: u64,
        increment: u64,
        /// Retries admitted and not yet answered.
        held: u64,
    },
    Envoy {
        config: EnvoyRetryLimitConfig,
        active: u64,
        held: u64,
    },
    Ratio(BudgetLedger),
}

/// Whether the cohort engine can run `spec`: an error naming `retry.throttle.kind` when the
/// mechanism needs the agent engine.
pub(crate) fn check(spec: &ThrottleSpec) -> Result<(), ScenarioError> {
    match spec {
        ThrottleSpec::AwsAdaptive => Err(ScenarioError::field(
            "retry.throttle.kind",
            "aws-adaptive needs the agent engine: its rate limiter gives each request its own \
             wait, which clients kept as counts cannot take; use --engine agent",
        )),
        _ => Ok(()),
    }
}

impl CohortThrottle {
    /// A fresh throttle for one run (settings already checked, including by [`check`]).
    pub(crate) fn new(spec: &ThrottleSpec, step_ns: u64) -> Self {
        let kind = match spec {
            ThrottleSpec::Sre(_) | ThrottleSpec::Admission(_) | ThrottleSpec::AwsAdaptive => {
                Counts::Each(SimThrottle::new(spec, step_ns))
            }
            // As `GrpcThrottle::new` rounds them.
            ThrottleSpec::Grpc(c) => {
                let max = ((c.max_tokens * 1000.0).round() as u64).max(1);
                Counts::Grpc {
                    milli: max,
                    max,
                    ratio: ((c.token_ratio * 1000.0).round() as u64).max(1),
                }
            }
            ThrottleSpec::Aws(c) => Counts::Aws {
                tokens: u64::from(c.capacity),
                capacity: u64::from(c.capacity),
                cost: u64::from(c.retry_cost),
                increment: u64::from(c.no_retry_increment),
                held: 0,
            },
            ThrottleSpec::Envoy(c) => Counts::Envoy {
                config: *c,
                active: 0,
                held: 0,
            },
            ThrottleSpec::Ratio(c) => Counts::Ratio(BudgetLedger::of(*c)),
        };
        Self { step_ns, kind }
    }

    /// Moves to `step`.
    pub(crate) fn at(&mut self, step: u64) {
        let nanos = step.saturating_mul(self.step_ns);
        match &mut self.kind {
            Counts::Each(t) => t.at(step),
            Counts::Ratio(ledger) => ledger.at_time(nanos),
            Counts::Envoy { active, .. } => *active = 0,
            Counts::Grpc { .. } | Counts::Aws { .. } => {}
        }
    }

    /// `n` new clients' first attempts: how many are sent (the rest are refused locally and
    /// give up).
    pub(crate) fn first_attempts<R: Rng + ?Sized>(&mut self, n: u64, rng: &mut R) -> u64 {
        match &mut self.kind {
            Counts::Each(t) => (0..n)
                .filter(|_| t.first_attempt(rng) == FirstAttempt::Send)
                .count() as u64,
            Counts::Ratio(ledger) => {
                ledger.deposit(n);
                n
            }
            Counts::Grpc { .. } | Counts::Aws { .. } | Counts::Envoy { .. } => n,
        }
    }

    /// `arrivals` attempts reach the server this step (Envoy's active requests).
    pub(crate) fn arriving(&mut self, arrivals: u64) {
        if let Counts::Envoy { active, .. } = &mut self.kind {
            *active = arrivals;
        }
    }

    /// The step's attempts were answered: `served` of them served, `failed` not, each split
    /// into (first attempts, retries).
    pub(crate) fn answered(&mut self, served: (u64, u64), failed: (u64, u64)) {
        match &mut self.kind {
            Counts::Each(t) => {
                for _ in 0..served.0 + served.1 {
                    t.answered(true, false);
                }
                for _ in 0..failed.0 + failed.1 {
                    t.answered(false, false);
                }
            }
            Counts::Grpc { milli, max, ratio } => {
                let earned = (served.0 + served.1).saturating_mul(*ratio);
                *milli = milli.saturating_add(earned).min(*max);
                let lost = (failed.0 + failed.1).saturating_mul(1000);
                *milli = milli.saturating_sub(lost);
            }
            Counts::Aws {
                tokens,
                capacity,
                cost,
                increment,
                held,
            } => {
                let refill = served
                    .0
                    .saturating_mul(*increment)
                    .saturating_add(served.1.saturating_mul(*cost));
                *tokens = tokens.saturating_add(refill).min(*capacity);
                *held = held.saturating_sub(served.1 + failed.1);
            }
            Counts::Envoy { held, .. } => *held = held.saturating_sub(served.1 + failed.1),
            Counts::Ratio(_) => {}
        }
    }

    /// `n` retries ask, one after another: how many the throttle admits.
    pub(crate) fn admit<R: Rng + ?Sized>(&mut self, n: u64, rng: &mut R) -> u64 {
        match &mut self.kind {
            Counts::Each(t) => (0..n).filter(|_| t.admit(&mut [()], rng) == 1).count() as u64,
            Counts::Grpc { milli, max, .. } => {
                if milli.saturating_mul(2) > *max {
                    n
                } else {
                    0
                }
            }
            Counts::Aws {
                tokens, cost, held, ..
            } => {
                let paid = tokens.checked_div(*cost).map_or(n, |afford| n.min(afford));
                *tokens -= paid * *cost;
                *held += paid;
                paid
            }
            Counts::Envoy {
                config,
                active,
                held,
            } => {
                let limit = envoy_limit(config, *active);
                let admitted = n.min(limit.saturating_sub(*held));
                *held += admitted;
                admitted
            }
            Counts::Ratio(ledger) => ledger.admit(n),
        }
    }

    /// Whether first attempts must pass [`first_attempts`](Self::first_attempts).
    pub(crate) fn gates_first_attempts(&self) -> bool {
        matches!(self.kind, Counts::Each(_) | Counts::Ratio(_))
    }
}

/// Envoy's limit on retries in flight at `active` requests, as `EnvoyRetryLimit` computes it
/// (`std::max<uint64_t>(budget_percent / 100.0 * active, min_retry_concurrency)`, the product
/// truncated; or `max_retries`).
fn envoy_limit(config: &EnvoyRetryLimitConfig, active: u64) -> u64 {
    match config.retry_budget {
        Some(b) => ((b.budget_percent / 100.0 * active as f64) as u64)
            .max(u64::from(b.min_retry_concurrency)),
        None => u64::from(config.max_retries),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::budget::{GrpcThrottle, GrpcThrottleConfig};
    use herd::rng::SplitMix64;
    use herd::throttle::{
        AwsErrorKind, AwsRetryQuota, AwsRetryQuotaConfig, EnvoyRetryBudgetConfig, EnvoyRetryLimit,
    };

    /// A step's counts: (served first, served retries), (failed first, failed retries), asks.
    fn history(rng: &mut SplitMix64) -> ((u64, u64), (u64, u64), u64) {
        let mut n = || rng.below(4) * rng.below(30);
        ((n(), n()), (n(), n()), n())
    }

    #[test]
    fn grpc_counts_are_the_library_bucket() {
        let mut rng = SplitMix64::new(11);
        for case in 0..60 {
            let mut c = GrpcThrottleConfig::default();
            c.max_tokens = [1.0, 10.0, 3.7, 100.0][case % 4];
            c.token_ratio = [0.1, 0.5, 1.0, 2.25][case / 4 % 4];
            let library = GrpcThrottle::new(c).unwrap();
            let mut counts = CohortThrottle::new(&ThrottleSpec::Grpc(c), 1);
            for _ in 0..200 {
                let (served, failed, asks) = history(&mut rng);
                for _ in 0..served.0 + served.1 {
                    library.record_success();
                }
                for _ in 0..failed.0 + failed.1 {
                    library.record_failure();
                }
                counts.answered(served, failed);
                let want = if library.allows_retry() { asks } else { 0 };
                assert_eq!(counts.admit(asks, &mut rng), want, "case {case}");
            }
        }
    }

    #[test]
    fn aws_counts_are_the_library_quota() {
        let mut rng = SplitMix64::new(12);
        for case in 0..40 {
            let mut c = if case % 2 == 0 {
                AwsRetryQuotaConfig::standard()
            } else {
                AwsRetryQuotaConfig::standard_2026()
            };
            c.capacity = [500, 30, 7, 2000][case / 2 % 4];
            let library = AwsRetryQuota::new(c).unwrap();
            let mut counts = CohortThrottle::new(&ThrottleSpec::Aws(c), 1);
            let mut permits: Vec<herd::budget::RetryPermit> = Vec::new();
            for _ in 0..300 {
                let (mut served, mut failed, asks) = history(&mut rng);
                // Only retries in flight can be answered.
                served.1 = served.1.min(permits.len() as u64);
                failed.1 = failed.1.min(permits.len() as u64 - served.1);
                for _ in 0..served.0 {
                    library.record_first_attempt_success();
                }
                for _ in 0..served.1 {
                    if let Some(p) = permits.pop() {
                        p.succeeded();
                    }
                }
                for _ in 0..failed.1 {
                    permits.pop();
                }
                counts.answered(served, failed);
                let before = permits.len();
                for _ in 0..asks {
                    match library.acquire(AwsErrorKind::Transient) {
                        Some(p) => permits.push(p),
                        None => break,
                    }
                }
                let want = (permits.len() - before) as u64;
                assert_eq!(counts.admit(asks, &mut rng), want, "case {case}");
            }
        }
    }

    #[test]
    fn envoy_counts_are_the_library_limit() {
        let mut rng = SplitMix64::new(13);
        for case in 0..40 {
            let c = if case % 2 == 0 {
                EnvoyRetryLimitConfig::max_retries([0, 3, 10, 1000][case / 2 % 4])
            } else {
                let mut b = EnvoyRetryBudgetConfig::default();
                b.budget_percent = [20.0, 0.0, 55.5, 100.0][case / 2 % 4];
                b.min_retry_concurrency = [3, 0, 1, 10][case / 8 % 4];
                EnvoyRetryLimitConfig::budget(b)
            };
            let library = EnvoyRetryLimit::new(c).unwrap();
            let mut counts = CohortThrottle::new(&ThrottleSpec::Envoy(c), 1);
            let mut permits = Vec::new();
            for step in 0..300 {
                let (mut served, mut failed, asks) = history(&mut rng);
                served.1 = served.1.min(permits.len() as u64);
                failed.1 = failed.1.min(permits.len() as u64 - served.1);
                counts.at(step);
                let arrivals = served.0 + served.1 + failed.0 + failed.1;
                let active: Vec<_> = (0..arrivals).map(|_| library.start_request()).collect();
                counts.arriving(arrivals);
                permits.truncate(permits.len() - (served.1 + failed.1) as usize);
                counts.answered(served, failed);
                let before = permits.len();
                for _ in 0..asks {
                    match library.acquire_retry() {
                        Some(p) => permits.push(p),
                        None => break,
                    }
                }
                let want = (permits.len() - before) as u64;
                assert_eq!(counts.admit(asks, &mut rng), want, "case {case}");
                drop(active);
            }
        }
    }

    #[test]
    fn only_aws_adaptive_needs_the_agent_engine() {
        let err = check(&ThrottleSpec::AwsAdaptive).unwrap_err();
        assert_eq!(err.field_name(), Some("retry.throttle.kind"));
        assert!(err.to_string().contains("--engine agent"), "{err}");
        assert!(!err.to_string().contains('\n'));
        let grpc = ThrottleSpec::Grpc(GrpcThrottleConfig::default());
        assert!(check(&grpc).is_ok());
    }
}
