//! Answers for the loopback HTTP servers (not in model-checking builds, which have no axum).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

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
