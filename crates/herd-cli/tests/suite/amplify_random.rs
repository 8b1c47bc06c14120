//! `herd amplify` on random graphs with budgets (5 to 10 services, 1 to 4 budgeted edges,
//! drawn from fixed seeds): every figure is exact (closed form, or the stationary law of the
//! buckets), or a labelled Monte Carlo estimate, never the formula that treats every call as
//! meeting an average bucket; and every figure, exact or estimated, agrees with a second,
//! independent simulation written from docs/amplify.md (`amplify_random/reference.rs`). The
//! exact figures also agree with herd's own Monte Carlo run.
//!
//! False failures: every comparison is at the z for a false-failure rate of 10⁻⁶ over all the
//! comparisons of the run (Bonferroni), with Student's t for the batch-means standard errors
//! (49 degrees of freedom). The graphs and the seeds are fixed, so the run is reproducible;
//! `HERD_TEST_SEED` draws other graphs.
use herd_sim::graph::{BATCHES, Graph, z_limit};
use serde_json::Value;

#[path = "../../../herd-sim/tests/support/random_graph.rs"]
mod random_graph;
#[path = "amplify_random/reference.rs"]
mod reference;
use crate::support;

use random_graph::random_graph;
use support::{json, scratch_file};

/// Graphs per run.
const GRAPHS: u64 = 6;
/// Entry requests of each Monte Carlo run (herd's, and the reference's).
const REQUESTS: u64 = 200_000;

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
    // At most 10 services per graph, each compared twice (herd's Monte Carlo, the reference).
    let z = z_limit(1e-6, (GRAPHS * 10 * 2) as usize, Some(BATCHES as u32 - 1));
    let (mut exact, mut worst) = (0, 0.0f64);
    for seed in seeds() {
        let text = random_graph(seed);
        let path = scratch_file(&format!("random-{seed}.toml"), &text);
        let layer_aware = seed % 2 == 1;
        let mut args = vec!["amplify", &path, "--format", "json", "--simulate"];
        let (requests, seed_arg) = (REQUESTS.to_string(), seed.to_string());
        args.extend([requests.as_str(), "--seed", seed_arg.as_str()]);
        if layer_aware {
            args.push("--layer-aware");
        }
        let v: Value = json(&args);
        let kind = v["exactness"]["kind"].as_str().expect("kind");
        assert!(
            ["exact", "stationary", "monte_carlo"].contains(&kind),
            "graph {seed}: figures are {kind}: {}\n{text}",
            v["exactness"]
        );
        let figures = v["services"].as_array().expect("services");
        let known = v["exactness"]["error"].as_f64().unwrap_or(0.0);
        if kind == "monte_carlo" {
            // The figures are the simulation's means, each with its standard error.
            assert!(figures[1]["std_error"].as_f64().is_some(), "{v}");
        } else {
            exact += 1;
            for s in v["simulation"]["services"].as_array().expect("services") {
                let (got, want) = (
                    s["simulated"].as_f64().unwrap(),
                    s["predicted"].as_f64().unwrap(),
                );
                let se = s["std_error"].as_f64().unwrap().max(1.0 / REQUESTS as f64);
                assert!(
                    (got - want).abs() <= z * se + known + 1e-9 * (1.0 + want),
                    "graph {seed}, {}: simulated {got} ± {se}, exact {want} ({:.1} standard \
                     errors, limit {z:.2})\n{text}",
                    s["name"],
                    (got - want).abs() / se
                );
            }
        }
        // The independent simulation, from its own seed.
        let graph = Graph::from_toml(&text).expect("valid graph");
        let plain = reference::simulate(&graph, layer_aware, REQUESTS, seed);
        for (f, (mean, se)) in figures.iter().zip(plain) {
            let figure = f["predicted"].as_f64().expect("predicted");
            let figure_se = f["std_error"].as_f64().unwrap_or(0.0);
            let se = (se * se + figure_se * figure_se)
                .sqrt()
                .max(1.0 / REQUESTS as f64);
            let off = ((figure - mean).abs() - known).max(0.0) / se;
            worst = worst.max(off);
            assert!(
                off <= z,
                "graph {seed}, {}: herd's {kind} figure {figure} ± {figure_se}, the reference's \
                 {mean} ± {se} ({off:.1} standard errors, limit {z:.2})\n{text}",
                f["name"]
            );
        }
    }
    eprintln!(
        "{exact} of {GRAPHS} random budgeted graphs exact; the reference within {worst:.2} \
         standard errors of every figure"
    );
}
