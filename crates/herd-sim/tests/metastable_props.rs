//! Invariants of the metastable model over random small scenarios: every request is
//! accounted for, useful work never exceeds work, and a seed replays exactly.
use herd::RuleName;
use herd_sim::Limits;
use herd_sim::metastable::{Metastable, MetastableScenario};
use proptest::prelude::*;
#[path = "support/chance.rs"]
mod chance;

fn scenario() -> impl Strategy<Value = (MetastableScenario, u64)> {
    (
        // Capacity and slow factor are decimals, as a file writes them (the server counts
        // its time exactly in their units): hundredths.
        (0.0..600.0f64, 2_000u32..60_000, 100u32..2_000, 0u64..200),
        (0.05..2.0f64, 0u32..4, 0.0..5.0f64, 0.0..30.0f64),
        (
            prop::sample::select(vec![
                RuleName::Immediate,
                RuleName::Constant,
                RuleName::Full,
                RuleName::Decorrelated,
            ]),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (offered, capacity, slow, knee),
                (timeout, attempts, outage, budget),
                (rule, seed),
            )| {
                let mut s = MetastableScenario {
                    horizon_s: 12.0,
                    step_ms: 5.0,
                    ..MetastableScenario::default()
                };
                s.clients.offered_qps = offered;
                s.clients.timeout_s = timeout;
                s.clients.max_attempts = attempts;
                s.server.capacity_qps = f64::from(capacity) / 100.0;
                s.server.slow_factor = f64::from(slow) / 100.0;
                s.server.knee_queue = knee;
                s.server.outages = if outage > 0.1 {
                    vec![[1.0, 1.0 + outage]]
                } else {
                    Vec::new()
                };
                s.retry.rule = rule;
                s.retry.pause_ms = 200.0;
                s.retry.budget_percent = budget;
                (s, seed)
            },
        )
}

proptest! {
    #![proptest_config(chance::proptest_config(32))]

    #[test]
    fn requests_are_conserved_and_runs_replay((s, seed) in scenario()) {
        let limits = Limits { max_run_attempts: 2_000_000, ..Limits::default() };
        let model = Metastable::new(&s, &limits).expect("valid");
        let r = model.run(s.retry.rule, seed).expect("runs");
        prop_assert_eq!(r.served + r.gave_up + r.pending, r.new_requests);
        prop_assert!(r.denied_by_budget <= r.gave_up);
        prop_assert!(r.served <= r.new_requests);
        let windows: u64 = r.windows.iter().map(|w| w.attempts()).sum();
        prop_assert_eq!(windows, r.requests);
        for w in &r.windows {
            prop_assert!(w.goodput <= w.throughput);
            prop_assert!(w.lost <= w.attempts());
        }
        if s.clients.max_attempts == 1 {
            prop_assert_eq!(r.requests, r.new_requests);
        }
        prop_assert_eq!(&model.run(s.retry.rule, seed).expect("runs"), &r);
    }
}
