//! `herd check --format sarif` validated against the official SARIF 2.1.0 JSON schema
//! (vendored in `tests/sarif/`, with its source in the README beside it), and the
//! suppressions a linter in CI needs.
use serde_json::Value;

use crate::support;

use support::{herd, scratch_file, stderr};

fn sarif(args: &[&str]) -> Value {
    let out = herd(&[&["check", "--no-storm", "--format", "sarif"], args].concat());
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn sarif_validates_against_the_official_schema() {
    let schema: Value = serde_json::from_str(include_str!("../sarif/sarif-schema-2.1.0.json"))
        .expect("the schema is JSON");
    let validator = jsonschema::draft4::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the schema compiles");
    let log = sarif(&["scenarios/configs"]);
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // Something to validate: rules with help, results located by file and line.
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    assert!(rules.iter().any(|r| r["id"] == "no-budget"));
    assert!(rules.iter().all(|r| r["help"]["text"].is_string()));
    let results = run["results"].as_array().expect("results");
    assert!(!results.is_empty());
    let r = results
        .iter()
        .find(|r| r["ruleId"] == "retries-non-idempotent")
        .expect("the Istio POST route");
    assert_eq!(r["level"], "error");
    let loc = &r["locations"][0]["physicalLocation"];
    assert!(
        loc["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .starts_with("scenarios/configs/")
    );
    assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
    // A mistake the validator must catch, so the test cannot pass vacuously.
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&broken));
}

#[test]
fn findings_are_suppressed_by_comment_annotation_and_flag() {
    let vs = |annotation: &str| {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: a\n{annotation}spec:\n  hosts: [a]\n  http:\n  - route:\n    - destination: {{host: a}}\n    timeout: 2s\n    retries: {{attempts: 3}}\n"
        )
    };
    let codes = |file: &str, extra: &[&str]| -> Vec<String> {
        let log = sarif(&[&[file][..], extra].concat());
        log["runs"][0]["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["ruleId"].as_str().unwrap().to_owned())
            .collect()
    };
    let plain = scratch_file("vs.yaml", &vs(""));
    let found = codes(&plain, &[]);
    assert!(
        found.contains(&"no-per-try-timeout".to_owned()),
        "{found:?}"
    );
    assert!(
        found.contains(&"unbounded-max-retries".to_owned()),
        "{found:?}"
    );
    let annotated = scratch_file(
        "vs-annotated.yaml",
        &vs("  annotations:\n    herd.dev/ignore: \"no-per-try-timeout,unbounded-max-retries\"\n"),
    );
    let found = codes(&annotated, &[]);
    assert!(
        !found.contains(&"no-per-try-timeout".to_owned()),
        "{found:?}"
    );
    assert!(
        !found.contains(&"unbounded-max-retries".to_owned()),
        "{found:?}"
    );
    let found = codes(
        &plain,
        &["--ignore", "no-per-try-timeout,unbounded-max-retries"],
    );
    assert!(
        !found.contains(&"no-per-try-timeout".to_owned()),
        "{found:?}"
    );
    assert!(
        !found.contains(&"unbounded-max-retries".to_owned()),
        "{found:?}"
    );
    let err = support::usage_error(&["check", &plain, "--ignore", "no-such-code"]);
    assert!(
        err.contains("--ignore no-such-code: no such finding code"),
        "{err}"
    );
}

#[test]
fn list_prints_every_analyzer_and_code() {
    let out = support::ok(&["check", "--list"]);
    for word in [
        "backoff",
        "timeouts",
        "conditions",
        "budget",
        "layers",
        "no-budget",
        "clamped",
    ] {
        assert!(out.contains(word), "{word}: {out}");
    }
}
