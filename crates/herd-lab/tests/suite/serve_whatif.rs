//! The *Your config* scene's what-if on a real socket: a pasted configuration's retrying
//! policies through the three faults, as set beside the fix, the figures herd-sim's own
//! `compare` gives; bad knobs named, and work past the page's limits refused before it runs.
use crate::support;

use herd_lab::serve::ServeLimits;
use herd_lab::serve::check::EXAMPLES;
use herd_lab::serve::whatif::{
    MAX_LOAD_POINTS, MAX_WHATIF_ATTEMPTS, MAX_WHATIF_POLICIES, MAX_WHATIF_RUN_S,
};
use herd_sim::check::whatif::{self, Comparison, WhatIfOptions};
use herd_sim::check::{self, Input};
use herd_sim::{Cancel, Limits};
use serde_json::{Value, json};

use support::PageServer;

async fn server() -> PageServer {
    PageServer::start(support::unhurried()).await
}

/// herd-sim's comparisons of `text`'s retrying policies under `options`, run here directly.
fn expected(text: &str, options: &WhatIfOptions) -> Vec<(String, Comparison)> {
    let report = check::check(&[Input::new("config", text)]).expect("reads");
    let limits = Limits {
        max_run_attempts: MAX_WHATIF_ATTEMPTS,
        ..Limits::interactive()
    };
    report
        .configs
        .iter()
        .filter(|t| t.retries())
        .map(|t| {
            let c = whatif::compare(&[t], options, &limits, &Cancel::new()).expect("runs");
            (t.name.clone(), c)
        })
        .collect()
}

/// `shown` is `expected`, numbers to within their last bit or two (serde_json's reader, without
/// its `float_roundtrip` feature, may round the last digit of a printed `f64` differently).
fn same(shown: &Value, expected: &Value) {
    match (shown, expected) {
        (Value::Object(a), Value::Object(b)) => {
            assert_eq!(a.len(), b.len(), "{shown} / {expected}");
            for (k, v) in b {
                same(&a[k], v);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((a - b).abs() <= 1e-14 * b.abs(), "{a} / {b}");
        }
        _ => assert_eq!(shown, expected),
    }
}

/// The answer's runs are herd-sim's: per policy its three faults in order, each figure, the
/// fix's changes (snippets included) and the notes.
fn assert_runs_are(answer: &Value, expected: &[(String, Comparison)]) {
    let runs = answer["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3 * expected.len(), "three faults per policy");
    for (run, (name, c, f)) in runs.iter().zip(
        expected
            .iter()
            .flat_map(|(n, c)| c.faults.iter().map(move |f| (n, c, f))),
    ) {
        assert_eq!(run["file"], "config");
        assert_eq!(run["policy"], json!(name));
        assert_eq!(run["scenario"], json!(f.fault));
        assert_eq!(run["fault_s"], json!(f.fault_s));
        assert_eq!(run["start_s"], json!(f.start_s));
        same(&run["as_set"], &serde_json::to_value(&f.as_set).unwrap());
        same(&run["fix"], &serde_json::to_value(&f.fix).unwrap());
        assert_eq!(
            run["fix_changes"],
            serde_json::to_value(&c.fix_changes).unwrap()
        );
        assert_eq!(run["no_fix"], json!(c.no_fix));
        assert_eq!(run["notes"], json!(f.notes));
        let load = &run["load"];
        let set = load["as_set"].as_array().expect("load");
        assert!(
            !set.is_empty() && set.len() <= MAX_LOAD_POINTS,
            "{}",
            set.len()
        );
        assert_eq!(set.len(), load["fix"].as_array().expect("load").len());
        // The busiest bin is kept: the chart's peak is the run's.
        let peak = f.load[0].iter().copied().fold(0.0, f64::max);
        let shown = set.iter().map(|v| v.as_f64().unwrap()).fold(0.0, f64::max);
        assert_eq!(shown, peak, "{name} {}", f.fault);
    }
}

#[tokio::test]
async fn an_example_runs_the_three_faults_beside_the_fix() {
    let server = server().await;
    let (_, _, text) = EXAMPLES[0];
    let (status, answer) = server.post("check/whatif", &json!({ "text": text })).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["system"], "grpc");
    assert_eq!(answer["detected"], true);
    // The names the page reads, each with the default it was run at.
    let o = WhatIfOptions::default();
    let settings = answer["whatif"]
        .as_object()
        .expect("the settings are an object");
    let mut names: Vec<&str> = settings.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "brownout",
            "capacity_rps",
            "failure_status",
            "overload",
            "rps",
            "seed"
        ]
    );
    assert_eq!(settings["rps"], o.offered_rps());
    assert_eq!(settings["capacity_rps"], o.capacity_rps);
    assert_eq!(settings["brownout"], o.brownout);
    assert_eq!(settings["overload"], o.overload);
    assert_eq!(settings["failure_status"], o.failure_status.to_string());
    assert_eq!(settings["seed"], o.seed);
    let expected = expected(text, &o);
    assert!(!expected.is_empty());
    assert_runs_are(&answer, &expected);
    let changes = answer["runs"][0]["fix_changes"]
        .as_array()
        .expect("changes");
    assert!(
        changes
            .iter()
            .all(|c| !c["snippet"].as_str().unwrap().is_empty()),
        "every change has its snippet: {changes:?}"
    );
}

