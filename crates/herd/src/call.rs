//! One logical call being configured: the operation, its classifier, hooks and generator.
//!
//! [`RetryPolicy::call`] starts a [`Call`]; the same builder runs blocking code with
//! [`Call::run`] / [`Call::run_with`] and async code with `Call::run_async` /
//! [`Call::run_async_with`]. Every piece is a generic parameter, not a boxed closure, so the
//! success path allocates nothing and inlines to little more than the operation itself.
//!
//! # Examples
//!
//! ```
//! use std::io;
//! use herd::{Rule, classify, policy::RetryPolicy, clock::FakeClock};
//!
//! let clock = FakeClock::new();
//! let policy = RetryPolicy::builder(Rule::immediate()).max_attempts(5).clock(clock.clone()).build()?;
//! let mut retries = Vec::new();
//! let mut dead_letters = 0;
//! let result = policy
//!     .call(|attempt| -> Result<(), io::Error> {
//!         if attempt.number < 3 {
//!             Err(io::ErrorKind::ConnectionReset.into())
//!         } else {
//!             Err(io::ErrorKind::PermissionDenied.into())
//!         }
//!     })
//!     .classify(classify::io_error)
//!     .on_retry(|event| retries.push(event.attempt))
//!     .on_give_up(|_| dead_letters += 1)
//!     .run_with(&clock);
//! let err = result.unwrap_err();
//! assert_eq!(err.reason(), herd::outcome::StopReason::Permanent);
//! assert_eq!(err.attempts(), 3);
//! assert_eq!(retries, [1, 2]);
//! assert_eq!(dead_letters, 1);
//! # Ok::<(), herd::policy::InvalidPolicy>(())
//! ```

use std::future::Future;
use std::time::Duration;

use crate::classify::{AlwaysTransient, Verdict};
use crate::clock::Clock;
use crate::idempotency::{Attempt, IdempotencyKey};
use crate::outcome::{
    AttemptTimedOut, NoHook, OnGiveUp, OnRetry, RetryError, RetryEvent, StopReason, Success,
};
use crate::policy::{CallState, Decision, RetryPolicy};
use crate::rng::{Rng, ThreadRng};
use crate::rule::{Rule, RuleState};

/// A logical call under a policy, being configured. Run it with [`run`](Call::run) (blocking)
/// or `run_async` (async).
#[must_use = "a call does nothing until it is run"]
pub struct Call<
    'p,
    C: Clock,
    Op,
    K = AlwaysTransient,
    H = NoHook,
    G = NoHook,
    R = ThreadRng,
    B = PolicyRule,
> {
    pub(crate) policy: &'p RetryPolicy<C>,
    pub(crate) op: Op,
    pub(crate) classify: K,
    pub(crate) on_retry: H,
    pub(crate) on_give_up: G,
    pub(crate) rng: R,
    /// Keys from the OS-seeded generator (the default) or from `rng` (once one is set).
    pub(crate) os_keys: bool,
    pub(crate) backoff: B,
}

/// What an operation returns, for inferring the error type of the closures given to
/// [`Call::classify`], [`Call::when`], [`Call::on_retry`] and [`Call::on_give_up`]:
/// a `Result` (a blocking operation, marker [`Blocking`]) or a future of one (marker
/// [`Async`]). You never implement it.
pub trait OperationOutput<M> {
    /// The operation's error type.
    type Error;
}

/// Marks a blocking operation's output (see [`OperationOutput`]).
#[derive(Debug)]
pub enum Blocking {}

/// Marks an async operation's output (see [`OperationOutput`]).
#[derive(Debug)]
pub enum Async {}

impl<T, E> OperationOutput<Blocking> for Result<T, E> {
    type Error = E;
}

impl<T, E, F: Future<Output = Result<T, E>>> OperationOutput<Async> for F {
    type Error = E;
}

/// Where a call's pauses come from: the policy's [`Rule`] ([`PolicyRule`], the default), or a
/// schedule given to [`Call::backoff`] ([`Backoff`]). You never implement it.
pub trait PauseSource<R: ?Sized> {
    /// The pause after one more failure, or `None` when the schedule has run out.
    fn next_pause(&mut self, rule: &Rule, state: &mut RuleState, rng: &mut R) -> Option<Duration>;
}

