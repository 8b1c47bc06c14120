//! On random deterministic DAGs (failures certain or absent), the counts measured on real
//! loopback servers through herd's layer equal the exact prediction, classic and
//! layer-aware: fan-out, diamonds, failing services in the middle, lost answers, one-attempt
//! edges.
use herd_lab::chain::{Chain, ChainOptions};
use herd_sim::graph::{Graph, Options, predict};
use proptest::prelude::*;

use crate::chance;
use crate::graphs;

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

/// The counts the lab measures for one view of `g`, and the prediction's.
fn measured_and_predicted(g: &Graph, layer_aware: bool) -> (Vec<f64>, Vec<f64>) {
    let p = predict(g, Options { layer_aware }).expect("prediction");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let measured = runtime.block_on(async {
        let chain = Chain::start(
            g,
            ChainOptions {
                layer_aware,
                ..ChainOptions::default()
            },
        )
        .await
        .expect("chain starts");
        let m = chain.drive(1).await.expect("drive");
        chain.shutdown().await.expect("clean shutdown");
        m.received()
    });
    (measured.into_iter().map(|c| c as f64).collect(), p.receives)
}

proptest! {
    #![proptest_config(chance::proptest_config(24))]

    #[test]
    fn lab_measures_the_prediction_on_deterministic_dags(
        g in deterministic_dag(),
        layer_aware: bool,
    ) {
        let (measured, predicted) = measured_and_predicted(&g, layer_aware);
        prop_assert_eq!(measured, predicted, "graph {:?}", g);
    }
}

/// Regression (a case the property found): layer-aware, a lost answer on every attempt of a
/// two-attempt edge (s1 → s3) above a failing service that a one-attempt edge also reaches.
#[test]
fn layer_aware_lost_answers_over_a_failing_service() {
    let g = Graph::from_toml(
        r#"
        entry = "s0"
        [[service]]
        name = "s0"
        calls = [{ to = "s1", attempts = 3 }, { to = "s2", attempts = 1 }]
        [[service]]
        name = "s1"
        calls = [{ to = "s3", attempts = 2, failure_probability = 1.0 }]
        [[service]]
        name = "s2"
        calls = [{ to = "s3", attempts = 1 }]
        [[service]]
        name = "s3"
        fails = true
        "#,
    )
    .expect("valid graph");
    let (measured, predicted) = measured_and_predicted(&g, true);
    assert_eq!(measured, predicted);
}
