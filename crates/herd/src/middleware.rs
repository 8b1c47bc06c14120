//! herd retries for reqwest (feature `reqwest`), as a [`reqwest_middleware::Middleware`].
//!
//! reqwest does not use tower, so the [`RetryLayer`](crate::layer::RetryLayer) cannot wrap it;
//! [`RetryMiddleware`] does the same work in a `reqwest_middleware::ClientWithMiddleware`
//! (the place of `reqwest-retry`): your classifiers (of responses and of errors) and hooks,
//! the rule, the attempt limit, the deadline (each attempt is cut at it), the per-attempt
//! timeout, the budget and the breaker, `Retry-After`, idempotency by method (a POST or PATCH
//! is retried after an ambiguous failure only when the policy says the server deduplicates,
//! `server_deduplicates`; otherwise only after a failure that proves it was not processed,
//! such as a refused connection or a 429; a key the request carries, or one the middleware
//! sends with [`RetryMiddleware::send_idempotency_key`], is no such proof), the
//! `retry-exhausted` mark, tracing (a span per call, an event per retry naming what failed),
//! and failed responses drained
//! before the pause so their connections go back to the pool (up to a size and a time limit:
//! a body that stalls is dropped with its connection). A request whose body cannot be
//! copied (a stream) is sent once.
//!
//! # What it returns
//!
//! What the last attempt returned, **unchanged**, as reqwest-retry does (its
//! `execute_with_retry` returns the last attempt's result, `reqwest-retry/src/middleware.rs`):
//! the last response as received (a failed one with its status, headers and body), or the
//! last attempt's error, so `matches!(err, reqwest_middleware::Error::Reqwest(e) if
//! e.is_redirect())` holds after a redirect loop, and `is_timeout()` or `is_connect()` after a
//! timeout or a refused connection. An attempt that herd cut at the per-attempt timeout or the
//! deadline ends in herd's own [`AttemptTimedOut`] (a `reqwest_middleware::Error::Middleware`).
//!
//! The attempts made, the time spent and why the middleware stopped go beside the result as a
//! [`RetryOutcome`]:
//! - in the response's extensions (`response.extensions().get::<RetryOutcome>()`);
//! - in the call's extensions, for an error as for a response: send with
//!   `ClientWithMiddleware::execute_with_extensions(request, &mut extensions)` and read
//!   `extensions.get::<RetryOutcome>()` afterwards;
//! - in the `gave up` tracing event (fields `attempts`, `reason`) and to the
//!   [`on_give_up`](RetryMiddleware::on_give_up) hook.
//!
//! A caller who wants them on the error itself opts into [`RetryMiddleware::wrap_errors`]:
//! the error is then the layer's [`GaveUp`](crate::layer::GaveUp) (why, after how many
//! attempts) with the reqwest error as its source. A call that ends with no error of reqwest's
//! to return (no attempt could start, or the last failure was a response already released
//! before a pause that the deadline then cut) ends in a `GaveUp`.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, policy::RetryPolicy, asynchronous::TokioClock, middleware::RetryMiddleware};
//!
//! let policy = RetryPolicy::builder(Rule::full(Duration::from_millis(50), Duration::from_secs(2))?)
//!     .max_attempts(3)
//!     .deadline(Duration::from_secs(5))
//!     .clock(TokioClock::new())
//!     .build()?;
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(RetryMiddleware::new(policy))
//!     .build();
//! # let _ = client;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Reading the attempts beside an error:
//!
//! ```no_run
//! # async fn call(client: reqwest_middleware::ClientWithMiddleware) -> Result<(), Box<dyn std::error::Error>> {
//! use herd::layer::RetryOutcome;
//!
//! let request = client.get("http://127.0.0.1:1/").build()?;
//! let mut extensions = http::Extensions::new();
//! let result = client.execute_with_extensions(request, &mut extensions).await;
//! let outcome = extensions.get::<RetryOutcome>().expect("set on every call");
//! if let Err(reqwest_middleware::Error::Reqwest(e)) = &result
//!     && e.is_connect()
//! {
//!     eprintln!("unreachable after {} attempt(s)", outcome.attempts);
//! }
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{Extensions, HeaderValue};
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next, Result};

use crate::asynchronous::{AttemptTimedOut, Sleeper, TokioClock, TokioSleep, with_limit, within};
use crate::classify::{self, Verdict};
use crate::clock::Clock;
use crate::deposit::charged;
use crate::layer::observe;
use crate::layer::{
    DEFAULT_DRAIN_LIMIT, DEFAULT_DRAIN_TIMEOUT, Failure, GivingUp, IDEMPOTENCY_KEY,
    RETRY_EXHAUSTED, RetryOutcome, Retrying, Target, drain_bound, error_default, on_failure,
    request_is_idempotent,
};
use crate::outcome::StopReason;
use crate::policy::{CallState, Decision, RetryPolicy};
use crate::rng::ThreadRng;

