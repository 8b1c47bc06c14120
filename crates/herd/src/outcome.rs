//! What a retry loop reports: the value and the attempts it took, or the last error with
//! the attempts, the time spent and *why* it stopped.
//!
//! "It failed after retrying" is not enough to act on: an operator needs to know whether the
//! dependency refused for good (permanent), the budget ran dry (the dependency is failing for
//! everyone), the breaker is open, or the deadline passed. [`StopReason`] says which.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, policy::RetryPolicy, outcome::StopReason, clock::FakeClock};
//!
//! let clock = FakeClock::new();
//! let policy = RetryPolicy::builder(Rule::immediate()).max_attempts(3).clock(clock.clone()).build()?;
//! let err = policy.call(|_| Err::<(), _>("busy")).run_with(&clock).unwrap_err();
//! assert_eq!(err.reason(), StopReason::Attempts);
//! assert_eq!(err.attempts(), 3);
//! assert_eq!(err.last_error(), Some(&"busy"));
//! # Ok::<(), herd::policy::InvalidPolicy>(())
//! ```

use std::fmt;
use std::time::Duration;

use crate::idempotency::IdempotencyKey;

/// Why a retry loop stopped without a success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// The attempt limit was reached.
    Attempts,
    /// The total deadline passed, or the next pause would have ended past it.
    Deadline,
    /// The error was classified permanent.
    Permanent,
    /// The retry budget refused a retry.
    Budget,
    /// The circuit breaker is open.
    Breaker,
    /// The server asked not to be retried (gRPC pushback).
    Pushback,
    /// The server asked for a delay longer than `max_server_delay`, or one that would not
    /// end before the deadline. Coming back earlier than asked would only meet a server that
    /// said it is not ready, so the call stops instead.
    ServerDelay,
    /// A layer below already retried and gave up (it marked its answer `retry-exhausted`);
    /// retrying here would multiply the load. Counts as a failure for the breaker.
    DownstreamExhausted,
    /// The call is not idempotent and the error does not prove the request was not
    /// processed.
    NotIdempotent,
    /// The request could not be sent again: its body is not `Clone` and the tower layer's
    /// copy function said no, or the body was longer than the layer's buffer limit.
    NotReplayable,
}

impl StopReason {
    /// A short lowercase name (`attempts`, `deadline`, …) for logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Attempts => "attempts",
            StopReason::Deadline => "deadline",
            StopReason::Permanent => "permanent",
            StopReason::Budget => "budget",
            StopReason::Breaker => "breaker",
            StopReason::Pushback => "pushback",
            StopReason::ServerDelay => "server-delay",
            StopReason::DownstreamExhausted => "downstream-exhausted",
            StopReason::NotIdempotent => "not-idempotent",
            StopReason::NotReplayable => "not-replayable",
        }
    }

    /// Whether the loop gave up on a *retryable* failure (as opposed to a permanent error or
    /// a server asking not to retry). This is when the tower layer marks a response
    /// `retry-exhausted`.
    #[must_use]
    pub const fn is_exhaustion(self) -> bool {
        matches!(
            self,
            StopReason::Attempts
                | StopReason::Deadline
                | StopReason::Budget
                | StopReason::Breaker
                | StopReason::DownstreamExhausted
        )
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A successful call: the value, and how many attempts it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Success<T> {
    /// What the operation returned.
    pub value: T,
    /// Attempts made, including the successful one (at least 1).
    pub attempts: u32,
}

impl<T> Success<T> {
    /// The value alone.
    pub fn into_value(self) -> T {
        self.value
    }
}

/// An attempt ran past its timeout or the call's deadline and was abandoned (async loops
/// only). It is reported beside your own error type, never converted into it: see
/// [`RetryError::timed_out`] and [`RetryEvent::timed_out`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttemptTimedOut {
    /// How long the attempt was allowed.
    pub after: Duration,
}

impl fmt::Display for AttemptTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attempt timed out after {:?}", self.after)
    }
}

impl std::error::Error for AttemptTimedOut {}

