//! The decision: whether to retry, and after what pause.
//!
//! A [`RetryPolicy`] holds everything that decides *whether* a failed attempt is retried (the
//! attempt limit, the total deadline, the budget, the breaker, idempotency) and *when* (the
//! [`Rule`], or the server's own delay). It never sleeps and never calls anything: the blocking
//! loop ([`Call::run`](crate::call::Call::run)), the async loop and the tower layer all drive
//! the same small state machine:
//!
//! ```text
//! begin → before_attempt → (the attempt) → on_success
//!                                        → on_failure → Retry { pause } → before_attempt …
//!                                                     → Stop(reason)
//! ```
//!
//! so the rules are written once. In particular the **deadline covers attempts and sleeps**:
//! it is measured on the policy's clock from [`begin`](RetryPolicy::begin), and a pause that
//! would end past it stops the loop at once with the last error, rather than sleeping only to
//! give up (or, worse, sleeping past it because the server said `Retry-After: 3600`).
//!
//! The server's delay replaces the rule's pause, clamped to
//! [`max_server_delay`](PolicyBuilder::max_server_delay) and jittered by up to
//! [`server_delay_jitter`](PolicyBuilder::server_delay_jitter) of itself, *after* the delay
//! (a client never comes back earlier than asked unless the delay was clamped), and never past
//! the maximum.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, policy::RetryPolicy};
//!
//! let policy = RetryPolicy::builder(Rule::full(Duration::from_millis(50), Duration::from_secs(2))?)
//!     .max_attempts(4)
//!     .deadline(Duration::from_secs(10))
//!     .build()?;
//! let mut calls = 0;
//! let answer = policy
//!     .call(|_| { calls += 1; if calls < 2 { Err("blip") } else { Ok(42) } })
//!     .run_with(&herd::clock::FakeClock::new()) // sleeping on a fake clock: instant
//!     .unwrap();
//! assert_eq!((answer.value, answer.attempts), (42, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::breaker::Breaker;
use crate::budget::Budget;
use crate::classify::Verdict;
use crate::clock::{Clock, SystemClock, saturating_nanos};
use crate::idempotency::{Attempt, IdempotencyKey};
use crate::outcome::StopReason;
use crate::rng::Rng;
use crate::rule::{Rule, RuleState};

/// Why a policy could not be built. Each variant names the field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InvalidPolicy {
    /// `max_attempts` must be at least 1.
    MaxAttempts,
    /// `deadline` must be longer than zero.
    Deadline,
    /// `attempt_timeout` must be longer than zero.
    AttemptTimeout,
    /// `server_delay_jitter` must be a fraction in `[0, 1]`.
    ServerDelayJitter(f64),
}

impl fmt::Display for InvalidPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidPolicy::MaxAttempts => f.write_str("max_attempts must be at least 1"),
            InvalidPolicy::Deadline => f.write_str("deadline must be longer than zero"),
            InvalidPolicy::AttemptTimeout => {
                f.write_str("attempt_timeout must be longer than zero")
            }
            InvalidPolicy::ServerDelayJitter(j) => {
                write!(
                    f,
                    "server_delay_jitter must be a fraction in [0, 1], got {j}"
                )
            }
        }
    }
}

impl std::error::Error for InvalidPolicy {}

/// Builds a [`RetryPolicy`]; see [`RetryPolicy::builder`].
#[derive(Clone)]
#[must_use]
pub struct PolicyBuilder<C: Clock = SystemClock> {
    policy: RetryPolicy<C>,
}

