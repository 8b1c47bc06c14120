//! The tower layer on a hyper client, against an axum server it starts on 127.0.0.1: the
//! server answers 503 twice (once with `Retry-After: 0`), then 200. The request body is
//! axum's `Body`, which cannot be cloned, so the layer buffers it (up to 64 KiB) to send it
//! again. Failed responses are drained before each pause, so one pooled connection serves
//! every attempt.
//!
//! Run: `cargo run -p herd --example axum_hyper --features tower`

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::put;
use herd::asynchronous::TokioClock;
use herd::layer::{RetryLayer, RetryOutcome};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, Service, ServiceExt};

async fn flaky(State(hits): State<Arc<AtomicUsize>>, body: Bytes) -> impl IntoResponse {
    match hits.fetch_add(1, Ordering::SeqCst) {
        0 => (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "0")],
            "warming up",
        )
            .into_response(),
        1 => (StatusCode::SERVICE_UNAVAILABLE, "still warming up").into_response(),
        _ => (StatusCode::OK, format!("stored {} bytes", body.len())).into_response(),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (addr, _) = common::serve_counting("/doc", put(flaky)).await?;

    let policy = common::quick_policy(4, Duration::from_secs(5))?
        .clock(TokioClock::new())
        .build()?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let mut client = RetryLayer::new(policy)
        .buffer_body(64 * 1024, Body::new)
        .on_retry(|event| {
            println!(
                "attempt {} failed; pausing {:?}",
                event.attempt, event.pause
            )
        })
        .layer(client);

    let request =
        http::Request::put(format!("http://{addr}/doc")).body(Body::from("a document"))?;
    let response = client.ready().await?.call(request).await?;
    let outcome = *response
        .extensions()
        .get::<RetryOutcome>()
        .expect("the layer adds it");
    let status = response.status();
    let text = response.into_body().collect().await?.to_bytes();
    println!("{status} {text:?} after {} attempts", outcome.attempts);
    assert_eq!((status, outcome.attempts), (StatusCode::OK, 3));
    Ok(())
}
