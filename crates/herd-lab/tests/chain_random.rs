//! On random deterministic DAGs (failures certain or absent), the counts measured on real
//! loopback servers through herd's layer equal the exact prediction, classic and
//! layer-aware: fan-out, diamonds, failing services in the middle, lost answers, one-attempt
//! edges.
use herd_lab::chain::{Chain, ChainOptions};
use herd_sim::graph::{Call, Graph, Options, Service, predict};
use proptest::prelude::*;

/// 2..=5 services, edges from lower to higher index (no cycle), every service reachable.
fn deterministic_dag() -> impl Strategy<Value = Graph> {
    (2usize..=5)
        .prop_flat_map(|n| {
            let edge = (1u32..=3, prop_oneof![3 => Just(0.0), 1 => Just(1.0)]);
            (
                Just(n),
                proptest::collection::vec(any::<prop::sample::Index>(), n - 1),
                proptest::collection::vec(edge.clone(), n - 1),
                proptest::collection::vec(
                    (
                        any::<prop::sample::Index>(),
                        any::<prop::sample::Index>(),
                        edge,
                    ),
                    0..3,
                ),
                proptest::collection::vec(prop::bool::weighted(0.3), n),
            )
        })
        .prop_map(|(n, parents, tree_edges, extra, fails)| {
            let mut services: Vec<Service> = (0..n)
                .map(|i| Service {
                    name: format!("s{i}"),
                    fails: i > 0 && fails[i],
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn lab_measures_the_prediction_on_deterministic_dags(
        g in deterministic_dag(),
        layer_aware: bool,
    ) {
        let options = Options { layer_aware };
        let p = predict(&g, options).expect("prediction");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let measured = runtime.block_on(async {
            let chain = Chain::start(&g, ChainOptions { layer_aware, ..ChainOptions::default() })
                .await
                .expect("chain starts");
            let m = chain.drive(1).await.expect("drive");
            chain.shutdown().await.expect("clean shutdown");
            m.received()
        });
        let measured: Vec<f64> = measured.into_iter().map(|c| c as f64).collect();
        prop_assert_eq!(measured, p.receives, "graph {:?}", g);
    }
}
