//! A `tower` layer that retries HTTP requests (feature `tower`).
//!
//! [`RetryLayer`] wraps any `Service<http::Request<B>>` whose responses are
//! `http::Response<_>`: hyper-util's legacy `Client`, axum's router used as a client in tests,
//! reqwest through its tower adapter. Everything the policy knows applies: the rule, the
//! attempt limit, the total deadline (each attempt is cut at it), the per-attempt timeout,
//! the budget, the breaker, `Retry-After` and gRPC pushback, and idempotency by method.
//!
//! Each layer has its own policy, so each hop of a chain can have its own attempt limit
//! ([`PolicyBuilder::max_attempts`](crate::policy::PolicyBuilder::max_attempts)) and rule;
//! [`Rule::immediate`](crate::Rule::immediate) gives a layer that retries without waiting.
//!
//! What counts as a failure: a response with status ≥ 400 classified by
//! [`classify::http_response`] (408, 425, 429, 500, 502, 503, 504 transient), and an error from
//! the inner service classified by the socket error in its chain ([`classify::error_chain`]).
//! When the layer gives up, it returns the **last response** (not an error) if there was one,
//! so the caller sees the server's own status and body.
//!
//! # Layer-aware retries: `retry-exhausted`
//!
//! Retries at every layer of a call chain multiply: three layers of three attempts hit the
//! bottom service 27 times. When this layer gives up on a *retryable* failure (attempts,
//! deadline, budget or breaker), it marks the response it returns with
//! [`RETRY_EXHAUSTED`]` : 1`; a service that forwards its downstream status and this mark to
//! its own caller tells every herd layer above that retrying is pointless: a layer that
//! *receives* a marked response treats it as permanent. The chain then costs 3 attempts at the
//! bottom, not 27. Both halves can be switched off ([`RetryLayer::mark_exhausted`],
//! [`RetryLayer::respect_exhausted`]).
//!
//! # Request bodies
//!
//! A retried request must be sent again, so the body type must be `Clone` (`Full<Bytes>`,
//! `Empty<Bytes>`, `String`, axum's `Body` is not). Each attempt is a fresh `Request` built
//! from cloned parts (method, URI, version, headers, extensions) and a cloned body.
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
//!
//! let policy = RetryPolicy::builder(Rule::full(Duration::from_millis(50), Duration::from_secs(2))?)
//!     .max_attempts(3)
//!     .deadline(Duration::from_secs(5))
//!     .clock(TokioClock::new())
//!     .build()?;
//! let layer = RetryLayer::new(policy).send_idempotency_key(true);
//! // let client = tower::ServiceBuilder::new().layer(layer).service(hyper_client);
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderName, HeaderValue, Method, Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use crate::asynchronous::{AttemptTimedOut, Sleeper, TokioClock, TokioSleep, with_limit};
use crate::classify::{self, Verdict};
use crate::clock::Clock;
use crate::outcome::StopReason;
use crate::policy::{Decision, RetryPolicy};
use crate::rng::ThreadRng;

/// A boxed error, as tower uses.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The header a herd layer adds to a response it gave up on after retrying:
/// `retry-exhausted: 1`.
pub const RETRY_EXHAUSTED: HeaderName = HeaderName::from_static("retry-exhausted");

/// The idempotency-key header (IETF draft `Idempotency-Key`).
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// A `tower` layer adding herd retries to an HTTP client service. See the
/// [module documentation](self).
#[derive(Clone)]
pub struct RetryLayer<C: Clock = TokioClock, S = TokioSleep> {
    config: Arc<Config<C, S>>,
}

struct Config<C: Clock, S> {
    policy: RetryPolicy<C>,
    sleeper: S,
    mark_exhausted: bool,
    respect_exhausted: bool,
    send_idempotency_key: bool,
}

impl<C: Clock, S: Clone> Clone for Config<C, S> {
    fn clone(&self) -> Self {
        Self {
            policy: self.policy.clone(),
            sleeper: self.sleeper.clone(),
            mark_exhausted: self.mark_exhausted,
            respect_exhausted: self.respect_exhausted,
            send_idempotency_key: self.send_idempotency_key,
        }
    }
}

