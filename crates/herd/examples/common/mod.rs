//! Setup the examples share, so that each file shows only its own lesson. Each example
//! includes this with `#[path = "common/mod.rs"] mod common;`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use herd::policy::PolicyBuilder;
use herd::{InvalidRule, RetryPolicy, Rule};

/// A policy builder for a demonstration: full jitter with pauses between 1 ms and 20 ms, so
/// that the example finishes at once, at most `max_attempts` attempts within `deadline`.
/// The caller picks the clock (if not the system's) and builds it.
pub fn quick_policy(max_attempts: u32, deadline: Duration) -> Result<PolicyBuilder, InvalidRule> {
    Ok(RetryPolicy::builder(Rule::full(
        Duration::from_millis(1),
        Duration::from_millis(20),
    )?)
    .max_attempts(max_attempts)
    .deadline(deadline))
}

/// Serves one route on a free loopback port in the background, its handler counting the
/// requests in the shared state: the address and the count.
#[allow(dead_code)] // only the examples with an HTTP server use it
pub async fn serve_counting(
    path: &str,
    handler: axum::routing::MethodRouter<Arc<AtomicUsize>>,
) -> std::io::Result<(SocketAddr, Arc<AtomicUsize>)> {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route(path, handler)
        .with_state(Arc::clone(&hits));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((addr, hits))
}
