//! The layer in gRPC mode on a real tonic client and server over 127.0.0.1: the server is
//! tonic-health's, behind a wrapper that answers the first calls with a scripted failure —
//! a status in the trailers of an HTTP 200 (as a gRPC server answers after it has started a
//! response), or a trailers-only answer (status in the headers). The client is a tonic
//! `Channel` wrapped by the layer, driven by tonic-health's generated client.
#![cfg(feature = "tower")]

use crate::support;

use support::Recorder;
use support::http::{Frames, ended_after};

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use herd::asynchronous::TokioClock;
use herd::layer::{Failure, GrpcCode, GrpcCodes, RetryLayer, RetryOutcome};
use herd::policy::RetryPolicy;
use herd::{Rule, StopReason};
use http::{HeaderMap, Request, Response};
use http_body::Frame;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::transport::Channel;
use tonic::transport::server::TcpIncoming;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower::{Layer, Service};

/// How the scripted failure carries its status.
#[derive(Clone, Copy)]
enum Carrier {
    Trailers,
    Headers,
}

/// A scripted failure: code, pushback, and where the status goes.
#[derive(Clone, Copy)]
struct Failing {
    code: u8,
    pushback: Option<&'static str>,
    carrier: Carrier,
    times: usize,
}

/// Fails the first `times` calls with `code` (and `pushback`, if any) carried as `carrier` says.
fn failing(code: u8, pushback: Option<&'static str>, carrier: Carrier, times: usize) -> Failing {
    Failing {
        code,
        pushback,
        carrier,
        times,
    }
}

fn failure(f: Failing) -> Response<Body> {
    let mut status = HeaderMap::new();
    status.insert("grpc-status", f.code.to_string().parse().unwrap());
    status.insert("grpc-message", "scripted".parse().unwrap());
    if let Some(p) = f.pushback {
        status.insert("grpc-retry-pushback-ms", p.parse().unwrap());
    }
    let mut response = match f.carrier {
        Carrier::Trailers => {
            // No data and one trailers frame: a gRPC status after the response started.
            Response::new(Body::new(Frames([Frame::trailers(status)].into())))
        }
        Carrier::Headers => {
            let mut response = Response::new(Body::empty());
            response.headers_mut().extend(status);
            response
        }
    };
    response
        .headers_mut()
        .insert("content-type", "application/grpc".parse().unwrap());
    response
}

/// tonic-health's server, failing its first `times` calls as scripted.
#[derive(Clone)]
struct Flaky<S> {
    inner: S,
    calls: Arc<AtomicUsize>,
    script: Failing,
    timeouts: Arc<Mutex<Vec<Option<String>>>>,
}

impl<S: NamedService> NamedService for Flaky<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<Request<Body>> for Flaky<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }
    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let timeout = request.headers().get("grpc-timeout");
        self.timeouts
            .lock()
            .unwrap()
            .push(timeout.map(|t| t.to_str().unwrap().to_owned()));
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.script.times {
            let script = self.script;
            return Box::pin(async move { Ok(failure(script)) });
        }
        Box::pin(self.inner.call(request))
    }
}

async fn serve(script: Failing) -> (SocketAddr, Arc<AtomicUsize>) {
    let (addr, calls, _) = serve_recording(script).await;
    (addr, calls)
}

/// Also records the `grpc-timeout` each call arrived with.
async fn serve_recording(
    script: Failing,
) -> (
    SocketAddr,
    Arc<AtomicUsize>,
    Arc<Mutex<Vec<Option<String>>>>,
) {
    let (_reporter, health) = tonic_health::server::health_reporter();
    let calls = Arc::new(AtomicUsize::new(0));
    let timeouts = Arc::new(Mutex::new(Vec::new()));
    let flaky = Flaky {
        inner: health,
        calls: Arc::clone(&calls),
        script,
        timeouts: Arc::clone(&timeouts),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(flaky)
            .serve_with_incoming(TcpIncoming::from(listener))
            .await
            .unwrap();
    });
    (addr, calls, timeouts)
}

async fn channel(addr: SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

fn policy() -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(
        Rule::exponential(Duration::from_millis(100), Duration::from_secs(5)).unwrap(),
    )
    .max_attempts(4)
    .clock(TokioClock::new())
    .build()
    .unwrap()
}

fn check() -> HealthCheckRequest {
    HealthCheckRequest {
        service: String::new(),
    }
}

