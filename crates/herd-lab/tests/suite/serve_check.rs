//! The *Your config* scene's API on a real socket: a pasted configuration is read by
//! `herd_sim::check` as `herd check` reads a file, its storms run beside the fix, and bad
//! input is refused with the field (and the pasted text's line) named.
use crate::support;

use herd_lab::serve::check::{EXAMPLES, MAX_CHECK_BODY_BYTES, MAX_CHECK_TEXT_BYTES};
use herd_sim::check::storm::compare;
use herd_sim::check::{self, Input};
use herd_sim::{Limits, Scenario};
use serde_json::{Value, json};

use support::PageServer;

/// A gRPC config written as the guide advises: three attempts, gRPC's own jittered backoff, a
/// retry throttle.
const GOOD: &str = r#"{
  "methodConfig": [{
    "name": [{"service": "shop.Cart"}],
    "timeout": "5s",
    "retryPolicy": {
      "maxAttempts": 3,
      "initialBackoff": "0.2s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}"#;

async fn server() -> PageServer {
    PageServer::start(support::unhurried()).await
}

/// The storm figures the API must show for `text`: `herd_sim::check` run here directly.
fn expected_storms(text: &str) -> Vec<(u64, f64, u64, u64, f64, u64)> {
    let report = check::check(&[Input::new("config", text)]).expect("reads");
    report
        .configs
        .iter()
        .filter(|t| t.retries())
        .take(herd_lab::serve::check::MAX_CHECK_STORMS)
        .map(|t| {
            let c = compare(
                t,
                &Scenario::default(),
                &Limits::default(),
                1,
                &herd_sim::Cancel::new(),
            )
            .expect("runs");
            (
                c.config.served,
                c.config.requests_per_client,
                c.config.peak_after_outage,
                c.fix.served,
                c.fix.requests_per_client,
                c.fix.peak_after_outage,
            )
        })
        .collect()
}

fn shown_storms(answer: &Value) -> Vec<(u64, f64, u64, u64, f64, u64)> {
    answer["storm"]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            let n = |side: &str, k: &str| r[side][k].as_u64().expect(k);
            let f = |side: &str, k: &str| r[side][k].as_f64().expect(k);
            (
                n("config", "served"),
                f("config", "requests_per_client"),
                n("config", "peak_after_outage"),
                n("fix", "served"),
                f("fix", "requests_per_client"),
                n("fix", "peak_after_outage"),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_good_config_is_translated_with_each_field_set_or_default() {
    let server = server().await;
    let (status, answer) = server.post("check", &json!({ "text": GOOD })).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["system"], "grpc");
    assert_eq!(answer["detected"], true);
    let policy = &answer["policies"][0];
    assert_eq!(policy["name"], "shop.Cart/*");
    assert_eq!(policy["max_attempts"], 3);
    // grpc-go jitters each pause ±20 % around the current backoff: grpc-retry.
    assert_eq!(policy["backoff"]["rule"], "grpc-retry");
    assert_eq!(policy["backoff"]["jitter"], 0.2);
    assert_eq!(policy["backoff"]["base_ms"], 200.0);
    assert_eq!(policy["timeout_ms"], 5000.0);
    assert_eq!(policy["throttle"]["kind"], "grpc");
    let fields = policy["fields"].as_array().expect("fields");
    assert!(
        fields
            .iter()
            .any(|f| f["field"] == "maxAttempts" && f["source"] == "set" && f["line"] == 6),
        "{fields:?}"
    );
    let severities: Vec<&str> = answer["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["severity"].as_str().expect("severity"))
        .collect();
    assert!(
        !severities.contains(&"error") && !severities.contains(&"warning"),
        "a good config has no warning: {severities:?}"
    );
    assert_eq!(shown_storms(&answer), expected_storms(GOOD));
    assert_eq!(answer["storm"]["not_run"], 0);
}

#[tokio::test]
async fn a_config_with_findings_shows_them_by_line_and_its_storm_beside_the_fix() {
    let server = server().await;
    let (name, _, text) = EXAMPLES[0];
    assert_eq!(name, "grpc-service-config.json");
    let (status, answer) = server.post("check", &json!({ "text": text })).await;
    assert_eq!(status, 200, "{answer}");
    let report = check::check(&[Input::new("config", text)]).expect("reads");
    let shown: Vec<(String, u64, String)> = answer["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["code"].as_str().expect("code").to_owned(),
                f["line"].as_u64().expect("line"),
                f["fix"].as_str().expect("fix").to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, u64, String)> = report
        .findings
        .iter()
        .map(|f| (f.code.to_owned(), f.line as u64, f.fix.clone()))
        .collect();
    assert_eq!(shown, expected);
    // maxAttempts 8 is read as 5, on the line that says 8.
    let line = text
        .lines()
        .position(|l| l.contains("\"maxAttempts\": 8"))
        .expect("the example sets 8")
        + 1;
    assert!(
        shown
            .iter()
            .any(|(code, l, _)| code == "clamped" && *l == line as u64),
        "{shown:?}"
    );
    assert_eq!(answer["policies"][1]["max_attempts"], 5);
    let storms = shown_storms(&answer);
    assert_eq!(storms, expected_storms(text));
    assert_eq!(storms.len(), 2);
    assert!(
        answer["storm"]["runs"][0]["config"]["arrivals"]
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.len() <= 600),
        "the chart's windows are sent, at most 600"
    );
}

#[tokio::test]
async fn a_malformed_yaml_is_a_400_naming_text_and_its_line() {
    let server = server().await;
    let text = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n  http:\n  - retries: {attempts: 3\n    route: x\n";
    let (status, answer) = server.post("check", &json!({ "text": text })).await;
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().expect("error");
    assert!(error.starts_with("text: line "), "{error}");
    let reference = check::check(&[Input::new("config", text)]).expect_err("malformed");
    assert!(reference.line > 0, "{reference}");
    assert!(
        error.starts_with(&format!("text: line {}", reference.line)),
        "{error} names the line of {reference}"
    );
}

#[tokio::test]
async fn bad_fields_are_400s_naming_them() {
    let server = server().await;
    let cases = [
        (
            json!({ "text": GOOD, "format": "nginx" }),
            "format: unknown system",
        ),
        (json!({ "text": "hello: world\n" }), "format: cannot tell"),
        (json!({ "text": "  \n" }), "text: empty"),
        (
            json!({ "text": GOOD, "colour": 1 }),
            "colour: unknown field `colour`",
        ),
        (
            json!({ "text": "x".repeat(MAX_CHECK_TEXT_BYTES + 1) }),
            "text: 65537 bytes",
        ),
    ];
    for (body, start) in cases {
        let (status, answer) = server.post("check", &body).await;
        assert_eq!(status, 400, "{answer}");
        let error = answer["error"].as_str().expect("error");
        assert!(
            error.starts_with(start),
            "{error:?} should start with {start:?}"
        );
    }
    // A named format overrides detection: gRPC's JSON read as Envoy finds no route.
    let (status, answer) = server
        .post("check", &json!({ "text": GOOD, "format": "grpc" }))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["detected"], false);
}

/// The storm's knobs, as `herd check --clients --capacity-rps --outage-s`: the run is the
/// default storm with them, figure for figure, and a knob out of range is named.
#[tokio::test]
async fn the_storm_takes_clients_capacity_and_outage() {
    let server = server().await;
    let body = json!({ "text": GOOD, "clients": 300, "capacity": 12, "outage_s": 2.5 });
    let (status, answer) = server.post("check", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["storm"]["clients"], 300);
    assert_eq!(answer["storm"]["outages"], json!([[0.0, 2.5]]));
    let d = Scenario::default();
    let scenario = Scenario {
        clients: herd_sim::Clients {
            count: 300,
            ..d.clients.clone()
        },
        server: herd_sim::Server {
            capacity: 12,
            outages: vec![[0.0, 2.5]],
            ..d.server.clone()
        },
        ..d
    };
    let t = &check::check(&[Input::new("config", GOOD)]).unwrap().configs[0];
    let c = compare(
        t,
        &scenario,
        &Limits::default(),
        1,
        &herd_sim::Cancel::new(),
    )
    .unwrap();
    let run = &answer["storm"]["runs"][0];
    assert_eq!(run["config"]["served"], c.config.served);
    assert_eq!(
        run["config"]["requests_per_client"],
        c.config.requests_per_client
    );
    assert_eq!(run["fix"]["peak_after_outage"], c.fix.peak_after_outage);
    assert_eq!(run["capacity"], 12.0);
    // No outage at all is allowed: nobody fails, nobody retries.
    let (status, calm) = server
        .post("check", &json!({ "text": GOOD, "outage_s": 0 }))
        .await;
    assert_eq!(status, 200, "{calm}");
    assert_eq!(calm["storm"]["outages"], json!([]));
    assert_eq!(
        calm["storm"]["runs"][0]["config"]["requests_per_client"],
        1.0
    );
    for (body, start) in [
        (
            json!({ "text": GOOD, "clients": 0 }),
            "clients must be between 1 and 200000",
        ),
        (
            json!({ "text": GOOD, "capacity": 0 }),
            "capacity must be between 1 and 1000000",
        ),
        (
            json!({ "text": GOOD, "outage_s": 601 }),
            "outage_s must be between 0 and 600",
        ),
        (
            json!({ "text": GOOD, "outage_s": -1 }),
            "outage_s must be between",
        ),
    ] {
        let (status, answer) = server.post("check", &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let error = answer["error"].as_str().expect("error");
        assert!(
            error.starts_with(start),
            "{error:?} should start with {start:?}"
        );
    }
}

#[tokio::test]
async fn an_over_size_body_is_a_413() {
    let server = server().await;
    let body = json!({ "text": "x".repeat(MAX_CHECK_BODY_BYTES) });
    let (status, answer) = server.post("check", &body).await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["error"], "request body too large");
}

#[tokio::test]
async fn the_examples_are_the_shipped_files() {
    let server = server().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
    let uri: hyper::Uri = format!("http://{}/api/check/examples", server.addr)
        .parse()
        .expect("uri");
    let response = client.get(uri).await.expect("answers");
    assert_eq!(response.status(), 200);
    let list = support::json_body(response.into_body())
        .await
        .expect("JSON");
    let list = list.as_array().expect("a list");
    assert_eq!(list.len(), EXAMPLES.len());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/configs");
    for example in list {
        let name = example["name"].as_str().expect("name");
        let file = std::fs::read_to_string(dir.join(name)).expect("shipped");
        assert_eq!(example["text"], file, "{name}");
        let (status, answer) = server.post("check", &json!({ "text": file })).await;
        assert_eq!(status, 200, "{name}: {answer}");
        assert!(
            !answer["storm"]["runs"].as_array().expect("runs").is_empty(),
            "{name} retries, so it has a storm"
        );
    }
}

#[tokio::test]
async fn a_storm_past_the_work_cap_is_refused_before_it_runs_naming_the_line() {
    let server = server().await;
    // A budget, not a count, bounds Linkerd's retries, and the route's timeout is an hour:
    // 2000 clients may each try once a step for the whole hour, more than the cap allows.
    let text = "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: slow\nspec:\n  routes:\n  - name: GET /report\n    isRetryable: true\n    timeout: 3600s\n";
    let (status, answer) = server.post("check", &json!({ "text": text })).await;
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().expect("error");
    let t = &check::check(&[Input::new("config", text)])
        .expect("reads")
        .configs[0];
    assert!(
        error.starts_with(&format!("text: line {}: {}: the storms", t.line, t.name)),
        "{error}"
    );
    assert!(
        error.contains("more than the page's cap of 20000000"),
        "{error}"
    );
    // The same route with Linkerd's default 10 s timeout runs.
    let (status, answer) = server
        .post(
            "check",
            &json!({ "text": text.replace("    timeout: 3600s\n", "") }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
}
