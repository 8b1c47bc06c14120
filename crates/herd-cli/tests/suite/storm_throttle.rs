//! `herd storm --throttle`: the shipped throttles compared, one table each.
use crate::support;

use support::{fails_with_input_error, ok};

#[test]
fn one_table_per_throttle_kind() {
    let text = ok(&[
        "storm",
        "--rule",
        "full",
        "--throttle",
        "none,envoy-budget",
        "--throttle",
        "aws-standard-2026",
    ]);
    let headers: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("herd storm:"))
        .collect();
    assert_eq!(headers.len(), 3, "{text}");
    for (header, kind) in headers
        .iter()
        .zip(["none", "envoy-budget", "aws-standard-2026"])
    {
        assert!(header.contains(&format!("throttle {kind}")), "{header}");
    }
    // Without a throttle every client of the default storm is served; Envoy's budget of
    // concurrent retries lets most of them give up during the outage.
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("full")).collect();
    assert_eq!(rows.len(), 3);
    assert!(
        rows[0].split_whitespace().nth(1) == Some("2000"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].split_whitespace().nth(1) != Some("2000"),
        "{}",
        rows[1]
    );
}

#[test]
fn throttle_errors_name_the_flag_or_the_field() {
    fails_with_input_error(
        &["storm", "--throttle", "bogus"],
        "--throttle: expected none or one of",
    );
    fails_with_input_error(
        &["storm", "--throttle", "grpc,ratio", "--format", "json"],
        "use --format table",
    );
    fails_with_input_error(
        &["storm", "--engine", "cohort", "--throttle", "aws-adaptive"],
        "retry.throttle.kind: aws-adaptive needs the agent engine",
    );
}

#[test]
fn one_kind_works_with_json() {
    let out = ok(&[
        "storm",
        "--rule",
        "full",
        "--throttle",
        "grpc",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["scenario"]["retry"]["throttle"]["kind"], "grpc");
}
