//! The graph arithmetic: exact counts for chains, fan-out, diamonds, partial failure, budgets
//! and layer-aware retries, and the errors for bad graph files.
use herd_sim::graph::{
    AnswerOdds, Call, Exactness, Graph, Options, Service, advise, amplification, call_figures,
    predict,
};

use crate::graphs;

use graphs::{line, shipped};

const CLASSIC: Options = Options { layer_aware: false };
const AWARE: Options = Options { layer_aware: true };

fn receives(g: &Graph, options: Options) -> Vec<f64> {
    predict(g, options).expect("prediction").receives
}

fn chain(attempts: &[u32]) -> Graph {
    let mut services: Vec<Service> = attempts
        .iter()
        .enumerate()
        .map(|(i, &a)| Service {
            name: format!("s{i}"),
            fails: false,
            calls: vec![Call {
                to: i + 1,
                attempts: a,
                failure_probability: 0.0,
                budget_percent: 0.0,
            }],
        })
        .collect();
    services.push(Service {
        name: "db".into(),
        fails: true,
        calls: vec![],
    });
    Graph::new(services, 0).expect("valid chain")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    assert!(
        got.iter().zip(want).all(|(&g, &w)| close(g, w)),
        "{got:?} != {want:?}"
    );
}

#[test]
fn chain_with_three_attempts_everywhere_gives_1_3_9_27() {
    assert_eq!(
        receives(&shipped("chain.toml"), CLASSIC),
        [1.0, 3.0, 9.0, 27.0]
    );
}

#[test]
fn chain_with_only_inventory_retrying_gives_1_1_1_3() {
    let g = shipped("chain-inventory-only.toml");
    assert_eq!(receives(&g, CLASSIC), [1.0, 1.0, 1.0, 3.0]);
}

#[test]
fn layer_aware_chain_gives_1_1_1_3_without_any_configuration_change() {
    assert_eq!(
        receives(&shipped("chain.toml"), AWARE),
        [1.0, 1.0, 1.0, 3.0]
    );
    // Layer awareness changes nothing where only one layer retries.
    let g = shipped("chain-inventory-only.toml");
    assert_eq!(receives(&g, AWARE), [1.0, 1.0, 1.0, 3.0]);
}

#[test]
fn layer_aware_retries_a_failure_that_no_layer_below_retried() {
    // s0 →(3) s1 →(1) db: s1 made a single attempt, so its failure is unmarked and s0
    // retries it: 1, 3, 3.
    assert_eq!(receives(&chain(&[3, 1]), AWARE), [1.0, 3.0, 3.0]);
    // s0 →(2) s1 →(1) s2 →(4) db: s2 exhausts 4 attempts and marks; the mark passes through
    // s1 (one attempt) and s0 does not retry: 1, 1, 1, 4.
    assert_eq!(receives(&chain(&[2, 1, 4]), AWARE), [1.0, 1.0, 1.0, 4.0]);
}

#[test]
fn long_chain_is_a_power() {
    let g = chain(&[3; 10]);
    let r = receives(&g, CLASSIC);
    assert_eq!(r[10], 3f64.powi(10));
    assert_eq!(receives(&g, AWARE)[10], 3.0);
}

#[test]
fn diamond_receives_the_sum_of_its_paths() {
    let g = shipped("diamond.toml");
    let names: Vec<&str> = g.services().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "page",
            "search",
            "recommendations",
            "inventory",
            "reviews",
            "stock-db"
        ]
    );
    // page →(2) search, page →(2) recommendations; search →(3) inventory, search →(3)
    // reviews, recommendations →(2) inventory; inventory →(3) stock-db (fails).
    assert_eq!(receives(&g, CLASSIC), [1.0, 2.0, 2.0, 10.0, 2.0, 30.0]);
    // Layer-aware: inventory's failure is marked, nobody above retries it.
    assert_eq!(receives(&g, AWARE), [1.0, 1.0, 1.0, 2.0, 1.0, 6.0]);
}

#[test]
fn fan_out_to_healthy_services_costs_one_request_each() {
    let g = Graph::from_toml(
        r#"
        entry = "a"
        [[service]]
        name = "a"
        calls = [{ to = "b", attempts = 5 }, { to = "c", attempts = 5 }, { to = "b", attempts = 2 }]
        [[service]]
        name = "b"
        [[service]]
        name = "c"
        "#,
    )
    .expect("valid");
    assert_eq!(receives(&g, CLASSIC), [1.0, 2.0, 1.0]);
}

