//! `herd storm --engine cohort`: a billion clients from the command line, and its errors.
use crate::support;

/// Runs `herd` with `args`: whether it succeeded, and what it printed on stdout and stderr.
fn herd(args: &[&str]) -> (bool, String, String) {
    let out = support::herd(args);
    (
        out.status.success(),
        support::stdout(&out),
        support::stderr(&out),
    )
}

#[test]
fn a_billion_clients_with_capacity_scaled() {
    let (ok, stdout, stderr) = herd(&[
        "storm",
        "--engine",
        "cohort",
        "--clients",
        "1000000000",
        "--scale-capacity",
        "--rule",
        "immediate",
        "--rule",
        "full",
        "--format",
        "json",
    ]);
    assert!(ok, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(v["scenario"]["server"]["capacity"], 25_000_000);
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["rule"], "immediate");
    assert_eq!(results[0]["clients"], 1_000_000_000u64);
    assert_eq!(results[0]["half_served_s"], 12.0);
    assert_eq!(results[0]["all_served_s"], 13.9);
    assert_eq!(results[0]["requests_per_client"], 120.5);
    assert_eq!(results[1]["served"], 1_000_000_000u64);
}

#[test]
fn errors_are_one_line_and_name_the_field() {
    // Pauses over a million steps: too many outcomes for one law.
    let path = support::scratch_file(
        "cohort-cap.toml",
        "step_ms = 1\nwindow_ms = 1\nhorizon_s = 60\n[retry]\ncap_ms = 1000000\n",
    );
    let (ok, _, stderr) = herd(&["storm", &path, "--engine", "cohort"]);
    assert!(!ok);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("retry.cap_ms"), "{stderr}");
    assert!(stderr.contains("the cohort engine"), "{stderr}");

    let (ok, _, stderr) = herd(&["storm", "--engine", "cohort", "--clients", "2000000000000"]);
    assert!(!ok);
    assert!(stderr.contains("clients.count"), "{stderr}");

    let (ok, _, stderr) = herd(&["storm", "--scale-capacity"]);
    assert!(!ok, "--scale-capacity needs --clients: {stderr}");

    let (ok, _, stderr) = herd(&["storm", "--engine", "herd"]);
    assert!(!ok);
    assert!(
        stderr.contains("agent") && stderr.contains("cohort"),
        "{stderr}"
    );
}

#[test]
fn a_scenario_file_with_a_trillion_clients_is_checked_against_the_engine() {
    let path = support::scratch_file(
        "cohort-big.toml",
        "[clients]\ncount = 1000000000000\n[server]\ncapacity = 25000000000\n",
    );
    let cohort = herd(&[
        "storm", &path, "--engine", "cohort", "--rule", "equal", "--format", "csv",
    ]);
    let agent = herd(&["storm", &path, "--rule", "equal", "--format", "csv"]);
    let (ok, stdout, stderr) = cohort;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("equal,1,1000000000000,1000000000000,0,0,"),
        "{stdout}"
    );
    let (ok, _, stderr) = agent;
    assert!(!ok);
    assert!(stderr.contains("clients.count (line 2)"), "{stderr}");
}
