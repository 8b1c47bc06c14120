//! Hedging requests whose bodies are not `Clone` (axum's `Body`, tonic's), with the replay
//! choices the retry layer has, and the outcome (which copy won, how many were sent) in the
//! response's extensions.
//!
//! Servers are axum and tonic-health on 127.0.0.1; time is tokio's paused clock, so the
//! stuck first copy and the hedging delay cost no real time.
#![cfg(feature = "tower")]

use crate::support;

use support::http::streaming;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::routing::any;
use herd::asynchronous::TokioClock;
use herd::hedge::{HedgeDelay, HedgeLayer, HedgeOutcome, HedgePolicy};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, Service, ServiceExt};

const DELAY: Duration = Duration::from_millis(10);
const STUCK: Duration = Duration::from_secs(3600);

fn policy() -> HedgePolicy<TokioClock> {
    HedgePolicy::builder(HedgeDelay::fixed(DELAY))
        .max_copies(2)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

/// An axum server whose first request is stuck for an hour and whose later ones answer at
/// once with the body they received; and the bodies it saw.
async fn first_stuck() -> (SocketAddr, Arc<Mutex<Vec<Bytes>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route(
            "/",
            any(
                |State(seen): State<Arc<Mutex<Vec<Bytes>>>>, body: Bytes| async move {
                    let n = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(body.clone());
                        seen.len() - 1
                    };
                    if n == 0 {
                        tokio::time::sleep(STUCK).await;
                    }
                    body
                },
            ),
        )
        .with_state(Arc::clone(&seen));
    let addr = support::http::serve(app).await;
    (addr, seen)
}

fn post(addr: SocketAddr, body: Body) -> http::Request<Body> {
    http::Request::post(format!("http://{addr}/"))
        .body(body)
        .unwrap()
}

/// Regression: the hedge layer needed `Req: Clone`, so it could not hedge an axum `Body`.
#[tokio::test(start_paused = true)]
async fn an_axum_body_is_buffered_and_hedged() {
    let (addr, seen) = first_stuck().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let svc = HedgeLayer::new(policy())
        .buffer_body(1024, Body::new)
        .layer(client);
    let start = tokio::time::Instant::now();
    let response = svc
        .oneshot(post(addr, streaming(&["hel", "lo"])))
        .await
        .unwrap();
    assert_eq!(
        start.elapsed(),
        DELAY,
        "the hedge answered, not the stuck copy"
    );
    let outcome = *response.extensions().get::<HedgeOutcome>().unwrap();
    assert_eq!((outcome.copy, outcome.copies_sent), (2, 2));
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello");
    assert_eq!(*seen.lock().unwrap(), ["hello", "hello"]);
}

/// Regression: a request whose body is `Clone` could be hedged only in the generic mode,
/// whose responses carry no outcome.
#[tokio::test(start_paused = true)]
async fn a_clone_body_is_hedged_with_its_outcome() {
    let (addr, seen) = first_stuck().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = HedgeLayer::new(policy()).clone_body().layer(client);
    let request = http::Request::post(format!("http://{addr}/"))
        .body(Full::new(Bytes::from_static(b"hello")))
        .unwrap();
    let start = tokio::time::Instant::now();
    let response = svc.oneshot(request).await.unwrap();
    assert_eq!(
        start.elapsed(),
        DELAY,
        "the hedge answered, not the stuck copy"
    );
    let outcome = *response.extensions().get::<HedgeOutcome>().unwrap();
    assert_eq!((outcome.copy, outcome.copies_sent), (2, 2));
    assert_eq!(*seen.lock().unwrap(), ["hello", "hello"]);
}

#[tokio::test(start_paused = true)]
async fn a_body_over_the_limit_is_sent_once_unhedged() {
    let (addr, seen) = first_stuck().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let svc = HedgeLayer::new(policy())
        .buffer_body(3, Body::new)
        .layer(client);
    let start = tokio::time::Instant::now();
    let response = svc
        .oneshot(post(addr, streaming(&["hel", "lo"])))
        .await
        .unwrap();
    assert!(
        start.elapsed() >= STUCK,
        "no hedge: the one copy was waited for"
    );
    let outcome = *response.extensions().get::<HedgeOutcome>().unwrap();
    assert_eq!((outcome.copy, outcome.copies_sent), (1, 1));
    assert_eq!(*seen.lock().unwrap(), ["hello"]);
}

#[tokio::test(start_paused = true)]
async fn a_copy_function_hedges_or_sends_once() {
    let (addr, seen) = first_stuck().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    // Copies requests marked replayable, with a fixed body; the others are sent once.
    let copy = |r: &http::Request<Body>| {
        r.headers().contains_key("x-replayable").then(|| {
            let mut copy = http::Request::new(Body::from("same"));
            *copy.method_mut() = r.method().clone();
            *copy.uri_mut() = r.uri().clone();
            copy
        })
    };
    let svc = HedgeLayer::new(policy())
        .clone_request(copy)
        .layer(client.clone());
    let mut request = post(addr, Body::from("same"));
    request
        .headers_mut()
        .insert("x-replayable", http::HeaderValue::from_static("1"));
    let response = svc.clone().oneshot(request).await.unwrap();
    let outcome = *response.extensions().get::<HedgeOutcome>().unwrap();
    assert_eq!((outcome.copy, outcome.copies_sent), (2, 2));
    assert_eq!(*seen.lock().unwrap(), ["same", "same"]);

    let (addr, seen) = first_stuck().await;
    let response = svc.oneshot(post(addr, Body::from("once"))).await.unwrap();
    let outcome = *response.extensions().get::<HedgeOutcome>().unwrap();
    assert_eq!((outcome.copy, outcome.copies_sent), (1, 1));
    assert_eq!(*seen.lock().unwrap(), ["once"]);
}

mod grpc {
    //! A tonic-health check hedged through a tonic `Channel`.
    use super::*;

    use tonic::transport::Channel;
    use tonic::transport::server::TcpIncoming;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;

    /// The channel, with the first call it carries stuck for an hour (a slow server, a lost
    /// packet), counting the calls.
    #[derive(Clone)]
    struct FirstStuck {
        channel: Channel,
        calls: Arc<AtomicUsize>,
    }

    impl Service<http::Request<tonic::body::Body>> for FirstStuck {
        type Response = http::Response<tonic::body::Body>;
        type Error = tonic::transport::Error;
        type Future =
            std::pin::Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;
        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            self.channel.poll_ready(cx)
        }
        fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let answer = self.channel.call(request);
            Box::pin(async move {
                if n == 0 {
                    tokio::time::sleep(STUCK).await;
                }
                answer.await
            })
        }
    }

    use std::future::Future;

    #[tokio::test(start_paused = true)]
    async fn a_tonic_health_check_is_hedged() {
        let (_reporter, health) = tonic_health::server::health_reporter();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(health)
                .serve_with_incoming(TcpIncoming::from(listener))
                .await
                .unwrap();
        });
        let channel = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let stuck = FirstStuck {
            channel,
            calls: Arc::clone(&calls),
        };
        let hedged = HedgeLayer::new(policy())
            .buffer_body(64 * 1024, tonic::body::Body::new)
            .layer(stuck);
        let mut client = HealthClient::new(hedged);
        let start = tokio::time::Instant::now();
        let answer = client
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap();
        assert_eq!(start.elapsed(), DELAY);
        assert_eq!(answer.get_ref().status(), ServingStatus::Serving);
        let outcome = *answer.extensions().get::<HedgeOutcome>().unwrap();
        assert_eq!((outcome.copy, outcome.copies_sent), (2, 2));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