/// Pauses drawn by the policy's rule (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct PolicyRule;

impl<R: Rng + ?Sized> PauseSource<R> for PolicyRule {
    #[inline]
    fn next_pause(&mut self, rule: &Rule, state: &mut RuleState, rng: &mut R) -> Option<Duration> {
        Some(rule.pause(state, rng))
    }
}

/// Pauses from any iterator of durations (see [`Call::backoff`]).
#[derive(Clone, Debug)]
pub struct Backoff<I>(I);

impl<R: ?Sized, I: Iterator<Item = Duration>> PauseSource<R> for Backoff<I> {
    #[inline]
    fn next_pause(&mut self, _: &Rule, _: &mut RuleState, _: &mut R) -> Option<Duration> {
        self.0.next()
    }
}

/// A classifier from a predicate (see [`Call::when`]): `true` is transient, `false` permanent.
#[derive(Clone, Copy, Debug)]
pub struct When<P>(P);

impl<E: ?Sized, P: Fn(&E) -> bool> crate::classify::Classify<E> for When<P> {
    #[inline]
    fn classify(&self, error: &E) -> Verdict {
        if (self.0)(error) {
            Verdict::transient()
        } else {
            Verdict::permanent()
        }
    }
}

impl<C: Clock> RetryPolicy<C> {
    /// Starts a call of `op` under this policy. `op` receives an
    /// [`Attempt`] (its number, the call's idempotency key, the
    /// time left) and returns a `Result` (blocking) or a future of one (async). The error type
    /// is yours, any type at all.
    pub fn call<Op, Out>(&self, op: Op) -> Call<'_, C, Op>
    where
        Op: FnMut(crate::idempotency::Attempt) -> Out,
    {
        Call {
            policy: self,
            op,
            classify: AlwaysTransient,
            on_retry: NoHook,
            on_give_up: NoHook,
            rng: ThreadRng,
            os_keys: true,
            backoff: PolicyRule,
        }
    }
}

