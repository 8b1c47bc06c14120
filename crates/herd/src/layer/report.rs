//! What the layer tells its caller: the outcome attached to every response it returns, the
//! error it returns when the last attempt ended in an error, and what the hooks see.

use std::fmt;
use std::time::Duration;

use http::StatusCode;

use super::BoxError;
use crate::outcome::StopReason;

/// How a call through the layer or the middleware went, attached to every response they
/// return (read it with `response.extensions().get::<RetryOutcome>()`); the reqwest
/// middleware also puts it in the call's extensions, for an error as for a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryOutcome {
    /// Attempts made.
    pub attempts: u32,
    /// Time spent, pauses included.
    pub elapsed: Duration,
    /// Why the layer stopped, or `None` when the response is a success.
    pub reason: Option<StopReason>,
}

/// A failed attempt, as the hooks see it.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Failure<'a> {
    /// A response with this HTTP status.
    Status(StatusCode),
    /// In gRPC mode, an answer with this `grpc-status` code.
    Grpc(u8),
    /// The inner service's error.
    Error(&'a (dyn std::error::Error + Send + Sync + 'static)),
}

/// What the retry hook sees: a failed attempt about to be retried after `pause`.
#[derive(Debug)]
#[non_exhaustive]
pub struct Retrying<'a> {
    /// The attempt that failed (1 = the first).
    pub attempt: u32,
    /// How it failed.
    pub failure: Failure<'a>,
    /// The pause before the next attempt.
    pub pause: Duration,
    /// Whether the pause is the server's (`Retry-After`, pushback) rather than the rule's.
    pub server_delay: bool,
}

/// What the give-up hook sees: the outcome and the last failure.
#[derive(Debug)]
#[non_exhaustive]
pub struct GivingUp<'a> {
    /// Attempts, time and reason.
    pub outcome: RetryOutcome,
    /// The last failure, if an attempt was made.
    pub failure: Option<Failure<'a>>,
}

/// The error a [`RetryService`](super::RetryService) or the reqwest middleware returns when no
/// attempt could start, or when its last failure was a response already released: why it
/// stopped, how many attempts. With `wrap_errors(true)` it also wraps the last attempt's error
/// (then its [`source`](std::error::Error::source)); by default that error is returned
/// unchanged.
#[derive(Debug)]
pub struct GaveUp {
    /// Why the layer stopped.
    pub reason: StopReason,
    /// Attempts made.
    pub attempts: u32,
    /// Time spent.
    pub elapsed: Duration,
    pub(crate) source: Option<BoxError>,
}

/// The cause is the error's [`source`](std::error::Error::source), and `Display` does not
/// repeat it (a report such as anyhow's prints the chain); the alternate form (`{:#}`) adds
/// it, for a one-line log.
impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request failed after {} attempt(s) ({})",
            self.attempts, self.reason
        )?;
        if let (true, Some(source)) = (f.alternate(), &self.source) {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for GaveUp {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| &**e as &(dyn std::error::Error + 'static))
    }
}