#[test]
fn partial_failure_follows_the_geometric_sum() {
    for &(k, p) in &[(1u32, 0.3f64), (3, 0.3), (4, 0.5), (3, 1.0), (2, 0.0)] {
        let call = Call {
            to: 1,
            attempts: k,
            failure_probability: p,
            budget_percent: 0.0,
        };
        let f = call_figures(&call, AnswerOdds::OK, CLASSIC);
        let want = if p == 1.0 {
            f64::from(k)
        } else {
            (1.0 - p.powi(k as i32)) / (1.0 - p)
        };
        assert!(
            close(f.attempts, want),
            "k={k} p={p}: {} != {want}",
            f.attempts
        );
        assert!(close(f.outcome.failure(), p.powi(k as i32)));
    }
}

#[test]
fn callee_failure_combines_with_edge_failure() {
    // q = 1 − (1 − p)(1 − f) with p = 0.2 on the edge and f = 0.5 for the callee.
    let edges = [
        "attempts = 3, failure_probability = 0.2",
        "attempts = 1, failure_probability = 0.5",
    ];
    let g = line(&edges, false);
    let q: f64 = 1.0 - 0.8 * 0.5;
    let p = predict(&g, CLASSIC).expect("prediction");
    let b = 1.0 + q + q * q;
    assert_close(&p.receives, &[1.0, b, b]);
    assert!(close(p.answers[0].failure(), q.powi(3)));
}

#[test]
fn budget_caps_retries_per_first_attempt() {
    // Always failing callee, 5 attempts: 4 retries wanted, a 50 % budget allows 0.5.
    let g = line(&["attempts = 5, budget_percent = 50"], true);
    assert_eq!(receives(&g, CLASSIC), [1.0, 1.5]);
    // A budget larger than the demand changes nothing: p = 0.1, k = 3 wants 0.11 retries.
    let call = Call {
        to: 1,
        attempts: 3,
        failure_probability: 0.1,
        budget_percent: 20.0,
    };
    let f = call_figures(&call, AnswerOdds::OK, CLASSIC);
    assert!(close(f.attempts, 1.11));
    // A binding budget: p = 0.5, k = 3 wants 0.75 retries, 20 % allows 0.2; the call
    // succeeds with (1 − q)(1 + retries) = 0.5 · 1.2.
    let call = Call {
        failure_probability: 0.5,
        ..call
    };
    let f = call_figures(&call, AnswerOdds::OK, CLASSIC);
    assert!(close(f.attempts, 1.2));
    assert!(close(f.outcome.ok, 0.6));
}

#[test]
fn partial_failure_graph_with_budgets() {
    let g = shipped("partial-failure.toml");
    let p = predict(&g, CLASSIC).expect("prediction");
    // The budgets make the figures the long-run law of the buckets' tokens, solved whole
    // (no truncation left): not the closed form `1 + min(D, β)`, which ignores that a bucket
    // emptied by one burst is still empty for the next request (0.02 % off on checkout).
    assert!(
        matches!(
            p.exactness,
            Exactness::Stationary { truncation_error, .. } if truncation_error == 0.0
        ),
        "{:?}",
        p.exactness
    );
    let [gateway, checkout, payments, cart, bank] = p.receives[..] else {
        panic!("five services: {:?}", p.receives);
    };
    assert!(close(gateway, 1.0));
    // gateway → checkout, k = 3 under a 20 % budget: between no retry and the budget's bound.
    assert!(checkout > 1.0 && checkout < 1.2, "{checkout}");
    // checkout → cart has no budget (p = 0.05, k = 2): 1.05 requests per checkout, exactly.
    assert!(close(cart / checkout, 1.05), "{}", cart / checkout);
    // payments → bank wants 0.111 retries per call (p = 0.1, k = 4) against a 10 % budget,
    // which binds for good: exactly 1.1 requests per call in the long run.
    assert!(close(bank / payments, 1.1), "{}", bank / payments);
    // checkout → payments (p = 0.3, k = 3, no budget) sees payments' answer fail through
    // the bank's budget, so the ratio lies between the retries with a perfect bank and with
    // a bank that always fails its budgeted retries.
    let with = |answer_fails: f64| {
        let q = 1.0 - 0.7 * (1.0 - answer_fails);
        1.0 + q + q * q
    };
    let ratio = payments / checkout;
    assert!(ratio > with(0.0) && ratio < with(0.1), "{ratio}");
}