#[tokio::test]
async fn the_knobs_reach_the_runs() {
    let server = server().await;
    let (_, _, text) = EXAMPLES[1];
    let body = json!({ "text": text, "rps": 200, "capacity_rps": 400, "brownout": 0.5, "seed": 7 });
    let (status, answer) = server.post("check/whatif", &body).await;
    assert_eq!(status, 200, "{answer}");
    let mut o = WhatIfOptions::default();
    o.rps = Some(200.0);
    o.capacity_rps = 400.0;
    o.brownout = 0.5;
    o.seed = 7;
    assert_eq!(answer["whatif"]["rps"], 200.0);
    assert_eq!(answer["whatif"]["brownout"], 0.5);
    assert_runs_are(&answer, &expected(text, &o));
    // Against the defaults the figures differ: the knobs are not ignored.
    let (_, defaults) = server.post("check/whatif", &json!({ "text": text })).await;
    assert_ne!(answer["runs"][0]["as_set"], defaults["runs"][0]["as_set"]);
}

#[tokio::test]
async fn bad_parameters_are_named() {
    let server = server().await;
    let (_, _, text) = EXAMPLES[0];
    for (extra, starts) in [
        (json!({ "brownout": 1.5 }), "brownout: "),
        (json!({ "rps": 0 }), "rps: "),
        (json!({ "capacity_rps": 0 }), "capacity_rps: "),
        (json!({ "capacity_rps": 1e6 }), "capacity_rps: "),
        (json!({ "format": "yaml" }), "format: "),
        (json!({ "text": "  " }), "text: "),
        (json!({ "text": "{\"methodConfig\": [" }), "text: "),
    ] {
        let mut body = json!({ "text": text });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (status, answer) = server.post("check/whatif", &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let error = answer["error"].as_str().expect("error");
        assert!(error.starts_with(starts), "{body}: {error}");
    }
    let (status, answer) = server
        .post("check/whatif", &json!({ "text": text, "clients": 10 }))
        .await;
    assert_eq!(status, 400);
    assert!(
        answer["error"].as_str().unwrap().contains("clients"),
        "{answer}"
    );
}

/// A gRPC config of `n` services, each retried.
fn services(n: usize) -> String {
    let configs: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"name": [{{"service": "s{i}.S"}}], "retryPolicy": {{"maxAttempts": 3,
                "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"]}}}}"#
            )
        })
        .collect();
    format!(r#"{{"methodConfig": [{}]}}"#, configs.join(",\n"))
}

/// Work past a limit is refused with the limit's name, before a simulation slot is taken:
/// a server with no slot at all answers 400, not 503, and one within the limits 503.
#[tokio::test]
async fn work_past_the_limits_is_refused_before_it_runs() {
    let busy = PageServer::start(ServeLimits {
        max_concurrent: 0,
        ..ServeLimits::default()
    })
    .await;
    let (status, _) = busy
        .post(
            "check/whatif",
            &json!({ "text": services(MAX_WHATIF_POLICIES) }),
        )
        .await;
    assert_eq!(status, 503, "within the limits, it waits for a slot");

    let (status, answer) = busy
        .post(
            "check/whatif",
            &json!({ "text": services(MAX_WHATIF_POLICIES + 1) }),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(error.starts_with("text: "), "{error}");
    assert!(error.contains("whatif_policies"), "{error}");

    let (status, answer) = busy
        .post(
            "check/whatif",
            &json!({ "text": services(1), "capacity_rps": 100_000 }),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(error.starts_with("rps: "), "{error}");
    assert!(error.contains("whatif_requests"), "{error}");

    // Pauses of ten minutes: the outage (twice the retry window) runs past the page's limit.
    let slow = r#"{"methodConfig": [{"name": [{"service": "slow.S"}], "retryPolicy": {
        "maxAttempts": 5, "initialBackoff": "600s", "maxBackoff": "600s",
        "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let report = check::check(&[Input::new("config", slow)]).unwrap();
    let outage = whatif::outage_s(&[&report.configs[0]], &WhatIfOptions::default()).unwrap();
    assert!(
        outage > MAX_WHATIF_RUN_S,
        "the case is past the limit: {outage}"
    );
    let (status, answer) = busy.post("check/whatif", &json!({ "text": slow })).await;
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(error.starts_with("text: line "), "{error}");
    assert!(error.contains("whatif_run_s"), "{error}");
}

#[tokio::test]
async fn the_limits_are_listed() {
    let server = server().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<hyper::body::Bytes>>();
    let response = client
        .get(format!("http://{}/api/rules", server.addr).parse().unwrap())
        .await
        .expect("answers");
    let rules = support::json_body(response.into_body())
        .await
        .expect("JSON");
    assert_eq!(rules["limits"]["whatif_policies"], MAX_WHATIF_POLICIES);
    assert_eq!(rules["limits"]["whatif_run_s"], MAX_WHATIF_RUN_S);
}