impl From<AttemptTimedOut> for std::io::Error {
    fn from(e: AttemptTimedOut) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// A call that failed for good. Carries the caller's own last error unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryError<E> {
    pub(crate) last_error: Option<E>,
    pub(crate) timed_out: Option<AttemptTimedOut>,
    pub(crate) attempts: u32,
    pub(crate) elapsed: Duration,
    pub(crate) reason: StopReason,
    pub(crate) key: IdempotencyKey,
}

impl<E> RetryError<E> {
    /// The last error an attempt returned. `None` when no attempt was made (the breaker was
    /// open before the first one), or when every attempt timed out. If the *last* attempt
    /// timed out, this is an earlier attempt's error and [`timed_out`](Self::timed_out) says
    /// so.
    pub fn last_error(&self) -> Option<&E> {
        self.last_error.as_ref()
    }

    /// The error of the last attempt, by value.
    pub fn into_last_error(self) -> Option<E> {
        self.last_error
    }

    /// `Some` if the last attempt was abandoned at its timeout or at the deadline (async
    /// loops), rather than returning an error.
    pub fn timed_out(&self) -> Option<AttemptTimedOut> {
        self.timed_out
    }

    /// Attempts made (0 if the breaker refused the first).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Time from the start of the call to giving up, by the policy's clock.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// Why the loop stopped.
    pub fn reason(&self) -> StopReason {
        self.reason
    }

    /// The logical call's idempotency key (to hand the call to a dead-letter queue).
    pub fn key(&self) -> IdempotencyKey {
        self.key
    }
}

impl<E: fmt::Display> fmt::Display for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gave up after {} attempt{} in {:?} ({})",
            self.attempts,
            if self.attempts == 1 { "" } else { "s" },
            self.elapsed,
            self.reason
        )?;
        // The last error is the `source` (for an error type): `Display` does not repeat it,
        // and the alternate form (`{:#}`) adds it, for error types that are only `Display`
        // and for one-line logs. A timed-out last attempt is not the source, so it is said.
        if let Some(t) = &self.timed_out {
            write!(f, ": {t}")?;
        } else if let (true, Some(e)) = (f.alternate(), &self.last_error) {
            write!(f, ": {e}")?;
        }
        Ok(())
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RetryError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.last_error
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// What the retry hook sees: a failed attempt about to be retried after `pause`.
#[derive(Debug)]
#[non_exhaustive]
pub struct RetryEvent<'a, E> {
    /// The attempt that failed (1 = the first).
    pub attempt: u32,
    /// Its error; `None` when it timed out instead (see [`timed_out`](Self::timed_out)).
    pub error: Option<&'a E>,
    /// `Some` when the attempt was abandoned at its timeout (async loops).
    pub timed_out: Option<AttemptTimedOut>,
    /// The pause before the next attempt.
    pub pause: Duration,
    /// Whether the pause is the server's (`Retry-After`, pushback) rather than the rule's.
    pub server_delay: bool,
    /// The logical call's key.
    pub key: IdempotencyKey,
}

/// A hook called before each retry's pause. Implemented by every `FnMut(&RetryEvent<'_, E>)`.
pub trait OnRetry<E> {
    /// Called with the failed attempt and the coming pause.
    fn on_retry(&mut self, event: &RetryEvent<'_, E>);
}

impl<E, F: FnMut(&RetryEvent<'_, E>)> OnRetry<E> for F {
    #[inline]
    fn on_retry(&mut self, event: &RetryEvent<'_, E>) {
        self(event);
    }
}

/// A hook called once when a call gives up: the dead-letter hand-off. Implemented by every
/// `FnMut(&RetryError<E>)`.
pub trait OnGiveUp<E> {
    /// Called with the final error before it is returned.
    fn on_give_up(&mut self, error: &RetryError<E>);
}

impl<E, F: FnMut(&RetryError<E>)> OnGiveUp<E> for F {
    #[inline]
    fn on_give_up(&mut self, error: &RetryError<E>) {
        self(error);
    }
}

/// The hook that does nothing (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHook;

impl<E> OnRetry<E> for NoHook {
    #[inline]
    fn on_retry(&mut self, _: &RetryEvent<'_, E>) {}
}

impl<E> OnGiveUp<E> for NoHook {
    #[inline]
    fn on_give_up(&mut self, _: &RetryError<E>) {}
}
