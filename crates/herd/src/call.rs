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
//!     .on_retry(|event: &herd::outcome::RetryEvent<'_, io::Error>| retries.push(event.attempt))
//!     .on_give_up(|_: &herd::outcome::RetryError<io::Error>| dead_letters += 1)
//!     .run_with(&clock);
//! let err = result.unwrap_err();
//! assert_eq!(err.reason(), herd::outcome::StopReason::Permanent);
//! assert_eq!(err.attempts(), 3);
//! assert_eq!(retries, [1, 2]);
//! assert_eq!(dead_letters, 1);
//! # Ok::<(), herd::policy::InvalidPolicy>(())
//! ```

use crate::classify::AlwaysTransient;
use crate::clock::Clock;
use std::time::Duration;

use crate::idempotency::{Attempt, IdempotencyKey};
use crate::outcome::{NoHook, OnGiveUp, OnRetry, RetryError, RetryEvent, StopReason};
use crate::policy::{CallState, Decision, RetryPolicy};
use crate::rng::{Rng, ThreadRng};

/// A logical call under a policy, being configured. Run it with [`run`](Call::run) (blocking)
/// or `run_async` (async).
#[must_use = "a call does nothing until it is run"]
pub struct Call<'p, C: Clock, Op, K = AlwaysTransient, H = NoHook, G = NoHook, R = ThreadRng> {
    pub(crate) policy: &'p RetryPolicy<C>,
    pub(crate) op: Op,
    pub(crate) classify: K,
    pub(crate) on_retry: H,
    pub(crate) on_give_up: G,
    pub(crate) rng: R,
    /// Keys from the OS-seeded generator (the default) or from `rng` (once one is set).
    pub(crate) os_keys: bool,
}

impl<C: Clock> RetryPolicy<C> {
    /// Starts a call of `op` under this policy. `op` receives an
    /// [`Attempt`](crate::idempotency::Attempt) (its number, the call's idempotency key, the
    /// time left) and returns a `Result` (blocking) or a future of one (async).
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
        }
    }
}

impl<'p, C: Clock, Op, K, H, G, R> Call<'p, C, Op, K, H, G, R> {
    /// Which errors are transient: any [`Classify`](crate::classify::Classify), such as a
    /// closure `Fn(&E) -> Verdict`. Default: every error is transient.
    pub fn classify<K2>(self, classify: K2) -> Call<'p, C, Op, K2, H, G, R> {
        Call {
            policy: self.policy,
            op: self.op,
            classify,
            on_retry: self.on_retry,
            on_give_up: self.on_give_up,
            rng: self.rng,
            os_keys: self.os_keys,
        }
    }

    /// Called before each retry's pause with the attempt, its error and the pause.
    pub fn on_retry<H2>(self, hook: H2) -> Call<'p, C, Op, K, H2, G, R> {
        Call {
            policy: self.policy,
            op: self.op,
            classify: self.classify,
            on_retry: hook,
            on_give_up: self.on_give_up,
            rng: self.rng,
            os_keys: self.os_keys,
        }
    }

    /// Called once when the call gives up, with the final error: a dead-letter hand-off.
    pub fn on_give_up<G2>(self, hook: G2) -> Call<'p, C, Op, K, H, G2, R> {
        Call {
            policy: self.policy,
            op: self.op,
            classify: self.classify,
            on_retry: self.on_retry,
            on_give_up: hook,
            rng: self.rng,
            os_keys: self.os_keys,
        }
    }

    /// The generator for jitter (default the thread-local one); pass a seeded
    /// [`SplitMix64`](crate::rng::SplitMix64) for reproducible tests and simulations. The
    /// call's idempotency key is then drawn from it too, so the whole call is reproducible;
    /// without it the key comes from [`IdempotencyKey::generate`] (OS-seeded), as a key sent
    /// to a real server should.
    pub fn rng<R2: Rng>(self, rng: R2) -> Call<'p, C, Op, K, H, G, R2> {
        Call {
            policy: self.policy,
            op: self.op,
            classify: self.classify,
            on_retry: self.on_retry,
            on_give_up: self.on_give_up,
            rng,
            os_keys: false,
        }
    }
}

impl<C: Clock, Op, K, H, G, R: Rng> Call<'_, C, Op, K, H, G, R> {
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

    /// Before each attempt, the step the loops share: the attempt to make, or — when the
    /// policy says stop (attempts, deadline, breaker) — the final error with the last one.
    #[inline]
    pub(crate) fn next_attempt<E>(
        &mut self,
        state: &mut CallState,
        key: IdempotencyKey,
        last_error: &mut Option<E>,
    ) -> Result<Attempt, RetryError<E>>
    where
        G: OnGiveUp<E>,
    {
        match self.policy.before_attempt(state) {
            Ok(attempt) => Ok(Attempt { key, ..attempt }),
            Err(reason) => Err(give_up(
                self.policy,
                state,
                last_error.take(),
                reason,
                &mut self.on_give_up,
            )),
        }
    }

    /// After a failed attempt, the step the blocking and async loops share: asks the policy,
    /// then either gives up (event, give-up hook, the final error) or reports the retry
    /// (event, retry hook) and hands back the pause and the error to keep as the last one.
    #[inline]
    pub(crate) fn after_failure<E>(
        &mut self,
        state: &mut CallState,
        attempt: u32,
        error: E,
        verdict: crate::classify::Verdict,
    ) -> Result<(Duration, E), RetryError<E>>
    where
        H: OnRetry<E>,
        G: OnGiveUp<E>,
    {
        match self.policy.on_failure(state, verdict, &mut self.rng) {
            Decision::Stop(reason) => Err(give_up(
                self.policy,
                state,
                Some(error),
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
                    error: &error,
                    pause,
                    server_delay,
                    key: state.key(),
                });
                Ok((pause, error))
            }
        }
    }
}

/// Builds the final error, calls the give-up hook and emits the event.
pub(crate) fn give_up<C: Clock, E, G: crate::outcome::OnGiveUp<E>>(
    policy: &RetryPolicy<C>,
    state: &CallState,
    last_error: Option<E>,
    reason: StopReason,
    hook: &mut G,
) -> RetryError<E> {
    let error = RetryError {
        last_error,
        attempts: state.attempts(),
        elapsed: policy.elapsed(state),
        reason,
        key: state.key(),
    };
    crate::event_give_up!(error.attempts, error.elapsed, reason);
    hook.on_give_up(&error);
    error
}
