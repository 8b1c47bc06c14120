//! `[retry.throttle]` in the metastable model: every kind runs, accounts for every request,
//! and the throttles that bound retries break the retry loop the Bronson scenario locks in.
use herd_sim::THROTTLE_KINDS;
use herd_sim::ThrottleTable;
use herd_sim::metastable::{MetastableReport, MetastableScenario};

use crate::metastable_scenes as metastable;

use metastable::{no_budget, run};

fn throttled(kind: &str) -> MetastableScenario {
    let mut s = no_budget();
    s.retry.throttle = Some(ThrottleTable {
        kind: kind.to_owned(),
        ..ThrottleTable::default()
    });
    s
}

fn retries(r: &MetastableReport) -> u64 {
    r.windows.iter().map(|w| w.retries).sum()
}

#[test]
fn every_kind_accounts_for_every_request() {
    let none = run(&no_budget(), 1);
    for kind in THROTTLE_KINDS {
        let r = run(&throttled(kind), 1);
        // `gave_up` includes the requests a throttle denied (`denied_by_budget`).
        assert_eq!(r.served + r.gave_up + r.pending, r.new_requests, "{kind}");
        assert!(r.denied_by_budget <= r.gave_up, "{kind}");
        assert_eq!(r, run(&throttled(kind), 1), "{kind}: reproducible");
        // A throttle only ever takes retries away (or holds attempts back).
        assert!(retries(&r) < retries(&none), "{kind}");
        let sent: u64 = r.windows.iter().map(|w| w.first_attempts).sum();
        assert!(sent <= r.new_requests, "{kind}");
    }
}

/// The Bronson scenario never recovers without a budget: its retries alone keep the server
/// past its knee. Each throttle that bounds retries by what the server answers (a bucket,
/// a quota, a ratio, retries in flight) lets it recover, on every seed tried (fixed seeds:
/// the run is deterministic; the gap is a factor of two in attempts).
#[test]
fn throttles_that_bound_retries_break_the_loop() {
    for seed in 1..=3 {
        let none = run(&no_budget(), seed);
        assert!(none.recovered_at_s.is_none(), "seed {seed}");
        for kind in [
            "aws-standard",
            "envoy-budget",
            "envoy-max-retries",
            "grpc",
            "ratio",
        ] {
            let r = run(&throttled(kind), seed);
            assert!(
                r.recovered_at_s.is_some(),
                "{kind}, seed {seed}: {}",
                r.outcome
            );
            assert!(r.denied_by_budget > 0, "{kind}, seed {seed}");
            assert!(
                2.0 * r.after_outage.attempts_per_s < 1.2 * none.after_outage.attempts_per_s,
                "{kind}, seed {seed}"
            );
        }
    }
}

/// Envoy's `max_retries = 0` allows no retry in flight: not one is sent, and every request
/// whose attempt failed (with an attempt left) is denied.
#[test]
fn no_retries_in_flight_means_no_retries() {
    let mut s = throttled("envoy-max-retries");
    s.retry.throttle.as_mut().unwrap().max_retries = Some(0);
    let r = run(&s, 1);
    assert_eq!(retries(&r), 0);
    let failed: u64 = r.windows.iter().map(|w| w.timeouts + w.refused).sum();
    // max_attempts = 2: every failed first attempt asks for its one retry.
    // Every one gives up, denied by the throttle.
    assert_eq!(r.gave_up, failed);
    assert_eq!(r.denied_by_budget, failed);
    let sent: u64 = r.windows.iter().map(|w| w.first_attempts).sum();
    assert_eq!(r.requests, sent);
}

#[test]
fn a_throttle_and_a_budget_are_exclusive_and_bad_kinds_are_named() {
    let mut s = throttled("grpc");
    s.retry.budget_percent = 10.0;
    let err = herd_sim::metastable::Metastable::new(&s, &herd_sim::Limits::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("retry.throttle:") && err.contains("not both"),
        "{err}"
    );
    let err =
        herd_sim::metastable::Metastable::new(&throttled("nope"), &herd_sim::Limits::default())
            .unwrap_err()
            .to_string();
    assert!(err.starts_with("retry.throttle.kind:"), "{err}");
}
