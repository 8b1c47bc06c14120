//! `[retry.throttle]` on a service graph: one throttle per edge, run by the Monte Carlo.
use herd_sim::graph::{Exactness, Graph, Options, predict, simulate};

/// Four layers, three attempts each, the bottom failing: 1, 3, 9, 27 without a throttle.
fn layers(throttle: &str) -> Graph {
    Graph::from_toml(&format!(
        r#"
        entry = "bff"
        [[service]]
        name = "bff"
        calls = [{{ to = "search", attempts = 3 }}]
        [[service]]
        name = "search"
        calls = [{{ to = "inventory", attempts = 3 }}]
        [[service]]
        name = "inventory"
        calls = [{{ to = "db", attempts = 3 }}]
        [[service]]
        name = "db"
        fails = true
        {throttle}
        "#
    ))
    .unwrap()
}

fn means(g: &Graph, requests: u64) -> Vec<f64> {
    let options = Options::default();
    let p = predict(g, options).unwrap();
    let mc = simulate(g, options, &p, requests, 7).unwrap();
    mc.services.iter().map(|s| s.mean).collect()
}

/// Envoy's `max_retries = 0`: no retry is ever in flight, so every edge makes exactly one
/// attempt per call: 1, 1, 1, 1, request by request.
#[test]
fn no_retries_in_flight_is_one_attempt_per_call() {
    let g = layers("[retry.throttle]\nkind = \"envoy-max-retries\"\nmax_retries = 0\n");
    assert_eq!(g.throttle_kind(), Some("envoy-max-retries"));
    assert_eq!(means(&g, 1000), [1.0, 1.0, 1.0, 1.0]);
    // Requests run one at a time here, so Envoy's default of three in flight never binds.
    let g = layers("[retry.throttle]\nkind = \"envoy-max-retries\"\n");
    assert_eq!(means(&g, 1000), [1.0, 3.0, 9.0, 27.0]);
}

/// gRPC's bucket starts at 10 tokens, loses one per failure and allows retries while more
/// than 5 remain: with the bottom always failing, each edge's bucket empties within the
/// first requests and then stops every retry, so 4³ becomes about 1 per layer.
#[test]
fn a_bucket_that_only_loses_stops_the_multiplication() {
    let g = layers("[retry.throttle]\nkind = \"grpc\"\n");
    let p = predict(&g, Options::default()).unwrap();
    assert!(matches!(p.exactness, Exactness::Approximate { .. }));
    let m = means(&g, 10_000);
    assert!(m[3] < 1.01, "{m:?}");
    // Every edge gave some retries before its bucket ran dry.
    assert!(m[1] > 1.0 && m[2] > m[1] * 0.99, "{m:?}");
    // A ratio budget (Linkerd's 20 %, its reserve of 10/s over 10 s: 100 retries, as time
    // stands still) allows about a fifth of the first attempts as retries on each edge.
    let r = means(&layers("[retry.throttle]\nkind = \"ratio\"\n"), 10_000);
    for (layer, pair) in r.windows(2).enumerate() {
        let retries = pair[1] - pair[0];
        assert!(retries <= 0.2 * pair[0] + 0.011, "layer {layer}: {r:?}");
        assert!(retries > 0.19 * pair[0], "layer {layer}: {r:?}");
    }
}

#[test]
fn bad_throttles_are_named() {
    let err = Graph::from_toml(
        "entry = \"a\"\n[[service]]\nname = \"a\"\n[retry.throttle]\nkind = \"nope\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("retry.throttle.kind:"), "{err}");
    let err = Graph::from_toml(
        "entry = \"a\"\n[[service]]\nname = \"a\"\n[retry.throttle]\nkind = \"aws-adaptive\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("needs time"), "{err}");
    let err = Graph::from_toml(
        "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 2, budget_percent = 10 }]\n[[service]]\nname = \"b\"\n[retry.throttle]\nkind = \"grpc\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not both"), "{err}");
}
