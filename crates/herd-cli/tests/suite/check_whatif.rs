//! `herd check`'s what-if end to end: the runs in JSON, CSV and the chart, the flags that
//! set it and the bad input they refuse, naming the flag.
use serde_json::Value;

use crate::support;

use support::{herd, stderr, stdout};

const ISTIO: &str = "scenarios/configs/mesh-frontend.yaml";

fn json(args: &[&str]) -> Value {
    let out = herd(&[&["check"], args, &["--format", "json"]].concat());
    let code = out.status.code().expect("exit code");
    assert!(code == 0 || code == 1, "exit {code}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("JSON")
}

#[test]
fn each_policy_runs_three_faults_as_set_beside_the_fix() {
    let v = json(&[ISTIO, "--brownout", "0.3"]);
    let runs = v["runs"].as_array().expect("runs");
    let scenarios: Vec<&str> = runs
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(scenarios, ["brownout", "overload", "outage"]);
    for r in runs {
        for key in [
            "file",
            "policy",
            "scenario",
            "fault_s",
            "as_set",
            "fix",
            "fix_changes",
            "no_fix",
            "notes",
        ] {
            assert!(r.get(key).is_some(), "runs[].{key}: {r}");
        }
        for side in ["as_set", "fix"] {
            for key in [
                "goodput",
                "goodput_se",
                "amplification",
                "amplification_se",
                "peak_load",
                "recovered_s",
                "p50_ms",
                "p99_ms",
            ] {
                assert!(r[side].get(key).is_some(), "runs[].{side}.{key}: {r}");
            }
        }
    }
    // Istio's defaults in the brownout: 1 + p + p² attempts a request (five standard
    // errors: a fixed seed, and a chance below 10⁻⁶ of a wrong verdict for a correct model).
    let b = &runs[0]["as_set"];
    let (a, se) = (
        b["amplification"].as_f64().unwrap(),
        b["amplification_se"].as_f64().unwrap(),
    );
    assert!((a - 1.39).abs() < 5.0 * se, "{b}");
    // Its warning (maxRetries unbounded) proposes Istio's own setting, which differs.
    let changes = runs[0]["fix_changes"].as_array().unwrap();
    assert_eq!(changes[0]["code"], "unbounded-max-retries");
    assert!(
        changes[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("maxRetries: 3")
    );
    assert!(runs.iter().any(|r| r["as_set"] != r["fix"]));
    assert_eq!(v["whatif"]["rps"], 500.0);
}

#[test]
fn identical_translations_run_once_and_read_the_same() {
    let v = json(&[
        ISTIO,
        "scenarios/configs/mesh-checkout.yaml",
        "scenarios/configs/mesh-payments.yaml",
    ]);
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 9);
    for i in 0..3 {
        assert_eq!(runs[i]["as_set"], runs[i + 3]["as_set"]);
        assert_eq!(runs[i]["as_set"], runs[i + 6]["as_set"]);
    }
    // Each change names its own file.
    assert_eq!(
        runs[3]["fix_changes"][0]["file"],
        "scenarios/configs/mesh-checkout.yaml"
    );
}

/// Two policies of the same semantics share one run, so its notes and reasons cannot name
/// the policy that ran first: one policy is "it". Before, the second policy's text was the
/// first's with the name replaced as a string, which also rewrote any other text that held it.
#[test]
fn policies_that_share_a_run_read_the_same_notes() {
    let vs = |name: &str| {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: {name}}}\nspec:\n  hosts: [orders]\n  http:\n  - route:\n    - destination: {{host: orders}}\n"
        )
    };
    let file = support::scratch_file("two-names.yaml", &[vs("it"), vs("retry")].join("---\n"));
    let v = json(&[&file, "--failure-status", "500"]);
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 6);
    for i in 0..3 {
        assert_eq!(runs[i]["notes"], runs[i + 3]["notes"], "{}", runs[i + 3]);
        assert_eq!(runs[i]["same_because"], runs[i + 3]["same_because"]);
    }
    let note = runs[3]["notes"][0].as_str().expect("a note");
    assert_eq!(
        note,
        "it does not retry HTTP 500: its users meet every such failure"
    );
}

/// Two routes of one policy, one for GETs and one for POSTs, are not the same to the
/// what-if: retrying a POST is fixed by turning its retries off (`retries-non-idempotent`),
/// retrying a GET is not. Before, the methods were left out of what identical policies
/// share, and whichever route came second ran the first one's fix.
#[test]
fn a_route_of_posts_does_not_share_the_fix_of_the_same_route_for_gets() {
    let vs = |first: &str, second: &str| {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: orders}}\nspec:\n  hosts: [orders]\n  http:\n  - match:\n    - method: {{exact: {first}}}\n    route:\n    - destination: {{host: orders}}\n  - match:\n    - method: {{exact: {second}}}\n    route:\n    - destination: {{host: orders}}\n"
        )
    };
    for (first, second) in [("GET", "POST"), ("POST", "GET")] {
        let file = support::scratch_file(&format!("orders-{first}.yaml"), &vs(first, second));
        let v = json(&[&file]);
        let runs = v["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 6);
        for (run, method) in [(&runs[0], first), (&runs[3], second)] {
            let codes: Vec<&str> = run["fix_changes"]
                .as_array()
                .expect("fix_changes")
                .iter()
                .map(|c| c["code"].as_str().expect("code"))
                .collect();
            let want = if method == "POST" {
                "retries-non-idempotent"
            } else {
                "unbounded-max-retries"
            };
            assert_eq!(codes, [want], "{method} after {first}: {run}");
        }
    }
}

#[test]
fn csv_has_a_row_per_policy_fault_and_side() {
    let out = herd(&["check", "scenarios/configs/aws-config", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("file,policy,scenario,side,fault_s,requests,goodput"));
    // Four profiles that retry, three faults, two sides.
    assert_eq!((lines.len() - 1) % 6, 0, "{text}");
    assert!(lines[1].contains(",brownout,as_set,"), "{}", lines[1]);
    let columns = lines[0].split(',').count();
    assert!(lines.iter().all(|l| l.split(',').count() >= columns));
}

#[test]
fn bad_what_if_input_names_the_flag() {
    for (args, flag) in [
        (vec!["--rps", "-5"], "--rps"),
        (vec!["--rps=-0.1"], "--rps"),
        (vec!["--brownout", "1.5"], "--brownout"),
        (vec!["--brownout", "-0.1"], "--brownout"),
        (vec!["--brownout", "NaN"], "--brownout"),
        (vec!["--failure-status", "200"], "--failure-status"),
        (vec!["--capacity-rps", "0"], "--capacity-rps"),
        (vec!["--capacity-rps", "-5"], "--capacity-rps"),
        (
            vec![
                "--capacity-rps",
                "-5",
                "--scenario",
                "scenarios/default.toml",
            ],
            "--capacity-rps",
        ),
        (vec!["--outage-s", "-1"], "--outage-s"),
        (vec!["--clients", "5"], "--clients"),
        (vec!["--rps", "10", "--no-storm"], "--rps"),
    ] {
        let out = herd(&[&["check", ISTIO], args.as_slice()].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn the_chart_draws_the_load_as_set_against_the_fix() {
    let dir = std::env::temp_dir().join(format!("herd-whatif-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("load.svg");
    let out = herd(&[
        "check",
        "scenarios/configs/aws-config",
        "--chart",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&file).unwrap();
    assert!(svg.contains("as set (red) and fix (blue)"));
    assert!(svg.contains("outage"));
    std::fs::remove_dir_all(&dir).unwrap();
}
