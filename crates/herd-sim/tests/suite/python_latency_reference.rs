//! The latency model against `tools/reference_latency.py`, a simulation written from
//! docs/model.md alone, with Python's own generator: the two can agree only in
//! distribution, so each figure's mean over seeds is compared within standard errors.
//!
//! Under `CI=true` a missing `python3` fails the test; elsewhere the test is skipped, loudly.
use std::path::PathBuf;
use std::process::Command;

use crate::support;

use support::python;

use herd_sim::latency::{
    Distribution, Hiccups, LatencyModel, LatencyResult, LatencyScenario, PolicyKind, PolicySpec,
    Servers, ServiceTime, Traffic,
};

/// Seeds per side.
const SEEDS: u64 = 30;
/// Standard errors of the difference allowed. Each seed's figure is one independent sample,
/// so the difference of two means over 30 seeds, over its standard error, is close to
/// Student's t with at least 29 degrees of freedom: beyond 7.75 with a chance of 1.6·10⁻⁸.
/// Over the 16 comparisons below, a false failure about once in 4·10⁶ runs (approximate:
/// the t law holds for the means of skewed figures such as p99.9 only asymptotically).
const Z: f64 = 7.75;

/// The reference's defaults, as a scenario: 10 servers at 50 % utilisation, a fan-out of 5,
/// exponential service of 1 ms, pauses of 20 ms about every second.
fn scenario() -> LatencyScenario {
    LatencyScenario {
        requests: 4_000,
        warmup_requests: 400,
        traffic: Traffic {
            rate_per_s: 1_000.0,
            fan_out: 5,
        },
        servers: Servers { count: 10 },
        service: ServiceTime {
            distribution: Distribution::Exponential,
            mean_ms: 1.0,
            sigma: 0.0,
        },
        hiccups: Hiccups {
            every_s: 1.0,
            pause_ms: 20.0,
        },
        policies: vec![
            PolicySpec {
                name: "none".into(),
                kind: PolicyKind::None,
                ..PolicySpec::default()
            },
            PolicySpec {
                name: "delay".into(),
                kind: PolicyKind::Delay,
                delay_ms: 10.0,
                max_copies: 2,
                ..PolicySpec::default()
            },
            PolicySpec {
                name: "tied".into(),
                kind: PolicyKind::Tied,
                ..PolicySpec::default()
            },
        ],
        ..LatencyScenario::default()
    }
}

fn reference(py: &str, policy: &str) -> Vec<serde_json::Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/reference_latency.py");
    let out = Command::new(py)
        .arg(script)
        .args(["--policy", policy, "--seed", "1000", "--seeds"])
        .arg(SEEDS.to_string())
        .arg("--json")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "reference_latency.py --policy {policy} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// Mean and standard error of the mean.
fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

fn figure(r: &LatencyResult, metric: &str) -> f64 {
    match metric {
        "p50_ms" => r.p50_ms,
        "p99_ms" => r.p99_ms,
        "p999_ms" => r.p999_ms,
        "mean_ms" => r.mean_ms,
        "extra_load_percent" => r.extra_load_percent,
        "utilisation_percent" => r.utilisation_percent,
        _ => unreachable!("{metric}"),
    }
}

#[test]
fn the_model_agrees_with_a_reference_written_from_its_definition() {
    let Some(py) = python("latency reference check") else {
        return;
    };
    let model = LatencyModel::new(&scenario()).unwrap();
    let mut compared = 0;
    for (index, policy) in ["none", "delay", "tied"].into_iter().enumerate() {
        let theirs = reference(py, policy);
        assert_eq!(theirs.len() as u64, SEEDS);
        let ours: Vec<LatencyResult> = (1..=SEEDS)
            .map(|seed| model.run(index, seed, herd_sim::Watch::none()).unwrap().0)
            .collect();
        // Exact on both sides: no copy beyond the first, or exactly two.
        let exact = match policy {
            "none" => Some(0.0),
            "tied" => Some(100.0),
            _ => None,
        };
        let mut metrics = vec![
            "p50_ms",
            "p99_ms",
            "p999_ms",
            "mean_ms",
            "utilisation_percent",
        ];
        if let Some(extra) = exact {
            for (r, t) in ours.iter().zip(&theirs) {
                assert_eq!(r.extra_load_percent, extra, "{policy}");
                assert_eq!(t["extra_load_percent"].as_f64(), Some(extra), "{policy}");
            }
        } else {
            metrics.push("extra_load_percent");
        }
        for metric in metrics {
            let ours: Vec<f64> = ours.iter().map(|r| figure(r, metric)).collect();
            let theirs: Vec<f64> = theirs
                .iter()
                .map(|t| t[metric].as_f64().expect(metric))
                .collect();
            let (a, sa) = mean_se(&ours);
            let (b, sb) = mean_se(&theirs);
            let se = sa.hypot(sb);
            eprintln!(
                "{policy} {metric}: herd {a:.3} ± {sa:.3}, reference {b:.3} ± {sb:.3}, {:.1} se",
                (a - b) / se
            );
            assert!(
                (a - b).abs() <= Z * se,
                "{policy} {metric}: herd {a:.4} ± {sa:.4}, reference {b:.4} ± {sb:.4} (standard errors)"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 16);
}