impl<C: Clock, S> fmt::Debug for RetryLayer<C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("policy", &self.config.policy)
            .field("mark_exhausted", &self.config.mark_exhausted)
            .field("respect_exhausted", &self.config.respect_exhausted)
            .field("send_idempotency_key", &self.config.send_idempotency_key)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> RetryLayer<C, TokioSleep> {
    /// A layer retrying by `policy`, sleeping on tokio. Give the policy a [`TokioClock`] so
    /// its deadline follows tokio's (possibly paused) time.
    #[must_use]
    pub fn new(policy: RetryPolicy<C>) -> Self {
        Self {
            config: Arc::new(Config {
                policy,
                sleeper: TokioSleep,
                mark_exhausted: true,
                respect_exhausted: true,
                send_idempotency_key: false,
            }),
        }
    }
}

impl<C: Clock, S: Clone> RetryLayer<C, S> {
    fn with(self, change: impl FnOnce(&mut Config<C, S>)) -> Self {
        let mut config = Arc::try_unwrap(self.config).unwrap_or_else(|shared| (*shared).clone());
        change(&mut config);
        Self {
            config: Arc::new(config),
        }
    }

    /// Mark a response given up on after retries with `retry-exhausted: 1` (default true).
    #[must_use]
    pub fn mark_exhausted(self, mark: bool) -> Self {
        self.with(|c| c.mark_exhausted = mark)
    }

    /// Treat a received response marked `retry-exhausted` as permanent (default true).
    #[must_use]
    pub fn respect_exhausted(self, respect: bool) -> Self {
        self.with(|c| c.respect_exhausted = respect)
    }

    /// Add an `Idempotency-Key` header (the call's key, the same on every attempt) to requests
    /// that have none (default false). Sending a key does not make POST and PATCH retryable
    /// after ambiguous failures: the policy's `server_deduplicates` does.
    #[must_use]
    pub fn send_idempotency_key(self, send: bool) -> Self {
        self.with(|c| c.send_idempotency_key = send)
    }

    /// Sleep with another runtime's (or a test's) [`Sleeper`].
    #[must_use]
    pub fn sleeper<S2: Clone>(self, sleeper: S2) -> RetryLayer<C, S2> {
        let config = Arc::try_unwrap(self.config).unwrap_or_else(|shared| (*shared).clone());
        RetryLayer {
            config: Arc::new(Config {
                policy: config.policy,
                sleeper,
                mark_exhausted: config.mark_exhausted,
                respect_exhausted: config.respect_exhausted,
                send_idempotency_key: config.send_idempotency_key,
            }),
        }
    }
}

