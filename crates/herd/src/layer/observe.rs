//! What the layer and the reqwest middleware tell `tracing` (feature `tracing`): a span per
//! call (`retry`, with the method, the URI and, once known, the attempts made), a `retrying`
//! event naming what failed (the status, or the error's kind and message with its causes),
//! and a `gave up` event, at DEBUG when the first attempt ended in a permanent answer (a 404
//! is the caller's business, not an operator's) and at INFO otherwise.
//!
//! Without the feature every function here is empty and the target holds nothing.

#[cfg(feature = "tracing")]
use std::fmt;
use std::time::Duration;

use super::{Failure, RetryOutcome};
#[cfg(feature = "tracing")]
use crate::outcome::StopReason;

/// The method and the target of the request a call is about.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    #[cfg(feature = "tracing")]
    method: http::Method,
    #[cfg(feature = "tracing")]
    uri: Uri,
}

#[cfg(feature = "tracing")]
#[derive(Clone, Debug)]
enum Uri {
    Http(http::Uri),
    #[cfg(feature = "reqwest")]
    Url(reqwest::Url),
}

#[cfg(feature = "tracing")]
impl fmt::Display for Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uri::Http(uri) => uri.fmt(f),
            #[cfg(feature = "reqwest")]
            Uri::Url(url) => url.fmt(f),
        }
    }
}

impl Target {
    /// An `http::Request`'s method and URI.
    #[allow(unused_variables)]
    pub(crate) fn of<B>(request: &http::Request<B>) -> Self {
        Self {
            #[cfg(feature = "tracing")]
            method: request.method().clone(),
            #[cfg(feature = "tracing")]
            uri: Uri::Http(request.uri().clone()),
        }
    }

    /// A reqwest request's method and URL.
    #[cfg(feature = "reqwest")]
    #[allow(unused_variables)]
    pub(crate) fn of_reqwest(request: &reqwest::Request) -> Self {
        Self {
            #[cfg(feature = "tracing")]
            method: request.method().clone(),
            #[cfg(feature = "tracing")]
            uri: Uri::Url(request.url().clone()),
        }
    }

    /// The span a call runs in: `retry`, with the method, the URI, and an `attempts` field
    /// recorded as attempts start.
    #[cfg(feature = "tracing")]
    pub(crate) fn span(&self) -> tracing::Span {
        tracing::debug_span!(
            target: "herd",
            "retry",
            method = %self.method,
            uri = %self.uri,
            attempts = tracing::field::Empty,
        )
    }
}

/// Records the attempts made so far on the call's span.
#[inline]
#[allow(unused_variables)]
pub(crate) fn attempts(n: u32) {
    #[cfg(feature = "tracing")]
    tracing::Span::current().record("attempts", n);
}

/// What failed, for a log line: the status, the gRPC code, or the error with its causes.
#[cfg(feature = "tracing")]
pub(crate) struct Described<'a>(pub(crate) Failure<'a>);

#[cfg(feature = "tracing")]
impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Failure::Status(status) => write!(f, "{status}"),
            Failure::Grpc(code) => write!(f, "grpc-status {code}"),
            Failure::Error(error) => {
                write!(f, "{error}")?;
                let mut source = error.source();
                // Bounded, in case of a cyclic source chain.
                for _ in 0..32 {
                    let Some(e) = source else { break };
                    write!(f, ": {e}")?;
                    source = e.source();
                }
                Ok(())
            }
        }
    }
}

/// The first `io::ErrorKind` in an error's chain, if it has one.
#[cfg(feature = "tracing")]
fn io_kind(failure: Failure<'_>) -> Option<std::io::ErrorKind> {
    let Failure::Error(error) = failure else {
        return None;
    };
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    for _ in 0..32 {
        let e = current?;
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        current = e.source();
    }
    None
}

/// A failed attempt is about to be retried after `pause`.
#[allow(unused_variables)]
pub(crate) fn retrying(
    target: &Target,
    attempt: u32,
    pause: Duration,
    server_delay: bool,
    failure: Option<Failure<'_>>,
) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "herd",
        attempt,
        pause_ms = pause.as_secs_f64() * 1000.0,
        server_delay,
        method = %target.method,
        uri = %target.uri,
        failure = failure.map(|f| tracing::field::display(Described(f))),
        error_kind = failure.and_then(io_kind).map(tracing::field::debug),
        "retrying"
    );
}

/// The call gave up: at DEBUG when its first attempt ended in a permanent answer, else INFO.
#[allow(unused_variables)]
pub(crate) fn gave_up(target: &Target, outcome: &RetryOutcome, failure: Option<Failure<'_>>) {
    #[cfg(feature = "tracing")]
    {
        let reason = outcome.reason.map_or("", StopReason::as_str);
        let elapsed_ms = outcome.elapsed.as_secs_f64() * 1000.0;
        let failure = failure.map(|f| tracing::field::display(Described(f)));
        if quiet(outcome) {
            tracing::debug!(target: "herd", attempts = outcome.attempts, elapsed_ms, reason,
                method = %target.method, uri = %target.uri, failure, "gave up");
        } else {
            tracing::info!(target: "herd", attempts = outcome.attempts, elapsed_ms, reason,
                method = %target.method, uri = %target.uri, failure, "gave up");
        }
    }
}

/// Whether a give-up is the caller's business rather than an operator's: the first attempt
/// ended in a permanent answer (a 404, bad input), with nothing retried.
#[cfg(feature = "tracing")]
fn quiet(outcome: &RetryOutcome) -> bool {
    outcome.attempts <= 1 && outcome.reason == Some(StopReason::Permanent)
}
