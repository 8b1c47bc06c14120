//! One lab service: an axum app that counts what it receives and calls its callees.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Request, StatusCode, Uri};
use http_body_util::Full;
use hyper::body::Bytes;
use tower::ServiceExt;

use super::edge::EdgeService;
use herd::layer::RETRY_EXHAUSTED;

/// What a service knows: its counter, whether it fails, and its outgoing edges.
pub(crate) struct ServiceState {
    pub(crate) received: AtomicU64,
    pub(crate) fails: bool,
    pub(crate) calls: Vec<(Uri, EdgeService)>,
}

/// Handles one request: count it; a failing service answers 503 at once; otherwise make
/// every call (each through its edge's retry stack) and answer 200 when all succeeded, else
/// 503 — carrying the exhausted mark when a failed call came back marked, so that callers
/// above know a layer below already retried.
pub(crate) async fn handle(State(state): State<Arc<ServiceState>>) -> Response {
    state.received.fetch_add(1, Ordering::Relaxed);
    if state.fails {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let mut failed = false;
    let mut marked = false;
    for (uri, edge) in &state.calls {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = uri.clone();
        match edge.clone().oneshot(req).await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => {
                failed = true;
                marked |= r.headers().contains_key(RETRY_EXHAUSTED);
            }
            Err(_) => failed = true,
        }
    }
    if !failed {
        return StatusCode::OK.into_response();
    }
    let mut response = StatusCode::SERVICE_UNAVAILABLE.into_response();
    if marked {
        response
            .headers_mut()
            .insert(RETRY_EXHAUSTED, HeaderValue::from_static("1"));
    }
    response
}
