//! What an HTTP client's error means for a retry: herd's default reading of the errors the
//! layer and the middleware see (hyper, hyper-util's legacy client, reqwest, and the socket
//! errors inside them), and the hook through which a user replaces it.
//!
//! The table is on [`error_default`].

use std::error::Error as StdError;
use std::io;

use crate::asynchronous::AttemptTimedOut;
use crate::classify::{self, Verdict};

/// A user's reading of an error: `classify(error, default)`, where `default` is herd's
/// ([`error_default`]).
pub(crate) type ErrorClassifier = std::sync::Arc<
    dyn Fn(&(dyn StdError + Send + Sync + 'static), Verdict) -> Verdict + Send + Sync,
>;

/// How deep the chain is walked (in case of a cyclic `source()`).
const MAX_DEPTH: usize = 32;

/// herd's reading of an HTTP client's error.
///
/// The table follows what the clients themselves and reqwest-retry do
/// (`reqwest-retry/src/retryable_strategy.rs`, `default_on_request_failure`), walking the
/// error's `source()` chain from the outside in; the first entry that decides wins:
///
/// | error | verdict |
/// |---|---|
/// | reqwest: redirect (a loop, too many), builder (a bad URL, a scheme it cannot send), decode, body | permanent |
/// | reqwest: timeout | transient |
/// | reqwest or hyper-util: connect (the request never left) | transient, proves not processed, unless its cause is permanent |
/// | hyper-util's connector: "invalid URL, …" (a scheme it cannot speak: `https` to a plain `HttpConnector`, no host) | permanent |
/// | hyper-util: a request it refuses (`UserUnsupportedRequestMethod`, `UserUnsupportedVersion`, `UserAbsoluteUriRequired`) | permanent |
/// | hyper: incomplete message, canceled, closed, timeout, body write aborted | transient |
/// | hyper: parse error, user error | permanent |
/// | `http::Error`, `http::uri::InvalidUri` (a request that cannot be built) | permanent |
/// | `io::Error` | [`classify::io_kind`]: refused (proves not processed), reset, aborted, `BrokenPipe`, `UnexpectedEof`, timed out, interrupted transient; TLS failures (`InvalidData`) and the rest permanent |
/// | an attempt herd timed out | transient |
/// | anything else | transient (may have been processed) |
///
/// A transient verdict is retried only for an idempotent request, unless it proves the
/// request was not processed (the policy decides; see the guide).
///
/// # Examples
///
/// ```
/// use std::io;
/// use herd::layer::error_default;
///
/// let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
/// assert!(error_default(&refused).proves_not_processed());
/// let eof = io::Error::from(io::ErrorKind::UnexpectedEof); // the peer closed mid-answer
/// assert!(error_default(&eof).is_transient());
/// let bad_uri = "http://exa mple".parse::<http::Uri>().unwrap_err();
/// assert!(error_default(&bad_uri).is_permanent());
/// ```
#[must_use]
pub fn error_default(error: &(dyn StdError + 'static)) -> Verdict {
    let mut connect = false;
    let mut current = Some(error);
    for _ in 0..MAX_DEPTH {
        let Some(e) = current else { break };
        match step(e) {
            Step::Decided(verdict) if connect && verdict.is_transient() => {
                return verdict.not_processed();
            }
            Step::Decided(verdict) => return verdict,
            Step::Connect => connect = true,
            Step::Next => {}
        }
        current = e.source();
    }
    if connect {
        // A connection that was never made carried no request.
        Verdict::transient().not_processed()
    } else {
        Verdict::transient()
    }
}

/// What one link of the chain says.
enum Step {
    Decided(Verdict),
    /// A connect error: the request was never sent; look further for its cause.
    Connect,
    Next,
}

fn step(e: &(dyn StdError + 'static)) -> Step {
    if let Some(io) = e.downcast_ref::<io::Error>() {
        // An io::Error may wrap a more precise cause (rustls wraps its alert as InvalidData).
        return Step::Decided(classify::io_error(io));
    }
    if e.is::<AttemptTimedOut>() {
        return Step::Decided(Verdict::transient());
    }
    if e.is::<http::Error>()
        || e.is::<http::uri::InvalidUri>()
        || e.is::<http::uri::InvalidUriParts>()
    {
        return Step::Decided(Verdict::permanent());
    }
    #[cfg(feature = "reqwest")]
    if let Some(r) = e.downcast_ref::<reqwest::Error>() {
        return reqwest_step(r);
    }
    if let Some(h) = e.downcast_ref::<hyper::Error>() {
        return hyper_step(h);
    }
    legacy_client_step(e)
}

/// reqwest's kinds, as `default_on_request_failure` reads them.
#[cfg(feature = "reqwest")]
fn reqwest_step(e: &reqwest::Error) -> Step {
    if e.is_redirect() || e.is_builder() || e.is_decode() || e.is_body() {
        Step::Decided(Verdict::permanent())
    } else if e.is_connect() {
        Step::Connect
    } else if e.is_timeout() {
        Step::Decided(Verdict::transient())
    } else {
        Step::Next
    }
}

/// hyper's kinds: the connection failed under the request (transient), or the exchange was
/// malformed or misused (permanent); otherwise its cause decides.
fn hyper_step(e: &hyper::Error) -> Step {
    if e.is_incomplete_message()
        || e.is_canceled()
        || e.is_closed()
        || e.is_timeout()
        || e.is_body_write_aborted()
    {
        Step::Decided(Verdict::transient())
    } else if e.is_parse() || e.is_user() {
        Step::Decided(Verdict::permanent())
    } else {
        Step::Next
    }
}

/// hyper-util's legacy client and its `HttpConnector`, which herd does not depend on: their
/// errors are known by the text their own `Display` writes (hyper-util 0.1,
/// `src/client/legacy/client.rs`: `"client error ({kind:?})"`;
/// `src/client/legacy/connect/http.rs`: `INVALID_NOT_HTTP`, `INVALID_MISSING_SCHEME`,
/// `INVALID_MISSING_HOST`, all "invalid URL, …"). A test against the real client pins them.
fn legacy_client_step(e: &(dyn StdError + 'static)) -> Step {
    let mut text = String::new();
    if std::fmt::write(&mut text, format_args!("{e}")).is_err() {
        return Step::Next;
    }
    if text.starts_with("invalid URL, ") || text.starts_with("client error (User") {
        Step::Decided(Verdict::permanent())
    } else if text == "client error (Connect)" {
        Step::Connect
    } else {
        Step::Next
    }
}

/// A user's classifier over herd's default, or the default alone.
pub(crate) fn classify_error(
    user: Option<&ErrorClassifier>,
    error: &(dyn StdError + Send + Sync + 'static),
) -> Verdict {
    let default = error_default(error);
    match user {
        Some(classify) => classify(error, default),
        None => default,
    }
}
