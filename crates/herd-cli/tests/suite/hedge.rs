//! `herd hedge` end to end: the JSON shape, CSV, the sweep over utilisation, charts, the
//! overload scenario, and one-line errors with exit code 2.
use crate::support;

use support::{herd, json, ok, usage_error};

#[test]
fn json_has_one_result_per_policy_with_the_tail_and_the_cost() {
    let v = json(&["hedge", "--format", "json", "--requests", "20000"]);
    let results = v["results"].as_array().expect("results");
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "none",
            "hedge-10ms",
            "hedge-10ms-3-copies",
            "hedge-p99",
            "hedge-10ms-budget-2%",
            "tied"
        ]
    );
    for r in results {
        for field in [
            "p50_ms",
            "p99_ms",
            "p999_ms",
            "mean_ms",
            "extra_load_percent",
            "utilisation_percent",
        ] {
            assert!(r[field].as_f64().is_some(), "{field} in {r}");
        }
        assert_eq!(r["user_requests"], 20000);
    }
    let (none, hedged) = (&results[0], &results[1]);
    assert!(hedged["p99_ms"].as_f64().unwrap() * 3.0 < none["p99_ms"].as_f64().unwrap());
    // The first key is the policy, as a reader expects.
    let text = String::from_utf8(herd(&["hedge", "--format", "json", "--requests", "100"]).stdout)
        .unwrap();
    let first_key = text.lines().find(|l| l.contains(':')).unwrap();
    assert!(first_key.contains("\"results\""), "{first_key}");
    assert!(text.find("\"policy\"").unwrap() < text.find("\"p50_ms\"").unwrap());
}

#[test]
fn near_saturation_unbudgeted_hedges_lose_and_the_budget_holds() {
    let v = json(&[
        "hedge",
        "scenarios/hedge-overload.toml",
        "--format",
        "json",
        "--requests",
        "40000",
    ]);
    let r = v["results"].as_array().unwrap();
    let p99 = |i: usize| r[i]["p99_ms"].as_f64().unwrap();
    assert_eq!(r[0]["policy"], "none");
    assert!(
        p99(1) > 10.0 * p99(0),
        "hedge-10ms {} vs none {}",
        p99(1),
        p99(0)
    );
    assert_eq!(r[3]["policy"], "hedge-10ms-budget-2%");
    assert!(
        p99(3) < 2.0 * p99(0),
        "budgeted {} vs none {}",
        p99(3),
        p99(0)
    );
    assert!(r[3]["extra_load_percent"].as_f64().unwrap() <= 2.0 + 1e-9);
}

#[test]
fn a_sweep_over_utilisation_reports_each_point() {
    let v = json(&[
        "hedge",
        "--format",
        "json",
        "--requests",
        "2000",
        "--utilisation",
        "0.2,0.4",
    ]);
    let sweep = v["sweep"].as_array().unwrap();
    assert_eq!(sweep.len(), 2);
    assert_eq!(sweep[0]["utilisation"], 0.2);
    // 0.2 · 20 servers / (10 sub-requests · 1 ms) = 400 requests/s.
    assert!((sweep[0]["rate_per_s"].as_f64().unwrap() - 400.0).abs() < 1e-6);
    assert_eq!(sweep[1]["results"].as_array().unwrap().len(), 6);
    let csv = String::from_utf8(
        herd(&[
            "hedge",
            "--format",
            "csv",
            "--requests",
            "500",
            "--utilisation",
            "0.3",
        ])
        .stdout,
    )
    .unwrap();
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("utilisation,rate_per_s,seed,policy,")
    );
    assert_eq!(lines.count(), 6);
}