impl<Svc, C: Clock, S> Layer<Svc> for RetryLayer<C, S> {
    type Service = RetryService<Svc, C, S>;
    fn layer(&self, inner: Svc) -> Self::Service {
        RetryService {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service [`RetryLayer`] makes.
pub struct RetryService<Svc, C: Clock = TokioClock, S = TokioSleep> {
    inner: Svc,
    config: Arc<Config<C, S>>,
}

impl<Svc: Clone, C: Clock, S> Clone for RetryService<Svc, C, S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

impl<Svc, C: Clock, S> fmt::Debug for RetryService<Svc, C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryService")
            .field("policy", &self.config.policy)
            .finish_non_exhaustive()
    }
}

/// The error a [`RetryService`] returns when its last attempt ended in an error (not a
/// response): why it stopped, how many attempts, and the inner error as the source.
#[derive(Debug)]
pub struct GaveUp {
    /// Why the layer stopped.
    pub reason: StopReason,
    /// Attempts made.
    pub attempts: u32,
    /// Time spent.
    pub elapsed: Duration,
    source: Option<BoxError>,
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request failed after {} attempt(s) ({})",
            self.attempts, self.reason
        )?;
        if let Some(source) = &self.source {
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

/// Whether a method is idempotent by RFC 9110 §9.2.2.
#[must_use]
pub fn is_idempotent_method(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

impl<Svc, C, S, ReqB, ResB> Service<Request<ReqB>> for RetryService<Svc, C, S>
where
    Svc: Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    Svc::Future: Send,
    Svc::Error: Into<BoxError>,
    C: Clock,
    S: Sleeper + Send + Sync + 'static,
    S::Sleep: Send,
    ReqB: Clone + Send + 'static,
    ResB: Send + 'static,
{
    type Response = Response<ResB>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ResB>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        // The service that was polled ready serves this call; a clone stays for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let config = Arc::clone(&self.config);
        Box::pin(run(config, inner, request))
    }
}

enum Last<B> {
    Nothing,
    Response(Response<B>),
    Error(BoxError),
}

async fn run<Svc, C, S, ReqB, ResB>(
    config: Arc<Config<C, S>>,
    mut inner: Svc,
    request: Request<ReqB>,
) -> Result<Response<ResB>, BoxError>
where
    Svc: Service<Request<ReqB>, Response = Response<ResB>>,
    Svc::Error: Into<BoxError>,
    C: Clock,
    S: Sleeper,
    ReqB: Clone,
{
    let (mut parts, body) = request.into_parts();
    let has_key = parts.headers.contains_key(IDEMPOTENCY_KEY);
    let base = &config.policy;
    // Neither a key received from upstream nor one this layer sends proves that the server
    // deduplicates: only the policy's `server_deduplicates` says so.
    let idempotent =
        base.server_deduplicates() || (base.is_idempotent() && is_idempotent_method(&parts.method));
    let adjusted;
    let policy = if idempotent == base.is_idempotent() {
        base
    } else {
        adjusted = base.with_idempotent(idempotent);
        &adjusted
    };
    let mut rng = ThreadRng;
    let mut state = policy.begin_with_key(crate::idempotency::IdempotencyKey::generate());
    if config.send_idempotency_key && !has_key {
        if let Ok(value) = HeaderValue::from_str(&state.key().to_string()) {
            parts.headers.insert(IDEMPOTENCY_KEY, value);
        }
    }
    let mut last: Last<ResB> = Last::Nothing;
    let mut first = true;
    loop {
        let attempt = match policy.before_attempt(&mut state) {
            Ok(attempt) => attempt,
            Err(reason) => return finish(&config, policy, &state, last, reason),
        };
        if !first {
            // The first call's readiness was checked by `poll_ready`; retries check here.
            if let Err(e) = std::future::poll_fn(|cx| inner.poll_ready(cx)).await {
                return Err(e.into());
            }
        }
        first = false;
        let request = Request::from_parts(parts.clone(), body.clone());
        let limit = policy.attempt_limit(&state);
        let verdict = match with_limit(inner.call(request), limit, &config.sleeper).await {
            Some(Ok(response)) => {
                let status = response.status();
                if config.respect_exhausted && response.headers().contains_key(RETRY_EXHAUSTED) {
                    // Someone below already retried and gave up: do not multiply.
                    policy.on_failure(&mut state, Verdict::downstream_exhausted(), &mut rng);
                    return Ok(response);
                }
                if status.as_u16() < 400 {
                    policy.on_success(&state);
                    return Ok(response);
                }
                let verdict = classify::http_response(status, response.headers(), policy.clock());
                last = Last::Response(response);
                verdict
            }
            Some(Err(error)) => {
                let error: BoxError = error.into();
                let verdict = classify::error_chain(&*error);
                last = Last::Error(error);
                verdict
            }
            None => {
                last = Last::Error(Box::new(AttemptTimedOut {
                    after: limit.unwrap_or_default(),
                }));
                // A timed-out request may have been processed.
                Verdict::transient()
            }
        };
        match policy.on_failure(&mut state, verdict, &mut rng) {
            Decision::Stop(reason) => return finish(&config, policy, &state, last, reason),
            Decision::Retry {
                pause,
                server_delay,
            } => {
                crate::event_retry!(attempt.number, pause, server_delay);
                if !pause.is_zero() {
                    config.sleeper.sleep(pause).await;
                }
            }
        }
    }
}

fn finish<C: Clock, S, B>(
    config: &Config<C, S>,
    policy: &RetryPolicy<C>,
    state: &crate::policy::CallState,
    last: Last<B>,
    reason: StopReason,
) -> Result<Response<B>, BoxError> {
    let elapsed = policy.elapsed(state);
    crate::event_give_up!(state.attempts(), elapsed, reason);
    match last {
        Last::Response(mut response) => {
            // Only a layer that may retry speaks for its retries: a one-attempt layer that
            // marked its failure would stop the one retrying layer above it.
            if config.mark_exhausted && reason.is_exhaustion() && policy.max_attempts() > 1 {
                response
                    .headers_mut()
                    .insert(RETRY_EXHAUSTED, HeaderValue::from_static("1"));
            }
            Ok(response)
        }
        Last::Error(source) => Err(Box::new(GaveUp {
            reason,
            attempts: state.attempts(),
            elapsed,
            source: Some(source),
        })),
        Last::Nothing => Err(Box::new(GaveUp {
            reason,
            attempts: state.attempts(),
            elapsed,
            source: None,
        })),
    }
}
