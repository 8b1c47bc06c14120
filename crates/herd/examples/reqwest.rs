//! reqwest through `reqwest-middleware` with herd's middleware, against an axum server it
//! starts on 127.0.0.1 that answers 503 with `Retry-After: 0` once, then 200.
//!
//! Run: `cargo run -p herd --example reqwest --features reqwest`

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use herd::asynchronous::TokioClock;
use herd::middleware::RetryMiddleware;

async fn flaky(State(hits): State<Arc<AtomicUsize>>) -> impl IntoResponse {
    if hits.fetch_add(1, Ordering::SeqCst) == 0 {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "0")],
            "busy",
        )
            .into_response()
    } else {
        (StatusCode::OK, "hello").into_response()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, hits) = common::serve_counting("/", get(flaky)).await?;

    let policy = common::quick_policy(3, Duration::from_secs(5))?
        .clock(TokioClock::new())
        .build()?;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy))
        .build();
    let response = client.get(format!("http://{addr}/")).send().await?;
    let status = response.status();
    println!(
        "{status} {:?} after {} requests",
        response.text().await?,
        hits.load(Ordering::SeqCst)
    );
    assert_eq!((status, hits.load(Ordering::SeqCst)), (StatusCode::OK, 2));
    Ok(())
}
