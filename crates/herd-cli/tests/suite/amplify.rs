//! `herd amplify` end to end: JSON counts for the shipped graphs, layer-aware, the Monte
//! Carlo check, and one-line errors with exit code 2.
use serde_json::Value;

use crate::support;

use support::{herd, json};

/// `herd amplify` on the shipped graph `scenarios/graphs/GRAPH` with `extra` flags, as JSON.
fn amplify(graph: &str, extra: &[&str]) -> Value {
    let path = format!("scenarios/graphs/{graph}");
    json(&[&["amplify", path.as_str()], extra, &["--format", "json"]].concat())
}

fn receives(v: &Value) -> Vec<(String, f64)> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().expect("name").to_owned(),
                s["predicted"].as_f64().expect("predicted"),
            )
        })
        .collect()
}

fn named(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
    pairs.iter().map(|&(n, r)| (n.to_owned(), r)).collect()
}

#[test]
fn chain_json_gives_1_3_9_27_and_advice() {
    let v = amplify("chain.toml", &[]);
    assert_eq!(
        receives(&v["services"]),
        named(&[
            ("bff", 1.0),
            ("search", 3.0),
            ("inventory", 9.0),
            ("stock-db", 27.0)
        ])
    );
    assert_eq!(v["amplification"][0]["service"], "stock-db");
    assert_eq!(v["amplification"][0]["factor"], 27.0);
    assert_eq!(v["advice"]["retry_only"][0]["from"], "inventory");
    assert_eq!(v["advice"]["retry_only"][0]["to"], "stock-db");
    let advised = named(&[
        ("bff", 1.0),
        ("search", 1.0),
        ("inventory", 1.0),
        ("stock-db", 3.0),
    ]);
    assert_eq!(receives(&v["advice"]["services"]), advised);
    assert_eq!(receives(&v["advice"]["layer_aware_services"]), advised);
}

#[test]
fn layer_aware_json_gives_1_1_1_3() {
    let v = amplify("chain.toml", &["--layer-aware"]);
    assert_eq!(v["layer_aware"], true);
    assert_eq!(
        receives(&v["services"]),
        named(&[
            ("bff", 1.0),
            ("search", 1.0),
            ("inventory", 1.0),
            ("stock-db", 3.0)
        ])
    );
}

/// Regression: with a budget below a caller that retries, b was printed as 1.6525 and
/// called exact; the stationary law of the bucket gives 1.6415, and the label says how.
#[test]
fn budget_below_retries_is_exact_from_the_stationary_law() {
    let v = amplify("budget-below-retries.toml", &[]);
    assert_eq!(v["exactness"]["kind"], "stationary");
    assert!(v["exactness"]["error"].as_f64().unwrap() < 1e-9);
    let b = v["services"][1]["predicted"].as_f64().unwrap();
    assert!((b - 1.6415).abs() < 5e-5, "{b}");
    assert!(v.get("simulation").is_none());
}

/// Regression: two budgets with a long tail of tokens (payments → bank asks 0.111 retries
/// per call of its 0.1) passed the chain's old bound of 600 states, and the figures fell
/// back to the formula, 0.02 % off. They are now exact.
#[test]
fn two_budgets_with_a_long_bucket_are_exact() {
    let v = amplify("partial-failure.toml", &[]);
    assert_eq!(v["exactness"]["kind"], "stationary", "{}", v["exactness"]);
    let checkout = v["services"][1]["predicted"].as_f64().unwrap();
    assert!((checkout - 1.032_570_5).abs() < 1e-6, "{checkout}");
    assert!(v.get("simulation").is_none());
}

/// A budget the exact computation cannot take (not a fraction with a small denominator):
/// the figures are a Monte Carlo run's means, each with its standard error, and labelled.
#[test]
fn budgets_beyond_the_exact_computation_get_monte_carlo_figures() {
    let graph = support::scratch_file(
        "odd-budget.toml",
        "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 3, \
         failure_probability = 0.5, budget_percent = 33.3333 }]\n[[service]]\nname = \"b\"\n",
    );
    let v = json(&["amplify", &graph, "--format", "json"]);
    assert_eq!(v["exactness"]["kind"], "monte_carlo");
    assert_eq!(v["simulation"]["entry_requests"], 200_000);
    let b = &v["services"][1];
    let (mean, se) = (
        b["predicted"].as_f64().unwrap(),
        b["std_error"].as_f64().unwrap(),
    );
    assert!(se > 0.0);
    assert_eq!(
        mean,
        v["simulation"]["services"][1]["simulated"]
            .as_f64()
            .unwrap()
    );
    let text = support::ok(&["amplify", &graph]);
    assert!(text.contains("Monte Carlo estimates"), "{text}");
    assert!(!text.contains("APPROXIMATE"), "{text}");
}

#[test]
fn monte_carlo_check_agrees_on_the_partial_failure_graph() {
    let v = amplify(
        "partial-failure.toml",
        &["--simulate", "20000", "--seed", "5"],
    );
    assert_eq!(v["simulation"]["agrees"], true);
    assert_eq!(v["simulation"]["entry_requests"], 20000);
}

#[test]
fn table_names_the_amplification_and_the_advice() {
    let out = herd(&["amplify", "scenarios/graphs/diamond.toml"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("stock-db: 30 requests, 15× the 2"), "{text}");
    assert!(
        text.contains("advice: retry only at inventory → stock-db (3 attempts)"),
        "{text}"
    );
}

#[test]
fn bad_graphs_exit_2_with_one_line() {
    let dir = std::env::temp_dir().join(format!("herd-amplify-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cycle = dir.join("cycle.toml");
    std::fs::write(
        &cycle,
        "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 2 }]\n\
         [[service]]\nname = \"b\"\ncalls = [{ to = \"a\", attempts = 2 }]\n",
    )
    .expect("write");
    let missing = dir.join("missing.toml");
    for (path, want) in [
        (&cycle, "the graph has a cycle: a → b → a"),
        (&missing, "missing.toml: "),
    ] {
        let out = herd(&["amplify", path.to_str().expect("utf-8 path")]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `herd lab chain` on real loopback servers measures what `herd amplify` predicts.
#[test]
fn lab_chain_measures_what_amplify_predicts() {
    for (extra, want) in [
        (None, [1.0, 3.0, 9.0, 27.0]),
        (Some("--layer-aware"), [1.0, 1.0, 1.0, 3.0]),
    ] {
        let mut args = vec!["lab", "chain", "--views", "2", "--format", "json"];
        args.extend(extra);
        let lab = json(&args)["results"][0].clone();
        assert_eq!(lab["verdict"]["verdict"], "agrees");
        assert_eq!(lab["deterministic"], true);
        let measured: Vec<f64> = lab["services"]
            .as_array()
            .expect("services")
            .iter()
            .map(|s| s["measured"].as_f64().expect("measured"))
            .collect();
        assert_eq!(measured, want);
        let mut args = vec!["amplify", "scenarios/graphs/chain.toml", "--format", "json"];
        args.extend(extra);
        let predicted: Vec<f64> = receives(&json(&args)["services"])
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        assert_eq!(measured, predicted);
    }
}

#[test]
fn lab_chain_refuses_absurd_views() {
    let out = herd(&["lab", "chain", "--views", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("views must be in [1, 10000], got 0 (--views)")
    );
}