impl<'p, C: Clock, Op, K, H, G, R, B> Call<'p, C, Op, K, H, G, R, B> {
    /// Rebuilds the call with its type-changing parts mapped by `change`: (classify,
    /// on_retry, on_give_up, rng, backoff). The policy, the operation and `os_keys` are kept.
    fn remake<K2, H2, G2, R2, B2>(
        self,
        change: impl FnOnce(K, H, G, R, B) -> (K2, H2, G2, R2, B2),
    ) -> Call<'p, C, Op, K2, H2, G2, R2, B2> {
        let (classify, on_retry, on_give_up, rng, backoff) = change(
            self.classify,
            self.on_retry,
            self.on_give_up,
            self.rng,
            self.backoff,
        );
        Call {
            policy: self.policy,
            op: self.op,
            classify,
            on_retry,
            on_give_up,
            rng,
            os_keys: self.os_keys,
            backoff,
        }
    }

    /// Which errors are transient: a closure (or function) from `&E` to a
    /// [`Verdict`], whose argument type is inferred. Default: every error is transient. For
    /// a named [`Classify`](crate::classify::Classify) type, use
    /// [`classifier`](Self::classifier).
    pub fn classify<K2, Out, M>(self, classify: K2) -> Call<'p, C, Op, K2, H, G, R, B>
    where
        Op: FnMut(Attempt) -> Out,
        Out: OperationOutput<M>,
        K2: Fn(&Out::Error) -> Verdict,
    {
        self.classifier(classify)
    }

    /// Which errors are transient, by any [`Classify`](crate::classify::Classify)
    /// implementation (a named, reusable classifier).
    pub fn classifier<K2>(self, classify: K2) -> Call<'p, C, Op, K2, H, G, R, B> {
        self.remake(|_, on_retry, on_give_up, rng, backoff| {
            (classify, on_retry, on_give_up, rng, backoff)
        })
    }

    /// Which errors are transient, by a predicate: `true` retries, `false` stops (backon's
    /// `when`). The argument type is inferred.
    pub fn when<P, Out, M>(self, predicate: P) -> Call<'p, C, Op, When<P>, H, G, R, B>
    where
        Op: FnMut(Attempt) -> Out,
        Out: OperationOutput<M>,
        P: Fn(&Out::Error) -> bool,
    {
        self.classifier(When(predicate))
    }

    /// Called before each retry's pause with the attempt, its error (or its timeout) and the
    /// pause. The argument type is inferred.
    pub fn on_retry<H2, Out, M>(self, hook: H2) -> Call<'p, C, Op, K, H2, G, R, B>
    where
        Op: FnMut(Attempt) -> Out,
        Out: OperationOutput<M>,
        H2: FnMut(&RetryEvent<'_, Out::Error>),
    {
        self.remake(|classify, _, on_give_up, rng, backoff| {
            (classify, hook, on_give_up, rng, backoff)
        })
    }

    /// Called once when the call gives up, with the final error: a dead-letter hand-off. The
    /// argument type is inferred.
    pub fn on_give_up<G2, Out, M>(self, hook: G2) -> Call<'p, C, Op, K, H, G2, R, B>
    where
        Op: FnMut(Attempt) -> Out,
        Out: OperationOutput<M>,
        G2: FnMut(&RetryError<Out::Error>),
    {
        self.remake(|classify, on_retry, _, rng, backoff| (classify, on_retry, hook, rng, backoff))
    }

    /// Pauses from any schedule instead of the policy's rule: an iterator of durations (a
    /// backon builder's output, a hand-made list, [`Rule::schedule`]). When it runs out the
    /// call stops with [`StopReason::Attempts`]. Everything else (the attempt limit, the
    /// deadline, server delays, the budget, the breaker) still applies. A gRPC pushback
    /// cannot restart a schedule it does not own: the schedule simply continues.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{Rule, policy::RetryPolicy, clock::{Clock, FakeClock}, outcome::StopReason};
    ///
    /// let clock = FakeClock::new();
    /// let policy = RetryPolicy::builder(Rule::immediate()).max_attempts(10).clock(clock.clone()).build()?;
    /// let err = policy
    ///     .call(|_| Err::<(), _>("down"))
    ///     .backoff([Duration::from_millis(10), Duration::from_millis(30)])
    ///     .run_with(&clock)
    ///     .unwrap_err();
    /// assert_eq!((err.reason(), err.attempts()), (StopReason::Attempts, 3));
    /// assert_eq!(clock.now(), Duration::from_millis(40));
    /// # Ok::<(), herd::policy::InvalidPolicy>(())
    /// ```
    pub fn backoff<I>(self, schedule: I) -> Call<'p, C, Op, K, H, G, R, Backoff<I::IntoIter>>
    where
        I: IntoIterator<Item = Duration>,
    {
        self.remake(|classify, on_retry, on_give_up, rng, _| {
            (
                classify,
                on_retry,
                on_give_up,
                rng,
                Backoff(schedule.into_iter()),
            )
        })
    }

    /// The generator for jitter (default the thread-local one); pass a seeded
    /// [`SplitMix64`](crate::rng::SplitMix64) for reproducible tests and simulations. The
    /// call's idempotency key is then drawn from it too, so the whole call is reproducible;
    /// without it the key comes from [`IdempotencyKey::generate`] (OS-seeded), as a key sent
    /// to a real server should.
    pub fn rng<R2: Rng>(self, rng: R2) -> Call<'p, C, Op, K, H, G, R2, B> {
        let call = self.remake(|classify, on_retry, on_give_up, _, backoff| {
            (classify, on_retry, on_give_up, rng, backoff)
        });
        // A seeded generator draws the idempotency key too.
        Call {
            os_keys: false,
            ..call
        }
    }
}

/// What a failed attempt left: the operation's error, or a timeout (async only).
pub(crate) enum Failed<E> {
    Error(E),
    TimedOut(AttemptTimedOut),
}

/// The last failure a loop remembers: the last error an attempt returned, and whether the
/// last attempt timed out instead.
pub(crate) struct Last<E> {
    pub(crate) error: Option<E>,
    pub(crate) timed_out: Option<AttemptTimedOut>,
}

impl<E> Last<E> {
    pub(crate) const fn none() -> Self {
        Self {
            error: None,
            timed_out: None,
        }
    }

