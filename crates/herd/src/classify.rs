//! Classification: which failures are worth another attempt.
//!
//! Retrying a permanent error (a 404, a malformed request, a failed login) only adds load and
//! latency; not retrying a transient one (a reset connection, a 503) turns a blip into an
//! outage for the user. Only the caller knows its error type, so the caller says, with a
//! [`Classify`] implementation: any `Fn(&E) -> Verdict` closure is one, and ready-made ones
//! cover HTTP status codes ([`http_status`]) and I/O errors ([`io_error`]).
//!
//! A [`Verdict`] carries more than yes or no:
//!
//! - whether the error **proves the request was not processed** (a refused connection, a
//!   429). Only such errors may be retried for a call marked non-idempotent (unless the
//!   server deduplicates by key); after a timeout or a 5xx the server may well have done the
//!   work. A 503, even with `Retry-After`, proves nothing: RFC 9110 does not promise the
//!   request was left alone, and a proxy can answer 503 after the upstream did the work.
//! - a **server delay** (`Retry-After`, gRPC pushback) that replaces the rule's pause;
//! - a **pushback stop**: the server asked not to be retried at all.
//!
//! # Examples
//!
//! ```
//! use herd::classify::{self, Classify, Verdict};
//!
//! assert!(classify::http_status(503).is_transient());
//! assert!(classify::http_status(404).is_permanent());
//! assert!(classify::http_status(429).proves_not_processed());
//!
//! // Any closure from &E to Verdict is a classifier.
//! let only_busy = |e: &&str| if *e == "busy" { Verdict::transient() } else { Verdict::permanent() };
//! assert!(only_busy.classify(&"busy").is_transient());
//! assert!(only_busy.classify(&"bad input").is_permanent());
//! ```

use std::io;
use std::time::Duration;

use crate::server_delay::ServerDelay;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Transient,
    Permanent,
    PushbackStop,
    DownstreamExhausted,
}

/// What a classifier says about one failed attempt. Build one with [`Verdict::transient`],
/// [`Verdict::permanent`] or [`Verdict::pushback_stop`], then refine a transient verdict with
/// [`not_processed`](Verdict::not_processed) and [`after`](Verdict::after).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    kind: Kind,
    not_processed: bool,
    delay: Option<ServerDelay>,
}

impl Verdict {
    /// Worth retrying; the request may or may not have been processed.
    #[must_use]
    pub const fn transient() -> Self {
        Self {
            kind: Kind::Transient,
            not_processed: false,
            delay: None,
        }
    }

    /// Never worth retrying.
    #[must_use]
    pub const fn permanent() -> Self {
        Self {
            kind: Kind::Permanent,
            not_processed: false,
            delay: None,
        }
    }

    /// The server asked not to be retried (a negative gRPC pushback).
    #[must_use]
    pub const fn pushback_stop() -> Self {
        Self {
            kind: Kind::PushbackStop,
            not_processed: false,
            delay: None,
        }
    }

    /// A layer below already retried and gave up (its answer carries `retry-exhausted`): do
    /// not retry here, and count it as a failure for the breaker and the budget.
    #[must_use]
    pub const fn downstream_exhausted() -> Self {
        Self {
            kind: Kind::DownstreamExhausted,
            not_processed: false,
            delay: None,
        }
    }

    /// Whether a layer below already retried and gave up.
    #[must_use]
    pub const fn is_downstream_exhausted(&self) -> bool {
        matches!(self.kind, Kind::DownstreamExhausted)
    }

    /// Marks that the failure proves the server did not process the request, so even a
    /// non-idempotent call may be retried.
    #[must_use]
    pub const fn not_processed(mut self) -> Self {
        self.not_processed = true;
        self
    }

    /// The server's `Retry-After` delay: a floor under the rule's pause (see
    /// [`server_delay`](crate::server_delay)).
    #[must_use]
    pub const fn after(mut self, delay: Duration) -> Self {
        self.delay = Some(ServerDelay::RetryAfter(delay));
        self
    }

    /// The server's gRPC pushback: retry after exactly this delay, then restart the backoff
    /// sequence (see [`server_delay`](crate::server_delay)).
    #[must_use]
    pub const fn pushback(mut self, delay: Duration) -> Self {
        self.delay = Some(ServerDelay::Pushback(delay));
        self
    }

    /// Whether another attempt may help.
    #[must_use]
    pub const fn is_transient(&self) -> bool {
        matches!(self.kind, Kind::Transient)
    }

    /// Whether another attempt cannot help.
    #[must_use]
    pub const fn is_permanent(&self) -> bool {
        matches!(self.kind, Kind::Permanent)
    }

    /// Whether the server asked not to be retried.
    #[must_use]
    pub const fn is_pushback_stop(&self) -> bool {
        matches!(self.kind, Kind::PushbackStop)
    }

