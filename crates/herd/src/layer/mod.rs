//! A `tower` layer that retries HTTP and gRPC requests (feature `tower`), and a
//! [`tower::retry::Policy`] for any request type ([`tower_policy`]).
//!
//! [`RetryLayer`] wraps any `Service<http::Request<B>>` whose responses are
//! `http::Response<_>`: hyper-util's legacy `Client`, a tonic `Channel`, axum's router used as
//! a client in tests. Everything the policy knows applies: the rule, the attempt limit, the
//! total deadline (each attempt is cut at it, and so is the wait for the service to be
//! ready), the per-attempt timeout, the budget, the breaker, `Retry-After` and gRPC pushback,
//! and idempotency by method.
//!
//! What counts as a failure: a response with status ≥ 400 classified by
//! [`classify::http_response`](crate::classify::http_response) (408, 425, 429, 500, 502, 503,
//! 504 transient), and an error from the inner service read by [`error_default`] (hyper's,
//! hyper-util's and reqwest's error kinds, and the socket error in the chain: a redirect
//! loop, a bad URL, a scheme the client cannot speak, a failed TLS handshake are permanent; a
//! refused, reset or broken connection, a timeout, a peer that closed mid-answer are
//! transient). Your own reading goes in [`RetryLayer::classify`] for responses and
//! [`RetryLayer::classify_error`] for errors. When the layer gives up, it returns the **last
//! response** (not an error) if there was one, so the caller sees the server's own status and
//! body; every response carries a [`RetryOutcome`] in its extensions.
//!
//! When the last attempt ended in an error, the layer returns **that error unchanged** (the
//! inner service's error, boxed as tower boxes it, so `error.downcast_ref::<YourError>()`
//! finds it; or herd's own [`AttemptTimedOut`](crate::asynchronous::AttemptTimedOut) when
//! herd cut the attempt), as reqwest-retry returns the last attempt's result
//! (`reqwest-retry/src/middleware.rs`, `execute_with_retry`). The attempts made and why the
//! layer stopped go beside it: in the `gave up` tracing event (fields `attempts`, `reason`)
//! and to the [`on_give_up`](RetryLayer::on_give_up) hook; a caller who wants them on the
//! error itself opts into [`RetryLayer::wrap_errors`], which returns a [`GaveUp`] with the
//! error as its source. A call that ends with no error of the service's to return (no attempt
//! could start, or the last failure was a response already released before a pause that the
//! deadline then cut) ends in a [`GaveUp`].
//!
//! A failed response that will be retried is **released before the pause**: its body is
//! read and dropped (up to [`RetryLayer::drain_limit`], 64 KiB by default), so that an HTTP/1
//! connection goes back to the client's pool instead of being held through the pause or
//! closed. The read is bounded in time too ([`RetryLayer::drain_timeout`], 250 ms by default,
//! and never past the attempt timeout or the deadline): a body that stalls (a 503's headers
//! arrive, then nothing) is dropped with its connection, and the retry goes ahead.
//!
//! # Layer-aware retries: `retry-exhausted`
//!
//! Retries at every layer of a call chain multiply: three layers of three attempts hit the
//! bottom service 27 times. When this layer gives up on a *retryable* failure (attempts,
//! deadline, budget or breaker), it marks the response it returns with
//! [`RETRY_EXHAUSTED`]` : 1`; a service that forwards its downstream status and this mark to
//! its own caller tells every herd layer above that retrying is pointless: a layer that
//! *receives* a marked failure treats it as permanent. The chain then costs 3 attempts at the
//! bottom, not 27. The mark is believed only on a failure status: a success that carries it
//! (a proxy copying headers) is a success. Both halves can be switched off
//! ([`RetryLayer::mark_exhausted`], [`RetryLayer::respect_exhausted`]).
//!
//! # Request bodies
//!
//! A retried request must be sent again. By default the body type must be `Clone`
//! (`Full<Bytes>`, `Empty<Bytes>`, `String`). For bodies that are not (axum's `Body`, hyper's
//! `Incoming`, a streaming upload, a tonic request), either give a function that copies a
//! request ([`RetryLayer::clone_request`], `None` = send once), or let the layer read the body
//! into memory up to a limit ([`RetryLayer::buffer_body`]); a longer body is sent once and the
//! outcome says [`StopReason::NotReplayable`].
//!
//! # gRPC
//!
//! gRPC answers HTTP 200 and puts its status in the *trailers* (or, for a trailers-only
//! answer, in the headers). [`RetryLayer::grpc`] reads the response body into memory (up to a
//! limit) to reach them, retries the codes in its [`GrpcCodes`] (UNAVAILABLE by default, as
//! proposal A6 says) and takes the pause from `grpc-retry-pushback-ms`. Each attempt tells the
//! server its time limit in `grpc-timeout` (the per-attempt timeout cut at the deadline), unless
//! the request already asks for less.
//!
//! # Idempotency
//!
//! GET, HEAD, OPTIONS, TRACE, PUT and DELETE are idempotent (RFC 9110 §9.2.2); POST and PATCH
//! are not, unless the policy says the server deduplicates by key
//! (`PolicyBuilder::server_deduplicates`; the layer can send the key, see
//! [`RetryLayer::send_idempotency_key`]). A policy built with `.idempotent(false)` stays so
//! for every method, whatever headers the request carries. A non-idempotent request is
//! retried only after a refused connection or a 429.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, policy::RetryPolicy, layer::RetryLayer, asynchronous::TokioClock};
//! use herd::classify::Verdict;
//!
//! let policy = RetryPolicy::builder(Rule::full(Duration::from_millis(50), Duration::from_secs(2))?)
//!     .max_attempts(3)
//!     .deadline(Duration::from_secs(5))
//!     .clock(TokioClock::new())
//!     .build()?;
//! let layer = RetryLayer::new(policy)
//!     // This API answers 429 when a quota is spent for the day: do not retry it.
//!     .classify(|res: &http::Response<String>, default: Option<Verdict>| {
//!         if res.status() == 429 { Some(Verdict::permanent()) } else { default }
//!     })
//!     .on_retry(|event| eprintln!("retrying after {:?}", event.pause));
//! // let client = tower::ServiceBuilder::new().layer(layer).service(http_client);
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod body;
mod errors;
mod grpc;
pub(crate) mod observe;
mod sealed {
    /// Keeps [`Replay`](super::Replay) and [`Protocol`](super::Protocol) to this crate's
    /// implementations, so they can grow without breaking anyone.
    #[allow(unreachable_pub)]
    pub trait Sealed {}
}
mod protocol;
mod replay;
mod report;
mod run;
pub mod tower_policy;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderName, Method, Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use crate::asynchronous::{Sleeper, TokioClock, TokioSleep};
use crate::clock::Clock;
use crate::outcome::StopReason;
use crate::policy::RetryPolicy;

