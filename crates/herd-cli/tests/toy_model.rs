//! A model is one folder and one line in the simulator's registry (beside its `mod` line in
//! herd-sim's lib.rs): built with herd-sim's toy model (`--features toy-model`;
//! crates/herd-sim/src/toy/ and one `MODELS` line), the `herd` binary runs it in
//! `herd storm` (JSON, CSV) and `herd sweep`, and the page's
//! API lists and runs it, while no source file of the command or the page names it.
//!
//! Run with `cargo test -p herd-cli --features toy-model --test toy_model` (.ci/run runs it
//! with `--workspace --features herd-cli/toy-model`, to reuse the workspace's build);
//! without the feature this file is empty. The figures are computed by the toy from its seed
//! and checked against its definition (a certain coin lands as its bias says) and against
//! the registry's own run, never typed in.
#![cfg(feature = "toy-model")]

mod support;

use std::path::Path;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use herd_lab::serve::{self, ServeLimits};
use herd_sim::model::Variant;
use herd_sim::{Limits, Watch, registry};
use serde_json::{Value, json};
use support::{herd, ok, scratch_file, stderr, stdout, usage_error};
use tower::ServiceExt;

const FLIPS: u64 = 500;

/// A toy scenario whose biased coin always lands heads.
fn toy_text() -> String {
    format!("model = \"toy\"\nseed = 4\nflips = {FLIPS}\nbias = 1\n")
}

/// The toy's metrics for `variant` and `seed`, straight from the registry.
fn direct(variant: &str, seed: u64) -> (f64, f64) {
    let m = registry::check_text(&toy_text(), &Limits::default())
        .expect("the toy is registered")
        .run(&Variant::Named(variant.to_owned()), seed, Watch::none())
        .expect("it runs");
    let heads = m.get("heads").flatten().expect("heads");
    let longest = m.get("longest_run").flatten().expect("longest_run");
    (heads, longest)
}

/// The fair coin's heads are plausible for `FLIPS` flips: within 6 standard deviations of
/// half (a correct coin lands outside one run in 5·10^8), and a run no longer than the heads.
fn plausible_fair((heads, longest): (f64, f64)) {
    let sd = (FLIPS as f64 * 0.25).sqrt();
    assert!((heads - FLIPS as f64 / 2.0).abs() < 6.0 * sd, "{heads}");
    assert!((1.0..=heads).contains(&longest), "{longest} of {heads}");
}