    /// Whether the failure proves the request was not processed.
    #[must_use]
    pub const fn proves_not_processed(&self) -> bool {
        self.not_processed
    }

    /// The server's delay, if it gave one (either kind).
    #[must_use]
    pub const fn server_delay(&self) -> Option<Duration> {
        match self.delay {
            Some(ServerDelay::RetryAfter(d) | ServerDelay::Pushback(d)) => Some(d),
            _ => None,
        }
    }

    /// What the server said about coming back, with its kind: `Retry-After`, pushback, or
    /// (for [`pushback_stop`](Self::pushback_stop)) do not retry.
    #[must_use]
    pub const fn server_delay_kind(&self) -> Option<ServerDelay> {
        match self.kind {
            Kind::PushbackStop => Some(ServerDelay::DoNotRetry),
            _ => self.delay,
        }
    }
}

/// Decides whether an error of type `E` is worth retrying.
///
/// Implemented for every `Fn(&E) -> Verdict`; implement it on your own type to name a
/// classifier and reuse it between call sites (pass it by value, or share one instance through
/// a closure: `|e| shared.classify(e)`).
pub trait Classify<E: ?Sized> {
    /// The verdict on one failed attempt.
    fn classify(&self, error: &E) -> Verdict;
}

impl<E: ?Sized, F: Fn(&E) -> Verdict> Classify<E> for F {
    #[inline]
    fn classify(&self, error: &E) -> Verdict {
        self(error)
    }
}

/// The default classifier: every error is transient (and may have been processed).
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysTransient;

impl<E: ?Sized> Classify<E> for AlwaysTransient {
    #[inline]
    fn classify(&self, _: &E) -> Verdict {
        Verdict::transient()
    }
}

/// A classifier from a predicate: `true` means transient, `false` permanent.
///
/// # Examples
///
/// ```
/// use herd::classify::{self, Classify};
/// let c = classify::transient_if(|code: &i32| *code >= 500);
/// assert!(c.classify(&503).is_transient());
/// assert!(c.classify(&400).is_permanent());
/// ```
pub fn transient_if<E: ?Sized>(predicate: impl Fn(&E) -> bool) -> impl Fn(&E) -> Verdict {
    move |e| {
        if predicate(e) {
            Verdict::transient()
        } else {
            Verdict::permanent()
        }
    }
}

/// HTTP status codes: 408, 425, 429, 500, 502, 503, 504 are transient; every other 4xx and 5xx
/// (501 Not Implemented among them) is permanent. 429 proves the request was not processed.
/// Codes below 400 are not failures; they classify as permanent (nothing to retry).
///
/// To honour `Retry-After`, use [`http_status_after`] (or, with the `http` feature,
/// `http_response`).
#[must_use]
pub fn http_status(status: u16) -> Verdict {
    match status {
        429 => Verdict::transient().not_processed(),
        408 | 425 | 500 | 502 | 503 | 504 => Verdict::transient(),
        _ => Verdict::permanent(),
    }
}

/// [`http_status`] with the server's `Retry-After` delay, already parsed (see
/// [`retry_after`](crate::retry_after)). The delay does not change what the status proves: a
/// 503 with `Retry-After` may still have been processed (a proxy can answer 503 after the
/// upstream did the work), so a non-idempotent call does not retry it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use herd::classify::http_status_after;
/// let v = http_status_after(503, Some(Duration::from_secs(2)));
/// assert_eq!(v.server_delay(), Some(Duration::from_secs(2)));
/// assert!(!v.proves_not_processed());
/// assert!(http_status_after(429, Some(Duration::from_secs(2))).proves_not_processed());
/// ```
#[must_use]
pub fn http_status_after(status: u16, retry_after: Option<Duration>) -> Verdict {
    let verdict = http_status(status);
    match retry_after {
        Some(delay) if verdict.is_transient() => verdict.after(delay),
        _ => verdict,
    }
}

/// An HTTP response: its status, `Retry-After` (either form, read with `clock`'s wall time)
/// and gRPC pushback. A negative or malformed `grpc-retry-pushback-ms` stops retries.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use herd::classify;
/// use herd::clock::FakeClock;
///
/// let mut headers = http::HeaderMap::new();
/// headers.insert(http::header::RETRY_AFTER, "7".parse().unwrap());
/// let v = classify::http_response(http::StatusCode::SERVICE_UNAVAILABLE, &headers, &FakeClock::new());
/// assert_eq!(v.server_delay(), Some(Duration::from_secs(7)));
///
/// headers.insert("grpc-retry-pushback-ms", "-1".parse().unwrap());
/// let v = classify::http_response(http::StatusCode::SERVICE_UNAVAILABLE, &headers, &FakeClock::new());
/// assert!(v.is_pushback_stop());
/// ```
#[cfg(feature = "http")]
#[must_use]
pub fn http_response<C: crate::clock::Clock>(
    status: http::StatusCode,
    headers: &http::HeaderMap,
    clock: &C,
) -> Verdict {
    use crate::retry_after::{Pushback, pushback_from_headers, retry_after_from_headers};
    let verdict = http_status(status.as_u16());
    if verdict.is_permanent() {
        return verdict;
    }
    match pushback_from_headers(headers) {
        Some(Pushback::Stop) => return Verdict::pushback_stop(),
        Some(Pushback::After(delay)) => return verdict.pushback(delay),
        None => {}
    }
    http_status_after(
        status.as_u16(),
        retry_after_from_headers(headers, clock.wall()),
    )
}

