//! Answers and bodies for the loopback HTTP servers (not in model-checking builds, which have
//! no axum).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use herd::Rule;
use herd::StopReason;
use herd::asynchronous::TokioClock;
use herd::budget::RetryBudget;
use herd::layer::RetryOutcome;
use herd::policy::RetryPolicy;
use http_body::Frame;

/// The `n`th answer (from 0) of a server that is busy once, asking for a pause of
/// `retry_after` seconds, then says hello.
pub fn busy_once_then_hello(n: usize, retry_after: &'static str) -> Response {
    if n == 0 {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", retry_after)],
            "busy",
        )
            .into_response()
    } else {
        (StatusCode::OK, "hello").into_response()
    }
}

/// A body that hands out its frames one by one, of unknown length, as a stream read from a
/// socket would: data for an upload, a trailers frame for a gRPC status after the response
/// started.
pub struct Frames(pub VecDeque<Frame<Bytes>>);

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().0.pop_front().map(Ok))
    }
    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }
}

/// A streaming body of unknown length, as an upload read from a socket: `chunks`, one frame
/// each.
pub fn streaming(chunks: &[&'static str]) -> axum::body::Body {
    axum::body::Body::new(Frames(
        chunks
            .iter()
            .map(|c| Frame::data(Bytes::from_static(c.as_bytes())))
            .collect(),
    ))
}

/// Serves `app` on an ephemeral port of 127.0.0.1, in the background; its address.
pub async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// How a call through the layer went: the attempts made, and why it stopped (`None`: a
/// success).
pub fn ended_after(outcome: RetryOutcome) -> (u32, Option<StopReason>) {
    (outcome.attempts, outcome.reason)
}

/// Up to five attempts with no pause between them, on tokio's clock, each retry paid from
/// `budget`: a layer behind a shared retry budget.
pub fn spending(budget: RetryBudget<TokioClock>) -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(Rule::immediate())
        .max_attempts(5)
        .budget(budget)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

/// An in-process service that counts its calls and answers the `n`th (from 0) with
/// `answer(request, n)`, and the count.
pub fn counting<R, F, Fut>(
    answer: F,
) -> (
    tower::util::ServiceFn<impl Fn(R) -> Fut + Clone>,
    Arc<AtomicUsize>,
)
where
    F: Fn(R, usize) -> Fut + Clone,
{
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let service = tower::service_fn(move |request: R| {
        answer(request, counted.fetch_add(1, Ordering::SeqCst))
    });
    (service, calls)
}

/// The reqwest error of the last attempt, which the middleware returns unchanged.
#[cfg(feature = "reqwest")]
pub fn passed_through(error: &reqwest_middleware::Error) -> &reqwest::Error {
    match error {
        reqwest_middleware::Error::Reqwest(e) => e,
        other => panic!("not the last attempt's reqwest error: {other:#}"),
    }
}

/// GETs `url` through `client`, which must fail: its error.
#[cfg(feature = "reqwest")]
pub async fn get_fails(
    client: &reqwest_middleware::ClientWithMiddleware,
    url: String,
) -> reqwest_middleware::Error {
    client.get(url).send().await.unwrap_err()
}

/// An address of 127.0.0.1 where nothing listens: a port bound, read and closed again.
pub fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}
