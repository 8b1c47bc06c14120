//! The tower layer against real axum servers on 127.0.0.1 (hyper-util's legacy client as the
//! inner service), and against in-process services on tokio's paused time.
//!
//! Pauses go through a recording sleeper that returns at once: the tests check the pauses the
//! layer asked for without sleeping in real time.
#![cfg(feature = "tower")]

use crate::support;

use support::http::{busy_once_then_hello, counting, spending};
use support::{Recorder, budget, send};

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use herd::asynchronous::TokioClock;
use herd::clock::Clock;
use herd::layer::{GaveUp, IDEMPOTENCY_KEY, RETRY_EXHAUSTED, RetryLayer};
use herd::policy::RetryPolicy;
use herd::{Rule, StopReason};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, Service, ServiceExt};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn serve(app: Router) -> SocketAddr {
    support::http::serve(app).await
}

#[derive(Clone, Default)]
struct Hits {
    count: Arc<AtomicUsize>,
    keys: Arc<Mutex<Vec<String>>>,
}

impl Hits {
    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
    fn hit(&self, headers: &HeaderMap) -> usize {
        if let Some(key) = headers.get("idempotency-key") {
            self.keys
                .lock()
                .unwrap()
                .push(key.to_str().unwrap().to_owned());
        }
        self.count.fetch_add(1, Ordering::SeqCst)
    }
}

/// A server answering each request with `respond(n)` for the n-th request (0-based).
async fn server(respond: fn(usize) -> Response) -> (SocketAddr, Hits) {
    let hits = Hits::default();
    let app = Router::new()
        .route(
            "/",
            any(
                move |State(hits): State<Hits>, headers: HeaderMap| async move {
                    respond(hits.hit(&headers))
                },
            ),
        )
        .with_state(hits.clone());
    (serve(app).await, hits)
}

fn policy(rule: Rule, attempts: u32) -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(rule)
        .max_attempts(attempts)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

fn exponential() -> Rule {
    Rule::exponential(Duration::from_millis(100), Duration::from_secs(5)).unwrap()
}

fn request(method: &str, addr: SocketAddr) -> http::Request<Full<Bytes>> {
    http::Request::builder()
        .method(method)
        .uri(format!("http://{addr}/"))
        .body(Full::new(Bytes::from_static(b"payload")))
        .unwrap()
}

