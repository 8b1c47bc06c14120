//! The tower layer in real stacks: bodies that are not `Clone` (axum's `Body`, a stream),
//! a user classifier and hooks, the `retry-exhausted` mark on successes, released
//! connections, readiness bounded by the deadline, and herd as a `tower::retry::Policy` for a
//! request type that is not HTTP.
//!
//! Servers are axum on 127.0.0.1 with ephemeral ports; pauses go through a recording sleeper
//! that returns at once, or through tokio's paused time. Nothing sleeps in real time.
#![cfg(feature = "tower")]

use crate::support;

use support::http::{counting, ended_after, spending, streaming};
use support::{Recorder, send};

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::serve::ListenerExt;
use herd::asynchronous::TokioClock;
use herd::classify::Verdict;
use herd::layer::tower_policy::HerdPolicy;
use herd::layer::{Failure, GaveUp, RETRY_EXHAUSTED, RetryLayer, RetryOutcome};
use herd::policy::RetryPolicy;
use herd::{Rule, StopReason};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, Service, ServiceExt};

/// What the server saw: one body per request, and the connections it accepted.
#[derive(Clone, Default)]
struct Seen {
    bodies: Arc<Mutex<Vec<Bytes>>>,
    connections: Arc<AtomicUsize>,
}

impl Seen {
    fn bodies(&self) -> Vec<Bytes> {
        self.bodies.lock().unwrap().clone()
    }
    fn count(&self) -> usize {
        self.bodies.lock().unwrap().len()
    }
    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// An axum server on 127.0.0.1 answering the n-th request (0-based) with `respond(n)`,
/// recording bodies and counting accepted connections.
async fn server(respond: fn(usize) -> Response) -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route(
            "/",
            any(move |State(seen): State<Seen>, body: Bytes| async move {
                let n = {
                    let mut bodies = seen.bodies.lock().unwrap();
                    bodies.push(body);
                    bodies.len() - 1
                };
                respond(n)
            }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::clone(&seen.connections);
    let listener = listener.tap_io(move |_| {
        connections.fetch_add(1, Ordering::SeqCst);
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

fn policy(attempts: u32) -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(
        Rule::exponential(Duration::from_millis(100), Duration::from_secs(5)).unwrap(),
    )
    .max_attempts(attempts)
    .clock(TokioClock::new())
    .build()
    .unwrap()
}

/// A constant `pause` between at most `attempts` attempts within `deadline`, on tokio's clock.
fn constant_within(pause: Duration, attempts: u32, deadline: Duration) -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(Rule::constant(pause).unwrap())
        .max_attempts(attempts)
        .deadline(deadline)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

fn busy_then_ok(n: usize) -> Response {
    if n == 0 {
        (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response()
    } else {
        (StatusCode::OK, "done").into_response()
    }
}

fn put(addr: SocketAddr, body: Body) -> http::Request<Body> {
    http::Request::put(format!("http://{addr}/"))
        .body(body)
        .unwrap()
}

/// PUTs `chunks` as a stream through a layer that buffers up to `limit` bytes of a body, to a
/// server busy once: the final answer and what the server saw.
async fn upload(
    limit: usize,
    chunks: &[&'static str],
) -> (http::Response<hyper::body::Incoming>, Seen) {
    let (addr, seen) = server(busy_then_ok).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let mut svc = RetryLayer::new(policy(3))
        .sleeper(Recorder::default())
        .buffer_body(limit, Body::new)
        .layer(client);
    (
        send(&mut svc, put(addr, streaming(chunks))).await.unwrap(),
        seen,
    )
}

#[tokio::test]
async fn a_streaming_axum_body_is_buffered_and_sent_again() {
    let (response, seen) = upload(1024, &["up", "load"]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(seen.bodies(), ["upload", "upload"]);
    let outcome = response.extensions().get::<RetryOutcome>().unwrap();
    assert_eq!(ended_after(*outcome), (2, None));
}

#[tokio::test]
async fn a_body_over_the_limit_is_sent_once_and_the_outcome_says_why() {
    let (response, seen) = upload(4, &["up", "load", "ed"]).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.bodies(), ["uploaded"], "sent once, whole");
    let outcome = response.extensions().get::<RetryOutcome>().unwrap();
    assert_eq!(outcome.reason, Some(StopReason::NotReplayable));
    assert!(
        !response.headers().contains_key(RETRY_EXHAUSTED),
        "nothing was exhausted: a layer above may still retry"
    );
}

#[tokio::test]
async fn a_copy_function_replays_or_sends_once() {
    // A body that cannot be cloned, copied from bytes kept in an extension.
    #[derive(Clone)]
    struct Payload(Bytes);
    fn copy(request: &http::Request<Body>) -> Option<http::Request<Body>> {
        let payload = request.extensions().get::<Payload>()?.clone();
        let mut again = http::Request::new(Body::from(payload.0.clone()));
        *again.method_mut() = request.method().clone();
        *again.uri_mut() = request.uri().clone();
        again.extensions_mut().insert(payload);
        Some(again)
    }
    let (addr, seen) = server(busy_then_ok).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let mut svc = RetryLayer::new(policy(3))
        .sleeper(Recorder::default())
        .clone_request(copy)
        .layer(client.clone());
    let mut request = put(addr, Body::from("kept"));
    request
        .extensions_mut()
        .insert(Payload(Bytes::from_static(b"kept")));
    let response = send(&mut svc, request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(seen.bodies(), ["kept", "kept"]);

    // No payload to copy from: `None`, sent once.
    let (addr, seen) = server(busy_then_ok).await;
    let mut svc = RetryLayer::new(policy(3))
        .sleeper(Recorder::default())
        .clone_request(copy)
        .layer(client);
    let response = send(&mut svc, put(addr, streaming(&["once"])))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.count(), 1);
    assert_eq!(
        response.extensions().get::<RetryOutcome>().unwrap().reason,
        Some(StopReason::NotReplayable)
    );
}

type FullClient = Client<HttpConnector, Full<Bytes>>;

fn full_client() -> FullClient {
    Client::builder(TokioExecutor::new()).build_http()
}

fn get(addr: SocketAddr) -> http::Request<Full<Bytes>> {
    http::Request::get(format!("http://{addr}/"))
        .body(Full::default())
        .unwrap()
}

/// The classifier of an API that reports some errors in a 200 with `x-app-error`: those are
/// retried, everything else is judged as by default.
fn app_error_is_transient(
    res: &http::Response<hyper::body::Incoming>,
    default: Option<Verdict>,
) -> Option<Verdict> {
    if res.headers().contains_key("x-app-error") {
        Some(Verdict::transient())
    } else {
        default
    }
}

/// The `n`th answer (from 0) of a server whose first `failing` answers are `failure()`, then
/// a plain 200.
fn then_fine(n: usize, failing: usize, failure: fn() -> Response) -> Response {
    if n < failing {
        failure()
    } else {
        (StatusCode::OK, "fine").into_response()
    }
}

/// One GET through a layer that retries application errors ([`app_error_is_transient`]) to a
/// server answering `respond(n)`: the final answer and what the server saw.
async fn past_app_errors(
    respond: fn(usize) -> Response,
) -> (http::Response<hyper::body::Incoming>, Seen) {
    let (addr, seen) = server(respond).await;
    let mut svc = RetryLayer::new(policy(3))
        .sleeper(Recorder::default())
        .classify(app_error_is_transient)
        .layer(full_client());
    (send(&mut svc, get(addr)).await.unwrap(), seen)
}

#[tokio::test]
async fn a_user_classifier_makes_429_permanent_and_an_app_error_retryable() {
    let (addr, seen) = server(|_| (StatusCode::TOO_MANY_REQUESTS, "quota").into_response()).await;
    let mut svc = RetryLayer::new(policy(3))
        .sleeper(Recorder::default())
        .classify(|res: &http::Response<hyper::body::Incoming>, default| {
            if res.status() == StatusCode::TOO_MANY_REQUESTS {
                Some(Verdict::permanent())
            } else {
                default
            }
        })
        .layer(full_client());
    let response = send(&mut svc, get(addr)).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(seen.count(), 1, "429 is permanent for this API");

    let (response, seen) = past_app_errors(|n| {
        then_fine(n, 1, || {
            (StatusCode::OK, [("x-app-error", "retry")], "").into_response()
        })
    })
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!response.headers().contains_key("x-app-error"));
    assert_eq!(
        seen.count(),
        2,
        "the 200 with an application error was retried"
    );
}

#[tokio::test]
async fn hooks_see_each_retry_and_the_give_up() {
    let (addr, _) = server(|_| (StatusCode::BAD_GATEWAY, "down").into_response()).await;
    let retries = Arc::new(Mutex::new(Vec::new()));
    let gave_up = Arc::new(Mutex::new(None));
    let (r, g) = (Arc::clone(&retries), Arc::clone(&gave_up));
    let mut svc = RetryLayer::new(policy(3))
        .sleeper(Recorder::default())
        .on_retry(move |event| {
            let status = match event.failure {
                Failure::Status(status) => status,
                _ => panic!("a status was expected"),
            };
            r.lock().unwrap().push((event.attempt, status));
        })
        .on_give_up(move |event| *g.lock().unwrap() = Some(event.outcome))
        .layer(full_client());
    let response = send(&mut svc, get(addr)).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        *retries.lock().unwrap(),
        [(1, StatusCode::BAD_GATEWAY), (2, StatusCode::BAD_GATEWAY)]
    );
    let outcome = gave_up.lock().unwrap().unwrap();
    assert_eq!(ended_after(outcome), (3, Some(StopReason::Attempts)));
}

/// Regression: the mark was believed on any status, so a 200 that a proxy copied it onto
/// (here with an application error the classifier retries) was never retried.
#[tokio::test]
async fn the_exhausted_mark_is_believed_only_on_failure_statuses() {
    let (response, seen) = past_app_errors(|n| {
        then_fine(n, 1, || {
            let marks = [("x-app-error", "retry"), ("retry-exhausted", "1")];
            (StatusCode::OK, marks, "").into_response()
        })
    })
    .await;
    assert_eq!(seen.count(), 2);
    assert_eq!(response.status(), StatusCode::OK);
}

/// Larger than hyper's read-ahead buffer, so a body dropped unread closes its connection.
const BIG: usize = 1 << 20;

/// Regression: a failed response was held through the pause and the next attempt, so its
/// HTTP/1 connection stayed busy and every retry opened a new one.
///
/// In tokio's paused time: the drain is bounded in time, and a sleeper that returns at once
/// would cut it short.
#[tokio::test(start_paused = true)]
async fn a_failed_response_is_drained_so_its_connection_is_reused() {
    let (status, seen) = drained(2 * BIG).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seen.count(), 3);
    assert_eq!(
        seen.connections(),
        1,
        "one pooled connection served all three attempts"
    );

    // Without draining, each failed response (larger than what hyper reads ahead) takes its
    // connection with it.
    let (status, seen) = drained(0).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seen.connections(), 3);
}

/// One GET through a layer that reads up to `limit` bytes of a failed answer, to a server that
/// fails twice with a [`BIG`] body: the final status and what the server saw.
async fn drained(limit: usize) -> (StatusCode, Seen) {
    let (addr, seen) = server(|n| {
        then_fine(n, 2, || {
            (StatusCode::SERVICE_UNAVAILABLE, "x".repeat(BIG)).into_response()
        })
    })
    .await;
    let mut svc = RetryLayer::new(policy(3))
        .drain_limit(limit)
        .layer(full_client());
    (send(&mut svc, get(addr)).await.unwrap().status(), seen)
}

/// A service that is never ready.
#[derive(Clone)]
struct NeverReady;

impl Service<http::Request<String>> for NeverReady {
    type Response = http::Response<String>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<http::Response<String>, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Pending
    }
    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        unreachable!("never ready")
    }
}

