//! `herd storm` and `herd sweep` on the `model = "partial-failure"` scenarios: one row per
//! strategy and seed, strategies as a sweep's variants.
use crate::support;

use support::{ok, scenario};

#[test]
fn storm_prints_every_strategy_for_every_seed() {
    let text = ok(&[
        "storm",
        &scenario("brooker-2022.toml"),
        "--runs",
        "2",
        "--format",
        "csv",
    ]);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "rule,seed,work_amplification,success_percent,calls,attempts,successes,retries_denied,first_attempts_refused"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 20, "{text}");
    for name in [
        "no_retries",
        "three_retries",
        "adaptive_10pct",
        "breaker_10pct",
        "ratio",
    ] {
        let seeds: Vec<&str> = rows.iter().filter(|r| r[0] == name).map(|r| r[1]).collect();
        assert_eq!(seeds, ["1", "2"], "{name}: {text}");
    }
    let none = rows.iter().find(|r| r[0] == "no_retries").unwrap();
    assert_eq!(none[2], "1", "no retries: one attempt per call");
    assert_eq!(none[4], none[5], "calls = attempts");
}

#[test]
fn sweep_varies_the_failure_rate_across_strategies() {
    let text = ok(&[
        "sweep",
        &scenario("brooker-2022-clients.toml"),
        "--set",
        "failure_rate=0,1",
        "--runs",
        "2",
        "--metric",
        "work_amplification,success_percent",
        "--format",
        "csv",
    ]);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let column = header
        .iter()
        .position(|c| *c == "success_percent_mean")
        .expect("success_percent_mean");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 10, "2 failure rates × 5 strategies: {text}");
    for r in &rows {
        let success: f64 = r[column].parse().unwrap();
        match r[0] {
            "0" => assert_eq!(success, 100.0, "{r:?}"),
            _ => assert_eq!(success, 0.0, "{r:?}"),
        }
    }
}