pub use body::Buffered;
pub use errors::error_default;
pub(crate) use errors::{ErrorClassifier, classify_error};
pub use grpc::{GrpcCode, GrpcCodes, InvalidGrpcCode};
#[cfg(feature = "reqwest")]
pub(crate) use observe::Target;
pub use protocol::{ClassifyResponse, DefaultHttp, Grpc, Http, Protocol, http_default};
pub use replay::{BufferBody, CloneBody, CloneWith, Replay};
pub use report::{Failure, GaveUp, GivingUp, RetryOutcome, Retrying};
#[cfg(feature = "reqwest")]
pub(crate) use run::{drain_bound, on_failure};

/// A boxed error, as tower uses.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The header a herd layer adds to a response it gave up on after retrying:
/// `retry-exhausted: 1`.
pub const RETRY_EXHAUSTED: HeaderName = HeaderName::from_static("retry-exhausted");

/// The idempotency-key header (IETF draft `Idempotency-Key`).
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// How much of a failed response's body the layer reads to release its connection, by
/// default.
pub const DEFAULT_DRAIN_LIMIT: usize = 64 * 1024;

/// How long the layer reads a failed response's body, at most, by default: 250 ms. A body
/// that has not ended by then (a stalled or slow server) is dropped with its connection;
/// waiting longer to save one new connection costs more than the connection's handshake.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_millis(250);