/// One health check through the layer (retrying `codes`, pauses recorded, not slept) against
/// a server scripted to fail as `script`: the answer, the calls the server saw, the pauses.
async fn check_once(
    script: Failing,
    codes: GrpcCodes,
) -> (
    Result<tonic::Response<HealthCheckResponse>, tonic::Status>,
    usize,
    Vec<Duration>,
) {
    let (addr, calls) = serve(script).await;
    let recorder = Recorder::default();
    let layer = RetryLayer::new(policy())
        .sleeper(recorder.clone())
        .buffer_body(64 * 1024, Body::new)
        .grpc(codes, 1 << 20);
    let mut client = HealthClient::new(layer.layer(channel(addr).await));
    let answer = client.check(check()).await;
    (answer, calls.load(Ordering::SeqCst), recorder.pauses())
}

#[tokio::test]
async fn unavailable_in_the_trailers_is_retried_after_the_pushback() {
    let script = failing(14, Some("250"), Carrier::Trailers, 1);
    let (answer, calls, pauses) = check_once(script, GrpcCodes::default()).await;
    let response = answer.unwrap();
    assert_eq!(response.get_ref().status(), ServingStatus::Serving);
    assert_eq!(calls, 2);
    assert_eq!(pauses.len(), 1);
    assert!(
        pauses[0] >= Duration::from_millis(250) && pauses[0] <= Duration::from_millis(275),
        "the pushback, not the rule's 100 ms: {pauses:?}"
    );
    let outcome = response.extensions().get::<RetryOutcome>().unwrap();
    assert_eq!(ended_after(*outcome), (2, None));
}

#[tokio::test]
async fn a_trailers_only_answer_is_read_from_the_headers() {
    let script = failing(14, None, Carrier::Headers, 2);
    let (answer, calls, _) = check_once(script, GrpcCodes::default()).await;
    assert_eq!(answer.unwrap().get_ref().status(), ServingStatus::Serving);
    assert_eq!(calls, 3);
}

#[tokio::test]
async fn codes_outside_the_retryable_set_and_negative_pushback_are_final() {
    // INTERNAL is not retryable by default...
    let internal = failing(13, None, Carrier::Trailers, 1);
    let (answer, calls, _) = check_once(internal, GrpcCodes::default()).await;
    assert_eq!(answer.unwrap_err().code(), tonic::Code::Internal);
    assert_eq!(calls, 1);

    // ...but it is when configured so.
    let codes = GrpcCodes::default().with(GrpcCode::INTERNAL);
    let (answer, calls, _) = check_once(internal, codes).await;
    answer.unwrap();
    assert_eq!(calls, 2);

    // A negative pushback asks the client not to retry.
    let script = failing(14, Some("-1"), Carrier::Trailers, 1);
    let (answer, calls, _) = check_once(script, GrpcCodes::default()).await;
    assert_eq!(answer.unwrap_err().code(), tonic::Code::Unavailable);
    assert_eq!(calls, 1);
}

#[tokio::test]
async fn the_attempt_limit_returns_the_last_status_with_its_outcome() {
    let (addr, calls) = serve(failing(14, None, Carrier::Trailers, usize::MAX)).await;
    let outcome = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&outcome);
    let codes = Arc::new(Mutex::new(Vec::new()));
    let seen_codes = Arc::clone(&codes);
    let layer = RetryLayer::new(policy())
        .sleeper(Recorder::default())
        .buffer_body(64 * 1024, Body::new)
        .grpc(GrpcCodes::default(), 1 << 20)
        .on_retry(move |event| {
            if let Failure::Grpc(code) = event.failure {
                seen_codes.lock().unwrap().push(code);
            }
        })
        .on_give_up(move |event| *seen.lock().unwrap() = Some(event.outcome));
    let mut client = HealthClient::new(layer.layer(channel(addr).await));
    let status = client.check(check()).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let outcome = outcome.lock().unwrap().unwrap();
    assert_eq!(ended_after(outcome), (4, Some(StopReason::Attempts)));
}

#[tokio::test]
async fn each_attempt_tells_the_server_the_time_left() {
    let (addr, _, timeouts) = serve_recording(failing(14, None, Carrier::Trailers, 1)).await;
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .deadline(Duration::from_secs(5))
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let layer = RetryLayer::new(policy)
        .buffer_body(64 * 1024, Body::new)
        .grpc(GrpcCodes::default(), 1 << 20);
    let mut client = HealthClient::new(layer.layer(channel(addr).await));
    client.check(check()).await.unwrap();
    let timeouts = timeouts.lock().unwrap().clone();
    assert_eq!(timeouts.len(), 2);
    for timeout in timeouts {
        let ms: u64 = timeout
            .as_deref()
            .and_then(|t| t.strip_suffix('m'))
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("a grpc-timeout in milliseconds: {timeout:?}"));
        // Real (loopback) time passes between attempts, a little.
        assert!((4_000..=5_000).contains(&ms), "{ms} ms");
    }
}