impl<C: Clock> PolicyBuilder<C> {
    /// Attempts in all, the first included (default 3). 1 means no retries.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.policy.max_attempts = attempts;
        self
    }

    /// One total deadline for the call, attempts *and* pauses (default none).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.policy.deadline = Some(deadline);
        self
    }

    /// Async only: the longest one attempt may take before it is abandoned and counted as a
    /// (transient, possibly processed) failure. The last attempt is also cut at the deadline.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.policy.attempt_timeout = Some(timeout);
        self
    }

    /// The longest server delay (`Retry-After`, pushback) honoured (default 60 s). Longer
    /// delays are clamped to it.
    pub fn max_server_delay(mut self, max: Duration) -> Self {
        self.policy.max_server_delay = max;
        self
    }

    /// Random extra added to a server delay, as a fraction of it (default 0.1: a client told
    /// 60 s comes back between 60 and 66 s).
    pub fn server_delay_jitter(mut self, fraction: f64) -> Self {
        self.policy.server_delay_jitter = fraction;
        self
    }

    /// Whether the operation is safe to repeat (default true). A non-idempotent call is
    /// retried only after failures that prove the request was not processed.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.policy.idempotent = idempotent;
        self
    }

    /// A retry budget shared with other calls ([`RetryBudget`](crate::budget::RetryBudget),
    /// [`GrpcThrottle`](crate::budget::GrpcThrottle), or your own [`Budget`]).
    pub fn budget(mut self, budget: impl Budget + 'static) -> Self {
        self.policy.budget = Some(Arc::new(budget));
        self
    }

    /// A circuit breaker shared with other calls.
    pub fn breaker(mut self, breaker: impl Breaker + 'static) -> Self {
        self.policy.breaker = Some(Arc::new(breaker));
        self
    }

    /// The clock that measures the deadline (default [`SystemClock`]).
    pub fn clock<C2: Clock>(self, clock: C2) -> PolicyBuilder<C2> {
        let p = self.policy;
        PolicyBuilder {
            policy: RetryPolicy {
                rule: p.rule,
                max_attempts: p.max_attempts,
                deadline: p.deadline,
                attempt_timeout: p.attempt_timeout,
                max_server_delay: p.max_server_delay,
                server_delay_jitter: p.server_delay_jitter,
                idempotent: p.idempotent,
                budget: p.budget,
                breaker: p.breaker,
                clock,
            },
        }
    }

    /// Validates and builds.
    ///
    /// # Errors
    ///
    /// An [`InvalidPolicy`] naming the bad field.
    pub fn build(self) -> Result<RetryPolicy<C>, InvalidPolicy> {
        let p = &self.policy;
        if p.max_attempts == 0 {
            return Err(InvalidPolicy::MaxAttempts);
        }
        if p.deadline.is_some_and(|d| d.is_zero()) {
            return Err(InvalidPolicy::Deadline);
        }
        if p.attempt_timeout.is_some_and(|d| d.is_zero()) {
            return Err(InvalidPolicy::AttemptTimeout);
        }
        if !(0.0..=1.0).contains(&p.server_delay_jitter) {
            return Err(InvalidPolicy::ServerDelayJitter(p.server_delay_jitter));
        }
        Ok(self.policy)
    }
}

/// Validated retry configuration. Cheap to clone (budget and breaker are shared handles);
/// build one per dependency and reuse it for every call.
#[derive(Clone)]
pub struct RetryPolicy<C: Clock = SystemClock> {
    rule: Rule,
    max_attempts: u32,
    deadline: Option<Duration>,
    attempt_timeout: Option<Duration>,
    max_server_delay: Duration,
    server_delay_jitter: f64,
    idempotent: bool,
    budget: Option<Arc<dyn Budget>>,
    breaker: Option<Arc<dyn Breaker>>,
    clock: C,
}

impl<C: Clock> fmt::Debug for RetryPolicy<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("rule", &self.rule)
            .field("max_attempts", &self.max_attempts)
            .field("deadline", &self.deadline)
            .field("attempt_timeout", &self.attempt_timeout)
            .field("max_server_delay", &self.max_server_delay)
            .field("server_delay_jitter", &self.server_delay_jitter)
            .field("idempotent", &self.idempotent)
            .field("budget", &self.budget.is_some())
            .field("breaker", &self.breaker.is_some())
            .finish_non_exhaustive()
    }
}

