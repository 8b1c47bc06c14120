//! On random deterministic DAGs (failures certain or absent), the counts measured on real
//! loopback servers through herd's layer equal the exact prediction, classic and
//! layer-aware: fan-out, diamonds, failing services in the middle, lost answers, one-attempt
//! edges.
use herd_lab::chain::{Chain, ChainOptions};
use herd_sim::graph::{Graph, Options, predict};
use proptest::prelude::*;

#[path = "../../herd-sim/tests/support/chance.rs"]
mod chance;
#[path = "../../herd-sim/tests/support/graphs.rs"]
mod graphs;

/// 2..=5 services (`graphs::dag`), edges that always or never fail, any service but the
/// entry failing with probability 0.3.
fn deterministic_dag() -> impl Strategy<Value = Graph> {
    let edge = (1u32..=3, prop_oneof![3 => Just(0.0), 1 => Just(1.0)]);
    graphs::dag(
        edge.boxed(),
        0..3,
        prop::bool::weighted(0.3).boxed(),
        |_, _| true,
    )
}

proptest! {
    #![proptest_config(chance::proptest_config(24))]

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