async fn body(response: http::Response<hyper::body::Incoming>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A `method` request to `addr` through a layer of three immediate attempts (pauses recorded,
/// not slept).
async fn three_immediate(
    method: &str,
    addr: SocketAddr,
) -> Result<http::Response<hyper::body::Incoming>, tower::BoxError> {
    let mut svc = RetryLayer::new(policy(Rule::immediate(), 3))
        .sleeper(Recorder::default())
        .layer(client());
    send(&mut svc, request(method, addr)).await
}

/// One GET through a three-attempt layer with the exponential rule, its pauses recorded: the
/// answer and the recorder.
async fn get_with_exponential_pauses(
    addr: SocketAddr,
) -> (http::Response<hyper::body::Incoming>, Recorder) {
    let recorder = Recorder::default();
    let mut svc = RetryLayer::new(policy(exponential(), 3))
        .sleeper(recorder.clone())
        .layer(client());
    (
        send(&mut svc, request("GET", addr)).await.unwrap(),
        recorder,
    )
}

#[tokio::test]
async fn real_server_503_with_retry_after_then_200() {
    let (addr, hits) = server(|n| busy_once_then_hello(n, "1")).await;
    let (response, recorder) = get_with_exponential_pauses(addr).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!response.headers().contains_key(RETRY_EXHAUSTED));
    assert_eq!(body(response).await, "hello");
    assert_eq!(hits.count(), 2);
    // The server's 1 s replaced the rule's 100 ms, with at most 10 % jitter after it.
    let pauses = recorder.pauses();
    assert_eq!(pauses.len(), 1);
    assert!(
        pauses[0] >= Duration::from_secs(1) && pauses[0] <= Duration::from_millis(1100),
        "{pauses:?}"
    );
}

#[tokio::test]
async fn gives_up_with_the_last_response_marked_exhausted() {
    let (addr, hits) = server(|_| (StatusCode::BAD_GATEWAY, "down").into_response()).await;
    let (response, recorder) = get_with_exponential_pauses(addr).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(response.headers()[RETRY_EXHAUSTED], "1");
    assert_eq!(body(response).await, "down");
    assert_eq!(hits.count(), 3);
    assert_eq!(
        recorder.pauses(),
        [Duration::from_millis(100), Duration::from_millis(200)]
    );
}

/// Regression (found by the lab's chain): a layer allowed one attempt marked its failure, so
/// the one retrying layer above it stopped, and 3 × 1 over a failing database gave 1 query.
#[tokio::test]
async fn a_one_attempt_layer_does_not_mark_its_failure() {
    let (addr, hits) = server(|_| (StatusCode::BAD_GATEWAY, "down").into_response()).await;
    let mut svc = RetryLayer::new(policy(Rule::immediate(), 1)).layer(client());
    let response = send(&mut svc, request("GET", addr)).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert!(!response.headers().contains_key(RETRY_EXHAUSTED));
    assert_eq!(hits.count(), 1);
}

#[tokio::test]
async fn mark_can_be_switched_off_and_permanent_errors_are_not_marked() {
    let (addr, _) = server(|_| StatusCode::SERVICE_UNAVAILABLE.into_response()).await;
    let mut svc = RetryLayer::new(policy(Rule::immediate(), 2))
        .mark_exhausted(false)
        .sleeper(Recorder::default())
        .layer(client());
    let response = send(&mut svc, request("GET", addr)).await.unwrap();
    assert!(!response.headers().contains_key(RETRY_EXHAUSTED));

    let (addr, hits) = server(|_| StatusCode::NOT_FOUND.into_response()).await;
    let response = three_immediate("GET", addr).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(!response.headers().contains_key(RETRY_EXHAUSTED));
    assert_eq!(hits.count(), 1, "404 is permanent");
}

#[tokio::test]
async fn a_marked_response_is_not_retried_unless_told_to() {
    fn marked(_: usize) -> Response {
        (StatusCode::SERVICE_UNAVAILABLE, [("retry-exhausted", "1")]).into_response()
    }
    let (addr, hits) = server(marked).await;
    let response = three_immediate("GET", addr).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(hits.count(), 1);

    let (addr, hits) = server(marked).await;
    let mut svc = RetryLayer::new(policy(Rule::immediate(), 3))
        .respect_exhausted(false)
        .sleeper(Recorder::default())
        .layer(client());
    svc.ready()
        .await
        .unwrap()
        .call(request("GET", addr))
        .await
        .unwrap();
    assert_eq!(hits.count(), 3);
}

/// A middle service that calls the bottom one through a herd layer and forwards the status
/// and the mark, as the lab's services do.
#[tokio::test]
async fn a_chain_of_layers_does_not_multiply_retries() {
    let (bottom, bottom_hits) = server(|_| StatusCode::SERVICE_UNAVAILABLE.into_response()).await;
    let middle_hits = Arc::new(AtomicUsize::new(0));
    let downstream = RetryLayer::new(policy(Rule::immediate(), 3))
        .sleeper(Recorder::default())
        .layer(client());
    let hits = Arc::clone(&middle_hits);
    let app = Router::new().route(
        "/",
        any(move || {
            let mut downstream = downstream.clone();
            let hits = Arc::clone(&hits);
            async move {
                hits.fetch_add(1, Ordering::SeqCst);
                let response = send(&mut downstream, request("GET", bottom)).await.unwrap();
                let mut forwarded = response.status().into_response();
                if let Some(mark) = response.headers().get(RETRY_EXHAUSTED) {
                    forwarded
                        .headers_mut()
                        .insert(RETRY_EXHAUSTED, mark.clone());
                }
                forwarded
            }
        }),
    );
    let middle = serve(app).await;
    let mut top = RetryLayer::new(policy(Rule::immediate(), 3))
        .sleeper(Recorder::default())
        .layer(client());
    let response = send(&mut top, request("GET", middle)).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[RETRY_EXHAUSTED], "1");
    assert_eq!(middle_hits.load(Ordering::SeqCst), 1, "top did not retry");
    assert_eq!(bottom_hits.count(), 3, "3 attempts at the bottom, not 9");
}

#[tokio::test]
async fn post_is_retried_only_on_proof_it_was_not_processed() {
    let (addr, hits) = server(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()).await;
    let response = three_immediate("POST", addr).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(hits.count(), 1, "a 500 may have processed the POST");
    assert!(!response.headers().contains_key(RETRY_EXHAUSTED));

    let (addr, hits) = server(|n| {
        if n == 0 {
            StatusCode::TOO_MANY_REQUESTS.into_response()
        } else {
            StatusCode::CREATED.into_response()
        }
    })
    .await;
    let response = three_immediate("POST", addr).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(hits.count(), 2, "a 429 proves the POST was not processed");
}

