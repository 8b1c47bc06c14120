//! `herd storm` on the `model = "contention"` scenario: the per-rule table, JSON, and the
//! client-count sweep.
use crate::support;

use support::{fails_with_input_error, herd, json_list, ok, scenario};

fn contention() -> String {
    scenario("contention.toml")
}

#[test]
fn prints_one_row_per_rule() {
    let text = ok(&["storm", &contention(), "--runs", "5", "--clients", "40"]);
    assert!(text.contains("mean of 5 runs"), "{text}");
    for rule in [
        "immediate (no backoff)",
        "exponential",
        "equal",
        "full",
        "decorrelated",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(rule) && l.contains(" 40 ")),
            "{rule}: {text}"
        );
    }
}

#[test]
fn compares_the_rules_at_the_scenarios_count_as_json() {
    let points = json_list(
        &[
            "storm",
            &contention(),
            "--runs",
            "3",
            "--clients",
            "20",
            "--rule",
            "full",
            "--rule",
            "immediate",
        ],
        "points",
        2,
    );
    let order: Vec<(u64, &str)> = points
        .iter()
        .map(|p| (p["clients"].as_u64().unwrap(), p["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(order, [(20, "full"), (20, "immediate")]);
    for p in points {
        assert!(p["calls"].as_f64().unwrap() >= 20.0);
        assert_eq!(p["runs"], 3);
    }
}

/// The client-count sweep is `herd sweep`'s: `herd storm` has no flag of its own for it.
#[test]
fn the_storm_command_has_no_sweep_flag_of_its_own() {
    let o = herd(&["storm", &contention(), "--sweep-clients", "10..40:10"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_zero_client_count_is_refused() {
    fails_with_input_error(
        &["storm", &contention(), "--clients", "0"],
        "clients.count: must be between 1 and",
    );
}

#[test]
fn herd_sweep_sweeps_the_client_count() {
    let cells = json_list(
        &[
            "sweep",
            &contention(),
            "--set",
            "clients.count=10,40",
            "--rules",
            "immediate,full",
            "--runs",
            "4",
        ],
        "cells",
        4,
    );
    let calls = |n: u64, rule: &str| {
        cells
            .iter()
            .find(|c| c["values"]["clients.count"] == n && c["rule"] == rule)
            .and_then(|c| c["metrics"]["calls"]["mean"].as_f64())
            .expect("cell")
    };
    assert!(calls(40, "immediate") > calls(40, "full"));
    assert!(calls(40, "full") >= 40.0 && calls(10, "full") >= 10.0);
}
