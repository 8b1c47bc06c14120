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
//! A server's delay is never undercut: the [`server_delay`] decision
//! turns it into a wait (a `Retry-After` is a floor under the rule's pause, jittered upwards
//! by up to [`server_delay_jitter`](PolicyBuilder::server_delay_jitter); a gRPC pushback is
//! waited exactly, and restarts the backoff sequence) or stops the call with
//! [`StopReason::ServerDelay`] when the delay is longer than
//! [`max_server_delay`](PolicyBuilder::max_server_delay) or does not end before the deadline.
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

use crate::breaker::{Breaker, BreakerOutcome, BreakerPermit};
use crate::budget::{Budget, RetryPermit};
use crate::classify::Verdict;
use crate::clock::{Clock, SystemClock};
use crate::idempotency::{Attempt, IdempotencyKey};
use crate::outcome::StopReason;
use crate::rng::Rng;
use crate::rule::{Rule, RuleState};
use crate::server_delay::{self, ServerDelay, ServerDelayLimits, ServerStop, ServerWait};

pub use crate::invalid_policy::InvalidPolicy;

/// Builds a [`RetryPolicy`]; see [`RetryPolicy::builder`].
#[derive(Clone)]
#[must_use]
pub struct PolicyBuilder<C: Clock = SystemClock> {
    policy: RetryPolicy<C>,
}

impl<C: Clock> PolicyBuilder<C> {
    /// Applies `change` to the policy being built.
    fn with(mut self, change: impl FnOnce(&mut RetryPolicy<C>)) -> Self {
        change(&mut self.policy);
        self
    }

    crate::settings! {
        with;
        /// Attempts in all, the first included (default 3). 1 means no retries.
        max_attempts: u32;
        /// The longest server delay (`Retry-After`, pushback) honoured (default 60 s). A longer
        /// delay stops the call with [`StopReason::ServerDelay`]: it is never cut short, since
        /// coming back earlier than asked only meets a server that said it is not ready.
        max_server_delay: Duration;
        /// Random extra added to a `Retry-After` wait, as a fraction of it (default 0.1: a client
        /// told 60 s comes back between 60 and 66 s). The wait is `max(rule pause, delay)` plus
        /// this extra, so a `Retry-After: 0` still spreads clients by the rule's pause. Kept to
        /// millionths. gRPC pushback is waited exactly, without jitter.
        server_delay_jitter: f64;
        /// Whether the operation is safe to repeat (default true). A non-idempotent call is retried
        /// after an ambiguous failure (a timeout, a 500) only if the server deduplicates by key
        /// ([`server_deduplicates`](Self::server_deduplicates)); otherwise only after failures that
        /// prove the request was not processed (a refused connection, a 429).
        idempotent: bool;
        /// Whether the server deduplicates by the call's idempotency key, so a repeated request is
        /// answered from the first one's result (default false). Sending a key is not proof of
        /// that: say so only when the server's API promises it. Makes a non-idempotent call
        /// retryable after ambiguous failures.
        server_deduplicates: bool;
        /// A retry starts only with more than this left before the deadline (default zero: any time
        /// at all). A pause that would leave no more stops the call at once with
        /// [`StopReason::Deadline`], instead of sleeping to start an attempt that cannot do useful
        /// work. The first attempt always starts.
        min_time_left: Duration;
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
                server_delay: p.server_delay,
                min_time_left: p.min_time_left,
                idempotent: p.idempotent,
                server_deduplicates: p.server_deduplicates,
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
        let limits = ServerDelayLimits::new(p.max_server_delay, p.server_delay_jitter)?;
        let mut policy = self.policy;
        policy.server_delay = limits;
        Ok(policy)
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
    /// Set from the two fields above by `build`.
    server_delay: ServerDelayLimits,
    min_time_left: Duration,
    idempotent: bool,
    server_deduplicates: bool,
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
            .field("min_time_left", &self.min_time_left)
            .field("idempotent", &self.idempotent)
            .field("server_deduplicates", &self.server_deduplicates)
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
                server_delay: ServerDelayLimits::default(),
                min_time_left: Duration::ZERO,
                idempotent: true,
                server_deduplicates: false,
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
    /// The breaker's permit for the attempt in flight.
    permit: Option<BreakerPermit>,
    /// What the budget reserved for the retry in flight (see [`Budget::try_retry_permit`]):
    /// an Envoy retry slot, an AWS retry's cost. Absent for budgets that reserve nothing.
    retry_permit: Option<Arc<HeldPermit>>,
}

/// A retry's budget permit, shared by the clones of a call's state: given back as a success by
/// [`RetryPolicy::on_success`], as a failure when the retry fails or the last clone drops.
#[derive(Debug)]
struct HeldPermit(std::sync::Mutex<Option<RetryPermit>>);

impl HeldPermit {
    fn take(&self) -> Option<RetryPermit> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
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

/// Gives an admitted attempt's breaker permit back when dropped before the attempt ended
/// (see [`RetryPolicy::attempt_guard`]).
#[must_use = "the guard gives the permit back when dropped"]
pub(crate) struct AttemptGuard<'p> {
    held: Option<(&'p dyn Breaker, BreakerPermit)>,
}

impl AttemptGuard<'_> {
    /// The attempt ended: its outcome is recorded by `on_success` or `on_failure`.
    #[inline]
    pub(crate) fn disarm(mut self) {
        self.held = None;
    }
}

impl Drop for AttemptGuard<'_> {
    fn drop(&mut self) {
        if let Some((breaker, permit)) = self.held.take() {
            breaker.record(permit, BreakerOutcome::Dropped);
        }
    }
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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

