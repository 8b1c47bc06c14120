//! The chain on real loopback servers: measured counts equal the prediction.
use herd_lab::chain::{Chain, ChainOptions, DEFAULT_GRAPH};
use herd_sim::graph::{BATCHES, Graph, Options, known_error, predict, tolerance_at, z_limit};

use crate::graphs;

use graphs::{line, shipped};

use crate::chance;

async fn measure(graph: &Graph, layer_aware: bool, views: u64) -> Vec<u64> {
    let options = ChainOptions {
        layer_aware,
        ..ChainOptions::default()
    };
    let chain = Chain::start(graph, options).await.expect("chain starts");
    let m = chain.drive(views).await.expect("drive");
    assert_eq!(m.views, views);
    chain.shutdown().await.expect("clean shutdown");
    m.received()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_attempts_at_every_layer_measure_1_3_9_27() {
    let g = Graph::from_toml(DEFAULT_GRAPH).expect("default graph");
    assert_eq!(measure(&g, false, 1).await, [1, 3, 9, 27]);
    assert_eq!(measure(&g, false, 4).await, [4, 12, 36, 108]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_aware_measures_3_queries_instead_of_27() {
    let g = shipped("chain.toml");
    assert_eq!(measure(&g, true, 1).await, [1, 1, 1, 3]);
    assert_eq!(measure(&g, true, 5).await, [5, 5, 5, 15]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_inventory_retrying_measures_1_1_1_3() {
    let g = shipped("chain-inventory-only.toml");
    assert_eq!(measure(&g, false, 2).await, [2, 2, 2, 6]);
}

/// Drives `views` views through the chain of `graph` (the shipped `name`) with `options` and
/// checks every service's count against the prediction: equal if `deterministic`, else
/// within sampling error (standard errors from the sample, no fixed slack): at the z that
/// keeps the chance of a false failure below 10⁻⁶ over the test's 10 comparisons (two runs
/// of five services, batch means with 49 degrees of freedom), not the lab's own verdict of
/// four standard errors.
async fn agrees_with_the_prediction(
    name: &str,
    options: ChainOptions,
    views: u64,
    deterministic: bool,
) {
    let graph = &shipped(name);
    let layer_aware = options.layer_aware;
    let p = predict(graph, Options { layer_aware }).expect("prediction");
    let chain = Chain::start(graph, options).await.expect("chain starts");
    let m = chain.drive(views).await.expect("drive");
    chain.shutdown().await.expect("clean shutdown");
    let z = z_limit(1e-6, 10, Some(BATCHES as u32 - 1));
    for c in m.compare(&p, deterministic) {
        let agrees = if deterministic {
            c.agrees
        } else {
            (c.measured - c.predicted).abs()
                <= tolerance_at(z, c.std_error, c.predicted, m.views, known_error(&p))
        };
        assert!(agrees, "{name} layer_aware={layer_aware}: {c:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deterministic_shipped_graphs_match_the_prediction_exactly() {
    for name in ["chain.toml", "chain-inventory-only.toml", "diamond.toml"] {
        for layer_aware in [false, true] {
            let options = ChainOptions {
                layer_aware,
                ..ChainOptions::default()
            };
            agrees_with_the_prediction(name, options, 3, true).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_failure_graph_agrees_within_sampling_error() {
    for layer_aware in [false, true] {
        let options = ChainOptions {
            layer_aware,
            seed: chance::seed(11),
            ..ChainOptions::default()
        };
        // The budgets count in whole units on both sides (herd's RetryBudget and the model),
        // and the views run one at a time.
        agrees_with_the_prediction("partial-failure.toml", options, 1_500, false).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drive_can_stop_early_and_too_many_views_are_refused() {
    let g = shipped("chain.toml");
    let chain = Chain::start(&g, ChainOptions::default())
        .await
        .expect("chain starts");
    let m = chain.drive_until(100, async {}).await.expect("drive");
    assert!(m.interrupted);
    assert_eq!(m.views, 0);
    assert!(chain.drive(0).await.is_err());
    assert!(chain.drive(herd_lab::chain::MAX_VIEWS + 1).await.is_err());
    chain.shutdown().await.expect("clean shutdown");
}

/// `s0 → s1 → …`, each calling the next with `attempts[i]` attempts; the last always fails.
fn chain_of(attempts: &[u32]) -> Graph {
    let edges: Vec<String> = attempts.iter().map(|a| format!("attempts = {a}")).collect();
    line(&edges, true)
}

/// Regression: herd's layer also marks a failure it gives up on after a single allowed
/// attempt; if the lab left that on, s0 (3 attempts) would not retry s1's unmarked-by-model
/// failure and the database would see 1 query instead of the predicted 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_aware_still_retries_where_no_layer_below_retried() {
    for (attempts, want) in [
        (&[3, 1][..], &[1u64, 3, 3][..]),
        (&[2, 1, 4][..], &[1, 1, 1, 4][..]),
        (&[1, 3, 1][..], &[1, 1, 3, 3][..]),
    ] {
        let g = chain_of(attempts);
        let p = predict(&g, Options { layer_aware: true }).expect("prediction");
        let want_f: Vec<f64> = want.iter().map(|&w| w as f64).collect();
        assert_eq!(p.receives, want_f, "prediction for {attempts:?}");
        assert_eq!(measure(&g, true, 1).await, want, "lab for {attempts:?}");
    }
}
