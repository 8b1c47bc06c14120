//! The reqwest middleware against an axum server on 127.0.0.1 (reqwest without TLS). Pauses
//! go through a recording sleeper that returns at once.
#![cfg(feature = "reqwest")]

use crate::support;

use support::Recorder;
use support::http::{busy_once_then_hello, ended_after};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::any;
use herd::asynchronous::TokioClock;
use herd::classify::Verdict;
use herd::layer::RetryOutcome;
use herd::middleware::RetryMiddleware;
use herd::policy::RetryPolicy;
use herd::{Rule, StopReason};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

async fn server(respond: fn(usize) -> Response) -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/",
            any(move |State(hits): State<Arc<AtomicUsize>>| async move {
                respond(hits.fetch_add(1, Ordering::SeqCst))
            }),
        )
        .with_state(Arc::clone(&hits));
    let addr = support::http::serve(app).await;
    (addr, hits)
}

fn client(recorder: &Recorder) -> ClientWithMiddleware {
    client_with(recorder, false)
}

/// A client whose policy says (or not) that the server deduplicates by idempotency key.
fn client_with(recorder: &Recorder, server_deduplicates: bool) -> ClientWithMiddleware {
    let policy = RetryPolicy::builder(
        Rule::exponential(Duration::from_millis(100), Duration::from_secs(5)).unwrap(),
    )
    .max_attempts(3)
    .server_deduplicates(server_deduplicates)
    .clock(TokioClock::new())
    .build()
    .unwrap();
    ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy).sleeper(recorder.clone()))
        .build()
}

/// A GET of `/` at `addr` through [`client`], its pauses recorded: the result and the
/// recorder.
async fn get(addr: SocketAddr) -> (reqwest_middleware::Result<reqwest::Response>, Recorder) {
    let recorder = Recorder::default();
    let result = client(&recorder)
        .get(format!("http://{addr}/"))
        .send()
        .await;
    (result, recorder)
}

#[tokio::test]
async fn a_503_with_retry_after_then_200() {
    let (addr, hits) = server(|n| busy_once_then_hello(n, "2")).await;
    let (response, recorder) = get(addr).await;
    let response = response.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "hello");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let pauses = recorder.pauses();
    assert!(
        pauses[0] >= Duration::from_secs(2) && pauses[0] <= Duration::from_millis(2200),
        "Retry-After, not the rule's 100 ms: {pauses:?}"
    );
}

#[tokio::test]
async fn post_is_retried_after_an_ambiguous_failure_only_when_the_server_deduplicates() {
    let fails_once = |n| {
        if n == 0 {
            (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response()
        } else {
            (StatusCode::OK, "done").into_response()
        }
    };
    let recorder = Recorder::default();
    // A key alone is no proof that the server deduplicates: a 500 may have charged.
    for key in [None, Some("charge-42")] {
        let (addr, hits) = server(fails_once).await;
        let mut request = client(&recorder).post(format!("http://{addr}/"));
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        let response = request.body("charge 10").send().await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::INTERNAL_SERVER_ERROR,
            "key {key:?}"
        );
        assert_eq!(hits.load(Ordering::SeqCst), 1, "key {key:?}");
    }
    // The policy says the server deduplicates by key: the POST is retried.
    let (addr, hits) = server(fails_once).await;
    let response = client_with(&recorder, true)
        .post(format!("http://{addr}/"))
        .header("idempotency-key", "charge-42")
        .body("charge 10")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn gives_up_with_the_last_response_marked_exhausted() {
    let (addr, hits) = server(|_| (StatusCode::BAD_GATEWAY, "down").into_response()).await;
    let response = get(addr).await.0.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(response.headers()["retry-exhausted"], "1");
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let outcome = response.extensions().get::<RetryOutcome>().unwrap();
    assert_eq!(ended_after(*outcome), (3, Some(StopReason::Attempts)));
}

/// A GET of `/` at `addr` as a downstream user sends it: `inner` wrapped in a three-attempt
/// middleware, the call's extensions kept so that the outcome can be read beside the result.
async fn downstream_get(
    inner: reqwest::Client,
    addr: SocketAddr,
) -> (reqwest_middleware::Result<reqwest::Response>, RetryOutcome) {
    let policy = RetryPolicy::builder(Rule::constant(Duration::from_millis(100)).unwrap())
        .max_attempts(3)
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let client = ClientBuilder::new(inner)
        .with(RetryMiddleware::new(policy).sleeper(Recorder::default()))
        .build();
    let request = client.get(format!("http://{addr}/")).build().unwrap();
    let mut extensions = http::Extensions::new();
    let result = client
        .execute_with_extensions(request, &mut extensions)
        .await;
    let outcome = *extensions
        .get::<RetryOutcome>()
        .expect("the outcome beside every result");
    (result, outcome)
}

/// Regression: the middleware turned the last reqwest error into its own ("request failed
/// after 1 attempt(s) (permanent)"), so a caller's match on reqwest's kinds stopped holding.
#[tokio::test]
async fn a_redirect_loop_ends_in_reqwests_own_error_after_one_attempt() {
    let (addr, hits) = server(|_| Redirect::temporary("/").into_response()).await;
    let (result, outcome) = downstream_get(reqwest::Client::new(), addr).await;
    let error = result.unwrap_err();
    assert!(
        matches!(&error, reqwest_middleware::Error::Reqwest(e) if e.is_redirect()),
        "{error:#}"
    );
    assert_eq!(ended_after(outcome), (1, Some(StopReason::Permanent)));
    // reqwest follows at most 10 redirects: one attempt is 11 requests.
    assert_eq!(hits.load(Ordering::SeqCst), 11);
}

/// reqwest's own timeout, on paused time (a listener that never answers).
#[tokio::test(start_paused = true)]
async fn a_timeout_ends_in_reqwests_own_error() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let inner = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let (result, outcome) = downstream_get(inner, silent.local_addr().unwrap()).await;
    let error = result.unwrap_err();
    assert!(
        matches!(&error, reqwest_middleware::Error::Reqwest(e) if e.is_timeout()),
        "{error:#}"
    );
    assert_eq!(ended_after(outcome), (3, Some(StopReason::Attempts)));
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_ends_in_reqwests_own_error() {
    // Bind, read the port, close: nothing listens there now.
    let addr = support::http::closed_port();
    let (result, outcome) = downstream_get(reqwest::Client::new(), addr).await;
    let error = result.unwrap_err();
    assert!(
        matches!(&error, reqwest_middleware::Error::Reqwest(e) if e.is_connect()),
        "{error:#}"
    );
    assert_eq!(ended_after(outcome), (3, Some(StopReason::Attempts)));
}

/// The opt-in wrapper: the reqwest error as the source of a `GaveUp` that says why and after
/// how many attempts.
#[tokio::test]
async fn wrapped_errors_carry_the_attempts_and_the_reason() {
    let (addr, _) = server(|_| Redirect::temporary("/").into_response()).await;
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy).wrap_errors(true))
        .build();
    let error = support::http::get_fails(&client, format!("http://{addr}/")).await;
    let reqwest_middleware::Error::Middleware(outer) = &error else {
        panic!("not wrapped: {error:#}");
    };
    let gave_up = outer.downcast_ref::<herd::layer::GaveUp>().unwrap();
    assert_eq!(
        (gave_up.reason, gave_up.attempts),
        (StopReason::Permanent, 1)
    );
    let source = std::error::Error::source(gave_up).unwrap();
    assert!(
        matches!(source.downcast_ref(), Some(reqwest_middleware::Error::Reqwest(e)) if e.is_redirect())
    );
}