#[test]
fn charts_are_written_for_the_tail_and_the_sweep() {
    let dir = std::env::temp_dir().join(format!("herd-hedge-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tail = dir.join("tail.svg");
    ok(&[
        "hedge",
        "--requests",
        "2000",
        "--chart",
        tail.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&tail).unwrap();
    assert!(svg.contains("hedge-10ms") && svg.contains("fraction slower"));
    let cross = dir.join("cross.png");
    ok(&[
        "hedge",
        "--requests",
        "1000",
        "--utilisation",
        "0.2,0.5",
        "--chart",
        cross.to_str().unwrap(),
    ]);
    assert!(std::fs::read(&cross).unwrap().starts_with(b"\x89PNG"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_gets_one_line_naming_the_field() {
    assert!(usage_error(&["hedge", "--requests", "-5"]).contains("--requests"));
    assert!(usage_error(&["hedge", "--requests", "0"]).contains("--requests"));
    assert!(usage_error(&["hedge", "--seed", "-1"]).contains("--seed"));
    assert!(usage_error(&["hedge", "--utilisation", "0.5,-0.1"]).contains("--utilisation"));
    assert!(usage_error(&["hedge", "--utilisation", "nan"]).contains("--utilisation"));
    assert!(usage_error(&["hedge", "--chart", "x.gif"]).contains("--chart"));
    assert!(usage_error(&["hedge", "--runs", "0"]).contains("--runs"));
    assert!(usage_error(&["hedge", "--runs", "1001"]).contains("--runs"));
    assert!(usage_error(&["hedge", "no-such-file.toml"]).contains("no-such-file.toml"));
    let err = usage_error(&["hedge", "scenarios/default.toml"]);
    assert!(err.contains("scenarios/default.toml"), "{err}");
}

/// `herd sweep` varies the latency model like any other: its policies stand where rules do.
#[test]
fn a_sweep_varies_the_latency_model_through_the_model_interface() {
    let v = json(&[
        "sweep",
        "scenarios/hedge-overload.toml",
        "--set",
        "traffic.rate_per_s=600,1800",
        "--set",
        "requests=2000",
        "--metric",
        "p99_ms",
        "--runs",
        "2",
        "--format",
        "json",
    ]);
    let rules: Vec<&str> = v["grid"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "none",
            "hedge-10ms",
            "hedge-p99",
            "hedge-10ms-budget-2%",
            "tied"
        ]
    );
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 10);
    let p99 = |i: usize| cells[i]["metrics"]["p99_ms"]["mean"].as_f64().unwrap();
    // At 600/s a hedge cuts p99; at 1800/s (90 %) unbudgeted hedging is far worse.
    assert!(p99(1) * 3.0 < p99(0), "{} vs {}", p99(1), p99(0));
    assert!(p99(6) > 10.0 * p99(5), "{} vs {}", p99(6), p99(5));
    // `herd storm` runs a latency scenario like any model, through the model interface: its
    // policies stand where rules do, each with its metrics.
    let text = ok(&["storm", "scenarios/lab-hedge.toml", "--format", "csv"]);
    assert!(text.starts_with("rule,seed,p50_ms,p99_ms,"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("hedge-40ms,1,")),
        "{text}"
    );
    // A rule is not one of its variants: the error says what the model compares.
    let err = usage_error(&["storm", "scenarios/lab-hedge.toml", "--rule", "full"]);
    assert!(
        err.contains("variants of its own (none, hedge-40ms"),
        "{err}"
    );
}

/// `--runs K` runs seeds S..S+K−1 of each policy, each exactly the run `--seed` gives, and
/// summarises each figure over them; the CSV has a line a run.
#[test]
fn runs_are_the_seeds_one_after_another_and_their_summary() {
    let base = ["hedge", "--requests", "2000", "--policy", "none,tied"];
    let with = |extra: &[&str]| json(&[&base[..], extra, &["--format", "json"]].concat());
    let v = with(&["--seed", "7", "--runs", "3"]);
    assert_eq!(v["runs"], 3);
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 6);
    for (i, policy) in ["none", "tied"].into_iter().enumerate() {
        let mine: Vec<&serde_json::Value> = results[3 * i..3 * i + 3].iter().collect();
        for (k, r) in mine.iter().enumerate() {
            assert_eq!(r["policy"], policy);
            let seed = 7 + k as u64;
            assert_eq!(r["seed"], seed);
            // The same run as asking for that seed alone.
            let alone = with(&["--seed", &seed.to_string()]);
            assert_eq!(&&alone["results"][i], r, "{policy}, seed {seed}");
        }
        let summary = &v["summary"][i];
        assert_eq!(summary["policy"], policy);
        let p999: Vec<f64> = mine
            .iter()
            .map(|r| r["p999_ms"].as_f64().unwrap())
            .collect();
        let mean = p999.iter().sum::<f64>() / 3.0;
        assert!((summary["p999_ms"]["mean"].as_f64().unwrap() - mean).abs() <= 1e-9 * mean);
        let max = p999.iter().copied().fold(f64::MIN, f64::max);
        assert_eq!(summary["p999_ms"]["max"].as_f64().unwrap(), max);
    }
    let csv = ok(&[&base[..], &["--runs", "3", "--format", "csv"]].concat());
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 6, "{csv}");
    assert!(lines[0].contains(",seed,policy,"), "{}", lines[0]);
    let table = ok(&[&base[..], &["--runs", "3"]].concat());
    assert!(
        table.starts_with("seeds 1..3 (3 runs a policy, mean [min–max])"),
        "{table}"
    );
}
