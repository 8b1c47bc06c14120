//! Random budgeted service graphs of the size `herd amplify` promises to compute (5 to 10
//! services, 1 to 4 budgeted edges), from a seed: shared by the herd-sim tests, its graph
//! bench and the `herd amplify` tests of herd-cli (which include this file by its path).
#![allow(dead_code)] // each binary uses its own share of these

use herd::rng::{Rng, SplitMix64};

/// A random DAG of 5 to 10 services as a graph file: service `i > 0` is called by one service
/// below it, plus up to three extra edges downwards; 1 to 4 of the edges carry a budget of
/// 10, 20, 25 or 50 %, every edge 1 to 4 attempts and a failure probability of 0, 0.05, 0.1
/// or 0.3, and the last service fails with probability 0.3.
pub fn random_graph(seed: u64) -> String {
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