    /// Whether the server deduplicates by idempotency key.
    #[must_use]
    pub const fn server_deduplicates(&self) -> bool {
        self.server_deduplicates
    }

    /// The policy's clock.
    #[must_use]
    pub const fn clock(&self) -> &C {
        &self.clock
    }

    /// Whether the policy holds state shared between calls (a budget or a breaker): only then
    /// does an attempt need a guard and a charged budget around it.
    #[inline]
    pub(crate) fn shares_state(&self) -> bool {
        self.budget.is_some() || self.breaker.is_some()
    }

    /// The budget, to mark it charged while a call's attempts run.
    pub(crate) fn budget_ref(&self) -> Option<&dyn Budget> {
        self.budget.as_deref()
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

    /// This policy when it already has `idempotent`, else a copy with it: the layer and the
    /// middleware decide per request method, and clone only when the method disagrees.
    #[cfg(feature = "tower")]
    pub(crate) fn with_idempotent_cow(&self, idempotent: bool) -> std::borrow::Cow<'_, Self> {
        if idempotent == self.is_idempotent() {
            std::borrow::Cow::Borrowed(self)
        } else {
            std::borrow::Cow::Owned(self.with_idempotent(idempotent))
        }
    }

    /// Starts a logical call and draws its idempotency key. (The budget hears of the request
    /// when its first attempt is admitted: a call the breaker refuses earns no retries.)
    #[inline]
    pub fn begin<R: Rng + ?Sized>(&self, rng: &mut R) -> CallState {
        self.begin_with_key(IdempotencyKey::random(rng))
    }

