//! Errors are classified like responses: herd's default table (what reqwest-retry and the
//! clients themselves do) and a user's classifier over it, in the tower layer over
//! hyper-util's client and in the reqwest middleware, against servers on 127.0.0.1.
#![cfg(feature = "reqwest")]

use crate::support;

use support::Recorder;
use support::http::passed_through;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::Redirect;
use axum::routing::any;
use bytes::Bytes;
use herd::asynchronous::TokioClock;
use herd::classify::Verdict;
use herd::layer::{GaveUp, RetryLayer, error_default};
use herd::middleware::RetryMiddleware;
use herd::policy::RetryPolicy;
use herd::{Rule, StopReason};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::{Layer, ServiceExt};

fn three_attempts() -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(Rule::constant(Duration::from_millis(10)).unwrap())
        .max_attempts(3)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

fn hyper_client() -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

fn get(url: String) -> http::Request<Full<Bytes>> {
    http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// How the layer gave up: why, after how many attempts.
fn gave_up(error: &tower::BoxError) -> (StopReason, u32) {
    let gave_up = error.downcast_ref::<GaveUp>().expect("the layer's error");
    (gave_up.reason, gave_up.attempts)
}

/// An address where nothing listens.
fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// Regression: every error without a socket error in its chain was transient, so a URL the
/// client cannot send (https to a plain connector) was tried three times.
#[tokio::test]
async fn a_scheme_the_client_cannot_speak_is_permanent() {
    let svc = RetryLayer::new(three_attempts())
        .wrap_errors(true)
        .sleeper(Recorder::default())
        .layer(hyper_client());
    let error = svc
        .oneshot(get(format!("https://{}/", closed_port())))
        .await
        .unwrap_err();
    assert_eq!(gave_up(&error), (StopReason::Permanent, 1), "{error}");
}

/// hyper-util's errors are read by the text its `Display` writes: pinned here against the
/// real client, so that a change in hyper-util fails this test rather than misreading.
#[tokio::test]
async fn hyper_utils_own_errors_are_read_as_their_kinds() {
    let client = hyper_client();
    let scheme = client
        .request(get(format!("https://{}/", closed_port())))
        .await
        .unwrap_err();
    assert!(scheme.is_connect());
    assert!(error_default(&scheme).is_permanent(), "{scheme:?}");
    let refused = client
        .request(get(format!("http://{}/", closed_port())))
        .await
        .unwrap_err();
    assert!(
        error_default(&refused).proves_not_processed(),
        "{refused:?}"
    );
    let relative = client.request(get("/no-host".into())).await.unwrap_err();
    assert!(error_default(&relative).is_permanent(), "{relative:?}");
}

/// A server that accepts each connection, reads the request, and closes after half a status
/// line for the first `broken` connections; later ones get `200 ok`.
async fn closes_mid_answer(broken: usize) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let n = counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let answer: &[u8] = if n < broken {
                    b"HTTP/1.1 200"
                } else {
                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                };
                let _ = socket.write_all(answer).await;
            });
        }
    });
    (addr, seen)
}

#[tokio::test]
async fn a_peer_that_closes_mid_answer_is_transient_for_a_get() {
    let (addr, seen) = closes_mid_answer(1).await;
    let svc = RetryLayer::new(three_attempts())
        .sleeper(Recorder::default())
        .layer(hyper_client());
    let response = svc.oneshot(get(format!("http://{addr}/"))).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

/// Regression: the layer had no way to classify errors; every one went through the built-in
/// chain walk.
#[tokio::test]
async fn a_user_classifier_reads_errors_over_the_default() {
    let (addr, seen) = closes_mid_answer(3).await;
    let defaults = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorded = Arc::clone(&defaults);
    let svc = RetryLayer::new(three_attempts())
        .wrap_errors(true)
        .sleeper(Recorder::default())
        .classify_error(move |_error, default| {
            recorded.lock().unwrap().push(default);
            // This service's dropped answers are final, whatever the default.
            Verdict::permanent()
        })
        .layer(hyper_client());
    let error = svc
        .oneshot(get(format!("http://{addr}/")))
        .await
        .unwrap_err();
    assert_eq!(gave_up(&error), (StopReason::Permanent, 1));
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    let defaults = defaults.lock().unwrap();
    assert_eq!(defaults.len(), 1);
    assert!(
        defaults[0].is_transient(),
        "herd's default for a closed peer"
    );
}

/// An axum server at which `/` redirects to itself; and the requests it saw.
async fn redirect_loop() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/",
            any(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                Redirect::temporary("/")
            }),
        )
        .with_state(Arc::clone(&hits));
    let addr = support::http::serve(app).await;
    (addr, hits)
}

/// Regression: reqwest's redirect error carries no socket error, so it was transient and the
/// loop was followed three times over (33 requests for one call).
#[tokio::test]
async fn a_redirect_loop_is_permanent_in_the_middleware() {
    let (addr, hits) = redirect_loop().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(three_attempts()).sleeper(Recorder::default()))
        .build();
    let error = support::http::get_fails(&client, format!("http://{addr}/")).await;
    assert!(passed_through(&error).is_redirect(), "{error:#}");
    // reqwest follows at most 10 redirects: one attempt is 11 requests.
    assert_eq!(hits.load(Ordering::SeqCst), 11);
}

#[tokio::test]
async fn the_middleware_takes_a_user_error_classifier() {
    let (addr, hits) = redirect_loop().await;
    let recorder = Recorder::default();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(three_attempts())
                .sleeper(recorder.clone())
                .classify_error(|error, default| {
                    assert!(default.is_permanent());
                    // This API's redirect loops clear up: retry them.
                    if error.is_redirect() {
                        Verdict::transient()
                    } else {
                        default
                    }
                }),
        )
        .build();
    let error = support::http::get_fails(&client, format!("http://{addr}/")).await;
    assert!(passed_through(&error).is_redirect(), "{error:#}");
    assert_eq!(hits.load(Ordering::SeqCst), 33);
    assert_eq!(recorder.pauses().len(), 2);
}

#[tokio::test]
async fn a_refused_connection_proves_a_post_unsent_in_the_middleware() {
    let addr = closed_port();
    let recorder = Recorder::default();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(three_attempts()).sleeper(recorder.clone()))
        .build();
    let error = client
        .post(format!("http://{addr}/"))
        .body("charge 10")
        .send()
        .await
        .unwrap_err();
    assert!(passed_through(&error).is_connect(), "{error:#}");
    assert_eq!(
        recorder.pauses().len(),
        2,
        "a POST that never left is retried"
    );
}