/// I/O error kinds: connection reset, refused and aborted, a broken pipe, an unexpected end
/// of file (the peer closed mid-exchange), timed out and interrupted are transient; everything
/// else (`InvalidData`, which TLS libraries use for a failed handshake, among them) is
/// permanent. A refused connection proves the request was not processed (it never reached
/// the server).
#[must_use]
pub fn io_kind(kind: io::ErrorKind) -> Verdict {
    use io::ErrorKind as K;
    match kind {
        K::ConnectionRefused => Verdict::transient().not_processed(),
        K::ConnectionReset
        | K::ConnectionAborted
        | K::BrokenPipe
        | K::UnexpectedEof
        | K::TimedOut
        | K::Interrupted => Verdict::transient(),
        _ => Verdict::permanent(),
    }
}

/// [`io_kind`] of an [`io::Error`]; usable directly as a classifier.
///
/// # Examples
///
/// ```
/// use std::io;
/// use herd::classify;
/// assert!(classify::io_error(&io::Error::from(io::ErrorKind::ConnectionReset)).is_transient());
/// assert!(classify::io_error(&io::Error::from(io::ErrorKind::NotFound)).is_permanent());
/// ```
#[must_use]
pub fn io_error(error: &io::Error) -> Verdict {
    io_kind(error.kind())
}

/// Finds an [`io::Error`] anywhere in an error's `source()` chain and classifies it with
/// [`io_kind`]; an error chain without one is transient (may have been processed). The tower
/// layer and the reqwest middleware read HTTP client errors more closely (hyper's and
/// reqwest's own kinds first): see `layer::error_default` (feature `tower`).
#[must_use]
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> Verdict {
    let mut current = Some(error);
    // Bounded, in case of a cyclic source chain.
    for _ in 0..32 {
        let Some(e) = current else { break };
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return io_error(io);
        }
        current = e.source();
    }
    Verdict::transient()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_status_table() {
        for code in [408, 425, 429, 500, 502, 503, 504] {
            assert!(http_status(code).is_transient(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 422, 501, 505, 200, 302] {
            assert!(http_status(code).is_permanent(), "{code}");
        }
        assert!(http_status(429).proves_not_processed());
        assert!(!http_status(503).proves_not_processed());
        assert!(!http_status(504).proves_not_processed());
    }

    #[test]
    fn a_503_with_retry_after_does_not_prove_the_request_unprocessed() {
        // Regression: it used to, so a non-idempotent POST was retried after a 503 that a
        // proxy sent once the upstream had done the work.
        let v = http_status_after(503, Some(Duration::from_secs(1)));
        assert!(v.is_transient() && !v.proves_not_processed());
    }

    #[test]
    fn retry_after_on_a_permanent_status_is_ignored() {
        let v = http_status_after(404, Some(Duration::from_secs(1)));
        assert!(v.is_permanent());
        assert_eq!(v.server_delay(), None);
    }

    #[test]
    fn io_kinds() {
        use io::ErrorKind as K;
        for k in [
            K::ConnectionReset,
            K::ConnectionRefused,
            K::ConnectionAborted,
            K::BrokenPipe,
            K::UnexpectedEof,
            K::TimedOut,
            K::Interrupted,
        ] {
            assert!(io_kind(k).is_transient(), "{k:?}");
        }
        for k in [K::NotFound, K::PermissionDenied, K::InvalidData, K::Other] {
            assert!(io_kind(k).is_permanent(), "{k:?}");
        }
        assert!(io_kind(K::ConnectionRefused).proves_not_processed());
        assert!(!io_kind(K::TimedOut).proves_not_processed());
    }

    #[test]
    fn error_chain_finds_the_socket_error() {
        #[derive(Debug)]
        struct Wrapper(io::Error);
        impl std::fmt::Display for Wrapper {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("client error")
            }
        }
        impl std::error::Error for Wrapper {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Wrapper(io::Error::from(io::ErrorKind::ConnectionRefused));
        assert!(error_chain(&e).proves_not_processed());
        let e = Wrapper(io::Error::from(io::ErrorKind::NotFound));
        assert!(error_chain(&e).is_permanent());
    }
}
