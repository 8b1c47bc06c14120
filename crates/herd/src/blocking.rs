//! The retry loop for blocking code.
//!
//! Sleeping goes through [`BlockingSleep`], so a test (or a simulation) passes a
//! [`FakeClock`], whose "sleep" moves fake time forward at once, and
//! production passes nothing ([`Call::run`] sleeps the thread).
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, policy::RetryPolicy, clock::{Clock, FakeClock}};
//!
//! let clock = FakeClock::new();
//! let policy = RetryPolicy::builder(Rule::exponential(Duration::from_secs(1), Duration::from_secs(60))?)
//!     .max_attempts(4)
//!     .clock(clock.clone())
//!     .build()?;
//! let err = policy.call(|_| Err::<(), _>("down")).run_with(&clock).unwrap_err();
//! assert_eq!(err.attempts(), 4);
//! assert_eq!(clock.now(), Duration::from_secs(1 + 2 + 4)); // slept on fake time
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Duration;

use crate::call::{Call, Failed, Last, PauseSource};
use crate::classify::Classify;
use crate::clock::{Clock, FakeClock};
use crate::idempotency::Attempt;
use crate::outcome::{OnGiveUp, OnRetry, RetryError, Success};
use crate::rng::Rng;

/// Blocks the current thread for a pause.
pub trait BlockingSleep {
    /// Sleeps for `pause`.
    fn sleep(&self, pause: Duration);
}

/// Sleeps with [`std::thread::sleep`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadSleep;

impl BlockingSleep for ThreadSleep {
    fn sleep(&self, pause: Duration) {
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
}

/// A fake clock "sleeps" by moving its time forward.
impl BlockingSleep for FakeClock {
    fn sleep(&self, pause: Duration) {
        self.advance(pause);
    }
}

impl<S: BlockingSleep + ?Sized> BlockingSleep for &S {
    fn sleep(&self, pause: Duration) {
        (**self).sleep(pause);
    }
}

impl<C, Op, K, H, G, R, B, T, E> Call<'_, C, Op, K, H, G, R, B>
where
    C: Clock,
    Op: FnMut(Attempt) -> Result<T, E>,
    K: Classify<E>,
    H: OnRetry<E>,
    G: OnGiveUp<E>,
    R: Rng,
    B: PauseSource<R>,
{
    /// Runs the call, sleeping the thread between attempts.
    ///
    /// # Errors
    ///
    /// A [`RetryError`] with the last error, the attempts, the time spent and the
    /// [`StopReason`](crate::outcome::StopReason).
    #[inline]
    pub fn run(self) -> Result<Success<T>, RetryError<E>> {
        self.run_with(&crate::blocking::ThreadSleep)
    }

    /// Runs the call, sleeping with `sleeper`.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    #[inline]
    pub fn run_with<S: BlockingSleep + ?Sized>(
        mut self,
        sleeper: &S,
    ) -> Result<Success<T>, RetryError<E>> {
        let (key, mut state) = self.start();
        let mut last = Last::none();
        loop {
            let attempt = self.next_attempt(&mut state, key, &mut last)?;
            let answer = if self.policy.shares_state() {
                let op = &mut self.op;
                // An attempt that panics gives a half-open probe's permit back.
                let guard = self.policy.attempt_guard(&state);
                let answer = crate::deposit::charged_sync(self.policy.budget_ref(), || op(attempt));
                guard.disarm();
                answer
            } else {
                (self.op)(attempt)
            };
            let error = match answer {
                Ok(value) => return Ok(self.succeed(&state, value)),
                Err(error) => error,
            };
            let verdict = self.classify.classify(&error);
            let pause = self.after_failure(
                &mut state,
                attempt.number,
                Failed::Error(error),
                verdict,
                &mut last,
            )?;
            sleeper.sleep(pause);
        }
    }
}
