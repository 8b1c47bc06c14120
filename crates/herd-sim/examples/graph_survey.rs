//! How `herd amplify`'s exact computation fares on the random budgeted graphs of the tests
//! (5 to 10 services, 1 to 4 budgeted edges; `tests/support/random_graph.rs`): per graph
//! seed and layer mode, the time `predict` took, and whether the figures are exact (with the
//! chain's states) or left to a Monte Carlo estimate (with the reason).
//!
//!     cargo run --release -p herd-sim --example graph_survey -- 0 60   # seeds 0..60
#[path = "../tests/support/random_graph.rs"]
mod random_graph;

use std::time::Instant;

use herd_sim::graph::{Exactness, Graph, Options, predict};

fn main() {
    let bound = |i: usize, default: u64| {
        std::env::args()
            .nth(i)
            .map_or(default, |s| s.parse().expect("a seed"))
    };
    let (from, to) = (bound(1, 0), bound(2, 60));
    for seed in from..to {
        let g = Graph::from_toml(&random_graph::random_graph(seed)).expect("a valid graph");
        for layer_aware in [false, true] {
            let started = Instant::now();
            let p = predict(&g, Options { layer_aware }).expect("a prediction");
            let ms = started.elapsed().as_secs_f64() * 1e3;
            let kind = match &p.exactness {
                Exactness::Exact => "exact".to_owned(),
                Exactness::Stationary { states, .. } => format!("stationary, {states} states"),
                Exactness::Approximate { why } => format!("monte carlo: {why}"),
                other => format!("{other:?}"),
            };
            println!("seed {seed} layer_aware {layer_aware}: {ms:.1} ms, {kind}");
        }
    }
}
