//! The retry loop for async code.
//!
//! The loop is runtime-free: it sleeps through the small [`Sleeper`] trait. With the default
//! `tokio` feature, `TokioSleep` and `TokioClock` plug tokio in (and a test on tokio's
//! paused time runs a minute of backoff in microseconds); a [`FakeClock`] is also a sleeper,
//! for runtime-agnostic tests; another runtime needs a dozen lines.
//!
//! Async adds two limits the blocking loop cannot enforce: an optional per-attempt timeout
//! ([`PolicyBuilder::attempt_timeout`](crate::policy::PolicyBuilder::attempt_timeout)), and the
//! last attempt being **cut at the deadline**, so the deadline really bounds the call. The
//! error type stays yours, whatever it is (`reqwest::Error`, `tonic::Status`, …): an attempt
//! that is cut is reported beside it, as [`RetryError::timed_out`] and
//! [`RetryEvent::timed_out`](crate::outcome::RetryEvent), and counts as transient *and
//! possibly processed*: a non-idempotent call is not retried after a timeout unless the
//! server deduplicates.
//!
//! # Examples
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::{io, time::Duration};
//! use herd::{Rule, classify, policy::RetryPolicy, asynchronous::TokioClock};
//!
//! let policy = RetryPolicy::builder(Rule::immediate())
//!     .max_attempts(3)
//!     .clock(TokioClock::new())
//!     .build()?;
//! let mut calls = 0;
//! let ok = policy
//!     .call(|attempt| {
//!         calls += 1;
//!         async move {
//!             if attempt.number == 1 { Err(io::Error::from(io::ErrorKind::ConnectionReset)) } else { Ok("hello") }
//!         }
//!     })
//!     .classify(classify::io_error)
//!     .run_async()
//!     .await?;
//! assert_eq!((ok.value, ok.attempts, calls), ("hello", 2, 2));
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "tokio"))]
//! # fn main() {}
//! ```

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::deposit::{charged, charged_sync};

use crate::call::{Call, Failed, Last, PauseSource};
use crate::classify::{Classify, Verdict};
use crate::clock::{Clock, FakeClock};
use crate::idempotency::Attempt;
use crate::outcome::{OnGiveUp, OnRetry, RetryError, Success};
use crate::rng::Rng;

/// Makes futures that complete after a pause: the runtime hook of the async loop.
///
/// # Examples
///
/// Plugging in another runtime is one impl; with `async-io` (smol) it would return
/// `async_io::Timer::after(pause)`. Here, a sleeper for tests that records the pauses and
/// returns at once:
///
/// ```
/// use std::{sync::{Arc, Mutex}, time::Duration};
/// use herd::asynchronous::Sleeper;
///
/// #[derive(Clone, Default)]
/// struct Recorder(Arc<Mutex<Vec<Duration>>>);
///
/// impl Sleeper for Recorder {
///     type Sleep = std::future::Ready<()>;
///     fn sleep(&self, pause: Duration) -> Self::Sleep {
///         self.0.lock().unwrap().push(pause);
///         std::future::ready(())
///     }
/// }
///
/// let recorder = Recorder::default();
/// let _ = recorder.sleep(Duration::from_millis(5));
/// assert_eq!(*recorder.0.lock().unwrap(), [Duration::from_millis(5)]);
/// ```
pub trait Sleeper {
    /// The future [`sleep`](Sleeper::sleep) returns.
    type Sleep: Future<Output = ()>;
    /// A future that completes after `pause`.
    fn sleep(&self, pause: Duration) -> Self::Sleep;
}

impl<S: Sleeper + ?Sized> Sleeper for &S {
    type Sleep = S::Sleep;
    fn sleep(&self, pause: Duration) -> Self::Sleep {
        (**self).sleep(pause)
    }
}

/// A fake clock "sleeps" by moving its time forward when the sleep is first polled (so an
/// attempt that finishes at once does not move time).
impl Sleeper for FakeClock {
    type Sleep = FakeSleep;
    fn sleep(&self, pause: Duration) -> FakeSleep {
        FakeSleep {
            clock: Some(self.clone()),
            pause,
        }
    }
}

/// The future of a [`FakeClock`] sleep: ready on first poll, having advanced the clock.
#[derive(Debug)]
pub struct FakeSleep {
    clock: Option<FakeClock>,
    pause: Duration,
}

impl Future for FakeSleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if let Some(clock) = self.clock.take() {
            clock.advance(self.pause);
        }
        Poll::Ready(())
    }
}

pub use crate::outcome::AttemptTimedOut;

