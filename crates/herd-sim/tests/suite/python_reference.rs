//! The engine against `tools/reference_storm.py`, a reference that makes its own choices: exact
//! rational refusal arithmetic, and (with `--draws independent`) the jittered rules drawn from
//! their published definitions with Python's own generator. On the jittered rules the two can
//! only agree in distribution, so each figure's mean over many seeds is compared within
//! standard errors; on the deterministic rules they must agree run for run.
//!
//! Under `CI=true` a missing `python3` fails the test; elsewhere the test is skipped, loudly.
use std::path::PathBuf;
use std::process::Command;

use crate::support;

use support::python;

use herd::RuleName;
use herd_sim::{Limits, Pauses, RunResult, Scenario, Simulation};

/// Seeds per side: enough that each mean's standard error is a few tenths of a percent.
const SEEDS: u64 = 40;
/// Standard errors between the two means: at most 10⁻⁶ false failures per run over up to 100
/// comparisons with Student's t at 39 degrees of freedom (`z_limit(1e-6, 100, Some(39))`
/// ≈ 7.24, rounded up).
const Z: f64 = 7.3;

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools/reference_storm.py")
        .to_str()
        .expect("utf-8 path")
        .to_owned()
}

/// One JSON object per seed from the reference.
fn reference(py: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(py)
        .arg(script())
        .args(args)
        .arg("--json")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "reference_storm.py {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

fn scenario(clients: u64, capacity: u64, refusal_cost: f64, outage_s: f64) -> Scenario {
    let mut s = Scenario::default();
    s.clients.count = clients;
    s.server.capacity = capacity;
    s.server.refusal_cost = refusal_cost;
    s.server.outages = if outage_s > 0.0 {
        vec![[0.0, outage_s]]
    } else {
        vec![]
    };
    s
}

fn engine(s: &Scenario, rule: RuleName, seed: u64) -> RunResult {
    Simulation::new(s, &Limits::unlimited())
        .unwrap()
        .run(rule, seed, herd_sim::Watch::none())
        .unwrap()
}

/// Mean and standard error of the mean.
fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// Both ways of drawing pauses: in whole steps (the reference draws integer ticks from the
/// rules' definitions) and continuously (real numbers, rounded up).
#[test]
fn jittered_rules_agree_in_distribution_with_independent_draws() {
    let Some(py) = python("Python reference check") else {
        return;
    };
    // The default storm at a fifth of the size: 400 clients, 10 answers per 100 ms, a 10 s
    // outage, and refusals costing a tenth (exact arithmetic on both sides).
    let mut s = scenario(400, 10, 0.1, 10.0);
    let seeds = SEEDS.to_string();
    let modes = [
        (Pauses::Steps, &["full", "equal", "decorrelated"][..]),
        (
            Pauses::Continuous,
            &["full", "equal", "decorrelated", "grpc"][..],
        ),
    ];
    for (pauses, rules) in modes {
        s.pauses = pauses;
        for &rule in rules {
            let theirs = reference(
                py,
                &[
                    "--rule",
                    rule,
                    "--clients",
                    "400",
                    "--capacity",
                    "10",
                    "--refusal-cost",
                    "0.1",
                    "--draws",
                    "independent",
                    "--pauses",
                    pauses.as_str(),
                    "--seed",
                    "1000",
                    "--seeds",
                    &seeds,
                ],
            );
            assert_eq!(theirs.len() as u64, SEEDS);
            let name: RuleName = rule.parse().unwrap();
            let ours: Vec<RunResult> = (1..=SEEDS).map(|seed| engine(&s, name, seed)).collect();
            for metric in ["requests_per_client", "half_served_s", "all_served_s"] {
                let ours: Vec<f64> = ours
                    .iter()
                    .map(|r| match metric {
                        "requests_per_client" => r.requests_per_client,
                        "half_served_s" => r.half_served_s.expect("half served"),
                        _ => r.all_served_s.expect("all served"),
                    })
                    .collect();
                let theirs: Vec<f64> = theirs
                    .iter()
                    .map(|v| v[metric].as_f64().expect("a number"))
                    .collect();
                let ((a, sa), (b, sb)) = (mean_se(&ours), mean_se(&theirs));
                let se = (sa * sa + sb * sb).sqrt();
                assert!(
                    (a - b).abs() <= Z * se,
                    "{rule} {metric} ({pauses}): engine {a:.4} ± {sa:.4}, reference {b:.4} ± {sb:.4} \
                 ({:.1} standard errors apart)",
                    (a - b).abs() / se
                );
            }
        }
    }
}

/// On the deterministic rules the reference (with the port of herd's generator, so the same
/// clients are served) must match run for run, including at an exact refusal boundary:
/// 77 clients at once, 50 answers' work, refusals costing 0.1, serve 47 (the float formula
/// both used to share served 46).
#[test]
fn deterministic_rules_agree_run_for_run_with_exact_refusals() {
    let Some(py) = python("Python reference check") else {
        return;
    };
    for (clients, capacity, cost, outage) in [
        (77, 50, "0.1", 0.0),
        (2000, 50, "0.1", 10.0),
        (500, 20, "0.05", 10.0),
    ] {
        let mut s = scenario(clients, capacity, cost.parse().unwrap(), outage);
        // `constant` under costly refusals may never end: two minutes show enough.
        s.horizon_s = 120.0;
        for rule in ["exponential", "constant"] {
            let theirs = reference(
                py,
                &[
                    "--rule",
                    rule,
                    "--clients",
                    &clients.to_string(),
                    "--capacity",
                    &capacity.to_string(),
                    "--refusal-cost",
                    cost,
                    "--outage-s",
                    &outage.to_string(),
                    "--horizon-s",
                    "120",
                ],
            );
            let ours = engine(&s, rule.parse().unwrap(), 1);
            let t = &theirs[0];
            let here = format!("{rule}, {clients} clients, capacity {capacity}, r {cost}");
            assert_eq!(t["requests"].as_u64(), Some(ours.requests), "{here}");
            assert_eq!(t["served"].as_u64(), Some(ours.served), "{here}");
            assert_eq!(t["all_served_s"].as_f64(), ours.all_served_s, "{here}");
            assert_eq!(t["half_served_s"].as_f64(), ours.half_served_s, "{here}");
        }
    }
}