#[tokio::test]
async fn a_classifier_and_hooks_as_the_layer_has() {
    let (addr, hits) = server(|n| match n {
        0 => (StatusCode::OK, [("x-app-error", "retry")], "").into_response(),
        _ => (StatusCode::TOO_MANY_REQUESTS, "quota").into_response(),
    })
    .await;
    let retries = Arc::new(Mutex::new(Vec::new()));
    let gave_up = Arc::new(Mutex::new(None));
    let (r, g) = (Arc::clone(&retries), Arc::clone(&gave_up));
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(5)
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let middleware = RetryMiddleware::new(policy)
        .sleeper(Recorder::default())
        .classify(|res, default| {
            if res.headers().contains_key("x-app-error") {
                Some(Verdict::transient())
            } else if res.status() == StatusCode::TOO_MANY_REQUESTS {
                Some(Verdict::permanent())
            } else {
                default
            }
        })
        .on_retry(move |event| r.lock().unwrap().push(event.attempt))
        .on_give_up(move |event| *g.lock().unwrap() = Some(event.outcome));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build();
    let response = client.get(format!("http://{addr}/")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        2,
        "the 200 with an app error was retried; the 429 was final"
    );
    assert_eq!(*retries.lock().unwrap(), [1]);
    let outcome = gave_up.lock().unwrap().unwrap();
    assert_eq!(ended_after(outcome), (2, Some(StopReason::Permanent)));
}

/// Regression: the middleware could not send idempotency keys, as the layer can: every
/// attempt of a call now carries the same key, and a key the caller set is kept.
#[tokio::test]
async fn the_middleware_sends_one_idempotency_key_per_call() {
    let keys = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route(
            "/",
            any(
                |State(keys): State<Arc<Mutex<Vec<Option<String>>>>>,
                 headers: axum::http::HeaderMap| async move {
                    let mut keys = keys.lock().unwrap();
                    keys.push(
                        headers
                            .get("idempotency-key")
                            .map(|k| k.to_str().unwrap().to_owned()),
                    );
                    if keys.len() % 2 == 1 {
                        (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response()
                    } else {
                        (StatusCode::OK, "done").into_response()
                    }
                },
            ),
        )
        .with_state(Arc::clone(&keys));
    let addr = support::http::serve(app).await;
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(policy)
                .sleeper(Recorder::default())
                .send_idempotency_key(true),
        )
        .build();
    let url = format!("http://{addr}/");
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    let response = client
        .get(&url)
        .header("idempotency-key", "mine")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let keys = keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 4);
    let sent = keys[0].clone().expect("a key was sent");
    assert_eq!(
        keys[1].as_deref(),
        Some(&*sent),
        "the same key on the retry"
    );
    assert_eq!(keys[2].as_deref(), Some("mine"));
    assert_eq!(keys[3].as_deref(), Some("mine"));
}
