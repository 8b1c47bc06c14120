//! `herd amplify` on random graphs with budgets (up to 10 services, up to 4 budgeted edges,
//! drawn from fixed seeds): every figure is exact (closed form, or the stationary law of the
//! buckets), or a labelled Monte Carlo estimate, never the formula that treats every call as
//! meeting an average bucket. Exact figures agree with herd's own Monte Carlo run of many
//! requests.
//!
//! False failures: each graph's simulated means are compared at a z for a false-failure
//! rate of 10⁻⁶ over all the comparisons of the run (Bonferroni), with Student's t for the
//! batch-means standard errors (49 degrees of freedom). The graphs and the Monte Carlo seeds
//! are fixed, so the run is reproducible; `HERD_TEST_SEED` draws other graphs.
use herd::rng::{Rng, SplitMix64};
use herd_sim::graph::{BATCHES, z_limit};
use serde_json::Value;

mod support;

use support::{json, scratch_file};

/// Graphs per run.
const GRAPHS: u64 = 6;
/// Entry requests of each graph's Monte Carlo run.
const REQUESTS: &str = "200000";

/// A random DAG of 5 to 10 services: service `i > 0` is called by one service below it,
/// plus a few extra edges downwards; 1 to 4 of the edges carry a budget, and the last
/// service may fail.
fn random_graph(seed: u64) -> String {
    let mut rng = SplitMix64::derive(seed, 0x6a7f);
    let n = 5 + rng.below(6) as usize;
    let mut calls: Vec<Vec<String>> = vec![Vec::new(); n];
    let mut edges = Vec::new();
    for child in 1..n {
        edges.push((rng.below(child as u64) as usize, child));
    }
    for _ in 0..rng.below(4) {
        let from = rng.below(n as u64 - 1) as usize;
        let to = from + 1 + rng.below((n - 1 - from) as u64) as usize;
        edges.push((from, to));
    }
    let budgets = 1 + rng.below(4.min(edges.len() as u64)) as usize;
    let mut budgeted: Vec<usize> = Vec::new();
    while budgeted.len() < budgets {
        let e = rng.below(edges.len() as u64) as usize;
        if !budgeted.contains(&e) {
            budgeted.push(e);
        }
    }
    for (e, &(from, to)) in edges.iter().enumerate() {
        let attempts = 1 + rng.below(4);
        let p = [0.0, 0.05, 0.1, 0.3][rng.below(4) as usize];
        let mut call =
            format!("{{ to = \"s{to}\", attempts = {attempts}, failure_probability = {p}");
        if budgeted.contains(&e) {
            let percent = [10, 20, 25, 50][rng.below(4) as usize];
            call += &format!(", budget_percent = {percent}");
        }
        calls[from].push(call + " }");
    }
    let last_fails = rng.next_f64() < 0.3;
    let mut text = String::from("entry = \"s0\"\n");
    for (i, c) in calls.iter().enumerate() {
        text += &format!("[[service]]\nname = \"s{i}\"\ncalls = [{}]\n", c.join(", "));
        if i == n - 1 && last_fails {
            text += "fails = true\n";
        }
    }
    text
}

fn seeds() -> std::ops::Range<u64> {
    let base = std::env::var("HERD_TEST_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0)
        .wrapping_mul(GRAPHS);
    base..base + GRAPHS
}

#[test]
fn random_budgeted_graphs_are_exact_or_monte_carlo_and_agree() {
    // At most 10 services per graph, each compared once.
    let z = z_limit(1e-6, (GRAPHS * 10) as usize, Some(BATCHES as u32 - 1));
    let mut exact = 0;
    for seed in seeds() {
        let text = random_graph(seed);
        let path = scratch_file(&format!("random-{seed}.toml"), &text);
        let v: Value = json(&[
            "amplify",
            &path,
            "--format",
            "json",
            "--simulate",
            REQUESTS,
            "--seed",
            &seed.to_string(),
        ]);
        let kind = v["exactness"]["kind"].as_str().expect("kind");
        assert!(
            ["exact", "stationary", "monte_carlo"].contains(&kind),
            "graph {seed}: figures are {kind}: {}\n{text}",
            v["exactness"]
        );
        if kind == "monte_carlo" {
            // The figures are the simulation's means, each with its standard error.
            assert!(v["services"][1]["std_error"].as_f64().is_some(), "{v}");
            continue;
        }
        exact += 1;
        let known = v["exactness"]["error"].as_f64().unwrap_or(0.0);
        for s in v["simulation"]["services"].as_array().expect("services") {
            let (got, want) = (
                s["simulated"].as_f64().unwrap(),
                s["predicted"].as_f64().unwrap(),
            );
            let se = s["std_error"].as_f64().unwrap().max(1.0 / 200_000.0);
            assert!(
                (got - want).abs() <= z * se + known + 1e-9 * (1.0 + want),
                "graph {seed}, {}: simulated {got} ± {se}, exact {want} ({:.1} standard \
                 errors, limit {z:.2})\n{text}",
                s["name"],
                (got - want).abs() / se
            );
        }
    }
    eprintln!("{exact} of {GRAPHS} random budgeted graphs exact");
}