#[tokio::test(start_paused = true)]
async fn readiness_is_awaited_no_longer_than_the_deadline() {
    let policy = RetryPolicy::builder(Rule::immediate())
        .deadline(Duration::from_secs(2))
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let mut svc = RetryLayer::new(policy).layer(NeverReady);
    let error = tokio::time::timeout(Duration::from_secs(60), svc.ready())
        .await
        .expect("poll_ready must give up at the deadline")
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    let gave_up = error.downcast_ref::<GaveUp>().unwrap();
    assert_eq!(gave_up.reason, StopReason::Deadline);
}

/// Ready once, then never again: the retry waits for readiness until the deadline only.
#[derive(Clone)]
struct ReadyOnce(Arc<AtomicUsize>);

impl Service<http::Request<String>> for ReadyOnce {
    type Response = http::Response<String>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<http::Response<String>, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.0.load(Ordering::SeqCst) == 0 {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }
    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut response = http::Response::new(String::new());
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        std::future::ready(Ok(response))
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_waits_for_readiness_no_longer_than_the_deadline() {
    let policy = constant_within(Duration::from_secs(1), 5, Duration::from_secs(3));
    let calls = Arc::new(AtomicUsize::new(0));
    let mut svc = RetryLayer::new(policy).layer(ReadyOnce(Arc::clone(&calls)));
    let started = tokio::time::Instant::now();
    let error = tokio::time::timeout(
        Duration::from_secs(60),
        svc.ready()
            .await
            .unwrap()
            .call(http::Request::new(String::new())),
    )
    .await
    .expect("the retry must stop waiting at the deadline")
    .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let gave_up = error.downcast_ref::<GaveUp>().unwrap();
    assert_eq!(
        (gave_up.reason, gave_up.attempts),
        (StopReason::Deadline, 1)
    );
    // The last answer is the source; the alternate form puts it on the line.
    assert!(format!("{gave_up:#}").contains("503"), "{gave_up:#}");
    let source = std::error::Error::source(gave_up).unwrap().to_string();
    assert!(source.contains("503"), "{source}");
}

/// A request type that is not HTTP, through tower's own `Retry` and herd's policy.
#[derive(Clone, Debug, PartialEq)]
struct Query(&'static str);

#[tokio::test(start_paused = true)]
async fn herd_policy_retries_any_request_type_in_tower_retry() {
    let (db, calls) = counting(|q: Query, n| async move {
        match n {
            0 | 1 => Err("deadlock"),
            _ => Ok(format!("rows for {}", q.0)),
        }
    });
    let herd = HerdPolicy::new(
        policy(5),
        |result: &Result<String, &'static str>| match result {
            Ok(_) => None,
            Err("deadlock") => Some(Verdict::transient()),
            Err(_) => Some(Verdict::permanent()),
        },
    );
    let started = tokio::time::Instant::now();
    let mut svc = tower::retry::RetryLayer::new(herd).layer(db);
    let rows = send(&mut svc, Query("users")).await.unwrap();
    assert_eq!(rows, "rows for users");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // The exponential rule's pauses: 100 ms, then 200 ms.
    assert_eq!(started.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn herd_policy_stops_at_the_attempt_limit_and_on_permanent_errors() {
    let (db, calls) = counting(|_: Query, _| async { Err::<String, _>("deadlock") });
    let classify = |result: &Result<String, &'static str>| match result {
        Ok(_) => None,
        Err("deadlock") => Some(Verdict::transient()),
        Err(_) => Some(Verdict::permanent()),
    };
    let mut svc = tower::retry::RetryLayer::new(HerdPolicy::new(policy(3), classify)).layer(db);
    let error = send(&mut svc, Query("a")).await.unwrap_err();
    assert_eq!(error, "deadlock");
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // A second call through the same service starts its own count.
    let error = send(&mut svc, Query("b")).await.unwrap_err();
    assert_eq!(error, "deadlock");
    assert_eq!(calls.load(Ordering::SeqCst), 6);

    let (db, calls) = counting(|_: Query, _| async { Err::<String, _>("syntax error") });
    let mut svc = tower::retry::RetryLayer::new(HerdPolicy::new(policy(3), classify)).layer(db);
    let _ = send(&mut svc, Query("a")).await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn herd_policy_stops_before_a_pause_that_would_end_past_the_deadline() {
    let (db, calls) = counting(|_: Query, _| async { Err::<String, _>("deadlock") });
    let policy = constant_within(Duration::from_millis(400), 100, Duration::from_secs(1));
    let herd = HerdPolicy::new(policy, |result: &Result<String, &'static str>| {
        result.as_ref().err().map(|_| Verdict::transient())
    });
    let started = tokio::time::Instant::now();
    let mut svc = tower::retry::RetryLayer::new(herd).layer(db);
    let _ = send(&mut svc, Query("a")).await.unwrap_err();
    // Attempts at 0, 0.4 and 0.8 s; a third pause would end at 1.2 s, past the deadline.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(started.elapsed(), Duration::from_millis(800));
}

/// A request that cannot be sent again must not spend a retry from the shared budget: the
/// next call, which can be retried, still finds it there.
#[tokio::test]
async fn a_request_sent_once_leaves_the_budget_to_calls_that_can_retry() {
    let budget = herd::budget::RetryBudget::new(
        herd::budget::BudgetConfig::default()
            .percent(0.0)
            .min_per_sec(1)
            .window(Duration::from_secs(1)),
        TokioClock::new(),
    )
    .unwrap();
    let shared = spending(budget);
    let (failing, calls) = counting(|_: http::Request<Body>, _| async {
        let mut response = http::Response::new(String::new());
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        Ok::<_, Infallible>(response)
    });
    let mut once = RetryLayer::new(shared.clone())
        .clone_request(|_: &http::Request<Body>| None)
        .layer(failing.clone());
    let response = send(&mut once, http::Request::new(Body::from("x")))
        .await
        .unwrap();
    assert_eq!(
        response.extensions().get::<RetryOutcome>().unwrap().reason,
        Some(StopReason::NotReplayable)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let mut retried = RetryLayer::new(shared)
        .clone_request(|r: &http::Request<Body>| {
            let mut again = http::Request::new(Body::empty());
            *again.uri_mut() = r.uri().clone();
            Some(again)
        })
        .layer(failing);
    let response = send(&mut retried, http::Request::new(Body::from("x")))
        .await
        .unwrap();
    let outcome = response.extensions().get::<RetryOutcome>().unwrap();
    assert_eq!(
        ended_after(*outcome),
        (2, Some(StopReason::Budget)),
        "the budget's one retry was still there"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// A gRPC answer longer than the buffer limit is passed on as it streams, whole, with its
/// trailers, and not retried.
#[tokio::test]
async fn a_grpc_answer_over_the_limit_is_passed_on_whole() {
    let (svc, calls) = counting(|_: http::Request<String>, _| async {
        let body = Full::new(Bytes::from_static(b"0123456789")).with_trailers(async {
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", "14".parse().unwrap());
            Some(Ok::<_, Infallible>(trailers))
        });
        Ok::<_, Infallible>(http::Response::new(body))
    });
    let mut svc = RetryLayer::new(policy(3))
        .sleeper(Recorder::default())
        .grpc(herd::layer::GrpcCodes::default(), 4)
        .layer(svc);
    let response = send(&mut svc, http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let collected = response.into_body().collect().await.unwrap();
    assert_eq!(collected.trailers().unwrap()["grpc-status"], "14");
    assert_eq!(collected.to_bytes(), "0123456789");
}
