//! The page, embedded in the binary: no CDN, no build step, works offline.
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("../../assets/index.html");
const APP_JS: &str = include_str!("../../assets/app.js");
const APP_CSS: &str = include_str!("../../assets/app.css");
const FAVICON_SVG: &str = include_str!("../../assets/favicon.svg");

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

pub(crate) async fn index() -> Response {
    asset(INDEX_HTML, "text/html; charset=utf-8")
}

pub(crate) async fn app_js() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

pub(crate) async fn app_css() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}

pub(crate) async fn favicon() -> Response {
    asset(FAVICON_SVG, "image/svg+xml")
}