#[test]
fn herd_storm_prints_the_toy_as_json_and_csv() {
    let file = scratch_file("toy.toml", &toy_text());
    let out = herd(&["storm", &file, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(v["model"], "toy");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{v}");
    assert_eq!(results[0]["rule"], "fair");
    assert_eq!(results[1]["rule"], "biased");
    assert_eq!(results[0]["seed"], 4, "the scenario's seed");
    let fair = (
        results[0]["metrics"]["heads"].as_f64().unwrap(),
        results[0]["metrics"]["longest_run"].as_f64().unwrap(),
    );
    assert_eq!(fair, direct("fair", 4));
    plausible_fair(fair);
    assert_eq!(results[1]["metrics"]["heads"], FLIPS as f64);
    assert_eq!(results[1]["metrics"]["longest_run"], FLIPS as f64);

    let csv = ok(&["storm", &file, "--format", "csv", "--seed", "9"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "rule,seed,heads,longest_run", "{csv}");
    let (heads, longest) = direct("fair", 9);
    assert_eq!(lines[1], format!("fair,9,{heads},{longest}"));
    assert_eq!(lines[2], format!("biased,9,{FLIPS},{FLIPS}"));
    assert_eq!(lines.len(), 3, "{csv}");
    assert_ne!((heads, longest), fair, "another seed, other flips");
}

#[test]
fn herd_sweep_varies_the_toys_fields() {
    let file = scratch_file("toy-sweep.toml", &toy_text());
    let text = ok(&[
        "sweep", &file, "--set", "bias=0,1", "--runs", "3", "--format", "json",
    ]);
    let v: Value = serde_json::from_str(&text).expect("one JSON object");
    assert_eq!(v["base"]["model"], "toy");
    let cells = v["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 4, "2 biases × 2 coins: {text}");
    for c in cells {
        let heads = &c["metrics"]["heads"];
        let mean = heads["mean"].as_f64().expect("a mean");
        assert_eq!(heads["defined"], 3, "{c}");
        match (c["rule"].as_str(), c["values"]["bias"].as_f64()) {
            (Some("biased"), Some(bias)) => assert_eq!(mean, bias * FLIPS as f64, "{c}"),
            (Some("fair"), Some(_)) => {
                // The mean of the three seeds' runs, each computed by the registry.
                let sum: f64 = (4..7).map(|seed| direct("fair", seed).0).sum();
                assert!((mean - sum / 3.0).abs() < 1e-9, "{c}");
            }
            other => panic!("unexpected cell {other:?}: {c}"),
        }
    }
}

#[test]
fn bad_toy_scenarios_name_the_field_and_line() {
    let file = scratch_file("toy-bad.toml", "model = \"toy\"\nflips = 0\n");
    let err = usage_error(&["storm", &file]);
    assert!(
        err.ends_with("flips (line 2): must be 1 to 10000000, got 0"),
        "{err}"
    );
    let file = scratch_file("toy-bad-bias.toml", "model = \"toy\"\nbias = 1.5\n");
    let err = usage_error(&["sweep", &file]);
    assert!(
        err.contains("bias (line 2): must be between 0 and 1"),
        "{err}"
    );
}

async fn page(request: Request<Body>) -> (StatusCode, Value) {
    let response = serve::router(ServeLimits::default())
        .oneshot(request)
        .await
        .expect("the router answers");
    let status = response.status();
    let bytes = to_bytes(response.into_body(), 1 << 20).await.expect("body");
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn the_page_lists_and_runs_the_toy() {
    let (status, models) = page(Request::get("/api/models").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let toy = models
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == "toy"))
        .unwrap_or_else(|| panic!("the toy is listed: {models}"));
    assert_eq!(toy["metrics"], json!(["heads", "longest_run"]));

    for (variant, seed) in [("fair", 11), ("biased", 12)] {
        let body = json!({ "scenario": toy_text(), "variant": variant, "seed": seed });
        let request = Request::post("/api/model")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, answer) = page(request).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["model"], "toy");
        let metrics = &answer["report"]["results"][0]["metrics"];
        let (heads, longest) = direct(variant, seed);
        assert_eq!(metrics["heads"], heads, "{answer}");
        assert_eq!(metrics["longest_run"], longest, "{answer}");
        if variant == "biased" {
            assert_eq!(heads, FLIPS as f64);
        } else {
            plausible_fair((heads, longest));
        }
    }
    let bad = json!({ "scenario": "model = \"toy\"\nflips = 0\n" });
    let request = Request::post("/api/model")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(bad.to_string()))
        .unwrap();
    let (status, answer) = page(request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"],
        "scenario: flips (line 2): must be 1 to 10000000, got 0"
    );
}

/// Every Rust, JavaScript and HTML file under `dir`.
fn sources(dir: &Path, found: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path
            .extension()
            .is_some_and(|e| e == "rs" || e == "js" || e == "html")
        {
            let text = std::fs::read_to_string(&path).expect("UTF-8 source");
            found.push((path.display().to_string(), text));
        }
    }
}

#[test]
fn no_front_end_names_the_toy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["herd-cli/src", "herd-lab/src", "herd-lab/assets"] {
        sources(&root.join(dir), &mut files);
    }
    assert!(files.len() > 20, "{} files", files.len());
    for (path, text) in files {
        for needle in ["\"toy\"", "toy::", "Toy", "toy-model", "toy_model"] {
            assert!(!text.contains(needle), "{path} names the toy ({needle})");
        }
    }
}
