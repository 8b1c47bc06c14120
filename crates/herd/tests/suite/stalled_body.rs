//! A failed answer whose body never ends (the headers of a 503 arrive, then nothing) must not
//! hang the call or burn its deadline: the layer and the middleware read it for a short
//! while at most, drop the connection, and retry.
//!
//! Servers are axum on 127.0.0.1; time is tokio's paused clock, so the stall costs no real
//! time and an unbounded drain shows up as the outer time limit firing.
#![cfg(feature = "reqwest")]

use crate::support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::any;
use herd::Rule;
use herd::asynchronous::TokioClock;
use herd::layer::{DEFAULT_DRAIN_TIMEOUT, RetryLayer, RetryOutcome};
use herd::middleware::RetryMiddleware;
use herd::policy::RetryPolicy;
use http_body::Frame;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

/// The pause between attempts.
const PAUSE: Duration = Duration::from_millis(100);
/// How long a test may take, in paused time, before it counts as hung.
const HUNG: Duration = Duration::from_secs(600);

/// A body that sends one chunk and then never another, nor its end.
struct Stalled(bool);

impl http_body::Body for Stalled {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if std::mem::replace(&mut this.0, true) {
            Poll::Pending
        } else {
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"busy")))))
        }
    }
}

/// A server whose first answer is a 503 with a stalled body and whose later answers are
/// `200 done`; and the number of requests it saw.
async fn stalls_once() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/",
            any(|State(hits): State<Arc<AtomicUsize>>| async move {
                if hits.fetch_add(1, Ordering::SeqCst) == 0 {
                    (StatusCode::SERVICE_UNAVAILABLE, Body::new(Stalled(false))).into_response()
                } else {
                    (StatusCode::OK, "done").into_response()
                }
            }),
        )
        .with_state(Arc::clone(&hits));
    let addr = support::http::serve(app).await;
    (addr, hits)
}

fn policy(deadline: Option<Duration>) -> RetryPolicy<TokioClock> {
    let builder = RetryPolicy::builder(Rule::constant(PAUSE).unwrap())
        .max_attempts(3)
        .clock(TokioClock::new());
    match deadline {
        Some(deadline) => builder.deadline(deadline),
        None => builder,
    }
    .build()
    .unwrap()
}

/// The most a retry after a stalled body may take: the drain's own limit and the pause (and
/// nothing of the deadline).
fn promptly() -> Duration {
    DEFAULT_DRAIN_TIMEOUT + PAUSE + Duration::from_millis(50)
}

/// Through the tower layer over hyper-util's client: the final status, the outcome and the
/// time taken.
async fn through_layer(deadline: Option<Duration>) -> (StatusCode, RetryOutcome, Duration) {
    let (addr, hits) = stalls_once().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = RetryLayer::new(policy(deadline)).layer(client);
    let request = http::Request::get(format!("http://{addr}/"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let start = Instant::now();
    let response = tokio::time::timeout(HUNG, svc.oneshot(request))
        .await
        .expect("the call hung on the stalled body")
        .unwrap();
    let took = start.elapsed();
    let outcome = *response.extensions().get::<RetryOutcome>().unwrap();
    let status = response.status();
    assert_eq!(
        response.into_body().collect().await.unwrap().to_bytes(),
        "done"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    (status, outcome, took)
}

/// Regression: the drain before a retry was bounded only by the deadline, so a 503 whose body
/// never ended hung a call without one for ever.
#[tokio::test(start_paused = true)]
async fn the_layer_retries_past_a_stalled_body_without_a_deadline() {
    let (status, outcome, took) = through_layer(None).await;
    assert_eq!((status, outcome.attempts), (StatusCode::OK, 2));
    assert!(took <= promptly(), "{took:?}");
}

/// Regression: with a deadline, the drain took all of it, and no retry was made.
#[tokio::test(start_paused = true)]
async fn the_layer_retries_past_a_stalled_body_within_a_deadline() {
    let (status, outcome, took) = through_layer(Some(Duration::from_secs(30))).await;
    assert_eq!((status, outcome.attempts), (StatusCode::OK, 2));
    assert!(took <= promptly(), "{took:?}");
}

/// The drain never outlasts the attempt timeout, when that is shorter than its own limit.
#[tokio::test(start_paused = true)]
async fn the_drain_is_cut_at_the_attempt_timeout() {
    let (addr, _) = stalls_once().await;
    let short = DEFAULT_DRAIN_TIMEOUT / 5;
    let policy = RetryPolicy::builder(Rule::constant(PAUSE).unwrap())
        .max_attempts(3)
        .attempt_timeout(short)
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = RetryLayer::new(policy).layer(client);
    let request = http::Request::get(format!("http://{addr}/"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let start = Instant::now();
    let response = tokio::time::timeout(HUNG, svc.oneshot(request))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let took = start.elapsed();
    assert!(
        took <= short + PAUSE + Duration::from_millis(50),
        "{took:?}"
    );
}

/// Through the reqwest middleware: the final status, the outcome and the time taken.
async fn through_middleware(deadline: Option<Duration>) -> (StatusCode, RetryOutcome, Duration) {
    let (addr, hits) = stalls_once().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy(deadline)))
        .build();
    let start = Instant::now();
    let response = tokio::time::timeout(HUNG, client.get(format!("http://{addr}/")).send())
        .await
        .expect("the call hung on the stalled body")
        .unwrap();
    let took = start.elapsed();
    let outcome = *response.extensions().get::<RetryOutcome>().unwrap();
    let status = response.status();
    assert_eq!(response.text().await.unwrap(), "done");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    (status, outcome, took)
}

#[tokio::test(start_paused = true)]
async fn the_middleware_retries_past_a_stalled_body_without_a_deadline() {
    let (status, outcome, took) = through_middleware(None).await;
    assert_eq!((status, outcome.attempts), (StatusCode::OK, 2));
    assert!(took <= promptly(), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn the_middleware_retries_past_a_stalled_body_within_a_deadline() {
    let (status, outcome, took) = through_middleware(Some(Duration::from_secs(30))).await;
    assert_eq!((status, outcome.attempts), (StatusCode::OK, 2));
    assert!(took <= promptly(), "{took:?}");
}
