//! One call through the layer: hold the request, attempt, read and classify the answer,
//! release a failed response, pause, and report.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Request, Response};
use tower_service::Service;

use super::body::drain;
use super::grpc::limit_grpc_timeout;
use super::observe::{self, Target};
use super::{
    BoxError, Config, Failure, GaveUp, GivingUp, IDEMPOTENCY_KEY, Protocol, RETRY_EXHAUSTED,
    Replay, RetryOutcome, Retrying, classify_error, request_is_idempotent,
};
use crate::asynchronous::{AttemptTimedOut, Sleeper, with_limit, within};
use crate::classify::Verdict;
use crate::clock::Clock;
use crate::deposit::charged;
use crate::outcome::StopReason;
use crate::policy::{CallState, Decision, RetryPolicy};
use crate::rng::ThreadRng;

enum Last<B> {
    Nothing,
    Response(Response<B>, Failure<'static>),
    /// A failed response whose body was drained to release its connection.
    Drained(Failure<'static>),
    Error(BoxError),
}

/// The error a call ends with when its last failure was a response already released.
#[derive(Debug)]
struct Answered(Failure<'static>);

impl std::fmt::Display for Answered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Failure::Grpc(code) => write!(f, "the last attempt was answered grpc-status {code}"),
            Failure::Status(status) => write!(f, "the last attempt was answered {status}"),
            Failure::Error(e) => write!(f, "the last attempt failed: {e}"),
        }
    }
}

impl std::error::Error for Answered {}

impl<B> Last<B> {
    fn failure(&self) -> Option<Failure<'_>> {
        match self {
            Last::Nothing => None,
            Last::Response(_, failure) | Last::Drained(failure) => Some(*failure),
            Last::Error(e) => Some(Failure::Error(&**e)),
        }
    }
}

