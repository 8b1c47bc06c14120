//! What the graph tests share, in herd-sim (the arithmetic and the Monte Carlo run) and in
//! herd-lab (the chain on loopback servers, which includes this file by its path): the shipped
//! graphs and random DAGs.
#![allow(dead_code)] // each test binary uses its own share of these

use std::ops::Range;

use herd_sim::graph::{Call, Graph, Service};
use proptest::prelude::*;

/// A shipped graph, `scenarios/graphs/NAME`.
pub fn shipped(name: &str) -> Graph {
    let path = format!(
        "{}/../../scenarios/graphs/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("shipped graph is readable");
    Graph::from_toml(&text).expect("shipped graph is valid")
}

/// Services `s0 → s1 → … → sN` in a line, each calling the next through `edges[i]` (the
/// call's fields after `to`); the last fails every call if `last_fails`.
pub fn line<E: std::fmt::Display>(edges: &[E], last_fails: bool) -> Graph {
    let mut text = String::from("entry = \"s0\"\n");
    for (i, edge) in edges.iter().enumerate() {
        text += &format!(
            "[[service]]\nname = \"s{i}\"\ncalls = [{{ to = \"s{}\", {edge} }}]\n",
            i + 1
        );
    }
    text += &format!(
        "[[service]]\nname = \"s{}\"\nfails = {last_fails}\n",
        edges.len()
    );
    Graph::from_toml(&text).expect("a valid line of services")
}

/// A random DAG of 2..=5 services: edges only from lower to higher index, so no cycle; each
/// service is reachable because service i > 0 is called by some service below it.
///
/// Each edge is `(attempts, failure_probability)` drawn from `edge`; `extra` edges are added
/// beyond that tree. Service i > 0 of n fails when `fails` draws true for it and
/// `may_fail(i, n)`.
pub fn dag(
    edge: BoxedStrategy<(u32, f64)>,
    extra: Range<usize>,
    fails: BoxedStrategy<bool>,
    may_fail: fn(usize, usize) -> bool,
) -> impl Strategy<Value = Graph> {
    (2usize..=5)
        .prop_flat_map(move |n| {
            (
                Just(n),
                proptest::collection::vec(any::<prop::sample::Index>(), n - 1),
                proptest::collection::vec(edge.clone(), n - 1),
                proptest::collection::vec(
                    (
                        any::<prop::sample::Index>(),
                        any::<prop::sample::Index>(),
                        edge.clone(),
                    ),
                    extra.clone(),
                ),
                proptest::collection::vec(fails.clone(), n),
            )
        })
        .prop_map(move |(n, parents, tree_edges, extra, fails)| {
            let mut services: Vec<Service> = (0..n)
                .map(|i| Service {
                    name: format!("s{i}"),
                    fails: i > 0 && fails[i] && may_fail(i, n),
                    calls: vec![],
                })
                .collect();
            let call = |to, (attempts, p): (u32, f64)| Call {
                to,
                attempts,
                failure_probability: p,
                budget_percent: 0.0,
            };
            for (child, (parent, e)) in (1..n).zip(parents.into_iter().zip(tree_edges)) {
                services[parent.index(child)].calls.push(call(child, e));
            }
            for (a, b, e) in extra {
                let from = a.index(n - 1);
                let to = from + 1 + b.index(n - 1 - from);
                services[from].calls.push(call(to, e));
            }
            Graph::new(services, 0).expect("generated graphs are valid")
        })
}