impl RetryPolicy<SystemClock> {
    /// Starts a policy that pauses by `rule`: 3 attempts, no deadline, idempotent, server
    /// delays up to 60 s with 10 % jitter, no budget, no breaker, the system clock.
    pub fn builder(rule: Rule) -> PolicyBuilder<SystemClock> {
        PolicyBuilder {
            policy: RetryPolicy {
                rule,
                max_attempts: 3,
                deadline: None,
                attempt_timeout: None,
                max_server_delay: Duration::from_secs(60),
                server_delay_jitter: 0.1,
                idempotent: true,
                budget: None,
                breaker: None,
                clock: SystemClock::new(),
            },
        }
    }
}

/// The state of one logical call, owned by whatever drives the loop.
#[derive(Clone, Debug)]
pub struct CallState {
    started: Duration,
    attempts: u32,
    rule: RuleState,
    key: IdempotencyKey,
}

impl CallState {
    /// Attempts started so far.
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The call's idempotency key.
    #[must_use]
    pub const fn key(&self) -> IdempotencyKey {
        self.key
    }
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Pause, then make another attempt.
    Retry {
        /// How long to pause.
        pause: Duration,
        /// Whether the pause is the server's delay rather than the rule's.
        server_delay: bool,
    },
    /// Give up.
    Stop(StopReason),
}

impl<C: Clock> RetryPolicy<C> {
    /// The rule that draws pauses.
    #[must_use]
    pub const fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The attempt limit.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The total deadline, if any.
    #[must_use]
    pub const fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// Whether calls are idempotent.
    #[must_use]
    pub const fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// The policy's clock.
    #[must_use]
    pub const fn clock(&self) -> &C {
        &self.clock
    }

    /// A copy of this policy with a different attempt limit (the tower layer uses it when a
    /// request cannot be sent again).
    #[must_use]
    #[cfg(feature = "tower")]
    pub(crate) fn with_max_attempts(&self, max_attempts: u32) -> Self {
        Self {
            max_attempts,
            ..self.clone()
        }
    }

    /// A copy of this policy with a different idempotency setting (the tower layer uses it
    /// per request method).
    #[must_use]
    pub fn with_idempotent(&self, idempotent: bool) -> Self {
        Self {
            idempotent,
            ..self.clone()
        }
    }

    /// Starts a logical call: records the request with the budget and draws its idempotency
    /// key.
    #[inline]
    pub fn begin<R: Rng + ?Sized>(&self, rng: &mut R) -> CallState {
        self.begin_with_key(IdempotencyKey::random(rng))
    }

    /// Starts a logical call with a key chosen by the caller (one received from upstream, or
    /// one the loop already holds).
    #[inline]
    pub fn begin_with_key(&self, key: IdempotencyKey) -> CallState {
        if let Some(budget) = &self.budget {
            budget.on_request();
        }
        CallState {
            started: self.clock.now(),
            attempts: 0,
            rule: RuleState::default(),
            key,
        }
    }

    /// Time since [`begin`](Self::begin).
    #[must_use]
    #[inline]
    pub fn elapsed(&self, state: &CallState) -> Duration {
        self.clock.now().saturating_sub(state.started)
    }