    /// Starts a logical call with a key chosen by the caller (one received from upstream, or
    /// one the loop already holds).
    #[inline]
    pub fn begin_with_key(&self, key: IdempotencyKey) -> CallState {
        CallState {
            started: self.clock.now(),
            attempts: 0,
            rule: RuleState::default(),
            key,
            permit: None,
            retry_permit: None,
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
        if state.attempts > 0 && remaining.is_some_and(|r| r <= self.min_time_left) {
            return Err(StopReason::Deadline);
        }
        if let Some(breaker) = &self.breaker {
            match breaker.try_acquire() {
                Some(permit) => state.permit = Some(permit),
                None => return Err(StopReason::Breaker),
            }
        }
        if state.attempts == 0
            && let Some(budget) = &self.budget
            && !crate::deposit::is_charged(&**budget)
        {
            // Only a call that is actually sent earns retries, and only once: a loop inside
            // another call on the same budget does not deposit again.
            budget.on_request();
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
    pub fn on_success(&self, state: &CallState) {
        self.record(state, BreakerOutcome::Success);
        // A retry that holds a permit reports its success through it (an AWS retry's cost
        // comes back, where a first attempt's success adds to the quota); any other success
        // goes to the budget.
        match state.retry_permit.as_ref().and_then(|held| held.take()) {
            Some(permit) => permit.succeeded(),
            None => {
                if let Some(budget) = &self.budget {
                    budget.on_success();
                }
            }
        }
    }

    /// Records an attempt's outcome with the breaker, through the permit it was admitted
    /// under.
    /// A guard over the breaker permit of the attempt `before_attempt` just admitted: if it
    /// is dropped before [`disarm`](AttemptGuard::disarm) (the attempt's future was dropped
    /// by a timeout above the loop, or the call cancelled), it records
    /// [`BreakerOutcome::Dropped`], so a half-open probe gives its permit back.
    #[inline]
    pub(crate) fn attempt_guard(&self, state: &CallState) -> AttemptGuard<'_> {
        AttemptGuard {
            held: match (&self.breaker, state.permit) {
                (Some(breaker), Some(permit)) => Some((&**breaker, permit)),
                _ => None,
            },
        }
    }

    #[inline]
    fn record(&self, state: &CallState, outcome: BreakerOutcome) {
        if let (Some(breaker), Some(permit)) = (&self.breaker, state.permit) {
            breaker.record(permit, outcome);
        }
    }

    /// Decides what follows a failed attempt with this verdict.
    ///
    /// In order: a permanent error or a pushback stop ends the call; so does a non-idempotent
    /// call whose error does not prove the request unprocessed; then the attempt limit; then
    /// the rule's pause is drawn, and a server delay turned into a wait or a stop by
    /// the [`server_delay`] decision; the call stops if the pause would leave less than
    /// [`min_time_left`](PolicyBuilder::min_time_left) before the deadline; then a breaker that
    /// would refuse the retry; last, the budget is asked (last, because asking consumes a
    /// retry).
    pub fn on_failure<R: Rng + ?Sized>(
        &self,
        state: &mut CallState,
        verdict: Verdict,
        rng: &mut R,
    ) -> Decision {
        self.on_failure_with(state, verdict, rng, |rule, rule_state, rng| {
            Some(rule.pause(rule_state, rng))
        })
    }

    /// [`on_failure`](Self::on_failure) with the rule's pause drawn by `next_pause` (a call's
    /// own schedule); `None` from it means the schedule ran out: stop with
    /// [`StopReason::Attempts`].
    pub(crate) fn on_failure_with<R, P>(
        &self,
        state: &mut CallState,
        verdict: Verdict,
        rng: &mut R,
        next_pause: P,
    ) -> Decision
    where
        R: Rng + ?Sized,
        P: FnOnce(&Rule, &mut RuleState, &mut R) -> Option<Duration>,
    {
        if verdict.is_permanent() {
            self.record(state, BreakerOutcome::Permanent);
            return Decision::Stop(StopReason::Permanent);
        }
        self.record(state, BreakerOutcome::Failure);
        // The retry that just failed gives back what it held (an Envoy slot), before the
        // next one asks.
        if let Some(held) = state.retry_permit.take() {
            drop(held.take());
        }
        if let Some(budget) = &self.budget {
            budget.on_failure();
        }
        if verdict.is_downstream_exhausted() {
            return Decision::Stop(StopReason::DownstreamExhausted);
        }
        if verdict.is_pushback_stop() {
            return Decision::Stop(StopReason::Pushback);
        }
        if !self.idempotent && !self.server_deduplicates && !verdict.proves_not_processed() {
            return Decision::Stop(StopReason::NotIdempotent);
        }
        if state.attempts >= self.max_attempts {
            return Decision::Stop(StopReason::Attempts);
        }
        // The rule always advances, so a later rule pause continues the growth.
        let Some(rule_pause) = next_pause(&self.rule, &mut state.rule, rng) else {
            return Decision::Stop(StopReason::Attempts);
        };
        // The longest pause after which a retry may still start.
        let left = self
            .remaining(state)
            .map(|r| r.saturating_sub(self.min_time_left));
        let (pause, server_delay) = match verdict.server_delay_kind() {
            Some(delay) => {
                match server_delay::decide(rule_pause, delay, left, &self.server_delay, rng) {
                    ServerWait::Wait(wait) => {
                        if let ServerDelay::Pushback(_) = delay {
                            // gRPC A6: after a pushback the backoff sequence starts over.
                            state.rule = RuleState::default();
                        }
                        (wait, true)
                    }
                    ServerWait::Stop(ServerStop::DoNotRetry) => {
                        return Decision::Stop(StopReason::Pushback);
                    }
                    ServerWait::Stop(_) => return Decision::Stop(StopReason::ServerDelay),
                }
            }
            None => {
                if left.is_some_and(|left| rule_pause >= left) {
                    return Decision::Stop(StopReason::Deadline);
                }
                (rule_pause, false)
            }
        };
        // Before the budget and before any pause: a retry the breaker would refuse (open, or
        // half-open with every probe out) must not sleep and spend a retry first.
        if self.breaker.as_ref().is_some_and(|b| b.refuses()) {
            return Decision::Stop(StopReason::Breaker);
        }
        if let Some(budget) = &self.budget {
            match budget.try_retry_permit() {
                None => return Decision::Stop(StopReason::Budget),
                Some(permit) if permit.is_empty() => {}
                Some(permit) => {
                    state.retry_permit =
                        Some(Arc::new(HeldPermit(std::sync::Mutex::new(Some(permit)))));
                }
            }
        }
        Decision::Retry {
            pause,
            server_delay,
        }
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
            Decision::Stop(StopReason::ServerDelay)
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
