//! The page's generic model routes: `GET /api/models` lists the simulator's registry, and
//! `POST /api/model` runs any model's scenario (TOML text or a JSON tree) through it, with
//! the same report `herd storm FILE --format json` prints, the page's limits checked before a
//! slot is taken, and one-line 400s naming the field and line. Before, the page had a route
//! per scene and none of these answered (404).
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use herd::RuleName;
use herd_lab::serve::{self, ServeLimits};
use herd_sim::model::Variant;
use herd_sim::{Limits, registry};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support;

use support::json_body;

async fn call_with(limits: ServeLimits, request: Request<Body>) -> (StatusCode, Value) {
    let response = serve::router(limits)
        .oneshot(request)
        .await
        .expect("router answers");
    let status = response.status();
    let value = json_body(response.into_body()).await.unwrap_or(Value::Null);
    (status, value)
}

fn model_request(body: impl Into<Body>) -> Request<Body> {
    Request::post("/api/model")
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .expect("request")
}

async fn post(body: &Value) -> (StatusCode, Value) {
    call_with(ServeLimits::default(), model_request(body.to_string())).await
}

fn error(value: &Value) -> &str {
    value["error"].as_str().unwrap_or("")
}

/// The report of one run, straight from the registry, as `herd storm FILE` computes it.
fn direct(text: &str, variant: Variant, seed: u64) -> Value {
    registry::check_text(text, &Limits::default())
        .expect("a valid scenario")
        .report(&[variant], &[seed], &herd_sim::Cancel::new())
        .expect("it runs")
        .to_json()
}

#[tokio::test]
async fn models_lists_the_registry() {
    let request = Request::get("/api/models").body(Body::empty()).unwrap();
    let (status, answer) = call_with(ServeLimits::default(), request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let listed = answer.as_array().expect("a list");
    assert_eq!(listed.len(), registry::MODELS.len(), "{answer}");
    for (entry, model) in listed.iter().zip(registry::MODELS) {
        assert_eq!(entry["name"], model.name);
        assert_eq!(entry["about"], model.about);
        assert_eq!(entry["metrics"], json!(model.metrics));
    }
    let names: Vec<&str> = listed.iter().filter_map(|m| m["name"].as_str()).collect();
    assert!(
        names.contains(&"storm") && names.contains(&"metastable"),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_storm_scenario_runs_as_herd_storm_runs_it() {
    let text = "horizon_s = 60\n[server]\nrefusal_cost = 0.05\n";
    let (status, answer) = post(&json!({ "scenario": text, "variant": "full", "seed": 3 })).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["model"], "storm");
    assert_eq!(answer["variant"], "full");
    assert_eq!(answer["seed"], 3);
    assert_eq!(answer["report"], direct(text, RuleName::Full.into(), 3));
    let served = &answer["report"]["results"][0]["metrics"]["served"];
    assert_eq!(served.as_f64(), Some(2000.0), "{answer}");
    // Without a variant or seed: the scenario's first rule and its seed.
    let (status, answer) = post(&json!({ "scenario": "horizon_s = 30\n" })).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["variant"], "immediate");
    assert_eq!(answer["seed"], 1);
}

#[tokio::test]
async fn a_metastable_tree_runs_as_its_file_would() {
    let tree = json!({ "model": "metastable", "horizon_s": 40, "retry": { "budget_percent": 10 } });
    let (status, answer) =
        post(&json!({ "scenario": tree, "variant": "constant", "seed": 2 })).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["model"], "metastable");
    let text = "model = \"metastable\"\nhorizon_s = 40\n[retry]\nbudget_percent = 10\n";
    assert_eq!(answer["report"], direct(text, RuleName::Constant.into(), 2));
    let windows = answer["report"]["results"][0]["windows"].as_array();
    assert_eq!(windows.map(Vec::len), Some(40), "{answer}");
}

#[tokio::test]
async fn bad_scenarios_are_400s_naming_the_field_and_line() {
    let cases = [
        (
            json!({ "scenario": "[server\ncapacity = 1\n" }),
            "scenario: ",
            Some("line 1"),
        ),
        (
            json!({ "scenario": "model = \"warp\"\n" }),
            "scenario: model",
            Some("must be one of storm, metastable"),
        ),
        (
            json!({ "scenario": "[server]\ncapacity = 0\nrefusal_cost = 2\n" }),
            "scenario: server.refusal_cost (line 3)",
            None,
        ),
        (
            json!({ "scenario": { "server": { "capacity": "many" } } }),
            "scenario: server.capacity",
            Some("invalid type"),
        ),
        (
            json!({ "scenario": { "server": { "capacity": null } } }),
            "scenario: not a scenario tree",
            None,
        ),
        (json!({ "scenario": 7 }), "scenario: must be", None),
        (json!({}), "missing field `scenario`", None),
        (
            json!({ "scenario": "", "colour": "red" }),
            "colour: unknown field `colour`",
            None,
        ),
        (
            json!({ "scenario": "", "variant": "warp" }),
            "variant: ",
            None,
        ),
        (
            json!({
                "scenario": "model = \"latency\"\nrequests = 10000\nwarmup_requests = 1000\n",
                "variant": "full"
            }),
            "variant: model \"latency\" has no variant \"full\"",
            None,
        ),
    ];
    for (body, starts, contains) in cases {
        let (status, answer) = post(&body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} → {answer}");
        let message = error(&answer);
        assert!(message.starts_with(starts), "{body} → {message}");
        if let Some(part) = contains {
            assert!(message.contains(part), "{body} → {message}");
        }
        assert!(!message.contains('\n'), "one line: {message}");
    }
}

#[tokio::test]
async fn a_run_past_the_page_limits_is_refused_before_it_takes_a_slot() {
    // No slot at all: a request that reaches one answers 503, so a 400 was decided before.
    let no_slots = ServeLimits {
        max_concurrent: 0,
        ..ServeLimits::default()
    };
    let too_many = json!({ "scenario": "[clients]\ncount = 1000000\n" });
    let (status, answer) = call_with(no_slots, model_request(too_many.to_string())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let message = error(&answer);
    assert!(
        message.starts_with("scenario: clients.count (line 2)"),
        "{message}"
    );
    assert!(
        message.contains(&Limits::interactive().max_clients.to_string()),
        "{message}"
    );
    let sound = json!({ "scenario": "horizon_s = 30\n" });
    let (status, _) = call_with(no_slots, model_request(sound.to_string())).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn deeply_nested_scenarios_are_400s_not_a_stack_overflow() {
    let depth = 6000;
    let text = format!("a = {}{}\n", "[".repeat(depth), "]".repeat(depth));
    let (status, answer) = post(&json!({ "scenario": text })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        error(&answer).starts_with("scenario: a (line 1)"),
        "{answer}"
    );
    let tree = format!(
        "{{\"scenario\": {{\"a\": {}{}}}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let (status, answer) = call_with(ServeLimits::default(), model_request(tree)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(error(&answer).contains("recursion limit"), "{answer}");
}

#[tokio::test]
async fn a_huge_scenario_is_refused_by_size() {
    let text = format!("# {}\n", "x".repeat(ServeLimits::default().max_body_bytes));
    let (status, answer) = post(&json!({ "scenario": text })).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    assert_eq!(error(&answer), "request body too large");
}
