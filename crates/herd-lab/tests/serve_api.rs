//! The page's API answers bad and oversized requests with clear errors, and its numbers are
//! the library's and the simulator's.
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use herd_lab::serve::{self, ServeLimits};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn call(app: Router, method: &str, path: &str, body: impl Into<Body>) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .expect("request");
    let response = app.oneshot(request).await.expect("router answers");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

async fn post(path: &str, body: Value) -> (StatusCode, Value) {
    call(
        serve::router(ServeLimits::default()),
        "POST",
        path,
        body.to_string(),
    )
    .await
}

fn error(value: &Value) -> &str {
    value["error"].as_str().unwrap_or("")
}

#[tokio::test]
async fn the_page_and_its_assets_are_served() {
    for (path, kind) in [
        ("/", "text/html"),
        ("/app.js", "text/javascript"),
        ("/app.css", "text/css"),
        ("/favicon.svg", "image/svg+xml"),
    ] {
        let request = Request::get(path).body(Body::empty()).expect("request");
        let response = serve::router(ServeLimits::default())
            .oneshot(request)
            .await
            .expect("router answers");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let content_type = response.headers()[header::CONTENT_TYPE]
            .to_str()
            .expect("ascii");
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
    }
}

#[tokio::test]
async fn the_page_loads_nothing_from_elsewhere() {
    for asset in [
        include_str!("../assets/index.html"),
        include_str!("../assets/app.js"),
        include_str!("../assets/app.css"),
    ] {
        // The SVG namespace is a name, not a fetch.
        let asset = asset.replace("http://www.w3.org/2000/svg", "");
        for line in asset.lines() {
            assert!(
                !line.contains("http://") && !line.contains("https://"),
                "no absolute URLs: {line}"
            );
        }
    }
}

#[tokio::test]
async fn an_unknown_rule_is_a_400_naming_rule() {
    let (status, body) = post("/api/dots", json!({ "rule": "sometimes" })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        error(&body).starts_with("rule: unknown rule `sometimes`"),
        "{body}"
    );
}

#[tokio::test]
async fn out_of_range_numbers_are_400s_naming_the_field() {
    let cases = [
        (
            json!({ "rule": "full", "clients": 0 }),
            "clients must be between 1 and 1000",
        ),
        (
            json!({ "rule": "full", "clients": 5000 }),
            "clients must be between 1 and 1000",
        ),
        (
            json!({ "rule": "full", "failures": 99 }),
            "failures must be between 1 and 12",
        ),
        (
            json!({ "rule": "full", "cap_ms": 1 }),
            "cap_ms: cap (1 ms) must be at least base",
        ),
        (
            json!({ "rule": "full", "base_ms": -5 }),
            "base_ms must be a finite number",
        ),
        (
            json!({ "rule": "constant", "pause_ms": 0 }),
            "pause_ms: pause must be longer than zero",
        ),
    ];
    for (body, expected) in cases {
        let (status, answer) = post("/api/dots", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(error(&answer).starts_with(expected), "{body} → {answer}");
    }
}

#[tokio::test]
async fn malformed_bodies_are_400s_naming_the_field() {
    let (status, body) = post("/api/dots", json!({ "rule": "full", "clients": "many" })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error(&body).starts_with("clients: invalid type"), "{body}");

    let (status, body) = post("/api/dots", json!({ "rule": "full", "jitter": true })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error(&body).contains("unknown field `jitter`"), "{body}");

    let (status, body) = call(
        serve::router(ServeLimits::default()),
        "POST",
        "/api/dots",
        "{not json",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(!error(&body).is_empty(), "{body}");
}

#[tokio::test]
async fn an_oversized_body_is_a_413() {
    let padding = "x".repeat(ServeLimits::default().max_body_bytes + 1);
    let (status, body) = post("/api/dots", json!({ "rule": "full", "pad": padding })).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error(&body), "request body too large");
}

#[tokio::test]
async fn a_busy_server_answers_503_with_retry_after() {
    let app = serve::router(ServeLimits {
        max_concurrent: 0,
        ..ServeLimits::default()
    });
    let request = Request::post("/api/dots")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({ "rule": "full" }).to_string()))
        .expect("request");
    let response = app.oneshot(request).await.expect("router answers");
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[header::RETRY_AFTER], "1");
}

#[tokio::test]
async fn unknown_api_routes_are_json_404s() {
    let (status, body) = post("/api/nothing", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!error(&body).is_empty());
}

#[tokio::test]
async fn dots_are_the_rules_own_pauses() {
    use herd::rng::SplitMix64;
    use herd::{RuleName, RuleParams, RuleState};
    let (status, body) = post(
        "/api/dots",
        json!({ "rule": "decorrelated", "clients": 3, "failures": 4, "seed": 9 }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let rule = RuleName::Decorrelated
        .build(&RuleParams::default())
        .expect("rule");
    let mut rng = SplitMix64::new(9);
    for client in 0..3 {
        let mut state = RuleState::default();
        let mut at = 0.0;
        for failure in 0..4 {
            at += rule.pause(&mut state, &mut rng).as_nanos() as f64 / 1e6;
            let shown = body["rows"][failure]["retry_ms"][client]
                .as_f64()
                .expect("number");
            assert!(
                (shown - at).abs() < 1e-6,
                "client {client}, failure {failure}"
            );
        }
    }
}