/// tokio's sleep (feature `tokio`). Honours tokio's paused test time.
#[cfg(feature = "tokio")]
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioSleep;

#[cfg(feature = "tokio")]
impl Sleeper for TokioSleep {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, pause: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(pause)
    }
}

/// A clock on tokio's time (feature `tokio`): the real monotonic clock in production, and
/// tokio's paused, auto-advancing clock in `#[tokio::test(start_paused = true)]` tests, so the
/// deadline and the sleeps agree.
#[cfg(feature = "tokio")]
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    epoch: tokio::time::Instant,
}

#[cfg(feature = "tokio")]
impl TokioClock {
    /// A clock whose epoch is now (on tokio's time).
    #[must_use]
    pub fn new() -> Self {
        Self {
            epoch: tokio::time::Instant::now(),
        }
    }
}

#[cfg(feature = "tokio")]
impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "tokio")]
impl Clock for TokioClock {
    fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.epoch)
    }
}

/// Runs `future` for at most `limit` (if any); `None` if the sleep finished first.
pub(crate) async fn with_limit<F: Future, S: Sleeper + ?Sized>(
    future: F,
    limit: Option<Duration>,
    sleeper: &S,
) -> Option<F::Output> {
    let mut future = pin!(future);
    let Some(limit) = limit else {
        return Some(future.await);
    };
    let mut sleep = pin!(sleeper.sleep(limit));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// Like [`with_limit`], but the timer is made only if `future` is not ready at its first poll:
/// a failed response's body that is already in memory (the common case) is drained without
/// one.
#[cfg(feature = "tower")]
pub(crate) async fn within<F: Future, S: Sleeper + ?Sized>(
    future: F,
    limit: Duration,
    sleeper: &S,
) -> Option<F::Output> {
    let mut future = pin!(future);
    let mut sleep = pin!(None::<S::Sleep>);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if sleep.is_none() {
            sleep.set(Some(sleeper.sleep(limit)));
        }
        let fired = sleep
            .as_mut()
            .as_pin_mut()
            .is_some_and(|timer| timer.poll(cx).is_ready());
        if fired {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    })
    .await
}

impl<C, Op, Fut, K, H, G, R, B, T, E> Call<'_, C, Op, K, H, G, R, B>
where
    C: Clock,
    Op: FnMut(Attempt) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    K: Classify<E>,
    H: OnRetry<E>,
    G: OnGiveUp<E>,
    R: Rng,
    B: PauseSource<R>,
{
    /// Runs the call on tokio (feature `tokio`). Use a [`TokioClock`] in the policy so that
    /// tokio's paused test time drives the deadline too.
    ///
    /// # Errors
    ///
    /// A [`RetryError`] with the last error, the attempts, the time spent and the
    /// [`StopReason`](crate::outcome::StopReason).
    #[cfg(feature = "tokio")]
    pub async fn run_async(self) -> Result<Success<T>, RetryError<E>> {
        self.run_async_with(&TokioSleep).await
    }

    /// Runs the call, sleeping (and timing attempts out) with `sleeper`.
    ///
    /// # Errors
    ///
    /// As `run_async`.
    pub async fn run_async_with<S: Sleeper + ?Sized>(
        mut self,
        sleeper: &S,
    ) -> Result<Success<T>, RetryError<E>> {
        let policy = self.policy;
        let (key, mut state) = self.start();
        let mut last = Last::none();
        loop {
            let attempt = self.next_attempt(&mut state, key, &mut last)?;
            // Dropping this future mid-attempt gives a half-open probe's permit back.
            let guard = policy.attempt_guard(&state);
            let limit = policy.attempt_limit(&state);
            let budget = policy.budget_ref();
            let op = &mut self.op;
            let attempt_future = charged(budget, charged_sync(budget, || op(attempt)));
            let answer = with_limit(attempt_future, limit, sleeper).await;
            guard.disarm();
            let (failed, verdict) = match answer {
                Some(Ok(value)) => return Ok(self.succeed(&state, value)),
                Some(Err(error)) => {
                    let verdict = self.classify.classify(&error);
                    (Failed::Error(error), verdict)
                }
                // A timed-out request may have been processed: transient, never proof of
                // "not processed".
                None => (
                    Failed::TimedOut(AttemptTimedOut {
                        after: limit.unwrap_or_default(),
                    }),
                    Verdict::transient(),
                ),
            };
            let pause =
                self.after_failure(&mut state, attempt.number, failed, verdict, &mut last)?;
            if !pause.is_zero() {
                sleeper.sleep(pause).await;
            }
        }
    }
}
