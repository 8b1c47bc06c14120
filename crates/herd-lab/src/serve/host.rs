//! DNS-rebinding guard: a page on loopback answers only requests addressed to loopback.
//!
//! A web page elsewhere can point a name it controls at 127.0.0.1 and make the visitor's
//! browser call this API (same name, so the browser allows it). Such requests carry that name
//! in `Host`; the guard refuses them with 421. Requests without `Host` (not from a browser)
//! pass. Serving on another address (`herd serve --host …`) turns the guard off.
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Whether `host` (a `Host` header value, with or without a port) names loopback.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [::1]:7878
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(name, _port)| name)
    };
    let name = name.trim_end_matches('.');
    name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub(crate) async fn loopback_only(request: Request, next: Next) -> Response {
    let foreign = request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().map_or(true, |h| !is_loopback_host(h)));
    if foreign == Some(true) {
        return ApiError {
            status: StatusCode::MISDIRECTED_REQUEST,
            message: "this server answers only requests addressed to localhost".to_owned(),
        }
        .into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn loopback_names() {
        for host in [
            "127.0.0.1:7878",
            "127.0.0.1",
            "localhost:7878",
            "LOCALHOST",
            "[::1]:7878",
            "app.localhost:80",
            "127.1.2.3:1",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:7878",
            "10.0.0.1:7878",
            "[::2]:1",
            "",
            "localhost.evil.example",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
