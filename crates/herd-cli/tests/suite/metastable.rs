//! `herd storm` on `model = "metastable"` scenarios: the outcomes, JSON, flags that do not
//! apply; and `herd sweep` over its offered load.
use crate::support;

use support::{herd, json_list, ok, scenario, stderr, stdout};

#[test]
fn without_a_budget_the_table_ends_still_overloaded() {
    let text = ok(&["storm", &scenario("metastable-retry.toml")]);
    assert!(text.contains("no retry budget"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("after the outage (from 20 s)")),
        "{text}"
    );
    assert!(
        text.trim_end()
            .ends_with("outcome: still overloaded at the horizon"),
        "{text}"
    );
    // one row per one-second window over 120 s
    let rows = text
        .lines()
        .filter(|l| {
            l.split_whitespace().count() == 8 && l.trim_start().starts_with(char::is_numeric)
        })
        .count();
    assert_eq!(rows, 120, "{text}");
}

#[test]
fn with_a_budget_json_reports_the_recovery() {
    let o = herd(&[
        "storm",
        &scenario("metastable-retry-budget.toml"),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["scenario"]["model"], "metastable");
    let r = &v["results"][0];
    assert_eq!(r["rule"], "constant");
    assert_eq!(r["budget_percent"], 10.0);
    let at = r["recovered_at_s"].as_f64().expect("recovered");
    assert!((20.0..=25.0).contains(&at), "{at}");
    assert_eq!(r["outcome"], format!("recovered at {at} s"));
    assert_eq!(r["windows"].as_array().map(Vec::len), Some(120));
    assert!(r["windows"][30]["goodput"].as_u64().unwrap() > 200);
}

#[test]
fn sweeping_the_offered_load_finds_the_threshold() {
    let cells = json_list(
        &[
            "sweep",
            &scenario("metastable-retry.toml"),
            "--set",
            "clients.offered_qps=150,280",
            "--runs",
            "2",
        ],
        "cells",
        2,
    );
    let recovered = |qps: f64| {
        cells
            .iter()
            .find(|c| c["values"]["clients.offered_qps"].as_f64() == Some(qps))
            .and_then(|c| c["metrics"]["recovered"]["mean"].as_f64())
            .expect("cell")
    };
    assert_eq!(recovered(150.0), 1.0);
    assert_eq!(recovered(280.0), 0.0);
}

#[test]
fn storm_only_flags_are_refused_with_exit_2() {
    for flags in [
        vec!["--clients", "10"],
        vec!["--refusal-cost", "0.1"],
        vec!["--engine", "cohort"],
        vec!["--throttle", "grpc"],
    ] {
        let mut args = vec!["storm".to_owned(), scenario("metastable-retry.toml")];
        args.extend(flags.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = herd(&args);
        assert_eq!(o.status.code(), Some(2), "{flags:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: --"), "{err}");
    }
}

#[test]
fn a_bad_model_or_field_names_it() {
    let dir = std::env::temp_dir().join(format!("herd-meta-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, expected) in [
        ("model = \"metastabel\"\n", "model: must be"),
        (
            "model = \"metastable\"\n[server]\nslow_factor = 0\n",
            "server.slow_factor (line 3)",
        ),
    ] {
        let file = dir.join("s.toml");
        std::fs::write(&file, text).unwrap();
        let o = herd(&["storm", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(stderr(&o).contains(expected), "{}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn herd_sweep_sweeps_the_offered_load() {
    let cells = json_list(
        &[
            "sweep",
            &scenario("metastable-retry.toml"),
            "--set",
            "clients.offered_qps=150,280",
            "--runs",
            "2",
        ],
        "cells",
        2,
    );
    // 150 per second recovers in both runs, 1 s after the outage; 280 in neither.
    assert_eq!(cells[0]["values"]["clients.offered_qps"], 150.0);
    assert_eq!(cells[0]["metrics"]["recovered_s"]["defined"], 2);
    assert_eq!(cells[0]["metrics"]["recovered_s"]["mean"], 1.0);
    assert_eq!(cells[1]["metrics"]["recovered_s"]["defined"], 0);
    let attempts = cells[1]["metrics"]["attempts_per_s"]["mean"]
        .as_f64()
        .unwrap();
    assert!(
        (1.6 * 280.0..=2.2 * 280.0).contains(&attempts),
        "{attempts}"
    );
}
