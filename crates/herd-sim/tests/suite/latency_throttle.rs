//! `[retry.throttle]` in the latency model: every hedge passes the throttle, through the
//! library's `Budget` interface as a Rust client's hedge would use it.
use herd_sim::latency::{
    LatencyModel, LatencyResult, LatencyRetry, LatencyScenario, PolicyKind, PolicySpec,
};
use herd_sim::{THROTTLE_KINDS, ThrottleTable};

/// 20 000 measured user requests at the default load, with `none` and a hedge after 2 ms
/// (which hedges about a tenth of the sub-requests), under `throttle`.
fn scenario(throttle: Option<ThrottleTable>) -> LatencyScenario {
    let hedge = PolicySpec {
        name: "hedge-2ms".to_owned(),
        kind: PolicyKind::Delay,
        delay_ms: 2.0,
        ..PolicySpec::default()
    };
    LatencyScenario {
        requests: 20_000,
        warmup_requests: 2_000,
        policies: vec![
            PolicySpec {
                name: "none".to_owned(),
                ..PolicySpec::default()
            },
            hedge,
        ],
        retry: throttle.map(|t| LatencyRetry { throttle: Some(t) }),
        ..LatencyScenario::default()
    }
}

fn kind(kind: &str) -> ThrottleTable {
    ThrottleTable {
        kind: kind.to_owned(),
        ..ThrottleTable::default()
    }
}

fn results(throttle: Option<ThrottleTable>) -> Vec<LatencyResult> {
    every_policy(&scenario(throttle))
}

/// Envoy's `max_retries = 0` allows no hedge in flight: the hedging policy sends none, and
/// its users see exactly what `none`'s see (the same arrivals, routes and service times).
#[test]
fn no_hedges_in_flight_is_no_hedging() {
    let mut t = kind("envoy-max-retries");
    t.max_retries = Some(0);
    let r = results(Some(t));
    let (none, hedge) = (&r[0], &r[1]);
    assert_eq!(hedge.extra_load_percent, 0.0);
    assert!(hedge.hedges_refused > 0);
    assert_eq!(
        (hedge.p50_ms, hedge.p99_ms, hedge.p999_ms, hedge.mean_ms),
        (none.p50_ms, none.p99_ms, none.p999_ms, none.mean_ms)
    );
    // Without the throttle the same policy hedges, once per refusal above: every hedge the
    // throttle refused is one the unthrottled policy sent (the same runs up to the first).
    let free = results(None);
    assert!(free[1].extra_load_percent > 0.0 && free[1].hedges_refused == 0);
}

/// A throttle only decides hedges: the policy without hedges is untouched, and a throttle
/// that refuses no hedge leaves the hedging policy's run exactly as it was (the same draws).
/// The ones that bound hedges here (a share of the sub-requests, or hedges in flight
/// against the copies in flight) refuse some and cut the extra load.
#[test]
fn throttles_bound_hedges() {
    let free = results(None);
    for k in THROTTLE_KINDS {
        let r = results(Some(kind(k)));
        eprintln!("{k}: {:?}", r[1]);
        assert_eq!(r[0], free[0], "{k}: `none` sends no hedge");
        if r[1].hedges_refused == 0 {
            assert_eq!(r[1], free[1], "{k}");
        }
    }
    for k in ["envoy-budget", "ratio"] {
        let mut t = kind(k);
        if k == "ratio" {
            // 2 % of sub-requests, no reserve.
            t.retry_ratio = Some(0.02);
            t.min_retries_per_second = Some(0);
        } else {
            t.min_retry_concurrency = Some(0);
        }
        let r = results(Some(t));
        assert!(r[1].hedges_refused > 0, "{k}");
        assert!(
            r[1].extra_load_percent < free[1].extra_load_percent,
            "{k}: {} vs {}",
            r[1].extra_load_percent,
            free[1].extra_load_percent
        );
        if k == "ratio" {
            // At most 2 % of the sub-requests (over the measured ones, within the warm-up's
            // head start), as the policy's own `budget_percent = 2` allows.
            assert!(
                r[1].extra_load_percent <= 2.0 + 0.2,
                "{}",
                r[1].extra_load_percent
            );
        }
    }
}

/// A policy with its own `budget_percent` keeps it: the throttle bounds the others.
#[test]
fn a_policy_budget_wins_over_the_throttle() {
    let with_budget = |throttle: Option<ThrottleTable>| {
        let mut s = scenario(throttle);
        s.policies[1].budget_percent = Some(5.0);
        every_policy(&s)
    };
    let mut none = kind("envoy-max-retries");
    none.max_retries = Some(0);
    assert_eq!(with_budget(Some(none)), with_budget(None));
    let err = LatencyModel::new(&scenario(Some(kind("nope"))))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("retry.throttle.kind:"), "{err}");
}

/// Every policy of `scenario` with its seed, in its order.
fn every_policy(scenario: &LatencyScenario) -> Vec<LatencyResult> {
    let model = LatencyModel::new(scenario).unwrap();
    (0..model.policies().len())
        .map(|i| {
            model
                .run(i, scenario.seed, herd_sim::Watch::none())
                .unwrap()
                .0
        })
        .collect()
}