#[tokio::test]
async fn idempotency_key_is_the_same_on_every_attempt() {
    let (addr, hits) = server(|n| {
        if n < 2 {
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        } else {
            StatusCode::OK.into_response()
        }
    })
    .await;
    let deduplicating = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .server_deduplicates(true)
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let mut svc = RetryLayer::new(deduplicating)
        .send_idempotency_key(true)
        .sleeper(Recorder::default())
        .layer(client());
    let response = send(&mut svc, request("POST", addr)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let keys = hits.keys.lock().unwrap().clone();
    assert_eq!(
        keys.len(),
        3,
        "a deduplicating server makes the POST retryable"
    );
    assert!(
        keys.iter().all(|k| k == &keys[0] && k.len() == 36),
        "{keys:?}"
    );
    assert_eq!(IDEMPOTENCY_KEY.as_str(), "idempotency-key");
}

#[tokio::test]
async fn connection_refused_is_retried_even_for_post_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener); // nobody listens: connections are refused
    let error = three_immediate("POST", addr).await.unwrap_err();
    // The client's own error, unchanged: the caller matches its kinds as without the layer.
    let client_error = error
        .downcast_ref::<hyper_util::client::legacy::Error>()
        .unwrap_or_else(|| panic!("not the client's error: {error:?}"));
    assert!(client_error.is_connect(), "{client_error:?}");
}

/// In-process inner service on paused time: the last attempt is cut at the deadline.
#[tokio::test(start_paused = true)]
async fn attempts_are_cut_at_the_deadline_on_paused_time() {
    let (hanging, calls) = counting(|_: http::Request<String>, _| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok::<_, Infallible>(http::Response::new(String::new()))
    });
    let clock = TokioClock::new();
    let policy = RetryPolicy::builder(Rule::constant(Duration::from_secs(1)).unwrap())
        .max_attempts(10)
        .deadline(Duration::from_secs(10))
        .attempt_timeout(Duration::from_secs(6))
        .clock(clock)
        .build()
        .unwrap();
    let mut svc = RetryLayer::new(policy).wrap_errors(true).layer(hanging);
    let error = send(&mut svc, http::Request::new(String::new()))
        .await
        .unwrap_err();
    let gave_up = error.downcast_ref::<GaveUp>().unwrap();
    // 6 s (timeout) + 1 s (pause) + 3 s (the second attempt, cut at the deadline) = 10 s.
    assert_eq!(gave_up.reason, StopReason::Deadline);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(clock.now(), Duration::from_secs(10));
}

/// An in-process service answering every request with `respond(n)`, counting calls.
fn in_process(
    respond: fn(usize) -> http::Response<String>,
) -> (
    impl Service<
        http::Request<String>,
        Response = http::Response<String>,
        Error = Infallible,
        Future = impl Send,
    > + Clone
    + Send
    + 'static,
    Arc<AtomicUsize>,
) {
    counting(move |_: http::Request<String>, n| async move { Ok::<_, Infallible>(respond(n)) })
}

fn status_with(
    status: u16,
    header: Option<(&'static str, &'static str)>,
) -> http::Response<String> {
    let mut response = http::Response::new(String::new());
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    if let Some((name, value)) = header {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

#[tokio::test]
async fn grpc_pushback_stops_or_sets_the_pause() {
    let (svc, calls) = in_process(|_| status_with(503, Some(("grpc-retry-pushback-ms", "-1"))));
    let mut svc = RetryLayer::new(policy(exponential(), 5))
        .sleeper(Recorder::default())
        .layer(svc);
    let response = send(&mut svc, http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "negative pushback: do not retry"
    );
    assert!(
        !response.headers().contains_key(RETRY_EXHAUSTED),
        "the server said stop; nothing was exhausted"
    );

    let (svc, calls) = in_process(|n| {
        if n == 0 {
            status_with(503, Some(("grpc-retry-pushback-ms", "2000")))
        } else {
            status_with(200, None)
        }
    });
    let recorder = Recorder::default();
    let mut svc = RetryLayer::new(policy(exponential(), 5))
        .sleeper(recorder.clone())
        .layer(svc);
    let response = send(&mut svc, http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let pause = recorder.pauses()[0];
    assert!(
        pause >= Duration::from_secs(2) && pause <= Duration::from_millis(2200),
        "{pause:?}"
    );
}

#[tokio::test]
async fn an_empty_budget_stops_the_layer_and_marks_the_response() {
    let (svc, calls) = in_process(|_| status_with(503, None));
    let policy = spending(budget(&TokioClock::new(), 0.0));
    let mut svc = RetryLayer::new(policy).layer(svc);
    let response = send(&mut svc, http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(response.headers()[RETRY_EXHAUSTED], "1");
}