    /// Time left before the deadline, if there is one.
    #[must_use]
    #[inline]
    pub fn remaining(&self, state: &CallState) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.saturating_sub(self.elapsed(state)))
    }

    /// How long the next attempt may run: the per-attempt timeout, cut at the deadline.
    #[must_use]
    #[inline]
    pub fn attempt_limit(&self, state: &CallState) -> Option<Duration> {
        match (self.attempt_timeout, self.remaining(state)) {
            (Some(t), Some(r)) => Some(t.min(r)),
            (t, r) => t.or(r),
        }
    }

    /// Admits the next attempt, or says why not: the deadline has passed, or the breaker
    /// refuses.
    ///
    /// # Errors
    ///
    /// [`StopReason::Deadline`] or [`StopReason::Breaker`].
    #[inline]
    pub fn before_attempt(&self, state: &mut CallState) -> Result<Attempt, StopReason> {
        // The first attempt starts with the whole deadline: no second clock read on the
        // success path (a monotonic clock read costs tens of nanoseconds on some machines).
        let remaining = if state.attempts == 0 {
            self.deadline
        } else {
            self.remaining(state)
        };
        if state.attempts > 0 && remaining.is_some_and(|r| r.is_zero()) {
            return Err(StopReason::Deadline);
        }
        if self.breaker.as_ref().is_some_and(|b| !b.try_acquire()) {
            return Err(StopReason::Breaker);
        }
        state.attempts = state.attempts.saturating_add(1);
        Ok(Attempt {
            number: state.attempts,
            key: state.key,
            remaining,
        })
    }

    /// Records a successful attempt with the breaker and the budget.
    #[inline]
    pub fn on_success(&self, _state: &CallState) {
        if let Some(breaker) = &self.breaker {
            breaker.record_success();
        }
        if let Some(budget) = &self.budget {
            budget.on_success();
        }
    }

    /// Decides what follows a failed attempt with this verdict.
    ///
    /// In order: a permanent error or a pushback stop ends the call; so does a non-idempotent
    /// call whose error does not prove the request unprocessed; then the attempt limit; then
    /// the pause is drawn (the server's delay, clamped and jittered, or the rule's) and the
    /// call stops if the pause would end past the deadline; then an open breaker; last, the
    /// budget is asked (last, because asking consumes a retry).
    pub fn on_failure<R: Rng + ?Sized>(
        &self,
        state: &mut CallState,
        verdict: Verdict,
        rng: &mut R,
    ) -> Decision {
        if verdict.is_permanent() {
            // The dependency answered: for the breaker that is a sign of life.
            if let Some(breaker) = &self.breaker {
                breaker.record_success();
            }
            return Decision::Stop(StopReason::Permanent);
        }
        if let Some(breaker) = &self.breaker {
            breaker.record_failure();
        }
        if let Some(budget) = &self.budget {
            budget.on_failure();
        }
        if verdict.is_pushback_stop() {
            return Decision::Stop(StopReason::Pushback);
        }
        if !self.idempotent && !verdict.proves_not_processed() {
            return Decision::Stop(StopReason::NotIdempotent);
        }
        if state.attempts >= self.max_attempts {
            return Decision::Stop(StopReason::Attempts);
        }
        // The rule always advances, so a later rule pause continues the growth.
        let rule_pause = self.rule.pause(&mut state.rule, rng);
        let (pause, server_delay) = match verdict.server_delay() {
            Some(delay) => (self.server_pause(delay, rng), true),
            None => (rule_pause, false),
        };
        let ends = self.elapsed(state).saturating_add(pause);
        if self.deadline.is_some_and(|deadline| ends >= deadline) {
            return Decision::Stop(StopReason::Deadline);
        }
        if self.breaker.as_ref().is_some_and(|b| b.is_open()) {
            return Decision::Stop(StopReason::Breaker);
        }
        if self.budget.as_ref().is_some_and(|b| !b.try_retry()) {
            return Decision::Stop(StopReason::Budget);
        }
        Decision::Retry {
            pause,
            server_delay,
        }
    }

    /// The pause for a server delay: clamped to `max_server_delay`, plus up to
    /// `server_delay_jitter` of itself, never beyond the maximum. A delay at or past the
    /// maximum is jittered downwards instead, so clamped clients still spread out.
    #[must_use]
    pub fn server_pause<R: Rng + ?Sized>(&self, delay: Duration, rng: &mut R) -> Duration {
        let max = saturating_nanos(self.max_server_delay);
        let delay = saturating_nanos(delay);
        let base = delay.min(max);
        let spread = (base as f64 * self.server_delay_jitter) as u64;
        let (lo, hi) = if delay >= max {
            (max.saturating_sub(spread), max)
        } else {
            (base, base.saturating_add(spread).min(max))
        };
        Duration::from_nanos(rng.range_inclusive(lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::rng::SplitMix64;

    fn policy() -> PolicyBuilder<FakeClock> {
        RetryPolicy::builder(Rule::constant(Duration::from_secs(1)).unwrap())
            .clock(FakeClock::new())
    }

    #[test]
    fn server_pause_never_exceeds_the_max_and_never_precedes_the_delay() {
        let p = policy()
            .max_server_delay(Duration::from_secs(30))
            .build()
            .unwrap();
        let mut rng = SplitMix64::new(1);
        for secs in [0u64, 1, 10, 29, 30, 31, 3600, u64::MAX] {
            for _ in 0..200 {
                let pause = p.server_pause(Duration::from_secs(secs), &mut rng);
                assert!(pause <= Duration::from_secs(30), "{secs}: {pause:?}");
                if secs < 30 {
                    assert!(pause >= Duration::from_secs(secs), "{secs}: {pause:?}");
                } else {
                    assert!(pause >= Duration::from_secs(27), "{secs}: {pause:?}");
                }
            }
        }
    }

    #[test]
    fn server_pause_spreads_the_herd() {
        let p = policy().build().unwrap();
        let mut rng = SplitMix64::new(2);
        let pauses: std::collections::BTreeSet<_> = (0..100)
            .map(|_| {
                p.server_pause(Duration::from_secs(30), &mut rng)
                    .as_millis()
            })
            .collect();
        assert!(
            pauses.len() > 90,
            "told 30 s, the clients must not all return together"
        );
        assert!(
            pauses.iter().all(|ms| (30_000..=33_000).contains(ms)),
            "{pauses:?}"
        );
    }

    #[test]
    fn invalid_policies_name_the_field() {
        assert_eq!(
            policy().max_attempts(0).build().unwrap_err(),
            InvalidPolicy::MaxAttempts
        );
        assert_eq!(
            policy().deadline(Duration::ZERO).build().unwrap_err(),
            InvalidPolicy::Deadline
        );
        assert_eq!(
            policy()
                .attempt_timeout(Duration::ZERO)
                .build()
                .unwrap_err(),
            InvalidPolicy::AttemptTimeout
        );
        assert!(matches!(
            policy().server_delay_jitter(2.0).build().unwrap_err(),
            InvalidPolicy::ServerDelayJitter(_)
        ));
        assert!(
            InvalidPolicy::MaxAttempts
                .to_string()
                .contains("max_attempts")
        );
    }

    #[test]
    fn server_delay_past_the_deadline_stops_at_once() {
        // Regression: a Retry-After that skips the deadline must not be slept through.
        let p = policy().deadline(Duration::from_secs(10)).build().unwrap();
        let mut rng = SplitMix64::new(1);
        let mut state = p.begin(&mut rng);
        p.before_attempt(&mut state).unwrap();
        let verdict = Verdict::transient().after(Duration::from_secs(30));
        assert_eq!(
            p.on_failure(&mut state, verdict, &mut rng),
            Decision::Stop(StopReason::Deadline)
        );
    }

    #[test]
    fn attempt_limit_is_cut_at_the_deadline() {
        let clock = FakeClock::new();
        let p = policy()
            .clock(clock.clone())
            .deadline(Duration::from_secs(10))
            .attempt_timeout(Duration::from_secs(4))
            .build()
            .unwrap();
        let state = p.begin(&mut SplitMix64::new(1));
        assert_eq!(p.attempt_limit(&state), Some(Duration::from_secs(4)));
        clock.advance(Duration::from_secs(8));
        assert_eq!(p.attempt_limit(&state), Some(Duration::from_secs(2)));
    }
}