#[test]
fn amplification_and_advice_for_the_chain() {
    let g = shipped("chain.toml");
    let p = predict(&g, CLASSIC).expect("prediction");
    let amp = amplification(&g, &p, CLASSIC).expect("amplification");
    assert_eq!(amp.len(), 1);
    assert_eq!(amp[0].service, 3);
    assert_eq!((amp[0].receives, amp[0].without_retries), (27.0, 1.0));
    assert_eq!(amp[0].factor(), Some(27.0));
    let advice = advise(&g).expect("advice");
    assert_eq!(advice.retry_on, [(2, 3)]);
    assert_eq!(advice.attempts, 3);
    assert_eq!(advice.prediction.receives, [1.0, 1.0, 1.0, 3.0]);
    // The advised graph of the chain is the inventory-only graph.
    assert_eq!(advice.graph, shipped("chain-inventory-only.toml"));
}

#[test]
fn advice_for_the_diamond_retries_only_into_stock_db() {
    let g = shipped("diamond.toml");
    let advice = advise(&g).expect("advice");
    assert_eq!(advice.retry_on, [(3, 5)]);
    assert_eq!(advice.prediction.receives, [1.0, 1.0, 1.0, 2.0, 1.0, 6.0]);
}

fn error_of(text: &str) -> String {
    Graph::from_toml(text)
        .expect_err("must be rejected")
        .to_string()
}

#[test]
fn cycles_are_named() {
    let e = error_of(
        r#"
        entry = "a"
        [[service]]
        name = "a"
        calls = [{ to = "b", attempts = 2 }]
        [[service]]
        name = "b"
        calls = [{ to = "c", attempts = 2 }]
        [[service]]
        name = "c"
        calls = [{ to = "b", attempts = 2 }]
        "#,
    );
    assert_eq!(e, "the graph has a cycle: b → c → b");
    let e = error_of(
        "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"a\", attempts = 2 }]",
    );
    assert_eq!(e, "the graph has a cycle: a → a");
}

#[test]
fn bad_graphs_get_one_line_errors_naming_the_problem() {
    let cases: &[(&str, &str)] = &[
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"nope\", attempts = 2 }]",
            "service \"a\" calls unknown service \"nope\"",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\n[[service]]\nname = \"a\"",
            "duplicate service name \"a\"",
        ),
        (
            "entry = \"x\"\n[[service]]\nname = \"a\"",
            "entry \"x\" is not a service (services: a)",
        ),
        ("[[service]]\nname = \"a\"", "missing field `entry`"),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 0 }]\n[[service]]\nname = \"b\"",
            "call a → b: attempts is 0; must be 1..=100 (1 = no retry)",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 101 }]\n[[service]]\nname = \"b\"",
            "call a → b: attempts is 101",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 2, failure_probability = 1.5 }]\n[[service]]\nname = \"b\"",
            "call a → b: failure_probability is 1.5; must be in [0, 1]",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 2, failure_probability = nan }]\n[[service]]\nname = \"b\"",
            "call a → b: failure_probability is NaN",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = 2, budget_percent = -5 }]\n[[service]]\nname = \"b\"",
            "call a → b: budget_percent is -5",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\n[[service]]\nname = \"b\"",
            "service \"b\" is not reachable from entry \"a\"",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\natempts = 3",
            "unknown field `atempts`",
        ),
        (
            "entry = \"a\"\n[[service]]\nname = \"a\"\ncalls = [{ to = \"b\", attempts = -1 }]",
            "line 4",
        ),
        (
            "entry = \"a\"",
            "entry \"a\" is not a service (services: none)",
        ),
        ("entry = \"a\"\n[[service]\n", "line 2"),
    ];
    for (text, want) in cases {
        let e = error_of(text);
        assert!(e.contains(want), "{text:?}: got {e:?}, want {want:?}");
        assert!(!e.contains('\n'), "one line: {e:?}");
    }
}

/// The stationary solver sums in its maps' order: with std's per-process random hash keys,
/// each map had its own order and the last digits of `herd amplify`'s figures changed from
/// one run to the next (and from one prediction to the next in one process).
#[test]
fn a_budgeted_prediction_is_bit_identical_every_time() {
    let g = shipped("partial-failure.toml");
    let first = predict(&g, CLASSIC).expect("prediction");
    for _ in 0..5 {
        let again = predict(&g, CLASSIC).expect("prediction");
        let bits = |p: &herd_sim::graph::Prediction| -> Vec<u64> {
            p.receives.iter().map(|r| r.to_bits()).collect()
        };
        assert_eq!(bits(&again), bits(&first));
    }
}