/// Retries by a herd policy inside a `reqwest_middleware` client. See the
/// [module documentation](self).
#[derive(Clone)]
pub struct RetryMiddleware<C: Clock = TokioClock, S = TokioSleep> {
    policy: RetryPolicy<C>,
    sleeper: S,
    mark_exhausted: bool,
    respect_exhausted: bool,
    drain_limit: usize,
    drain_timeout: Duration,
    send_idempotency_key: bool,
    wrap_errors: bool,
    classify: Option<ResponseClassifier>,
    classify_error: Option<ErrorClassifier>,
    on_retry: Option<RetryHook>,
    on_give_up: Option<GiveUpHook>,
}

type ResponseClassifier = Arc<dyn Fn(&Response, Option<Verdict>) -> Option<Verdict> + Send + Sync>;
type ErrorClassifier = Arc<dyn Fn(&reqwest_middleware::Error, Verdict) -> Verdict + Send + Sync>;
type RetryHook = Arc<dyn Fn(&Retrying<'_>) + Send + Sync>;
type GiveUpHook = Arc<dyn Fn(&GivingUp<'_>) + Send + Sync>;

impl<C: Clock, S> fmt::Debug for RetryMiddleware<C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryMiddleware")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> RetryMiddleware<C, TokioSleep> {
    /// A middleware retrying by `policy`, sleeping on tokio.
    #[must_use]
    pub fn new(policy: RetryPolicy<C>) -> Self {
        Self {
            policy,
            sleeper: TokioSleep,
            mark_exhausted: true,
            respect_exhausted: true,
            drain_limit: DEFAULT_DRAIN_LIMIT,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            send_idempotency_key: false,
            wrap_errors: false,
            classify: None,
            classify_error: None,
            on_retry: None,
            on_give_up: None,
        }
    }
}

impl<C: Clock, S> RetryMiddleware<C, S> {
    /// Sleep with another runtime's (or a test's) [`Sleeper`].
    #[must_use]
    pub fn sleeper<S2>(self, sleeper: S2) -> RetryMiddleware<C, S2> {
        RetryMiddleware {
            policy: self.policy,
            sleeper,
            mark_exhausted: self.mark_exhausted,
            respect_exhausted: self.respect_exhausted,
            drain_limit: self.drain_limit,
            drain_timeout: self.drain_timeout,
            send_idempotency_key: self.send_idempotency_key,
            wrap_errors: self.wrap_errors,
            classify: self.classify,
            classify_error: self.classify_error,
            on_retry: self.on_retry,
            on_give_up: self.on_give_up,
        }
    }

    /// Classify responses with your own reading: `None` for a success, a [`Verdict`] for a
    /// failure; `default` is herd's ([`classify::http_response`] for statuses ≥ 400), as in
    /// [`RetryLayer::classify`](crate::layer::RetryLayer::classify).
    #[must_use]
    pub fn classify(
        mut self,
        classify: impl Fn(&Response, Option<Verdict>) -> Option<Verdict> + Send + Sync + 'static,
    ) -> Self {
        self.classify = Some(Arc::new(classify));
        self
    }

    /// Classify errors with your own reading: `classify(error, default)` returns the
    /// [`Verdict`]; `default` is herd's ([`error_default`] of the reqwest error, or of the
    /// middleware error's chain), as in
    /// [`RetryLayer::classify_error`](crate::layer::RetryLayer::classify_error).
    #[must_use]
    pub fn classify_error(
        mut self,
        classify: impl Fn(&reqwest_middleware::Error, Verdict) -> Verdict + Send + Sync + 'static,
    ) -> Self {
        self.classify_error = Some(Arc::new(classify));
        self
    }

    /// Called before each retry's pause, with the failed attempt and the pause.
    #[must_use]
    pub fn on_retry(mut self, hook: impl Fn(&Retrying<'_>) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(Arc::new(hook));
        self
    }

    /// Called once when the middleware gives up, with the outcome and the last failure.
    #[must_use]
    pub fn on_give_up(mut self, hook: impl Fn(&GivingUp<'_>) + Send + Sync + 'static) -> Self {
        self.on_give_up = Some(Arc::new(hook));
        self
    }

    /// Mark a response given up on after retries with `retry-exhausted: 1` (default true).
    #[must_use]
    pub fn mark_exhausted(mut self, mark: bool) -> Self {
        self.mark_exhausted = mark;
        self
    }

    /// Treat a received failure marked `retry-exhausted` as permanent (default true).
    #[must_use]
    pub fn respect_exhausted(mut self, respect: bool) -> Self {
        self.respect_exhausted = respect;
        self
    }

    /// Add an `Idempotency-Key` header (the call's key, the same on every attempt) to requests
    /// that have none (default false), as
    /// [`RetryLayer::send_idempotency_key`](crate::layer::RetryLayer::send_idempotency_key).
    /// Sending a key does not make POST and PATCH retryable after ambiguous failures: the
    /// policy's `server_deduplicates` does.
    #[must_use]
    pub fn send_idempotency_key(mut self, send: bool) -> Self {
        self.send_idempotency_key = send;
        self
    }

    /// Return the last attempt's error inside the layer's [`GaveUp`](crate::layer::GaveUp)
    /// (why the middleware stopped, after how many attempts, the reqwest error as its
    /// [`source`](std::error::Error::source)) instead of unchanged (default false). Without
    /// it, the attempts and the reason are in the call's extensions (a [`RetryOutcome`]).
    #[must_use]
    pub fn wrap_errors(mut self, wrap: bool) -> Self {
        self.wrap_errors = wrap;
        self
    }

    /// How many bytes of a failed response's body to read before the pause, so that its
    /// connection is released to the pool (default [`DEFAULT_DRAIN_LIMIT`]; 0 drops the body
    /// unread), as [`RetryLayer::drain_limit`](crate::layer::RetryLayer::drain_limit).
    #[must_use]
    pub fn drain_limit(mut self, limit: usize) -> Self {
        self.drain_limit = limit;
        self
    }

    /// How long to read a failed response's body before the pause, at most (default
    /// [`DEFAULT_DRAIN_TIMEOUT`]; the attempt timeout and the deadline cut it shorter), as
    /// [`RetryLayer::drain_timeout`](crate::layer::RetryLayer::drain_timeout).
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
}

enum Last {
    Nothing,
    Response(Response),
    Drained(http::StatusCode),
    Error(reqwest_middleware::Error),
}

impl Last {
    fn failure(&self) -> Option<Failure<'_>> {
        match self {
            Last::Nothing => None,
            Last::Response(r) => Some(Failure::Status(r.status())),
            Last::Drained(status) => Some(Failure::Status(*status)),
            Last::Error(e) => Some(Failure::Error(e)),
        }
    }
}

#[async_trait::async_trait]
impl<C, S> Middleware for RetryMiddleware<C, S>
where
    C: Clock,
    S: Sleeper + Send + Sync + 'static,
    S::Sleep: Send,
{
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        let target = Target::of_reqwest(&request);
        #[cfg(feature = "tracing")]
        {
            let span = target.span();
            tracing::Instrument::instrument(self.run(request, extensions, next, target), span).await
        }
        #[cfg(not(feature = "tracing"))]
        self.run(request, extensions, next, target).await
    }
}

impl<C, S> RetryMiddleware<C, S>
where
    C: Clock,
    S: Sleeper + Send + Sync + 'static,
    S::Sleep: Send,
{
    async fn run(
        &self,
        mut request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
        target: Target,
    ) -> Result<Response> {
        let base = &self.policy;
        let idempotent = request_is_idempotent(
            base.server_deduplicates(),
            base.is_idempotent(),
            request.method(),
        );
        let policy = base.with_idempotent_cow(idempotent);
        let policy = &*policy;
        let mut state = policy.begin_with_key(crate::idempotency::IdempotencyKey::generate());
        if self.send_idempotency_key
            && !request.headers().contains_key(IDEMPOTENCY_KEY)
            && let Ok(value) = HeaderValue::from_str(&state.key().to_string())
        {
            request.headers_mut().insert(IDEMPOTENCY_KEY, value);
        }
        let mut next_request = Some(request);
        let mut last = Last::Nothing;
        loop {
            if let Err(reason) = policy.before_attempt(&mut state) {
                return self.finish(&target, policy, &state, extensions, last, reason);
            }
            observe::attempts(state.attempts());
            // Dropping this call mid-attempt gives a half-open probe's permit back.
            let guard = policy.attempt_guard(&state);
            let Some(request) = next_request.take() else {
                return self.finish(
                    &target,
                    policy,
                    &state,
                    extensions,
                    last,
                    StopReason::NotReplayable,
                );
            };
            next_request = request.try_clone();
            let limit = policy.attempt_limit(&state);
            let attempt = charged(policy.budget_ref(), next.clone().run(request, extensions));
            let answer = with_limit(attempt, limit, &self.sleeper).await;
            guard.disarm();
            let verdict = match answer {
                Some(Ok(response)) => {
                    let status = response.status();
                    let default = (status.as_u16() >= 400).then(|| {
                        classify::http_response(status, response.headers(), policy.clock())
                    });
                    let verdict = match &self.classify {
                        Some(classify) => classify(&response, default),
                        None => default,
                    };
                    let Some(verdict) = verdict else {
                        policy.on_success(&state);
                        let outcome = RetryOutcome {
                            attempts: state.attempts(),
                            elapsed: policy.elapsed(&state),
                            reason: None,
                        };
                        extensions.insert(outcome);
                        let mut response = response;
                        response.extensions_mut().insert(outcome);
                        return Ok(response);
                    };
                    let verdict = if self.respect_exhausted
                        && status.as_u16() >= 400
                        && response.headers().contains_key(RETRY_EXHAUSTED)
                    {
                        Verdict::downstream_exhausted()
                    } else {
                        verdict
                    };
                    last = Last::Response(response);
                    verdict
                }
                Some(Err(error)) => {
                    let default = match &error {
                        reqwest_middleware::Error::Reqwest(e) => error_default(e),
                        reqwest_middleware::Error::Middleware(e) => error_default(e.as_ref()),
                    };
                    let verdict = match &self.classify_error {
                        Some(classify) => classify(&error, default),
                        None => default,
                    };
                    last = Last::Error(error);
                    verdict
                }
                None => {
                    last = Last::Error(reqwest_middleware::Error::middleware(AttemptTimedOut {
                        after: limit.unwrap_or_default(),
                    }));
                    Verdict::transient()
                }
            };
            let replayable = next_request.is_some();
            let decision = on_failure(policy, &mut state, verdict, replayable, &mut ThreadRng);
            match decision {
                Decision::Stop(reason) => {
                    return self.finish(&target, policy, &state, extensions, last, reason);
                }
                Decision::Retry {
                    pause,
                    server_delay,
                } => {
                    observe::retrying(
                        &target,
                        state.attempts(),
                        pause,
                        server_delay,
                        last.failure(),
                    );
                    if let (Some(hook), Some(failure)) = (&self.on_retry, last.failure()) {
                        hook(&Retrying {
                            attempt: state.attempts(),
                            failure,
                            pause,
                            server_delay,
                        });
                    }
                    if let Last::Response(mut response) =
                        std::mem::replace(&mut last, Last::Nothing)
                    {
                        last = Last::Drained(response.status());
                        // Release the connection before the pause; a body that is too long
                        // or stalls is dropped with its connection.
                        let limit = self.drain_limit;
                        if limit > 0 {
                            let drain = async move {
                                let mut read = 0usize;
                                while let Ok(Some(chunk)) = response.chunk().await {
                                    read = read.saturating_add(chunk.len());
                                    if read > limit {
                                        break;
                                    }
                                }
                            };
                            let bound = drain_bound(self.drain_timeout, policy, &state);
                            let _ = within(drain, bound, &self.sleeper).await;
                        }
                    }
                    if !pause.is_zero() {
                        self.sleeper.sleep(pause).await;
                    }
                }
            }
        }
    }
}

impl<C: Clock, S> RetryMiddleware<C, S> {
    fn finish(
        &self,
        target: &Target,
        policy: &RetryPolicy<C>,
        state: &CallState,
        extensions: &mut Extensions,
        last: Last,
        reason: StopReason,
    ) -> Result<Response> {
        let (attempts, elapsed) = (state.attempts(), policy.elapsed(state));
        let outcome = RetryOutcome {
            attempts,
            elapsed,
            reason: Some(reason),
        };
        extensions.insert(outcome);
        observe::gave_up(target, &outcome, last.failure());
        if let Some(hook) = &self.on_give_up {
            hook(&GivingUp {
                outcome,
                failure: last.failure(),
            });
        }
        match last {
            Last::Response(mut response) => {
                response.extensions_mut().insert(outcome);
                if self.mark_exhausted && reason.is_exhaustion() && policy.max_attempts() > 1 {
                    response
                        .headers_mut()
                        .insert(RETRY_EXHAUSTED, HeaderValue::from_static("1"));
                }
                Ok(response)
            }
            // The caller's error passes through unchanged, unless the caller asked for it
            // wrapped: the layer's shape, why and after how many attempts, the error as the
            // source.
            Last::Error(error) if !self.wrap_errors => Err(error),
            Last::Error(error) => Err(reqwest_middleware::Error::middleware(
                crate::layer::GaveUp {
                    reason,
                    attempts,
                    elapsed,
                    source: Some(Box::new(error)),
                },
            )),
            Last::Drained(status) => Err(reqwest_middleware::Error::middleware(
                crate::layer::GaveUp {
                    reason,
                    attempts,
                    elapsed,
                    source: Some(format!("the last attempt was answered {status}").into()),
                },
            )),
            Last::Nothing => Err(reqwest_middleware::Error::middleware(
                crate::layer::GaveUp {
                    reason,
                    attempts,
                    elapsed,
                    source: None,
                },
            )),
        }
    }
}
