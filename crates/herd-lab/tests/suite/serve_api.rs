//! The page's API answers bad and oversized requests with clear errors, and its numbers are
//! the library's and the simulator's.
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use herd_lab::serve::{self, ServeLimits};
use herd_sim::Watch;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support;

use support::json_body;

async fn call(app: Router, method: &str, path: &str, body: impl Into<Body>) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .expect("request");
    let response = app.oneshot(request).await.expect("router answers");
    let status = response.status();
    let value = json_body(response.into_body()).await.unwrap_or(Value::Null);
    (status, value)
}

async fn post(path: &str, body: Value) -> (StatusCode, Value) {
    call(
        serve::router(support::unhurried()),
        "POST",
        path,
        body.to_string(),
    )
    .await
}

fn error(value: &Value) -> &str {
    value["error"].as_str().unwrap_or("")
}

/// Each body posted to `path` is a 400 whose error starts with the case's text.
async fn refused(path: &str, cases: impl IntoIterator<Item = (Value, &str)>) {
    for (body, expected) in cases {
        let (status, answer) = post(path, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(error(&answer).starts_with(expected), "{body} → {answer}");
    }
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
        let response = serve::router(support::unhurried())
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
        include_str!("../../assets/index.html"),
        include_str!("../../assets/app.js"),
        include_str!("../../assets/app.css"),
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
    refused("/api/dots", cases).await;
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
        serve::router(support::unhurried()),
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

#[tokio::test]
async fn storm_figures_are_herd_sims() {
    use herd::RuleName;
    use herd_sim::{Scenario, Simulation};
    let (status, body) = post(
        "/api/storm",
        json!({ "rule": "constant", "refusal_cost": 0.1, "clients": 500, "outage_s": 5, "capacity": 20, "seed": 3 }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut scenario = Scenario::default();
    scenario.clients.count = 500;
    scenario.server.refusal_cost = 0.1;
    scenario.server.outages = vec![[0.0, 5.0]];
    scenario.server.capacity = 20;
    let direct = Simulation::new(&scenario, &herd_sim::Limits::default())
        .expect("valid")
        .run(RuleName::Constant, 3, Watch::none())
        .expect("runs");
    let direct = serde_json::to_value(&direct).expect("serializes");
    // Every figure of the run, as `herd storm --format json` prints it.
    for (field, value) in direct.as_object().expect("a run is an object") {
        assert_eq!(&body[field], value, "{field}");
    }
    assert_eq!(body["outages"], json!([[0.0, 5.0]]));
}

#[tokio::test]
async fn the_default_storm_is_spec_s() {
    let (status, body) = post("/api/storm", json!({ "rule": "immediate" })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["half_served_s"], 12.0);
    assert_eq!(body["all_served_s"], 13.9);
    assert_eq!(body["requests_per_client"], 120.5);
}

#[tokio::test]
async fn storm_parameters_are_checked_and_named() {
    let cases = [
        (
            json!({ "rule": "full", "clients": 0 }),
            "clients must be between 1 and 200000",
        ),
        (
            json!({ "rule": "full", "clients": 200_001 }),
            "clients must be between 1 and 200000",
        ),
        (
            json!({ "rule": "full", "capacity": 0 }),
            "capacity must be between 1 and 1000000",
        ),
        (
            json!({ "rule": "full", "outage_s": 601 }),
            "outage_s must be between 0 and 600",
        ),
        (
            json!({ "rule": "full", "outage_s": -1 }),
            "outage_s must be between 0 and 600",
        ),
        (
            json!({ "rule": "full", "refusal_cost": 1 }),
            "refusal_cost must be in [0, 1), got 1",
        ),
        (
            json!({ "rule": "full", "clients": -5 }),
            "clients: invalid value",
        ),
        (json!({ "rule": "loud" }), "rule: unknown rule `loud`"),
        (json!({ "clients": 5 }), "missing field `rule`"),
        (
            json!({ "rule": "full", "throttle": "envoy" }),
            "throttle must be none or one of sre-adaptive,",
        ),
    ];
    refused("/api/storm", cases).await;
}

/// The Storm scene's throttle is the storm's `[retry.throttle]` with its system's defaults:
/// the page's figures are `herd storm --throttle KIND`'s.
#[tokio::test]
async fn a_storm_with_a_throttle_is_herd_sims() {
    use herd::RuleName;
    use herd_sim::{Scenario, Simulation, ThrottleTable};
    for kind in ["grpc", "envoy-max-retries"] {
        let (status, body) = post(
            "/api/storm",
            json!({ "rule": "immediate", "clients": 500, "throttle": kind }),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let mut scenario = Scenario::default();
        scenario.clients.count = 500;
        scenario.retry.throttle = Some(ThrottleTable {
            kind: kind.to_owned(),
            ..ThrottleTable::default()
        });
        let direct = Simulation::new(&scenario, &herd_sim::Limits::default())
            .expect("valid")
            .run(RuleName::Immediate, 1, Watch::none())
            .expect("runs");
        assert_eq!(body["requests"], direct.requests, "{kind}");
        assert_eq!(body["denied_by_budget"], direct.denied_by_budget, "{kind}");
        // A throttle that bounds retries cuts immediate's storm of retries.
        let (_, none) = post("/api/storm", json!({ "rule": "immediate", "clients": 500 })).await;
        assert!(
            body["requests"].as_u64() < none["requests"].as_u64(),
            "{kind}: {} vs {}",
            body["requests"],
            none["requests"]
        );
    }
}

#[tokio::test]
async fn a_storm_past_the_attempt_cap_is_a_400_not_a_stall() {
    let (status, body) = post(
        "/api/storm",
        json!({ "rule": "immediate", "clients": 200_000, "capacity": 1, "outage_s": 600 }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        error(&body).starts_with("clients: the page can follow 200000 clients for only 9 s"),
        "{body}"
    );
}

/// The headline demo: a refusal that costs a tenth of an answer, and a rule without jitter.
/// Before, the API refused it (the run passed the attempt cap) and the page kept the previous
/// rule's chart. Now the run stops at the horizon the cap allows, and says so.
#[tokio::test]
async fn a_storm_that_never_ends_is_shown_to_the_horizon_the_cap_allows() {
    for rule in ["immediate", "constant", "exponential"] {
        let (status, body) = post("/api/storm", json!({ "rule": rule, "refusal_cost": 0.1 })).await;
        assert_eq!(status, StatusCode::OK, "{rule}: {body}");
        assert_eq!(body["served"], 0, "{rule}: nobody served");
        assert_eq!(body["cut_short"], true, "{rule}");
        let horizon = body["horizon_s"].as_f64().expect("horizon_s");
        // 2000 clients, one attempt per 100 ms step at most: 2·10⁷ attempts last 1000 s.
        assert_eq!(horizon, 950.0, "{rule}");
        assert!(
            body["requests"].as_u64().expect("requests") <= herd_lab::serve::MAX_STORM_ATTEMPTS
        );
    }
    let (_, full) = post("/api/storm", json!({ "rule": "full", "refusal_cost": 0.1 })).await;
    assert_eq!(full["cut_short"], false, "full jitter ends the storm");
    assert_eq!(full["served"], 2000);
}

#[tokio::test]
async fn six_clients_is_the_shipped_scene() {
    let (status, body) = post("/api/six", json!({ "rule": "exponential" })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["served"], 0);
    assert_eq!(body["calls"], 24);
    assert_eq!(body["last_call_tick"], 15);
    assert_eq!(body["calls_per_tick"][0], 6);
    assert_eq!(body["rows"][0][0], "down");
    let (status, body) = post("/api/six", json!({ "rule": "full", "seed": 99 })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["seed"], 99);
    let (status, body) = post("/api/six", json!({ "rule": "nope" })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error(&body).starts_with("rule:"));
}

#[tokio::test]
async fn layers_are_herd_sims_graph() {
    let (status, body) = post("/api/layers", json!({ "attempts": [3, 3, 3] })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let names: Vec<&str> = body["services"]
        .as_array()
        .expect("services")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["BFF", "search", "inventory", "stock-db"]);
    let receives: Vec<f64> = body["services"]
        .as_array()
        .expect("services")
        .iter()
        .filter_map(|s| s["predicted"].as_f64())
        .collect();
    assert_eq!(receives, [1.0, 3.0, 9.0, 27.0]);
    let (_, aware) = post(
        "/api/layers",
        json!({ "attempts": [3, 3, 3], "layer_aware": true }),
    )
    .await;
    assert_eq!(aware["services"][3]["predicted"], 3.0);

    for (body, expected) in [
        (
            json!({ "attempts": [] }),
            "attempts (layers) must be between 1 and 8",
        ),
        (
            json!({ "attempts": [1, 2, 3, 4, 5, 6, 7, 8, 9] }),
            "attempts (layers) must be between 1 and 8",
        ),
        (
            json!({ "attempts": [3, 0] }),
            "attempts[1] must be between 1 and 10",
        ),
        (
            json!({ "attempts": [3, 11] }),
            "attempts[1] must be between 1 and 10",
        ),
        (json!({ "attempts": "3" }), "attempts: invalid type"),
    ] {
        let (status, answer) = post("/api/layers", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(error(&answer).starts_with(expected), "{body} → {answer}");
    }
}

#[tokio::test]
async fn get_on_a_simulation_route_is_refused() {
    let request = Request::get("/api/storm")
        .body(Body::empty())
        .expect("request");
    let response = serve::router(support::unhurried())
        .oneshot(request)
        .await
        .expect("router answers");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_body_without_json_content_type_is_refused() {
    let request = Request::post("/api/dots")
        .body(Body::from(json!({ "rule": "full" }).to_string()))
        .expect("request");
    let response = serve::router(support::unhurried())
        .oneshot(request)
        .await
        .expect("router answers");
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn a_request_addressed_to_another_host_is_refused() {
    let request = |host: &str| {
        Request::post("/api/dots")
            .header(header::HOST, host)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({ "rule": "full" }).to_string()))
            .expect("request")
    };
    let app = serve::router(support::unhurried());
    let rebound = app
        .clone()
        .oneshot(request("evil.example:7878"))
        .await
        .expect("answers");
    assert_eq!(rebound.status(), StatusCode::MISDIRECTED_REQUEST);
    let local = app
        .oneshot(request("127.0.0.1:7878"))
        .await
        .expect("answers");
    assert_eq!(local.status(), StatusCode::OK);
    let open = serve::router(ServeLimits {
        any_host: true,
        ..ServeLimits::default()
    });
    let anywhere = open
        .oneshot(request("herd.example:7878"))
        .await
        .expect("answers");
    assert_eq!(anywhere.status(), StatusCode::OK);
}

/// The page's policies, written out here as a latency scenario file would: what the Hedging
/// scene promises to run (docs/page-and-lab.md).
fn page_scenario(
    delay_ms: f64,
    utilisation: f64,
    fan_out: u32,
    requests: u64,
) -> herd_sim::latency::LatencyScenario {
    use herd_sim::latency::{LatencyScenario, PolicyKind, PolicySpec};
    let mut scenario = LatencyScenario::default();
    let policy = |name: &str, kind| PolicySpec {
        name: name.to_owned(),
        kind,
        ..PolicySpec::default()
    };
    scenario.requests = requests;
    scenario.warmup_requests = requests / 10;
    scenario.traffic.fan_out = fan_out;
    // 20 servers, 1 ms of service: utilisation = rate · fan-out · 1 ms / 20.
    scenario.traffic.rate_per_s = utilisation * 20.0 / (f64::from(fan_out) * 0.001);
    scenario.policies = vec![
        policy("none", PolicyKind::None),
        PolicySpec {
            delay_ms,
            ..policy("delay", PolicyKind::Delay)
        },
        PolicySpec {
            quantile: 0.99,
            ..policy("percentile", PolicyKind::Percentile)
        },
        PolicySpec {
            delay_ms,
            budget_percent: Some(2.0),
            ..policy("budget", PolicyKind::Delay)
        },
        policy("tied", PolicyKind::Tied),
    ];
    scenario
}

#[tokio::test]
async fn hedge_figures_are_the_latency_models() {
    use herd_sim::latency::LatencyModel;
    let (status, body) = post(
        "/api/hedge",
        json!({ "policy": "budget", "delay_ms": 4, "utilisation": 0.4, "fan_out": 3, "requests": 10_000, "seed": 7 }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["policy"], "budget");
    assert_eq!(body["requests"], 10_000);
    assert_eq!(body["requests_capped"], false);
    let model = LatencyModel::new(&page_scenario(4.0, 0.4, 3, 10_000)).expect("valid");
    assert_eq!(body["rate_per_s"], model.scenario().traffic.rate_per_s);
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), 5);
    let none_p999 = results[0]["p999_ms"].as_f64().expect("p999");
    for (i, shown) in results.iter().enumerate() {
        let (direct, latencies) = model.run(i, 7, Watch::none()).expect("a policy");
        // Every figure of the run, as `herd hedge --format json` prints it.
        let direct = serde_json::to_value(&direct).expect("serializes");
        for (field, value) in direct.as_object().expect("a result is an object") {
            match (shown[field].as_f64(), value.as_f64()) {
                // serde_json's default parser reads a float to within an ulp, not always to
                // the nearest double (its `float_roundtrip` feature is off): a figure that
                // went through the API's JSON may come back one ulp away.
                (Some(a), Some(b)) if value.is_f64() => assert!(
                    (a - b).abs() <= 2.0 * f64::EPSILON * b.abs(),
                    "{i}: {field}: {a} against {b}"
                ),
                _ => assert_eq!(&shown[field], value, "{i}: {field}"),
            }
        }
        let p999 = shown["p999_ms"].as_f64().expect("p999");
        let pays = if i == 0 {
            Value::Null
        } else {
            Value::Bool(p999 < none_p999)
        };
        assert_eq!(shown["pays"], pays, "{i}");
        // The tail runs from the fastest request (all of them at least that slow) to the
        // slowest (one request).
        let tail = shown["tail"].as_array().expect("tail");
        let point = |p: &Value| (p[0].as_f64().expect("ms"), p[1].as_f64().expect("share"));
        let ms = |ns: u64| ns as f64 / 1e6;
        assert_eq!(point(&tail[0]), (ms(latencies[0]), 1.0), "{i}");
        assert_eq!(
            point(tail.last().expect("points")),
            (ms(*latencies.last().expect("latencies")), 1.0 / 10_000.0),
            "{i}"
        );
        assert!(tail.len() > 50, "{i}: a curve, not a few points");
    }
}

#[tokio::test]
async fn a_hedge_run_is_its_seeds() {
    let ask = |seed: u64| {
        post(
            "/api/hedge",
            json!({ "fan_out": 2, "requests": 10_000, "seed": seed }),
        )
    };
    let (status, first) = ask(3).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (_, again) = ask(3).await;
    assert_eq!(first, again, "the same seed, the same answer");
    let (_, other) = ask(4).await;
    assert_ne!(
        first["results"], other["results"],
        "another seed, other users"
    );
}

/// The scene's point: below some utilisation a hedge after 10 ms cuts the tail, above it
/// the hedges' extra work tips the pool over and the tail is far worse than without.
#[tokio::test]
async fn hedging_stops_paying_as_utilisation_rises() {
    let at = |utilisation: f64| {
        post(
            "/api/hedge",
            json!({ "utilisation": utilisation, "requests": 10_000 }),
        )
    };
    let (status, low) = at(0.3).await;
    assert_eq!(status, StatusCode::OK, "{low}");
    let (status, high) = at(0.8).await;
    assert_eq!(status, StatusCode::OK, "{high}");
    let p999 = |answer: &Value, i: usize| answer["results"][i]["p999_ms"].as_f64().expect("p999");
    let extra = |answer: &Value, i: usize| {
        answer["results"][i]["extra_load_percent"]
            .as_f64()
            .expect("extra load")
    };
    assert_eq!(low["results"][1]["policy"], "delay");
    assert!(p999(&low, 1) < p999(&low, 0), "{low}");
    assert_eq!(low["results"][1]["pays"], true);
    assert!(p999(&high, 1) > p999(&high, 0), "{high}");
    assert_eq!(high["results"][1]["pays"], false);
    // Why: the late copies' extra work makes more requests late, until nearly every
    // sub-request is hedged; a budget bounds that.
    assert!(extra(&high, 1) > 10.0 * extra(&low, 1), "{high}");
    assert_eq!(high["results"][3]["policy"], "budget");
    assert!(extra(&high, 3) < extra(&high, 1) / 10.0, "{high}");
}

#[tokio::test]
async fn a_wide_fan_out_measures_fewer_requests_and_says_so() {
    let (status, body) = post("/api/hedge", json!({ "fan_out": 50, "utilisation": 0.1 })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let requests = body["requests"].as_u64().expect("requests");
    assert_eq!(body["requests_capped"], true);
    assert_eq!(requests, serve::hedge::affordable(50));
    assert!(serve::hedge::copies_estimate(requests, 50) <= serve::MAX_HEDGE_COPIES);
    assert!(serve::hedge::copies_estimate(requests + 1, 50) > serve::MAX_HEDGE_COPIES);
    assert_eq!(body["results"][0]["user_requests"], requests);
}

#[tokio::test]
async fn hedge_parameters_are_checked_and_named() {
    let cases = [
        (
            json!({ "policy": "sometimes" }),
            "policy: unknown policy `sometimes`; one of none, delay, percentile, budget, tied",
        ),
        (
            json!({ "delay_ms": -1 }),
            "delay_ms must be between 0 and 1000, got -1",
        ),
        (
            json!({ "delay_ms": 5000 }),
            "delay_ms must be between 0 and 1000, got 5000",
        ),
        (json!({ "delay_ms": "ten" }), "delay_ms: invalid type"),
        (
            json!({ "utilisation": 0 }),
            "utilisation must be above 0 and at most 1, got 0",
        ),
        (
            json!({ "utilisation": -0.2 }),
            "utilisation must be above 0 and at most 1, got -0.2",
        ),
        (
            json!({ "utilisation": 1.5 }),
            "utilisation must be above 0 and at most 1, got 1.5",
        ),
        (
            json!({ "fan_out": 0 }),
            "fan_out must be between 1 and 50, got 0",
        ),
        (
            json!({ "fan_out": 51 }),
            "fan_out must be between 1 and 50, got 51",
        ),
        (json!({ "fan_out": -3 }), "fan_out: invalid value"),
        (
            json!({ "requests": 5 }),
            "requests must be between 10000 and 200000, got 5",
        ),
        (json!({ "seed": -1 }), "seed: invalid value"),
        (json!({ "copies": 3 }), "copies: unknown field `copies`"),
        (
            json!({ "requests": 200_000 }),
            "requests: 200000 requests at fan-out 10 may send 19800000 copies over the five \
             policies, more than the page's 6000000; at most 60606 at this fan-out",
        ),
    ];
    refused("/api/hedge", cases).await;
}

#[tokio::test]
async fn the_rules_route_lists_the_hedging_policies_and_limits() {
    let (status, body) = call(
        serve::router(support::unhurried()),
        "GET",
        "/api/rules",
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["hedge_policies"],
        json!(["none", "delay", "percentile", "budget", "tied"])
    );
    assert_eq!(body["limits"]["hedge_copies"], serve::MAX_HEDGE_COPIES);
    assert_eq!(body["limits"]["hedge_fan_out"], serve::MAX_HEDGE_FAN_OUT);
}