type RetryHook = Arc<dyn Fn(&Retrying<'_>) + Send + Sync>;
type GiveUpHook = Arc<dyn Fn(&GivingUp<'_>) + Send + Sync>;

/// A `tower` layer adding herd retries to an HTTP or gRPC client service. See the
/// [module documentation](self).
///
/// The type parameters are the policy's clock `C`, the sleeper `S`, how a request is sent
/// again `R` ([`CloneBody`], [`CloneWith`], [`BufferBody`]) and how a response is read `P`
/// ([`Http`], [`Grpc`]); the builder methods set them.
pub struct RetryLayer<C: Clock = TokioClock, S = TokioSleep, R = CloneBody, P = Http> {
    config: Arc<Config<C, S, R, P>>,
}

impl<C: Clock, S, R, P> Clone for RetryLayer<C, S, R, P> {
    fn clone(&self) -> Self {
        Self {
            config: Arc::clone(&self.config),
        }
    }
}

/// What a [`RetryLayer`] and its services share; its fields are the `layer` module's own.
#[derive(Clone)]
pub(crate) struct Config<C: Clock, S, R, P> {
    policy: RetryPolicy<C>,
    sleeper: S,
    replay: R,
    protocol: P,
    mark_exhausted: bool,
    respect_exhausted: bool,
    send_idempotency_key: bool,
    drain_limit: usize,
    drain_timeout: Duration,
    wrap_errors: bool,
    classify_error: Option<ErrorClassifier>,
    on_retry: Option<RetryHook>,
    on_give_up: Option<GiveUpHook>,
}

impl<C: Clock, S, R, P> fmt::Debug for RetryLayer<C, S, R, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("policy", &self.config.policy)
            .field("mark_exhausted", &self.config.mark_exhausted)
            .field("respect_exhausted", &self.config.respect_exhausted)
            .field("send_idempotency_key", &self.config.send_idempotency_key)
            .field("drain_limit", &self.config.drain_limit)
            .field("drain_timeout", &self.config.drain_timeout)
            .field("wrap_errors", &self.config.wrap_errors)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> RetryLayer<C, TokioSleep, CloneBody, Http> {
    /// A layer retrying by `policy`, sleeping on tokio. Give the policy a [`TokioClock`] so
    /// its deadline follows tokio's (possibly paused) time.
    #[must_use]
    pub fn new(policy: RetryPolicy<C>) -> Self {
        Self {
            config: Arc::new(Config {
                policy,
                sleeper: TokioSleep,
                replay: CloneBody,
                protocol: Http(DefaultHttp),
                mark_exhausted: true,
                respect_exhausted: true,
                send_idempotency_key: false,
                drain_limit: DEFAULT_DRAIN_LIMIT,
                drain_timeout: DEFAULT_DRAIN_TIMEOUT,
                wrap_errors: false,
                classify_error: None,
                on_retry: None,
                on_give_up: None,
            }),
        }
    }
}

impl<C: Clock, S, R, P> RetryLayer<C, S, R, P> {
    /// The configuration, taken back if this is its only holder, else cloned.
    fn into_config(self) -> Config<C, S, R, P>
    where
        S: Clone,
        R: Clone,
        P: Clone,
    {
        Arc::unwrap_or_clone(self.config)
    }

    /// Rebuilds the configuration with a different sleeper, replay or protocol; `change`
    /// maps the three and every other setting is kept.
    fn remake<S2, R2, P2>(
        self,
        change: impl FnOnce(S, R, P) -> (S2, R2, P2),
    ) -> RetryLayer<C, S2, R2, P2>
    where
        S: Clone,
        R: Clone,
        P: Clone,
    {
        let c = self.into_config();
        let (sleeper, replay, protocol) = change(c.sleeper, c.replay, c.protocol);
        RetryLayer {
            config: Arc::new(Config {
                policy: c.policy,
                sleeper,
                replay,
                protocol,
                mark_exhausted: c.mark_exhausted,
                respect_exhausted: c.respect_exhausted,
                send_idempotency_key: c.send_idempotency_key,
                drain_limit: c.drain_limit,
                drain_timeout: c.drain_timeout,
                wrap_errors: c.wrap_errors,
                classify_error: c.classify_error,
                on_retry: c.on_retry,
                on_give_up: c.on_give_up,
            }),
        }
    }
}

impl<C: Clock, S: Clone, R: Clone, P: Clone> RetryLayer<C, S, R, P> {
    fn with(self, change: impl FnOnce(&mut Config<C, S, R, P>)) -> Self {
        let mut config = self.into_config();
        change(&mut config);
        RetryLayer {
            config: Arc::new(config),
        }
    }

    crate::settings! {
        with;
        /// Mark a response given up on after retries with `retry-exhausted: 1` (default true).
        #[must_use]
        mark_exhausted: bool;
        /// Treat a received failure marked `retry-exhausted` as permanent (default true).
        #[must_use]
        respect_exhausted: bool;
        /// Add an `Idempotency-Key` header (the call's key, the same on every attempt) to requests
        /// that have none (default false). Sending a key does not make POST and PATCH retryable
        /// after ambiguous failures: the policy's `server_deduplicates` does.
        #[must_use]
        send_idempotency_key: bool;
        /// How many bytes of a failed response's body to read before the pause, so that its
        /// connection is released to the pool (default [`DEFAULT_DRAIN_LIMIT`]; 0 drops the body
        /// unread, which closes an HTTP/1 connection).
        #[must_use]
        drain_limit: usize;
        /// How long to read a failed response's body before the pause, at most (default
        /// [`DEFAULT_DRAIN_TIMEOUT`]; the attempt timeout and the deadline cut it shorter). A body
        /// not read to its end by then is dropped, closing its connection.
        #[must_use]
        drain_timeout: Duration;
        /// Return the inner service's error of the last attempt inside a [`GaveUp`] (why the
        /// layer stopped, after how many attempts, the error as its
        /// [`source`](std::error::Error::source)) instead of unchanged (default false: the
        /// caller's error passes through, and the attempts and the reason are in the
        /// `gave up` tracing event and the [`on_give_up`](Self::on_give_up) hook).
        #[must_use]
        wrap_errors: bool;
    }

    /// Called before each retry's pause, with the failed attempt and the pause.
    #[must_use]
    pub fn on_retry(self, hook: impl Fn(&Retrying<'_>) + Send + Sync + 'static) -> Self {
        self.with(|c| c.on_retry = Some(Arc::new(hook)))
    }

    /// Called once when the layer gives up, with the outcome and the last failure (the
    /// dead-letter hand-off).
    #[must_use]
    pub fn on_give_up(self, hook: impl Fn(&GivingUp<'_>) + Send + Sync + 'static) -> Self {
        self.with(|c| c.on_give_up = Some(Arc::new(hook)))
    }

    /// Sleep with another runtime's (or a test's) [`Sleeper`].
    #[must_use]
    pub fn sleeper<S2>(self, sleeper: S2) -> RetryLayer<C, S2, R, P> {
        self.remake(|_, replay, protocol| (sleeper, replay, protocol))
    }

    fn replay_with<R2>(self, replay: R2) -> RetryLayer<C, S, R2, P> {
        self.remake(|sleeper, _, protocol| (sleeper, replay, protocol))
    }

    fn protocol_with<P2>(self, protocol: P2) -> RetryLayer<C, S, R, P2> {
        self.remake(|sleeper, replay, _| (sleeper, replay, protocol))
    }

    /// Send a request again with `copy`, as tower's `Policy::clone_request` does: it is
    /// called with each request before it is sent, and its copy is sent on the next attempt.
    /// `None` means the request cannot be sent again: it is sent once, and a retryable
    /// failure stops with [`StopReason::NotReplayable`]. For bodies that are not `Clone`.
    #[must_use]
    pub fn clone_request<B, F>(self, copy: F) -> RetryLayer<C, S, CloneWith<F>, P>
    where
        F: Fn(&Request<B>) -> Option<Request<B>> + Send + Sync + 'static,
    {
        self.replay_with(CloneWith(copy))
    }

    /// Read each request's body into memory, up to `limit` bytes, and send a copy on every
    /// attempt; `rebuild` makes a body of the service's type from it (`axum::body::Body::new`,
    /// `tonic::body::Body::new`). A body longer than the limit is sent once (what was read,
    /// then the rest) and not retried: [`StopReason::NotReplayable`]. The first attempt starts
    /// once the body is read (or the limit reached).
    #[must_use]
    pub fn buffer_body<B, F>(self, limit: usize, rebuild: F) -> RetryLayer<C, S, BufferBody<F>, P>
    where
        F: Fn(Buffered<B>) -> B + Send + Sync + 'static,
    {
        self.replay_with(BufferBody { limit, rebuild })
    }

    /// Classify responses with your own reading: `classify(response, default)` returns `None`
    /// for a success or a [`Verdict`](crate::classify::Verdict) for a failure; `default` is
    /// what herd would say ([`http_default`]), so return it for the cases you leave alone.
    /// E.g. a 429 that is permanent for this API, or a 200 whose header carries an
    /// application error worth retrying.
    #[must_use]
    pub fn classify<B, K>(self, classify: K) -> RetryLayer<C, S, R, Http<K>>
    where
        K: Fn(&Response<B>, Option<crate::classify::Verdict>) -> Option<crate::classify::Verdict>
            + Send
            + Sync
            + 'static,
    {
        self.protocol_with(Http(classify))
    }

    /// Classify the inner service's errors with your own reading: `classify(error, default)`
    /// returns the [`Verdict`](crate::classify::Verdict); `default` is what herd would say
    /// ([`error_default`]), so return it for the cases you leave alone. E.g. your client's
    /// error type that means "the server refused the request before reading it".
    #[must_use]
    pub fn classify_error<K>(self, classify: K) -> Self
    where
        K: Fn(
                &(dyn std::error::Error + Send + Sync + 'static),
                crate::classify::Verdict,
            ) -> crate::classify::Verdict
            + Send
            + Sync
            + 'static,
    {
        self.with(|c| c.classify_error = Some(Arc::new(classify)))
    }

    /// gRPC mode: read each response body into memory, up to `limit` bytes, to reach the
    /// `grpc-status` in its trailers; retry the status codes in `codes` (A6's
    /// `retryableStatusCodes`, [`GrpcCodes::default`] is UNAVAILABLE), pausing as
    /// `grpc-retry-pushback-ms` says. Every gRPC call is a POST: whether it may be retried is
    /// the policy's [`idempotent`](crate::policy::PolicyBuilder::idempotent) setting, not the
    /// method. A response longer than the limit is passed on as it streams, unclassified.
    #[must_use]
    pub fn grpc(self, codes: GrpcCodes, limit: usize) -> RetryLayer<C, S, R, Grpc> {
        self.protocol_with(Grpc { codes, limit })
    }
}

impl<Svc, C: Clock, S: Sleeper, R, P> Layer<Svc> for RetryLayer<C, S, R, P> {
    type Service = RetryService<Svc, C, S, R, P>;
    fn layer(&self, inner: Svc) -> Self::Service {
        RetryService {
            inner,
            config: Arc::clone(&self.config),
            waiting: None,
        }
    }
}

/// The service [`RetryLayer`] makes.
pub struct RetryService<
    Svc,
    C: Clock = TokioClock,
    S: Sleeper = TokioSleep,
    R = CloneBody,
    P = Http,
> {
    inner: Svc,
    config: Arc<Config<C, S, R, P>>,
    /// Runs while `poll_ready` waits for the inner service: readiness may not take longer
    /// than the deadline.
    waiting: Option<Pin<Box<S::Sleep>>>,
}

impl<Svc: Clone, C: Clock, S: Sleeper, R, P> Clone for RetryService<Svc, C, S, R, P> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            config: Arc::clone(&self.config),
            waiting: None,
        }
    }
}

impl<Svc, C: Clock, S: Sleeper, R, P> fmt::Debug for RetryService<Svc, C, S, R, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryService")
            .field("policy", &self.config.policy)
            .finish_non_exhaustive()
    }
}