    fn remember(&mut self, failed: Failed<E>) {
        match failed {
            Failed::Error(e) => {
                self.error = Some(e);
                self.timed_out = None;
            }
            Failed::TimedOut(t) => self.timed_out = Some(t),
        }
    }
}

impl<C: Clock, Op, K, H, G, R: Rng, B: PauseSource<R>> Call<'_, C, Op, K, H, G, R, B> {
    /// Starts the logical call: its idempotency key and the policy's state for it. The loops
    /// keep the key in a local: read back from the state it would cost a store-forwarding
    /// stall on the success path.
    #[inline]
    pub(crate) fn start(&mut self) -> (IdempotencyKey, CallState) {
        let key = if self.os_keys {
            IdempotencyKey::generate()
        } else {
            IdempotencyKey::random(&mut self.rng)
        };
        (key, self.policy.begin_with_key(key))
    }

    /// After a successful attempt, the step the loops share: tell the policy (a half-open
    /// breaker closes) and hand the value back with the attempts it took.
    #[inline]
    pub(crate) fn succeed<T>(&self, state: &CallState, value: T) -> Success<T> {
        self.policy.on_success(state);
        Success {
            value,
            attempts: state.attempts(),
        }
    }

    /// Before each attempt, the step the loops share: the attempt to make, or — when the
    /// policy says stop (attempts, deadline, breaker) — the final error with the last one.
    #[inline]
    pub(crate) fn next_attempt<E>(
        &mut self,
        state: &mut CallState,
        key: IdempotencyKey,
        last: &mut Last<E>,
    ) -> Result<Attempt, RetryError<E>>
    where
        G: OnGiveUp<E>,
    {
        match self.policy.before_attempt(state) {
            Ok(attempt) => Ok(Attempt { key, ..attempt }),
            Err(reason) => Err(give_up(
                self.policy,
                state,
                std::mem::replace(last, Last::none()),
                reason,
                &mut self.on_give_up,
            )),
        }
    }

    /// After a failed attempt, the step the blocking and async loops share: asks the policy,
    /// then either gives up (event, give-up hook, the final error) or reports the retry
    /// (event, retry hook), remembers the failure and hands back the pause.
    #[inline]
    pub(crate) fn after_failure<E>(
        &mut self,
        state: &mut CallState,
        attempt: u32,
        failed: Failed<E>,
        verdict: Verdict,
        last: &mut Last<E>,
    ) -> Result<Duration, RetryError<E>>
    where
        H: OnRetry<E>,
        G: OnGiveUp<E>,
    {
        let backoff = &mut self.backoff;
        let decision =
            self.policy
                .on_failure_with(state, verdict, &mut self.rng, |rule, rule_state, rng| {
                    backoff.next_pause(rule, rule_state, rng)
                });
        last.remember(failed);
        match decision {
            Decision::Stop(reason) => Err(give_up(
                self.policy,
                state,
                std::mem::replace(last, Last::none()),
                reason,
                &mut self.on_give_up,
            )),
            Decision::Retry {
                pause,
                server_delay,
            } => {
                crate::event_retry!(attempt, pause, server_delay);
                self.on_retry.on_retry(&RetryEvent {
                    attempt,
                    error: if last.timed_out.is_some() {
                        None
                    } else {
                        last.error.as_ref()
                    },
                    timed_out: last.timed_out,
                    pause,
                    server_delay,
                    key: state.key(),
                });
                Ok(pause)
            }
        }
    }
}

/// Builds the final error, calls the give-up hook and emits the event. Cold: kept out of the
/// loops, whose success path stays small.
#[cold]
#[inline(never)]
pub(crate) fn give_up<C: Clock, E, G: crate::outcome::OnGiveUp<E>>(
    policy: &RetryPolicy<C>,
    state: &CallState,
    last: Last<E>,
    reason: StopReason,
    hook: &mut G,
) -> RetryError<E> {
    let error = RetryError {
        last_error: last.error,
        timed_out: last.timed_out,
        attempts: state.attempts(),
        elapsed: policy.elapsed(state),
        reason,
        key: state.key(),
    };
    crate::event_give_up!(error.attempts, error.elapsed, reason);
    hook.on_give_up(&error);
    error
}