pub(super) async fn run<Svc, C, S, R, P, ReqB, ResB>(
    config: Arc<Config<C, S, R, P>>,
    mut inner: Svc,
    request: Request<ReqB>,
    target: Target,
) -> Result<Response<P::Body>, BoxError>
where
    Svc: Service<Request<ReqB>, Response = Response<ResB>>,
    Svc::Error: Into<BoxError>,
    C: Clock,
    S: Sleeper,
    R: Replay<ReqB>,
    P: Protocol<ResB>,
    P::Body: http_body::Body,
{
    let mut request = request;
    let has_key = request.headers().contains_key(IDEMPOTENCY_KEY);
    let base = &config.policy;
    let idempotent = if P::BY_METHOD {
        request_is_idempotent(
            base.server_deduplicates(),
            base.is_idempotent(),
            request.method(),
        )
    } else {
        base.is_idempotent()
    };
    let policy = base.with_idempotent_cow(idempotent);
    let policy = &*policy;
    let mut rng = ThreadRng;
    let mut state = policy.begin_with_key(crate::idempotency::IdempotencyKey::generate());
    if config.send_idempotency_key
        && !has_key
        && let Ok(value) = HeaderValue::from_str(&state.key().to_string())
    {
        request.headers_mut().insert(IDEMPOTENCY_KEY, value);
    }
    let mut held = config.replay.hold(request).await?;
    let mut last: Last<P::Body> = Last::Nothing;
    loop {
        if state.attempts() > 0 {
            // The first call's readiness was checked by `poll_ready`; retries wait here, no
            // longer than the deadline allows.
            let ready = std::future::poll_fn(|cx| inner.poll_ready(cx));
            match with_limit(ready, policy.remaining(&state), &config.sleeper).await {
                Some(Ok(())) => {}
                Some(Err(e)) => return Err(e.into()),
                None => {
                    return finish(&config, &target, policy, &state, last, StopReason::Deadline);
                }
            }
        }
        let attempt = match policy.before_attempt(&mut state) {
            Ok(attempt) => attempt,
            Err(reason) => return finish(&config, &target, policy, &state, last, reason),
        };
        observe::attempts(attempt.number);
        // Dropping this call mid-attempt (a timeout above the layer) gives a half-open
        // probe's permit back.
        let guard = policy.attempt_guard(&state);
        let Some(mut request) = config.replay.next(&mut held) else {
            return finish(
                &config,
                &target,
                policy,
                &state,
                last,
                StopReason::NotReplayable,
            );
        };
        let limit = policy.attempt_limit(&state);
        if let (true, Some(limit)) = (P::GRPC_TIMEOUT, limit) {
            // The server stops working on an attempt the client no longer waits for.
            limit_grpc_timeout(request.headers_mut(), limit);
        }
        let answer = with_limit(
            charged(policy.budget_ref(), async {
                let response = match inner.call(request).await {
                    Ok(response) => response,
                    Err(e) => return Err(e.into()),
                };
                config.protocol.read(response).await
            }),
            limit,
            &config.sleeper,
        )
        .await;
        guard.disarm();
        let verdict = match answer {
            Some(Ok(response)) => {
                let Some(verdict) = config.protocol.classify(&response, policy.clock()) else {
                    policy.on_success(&state);
                    return Ok(with_outcome(response, policy, &state, None));
                };
                if config.respect_exhausted
                    && response.headers().contains_key(RETRY_EXHAUSTED)
                    && config.protocol.is_failure_status(&response)
                {
                    // Someone below already retried this failure and gave up: do not
                    // multiply.
                    let failure = config.protocol.failure(&response);
                    last = Last::Response(response, failure);
                    Verdict::downstream_exhausted()
                } else {
                    let failure = config.protocol.failure(&response);
                    last = Last::Response(response, failure);
                    verdict
                }
            }
            Some(Err(error)) => {
                let verdict = classify_error(config.classify_error.as_ref(), &*error);
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
        let replayable = config.replay.can_replay(&held);
        let decision = on_failure(policy, &mut state, verdict, replayable, &mut rng);
        match decision {
            Decision::Stop(reason) => {
                return finish(&config, &target, policy, &state, last, reason);
            }
            Decision::Retry {
                pause,
                server_delay,
            } => {
                observe::retrying(&target, attempt.number, pause, server_delay, last.failure());
                if let Some(hook) = &config.on_retry
                    && let Some(failure) = last.failure()
                {
                    hook(&Retrying {
                        attempt: attempt.number,
                        failure,
                        pause,
                        server_delay,
                    });
                }
                if let Last::Response(response, failure) =
                    std::mem::replace(&mut last, Last::Nothing)
                {
                    last = Last::Drained(failure);
                    // Release the connection before the pause, not after the next attempt.
                    if P::DRAIN && config.drain_limit > 0 {
                        let body = response.into_body();
                        let _ = within(
                            drain(body, config.drain_limit),
                            drain_bound(config.drain_timeout, policy, &state),
                            &config.sleeper,
                        )
                        .await;
                    }
                }
                if !pause.is_zero() {
                    config.sleeper.sleep(pause).await;
                }
            }
        }
    }
}

/// What a failed attempt leads to. A request that cannot be sent again has its failure
/// recorded (breaker, budget) as by a policy allowed no more attempts, so that no retry is
/// paid for that cannot be made, and stops with [`StopReason::NotReplayable`] where attempts
/// were left. The layer and the reqwest middleware share it.
pub(crate) fn on_failure<C: Clock>(
    policy: &RetryPolicy<C>,
    state: &mut CallState,
    verdict: Verdict,
    replayable: bool,
    rng: &mut ThreadRng,
) -> Decision {
    if replayable {
        return policy.on_failure(state, verdict, rng);
    }
    match policy
        .with_max_attempts(state.attempts())
        .on_failure(state, verdict, rng)
    {
        Decision::Stop(StopReason::Attempts) if state.attempts() < policy.max_attempts() => {
            Decision::Stop(StopReason::NotReplayable)
        }
        decision => decision,
    }
}

/// How long a failed response's body may be read before the pause: the drain's own limit,
/// cut at the attempt timeout and at the deadline.
pub(crate) fn drain_bound<C: Clock>(
    drain_timeout: Duration,
    policy: &RetryPolicy<C>,
    state: &CallState,
) -> Duration {
    policy
        .attempt_limit(state)
        .map_or(drain_timeout, |limit| limit.min(drain_timeout))
}

fn outcome<C: Clock>(
    policy: &RetryPolicy<C>,
    state: &CallState,
    reason: Option<StopReason>,
) -> RetryOutcome {
    RetryOutcome {
        attempts: state.attempts(),
        elapsed: policy.elapsed(state),
        reason,
    }
}

fn with_outcome<C: Clock, B>(
    mut response: Response<B>,
    policy: &RetryPolicy<C>,
    state: &CallState,
    reason: Option<StopReason>,
) -> Response<B> {
    response
        .extensions_mut()
        .insert(outcome(policy, state, reason));
    response
}

fn finish<C: Clock, S, R, P, B>(
    config: &Config<C, S, R, P>,
    target: &Target,
    policy: &RetryPolicy<C>,
    state: &CallState,
    last: Last<B>,
    reason: StopReason,
) -> Result<Response<B>, BoxError> {
    let report = outcome(policy, state, Some(reason));
    observe::gave_up(target, &report, last.failure());
    if let Some(hook) = &config.on_give_up {
        hook(&GivingUp {
            outcome: report,
            failure: last.failure(),
        });
    }
    match last {
        Last::Response(mut response, _) => {
            // Only a layer that may retry speaks for its retries: a one-attempt layer that
            // marked its failure would stop the one retrying layer above it.
            if config.mark_exhausted && reason.is_exhaustion() && policy.max_attempts() > 1 {
                response
                    .headers_mut()
                    .insert(RETRY_EXHAUSTED, HeaderValue::from_static("1"));
            }
            response.extensions_mut().insert(report);
            Ok(response)
        }
        Last::Drained(failure) => Err(Box::new(GaveUp {
            reason,
            attempts: report.attempts,
            elapsed: report.elapsed,
            source: Some(Box::new(Answered(failure))),
        })),
        // The caller's error passes through unchanged, unless the caller asked for it wrapped.
        Last::Error(source) if !config.wrap_errors => Err(source),
        Last::Error(source) => Err(Box::new(GaveUp {
            reason,
            attempts: report.attempts,
            elapsed: report.elapsed,
            source: Some(source),
        })),
        Last::Nothing => Err(Box::new(GaveUp {
            reason,
            attempts: report.attempts,
            elapsed: report.elapsed,
            source: None,
        })),
    }
}