/// Whether a method is idempotent by RFC 9110 §9.2.2.
#[must_use]
pub fn is_idempotent_method(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// Whether a request may be retried after an ambiguous failure: the policy says the server
/// deduplicates, or it says calls are idempotent and the method is.
///
/// Neither a key received from upstream nor one the layer sends proves that the server
/// deduplicates: only the policy's `server_deduplicates` says so, and a policy built with
/// `.idempotent(false)` stays so for every method.
pub(crate) fn request_is_idempotent(
    server_deduplicates: bool,
    policy_idempotent: bool,
    method: &Method,
) -> bool {
    server_deduplicates || (policy_idempotent && is_idempotent_method(method))
}

impl<Svc, C, S, R, P, ReqB, ResB> Service<Request<ReqB>> for RetryService<Svc, C, S, R, P>
where
    Svc: Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    Svc::Future: Send,
    Svc::Error: Into<BoxError>,
    C: Clock,
    S: Sleeper + Send + Sync + 'static,
    S::Sleep: Send,
    R: Replay<ReqB>,
    P: Protocol<ResB>,
    P::Body: http_body::Body + Send + 'static,
    ReqB: Send + 'static,
    ResB: http_body::Body + Send + 'static,
{
    type Response = Response<P::Body>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Response<P::Body>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self.inner.poll_ready(cx) {
            Poll::Ready(ready) => {
                self.waiting = None;
                Poll::Ready(ready.map_err(Into::into))
            }
            Poll::Pending => {
                let Some(deadline) = self.config.policy.deadline() else {
                    return Poll::Pending;
                };
                let sleeper = &self.config.sleeper;
                let waiting = self
                    .waiting
                    .get_or_insert_with(|| Box::pin(sleeper.sleep(deadline)));
                if waiting.as_mut().poll(cx).is_ready() {
                    self.waiting = None;
                    return Poll::Ready(Err(Box::new(GaveUp {
                        reason: StopReason::Deadline,
                        attempts: 0,
                        elapsed: deadline,
                        source: None,
                    })));
                }
                Poll::Pending
            }
        }
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        // The service that was polled ready serves this call; a clone stays for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        self.waiting = None;
        let config = Arc::clone(&self.config);
        let target = observe::Target::of(&request);
        #[cfg(feature = "tracing")]
        {
            let span = target.span();
            Box::pin(tracing::Instrument::instrument(
                run::run(config, inner, request, target),
                span,
            ))
        }
        #[cfg(not(feature = "tracing"))]
        Box::pin(run::run(config, inner, request, target))
    }
}
