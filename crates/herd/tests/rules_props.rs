//! Invariants of every rule: bounds at any failure count and seed, no overflow, determinism,
//! and the statistical shape of the jittered rules (fixed seeds, so these cannot flake).
use std::time::Duration;

use herd::rng::{Rng, SplitMix64};
use herd::{Rule, RuleName, RuleParams, RuleState};
use proptest::prelude::*;

fn g(base: u64, cap: u64, k: u32) -> u64 {
    // Reference: double step by step in u128, stopping once past the cap.
    let mut v = base as u128;
    for _ in 1..k {
        if v > cap as u128 {
            break;
        }
        v *= 2;
    }
    v.min(cap as u128) as u64
}

fn params(base_ns: u64, cap_ns: u64) -> RuleParams {
    RuleParams {
        base: Duration::from_nanos(base_ns),
        cap: Duration::from_nanos(cap_ns),
        pause: Duration::from_nanos(base_ns),
        multiplier: 1.6,
        jitter: 0.2,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every pause of every rule lies within its bounds, whatever the failure count and seed.
    #[test]
    fn every_pause_within_bounds(
        base in 1u64..10_000_000_000,
        extra in 0u64..1_000_000_000_000,
        start in prop_oneof![0u32..70, (u32::MAX - 70)..=u32::MAX, any::<u32>()],
        seed in any::<u64>(),
    ) {
        let cap = base.saturating_add(extra);
        let p = params(base, cap);
        for name in RuleName::ALL {
            let rule = name.build(&p).unwrap();
            let mut rng = SplitMix64::new(seed);
            // Decorrelated-style rules start from the state before the first failure; the
            // memory-free rules can start at any failure count.
            let mut state = if rule.uses_memory() {
                RuleState::default()
            } else {
                RuleState::from_parts(start, 0)
            };
            for _ in 0..40 {
                let k = state.failures().saturating_add(1);
                let pause = rule.pause(&mut state, &mut rng).as_nanos() as u64;
                prop_assert!(pause <= rule.max_pause().as_nanos() as u64, "{name}: {pause}");
                match name {
                    RuleName::Immediate => prop_assert_eq!(pause, 0),
                    RuleName::Constant => prop_assert_eq!(pause, base),
                    RuleName::Exponential => prop_assert_eq!(pause, g(base, cap, k)),
                    RuleName::Full => prop_assert!(pause <= g(base, cap, k)),
                    RuleName::Equal => {
                        let gk = g(base, cap, k);
                        prop_assert!(pause >= gk - gk / 2 && pause <= gk);
                    }
                    RuleName::Decorrelated | RuleName::Grpc | RuleName::DecorrelatedV2 => {
                        prop_assert!(pause <= cap);
                    }
                }
            }
        }
    }

    /// Decorrelated stays in [base, min(cap, 3 · previous)].
    #[test]
    fn decorrelated_within_three_times_previous(
        base in 1u64..1_000_000_000,
        extra in 0u64..100_000_000_000,
        seed in any::<u64>(),
    ) {
        let cap = base + extra;
        let rule = RuleName::Decorrelated.build(&params(base, cap)).unwrap();
        let mut rng = SplitMix64::new(seed);
        let mut state = RuleState::default();
        let mut previous = base;
        for _ in 0..60 {
            let pause = rule.pause(&mut state, &mut rng).as_nanos() as u64;
            prop_assert!(pause >= base, "{pause} < base {base}");
            prop_assert!(pause <= cap.min(previous.saturating_mul(3)), "{pause} vs prev {previous}");
            previous = pause;
        }
    }

    /// gRPC: within ±jitter of the current backoff, which grows by the multiplier.
    #[test]
    fn grpc_within_jitter_of_current(
        base in 1_000u64..1_000_000_000,
        mult in 1.0f64..3.0,
        jitter in 0.0f64..=1.0,
        seed in any::<u64>(),
    ) {
        let cap = base * 1000;
        let rule = Rule::grpc(Duration::from_nanos(base), mult, jitter, Duration::from_nanos(cap)).unwrap();
        let mut rng = SplitMix64::new(seed);
        let mut state = RuleState::default();
        let mut current = base as f64;
        for _ in 0..30 {
            let pause = rule.pause(&mut state, &mut rng).as_nanos() as f64;
            prop_assert!(pause >= (current * (1.0 - jitter)).min(cap as f64) - 2.0);
            prop_assert!(pause <= (current * (1.0 + jitter)).min(cap as f64) + 1.0);
            current = ((current * mult) as u64).min(cap) as f64;
        }
    }

    /// The same seed gives the same schedule.
    #[test]
    fn same_seed_same_schedule(seed in any::<u64>(), which in 0usize..8) {
        let rule = RuleName::ALL[which].build(&RuleParams::default()).unwrap();
        let a: Vec<Duration> = rule.schedule(SplitMix64::new(seed)).take(30).collect();
        let b: Vec<Duration> = rule.schedule(SplitMix64::new(seed)).take(30).collect();
        prop_assert_eq!(a, b);
    }

    /// Bounded integers never leave their range.
    #[test]
    fn range_inclusive_in_range(lo in any::<u64>(), hi in any::<u64>(), seed in any::<u64>()) {
        let mut rng = SplitMix64::new(seed);
        let x = rng.range_inclusive(lo, hi);
        prop_assert!(x >= lo.min(hi) && x <= lo.max(hi));
    }
}

/// Mean pause after the k-th failure over many clients, in units of g(k).
fn mean_over_g(name: RuleName, k: u32, clients: u32, seed: u64) -> f64 {
    let base = 100_000_000u64;
    let cap = 20_000_000_000u64;
    let rule = name.build(&params(base, cap)).unwrap();
    let mut rng = SplitMix64::new(seed);
    let mut sum = 0.0;
    for _ in 0..clients {
        let mut state = RuleState::from_parts(k - 1, 0);
        sum += rule.pause(&mut state, &mut rng).as_nanos() as f64;
    }
    sum / f64::from(clients) / g(base, cap, k) as f64
}

#[test]
fn full_jitter_mean_is_half_of_g() {
    for (k, seed) in [(1, 1), (4, 2), (9, 3), (30, 4)] {
        let m = mean_over_g(RuleName::Full, k, 100_000, seed);
        // sd of U[0,1] is 0.289; the mean of 1e5 draws has sd 0.0009: 0.01 is > 10 sigma.
        assert!((m - 0.5).abs() < 0.01, "k={k}: mean/g = {m}");
    }
}

#[test]
fn equal_jitter_mean_is_three_quarters_of_g() {
    for (k, seed) in [(1, 5), (5, 6), (12, 7)] {
        let m = mean_over_g(RuleName::Equal, k, 100_000, seed);
        assert!((m - 0.75).abs() < 0.005, "k={k}: mean/g = {m}");
    }
}

#[test]
fn full_jitter_is_uniform_across_deciles() {
    let rule = Rule::full(Duration::from_millis(100), Duration::from_secs(20)).unwrap();
    let mut rng = SplitMix64::new(99);
    let mut deciles = [0u32; 10];
    let g = 3_200_000_000u128; // g(6)
    for _ in 0..100_000 {
        let mut state = RuleState::from_parts(5, 0);
        let p = rule.pause(&mut state, &mut rng).as_nanos();
        deciles[((p * 10 / (g + 1)) as usize).min(9)] += 1;
    }
    // Chi-square with 9 degrees of freedom; 27.9 is the 0.1 % critical value.
    let chi2: f64 = deciles
        .iter()
        .map(|&c| (f64::from(c) - 10_000.0).powi(2) / 10_000.0)
        .sum();
    assert!(chi2 < 27.9, "chi2 = {chi2}, deciles {deciles:?}");
}

#[test]
fn unit_floats_have_mean_one_half() {
    let mut rng = SplitMix64::new(2024);
    let n = 200_000;
    let mean: f64 = (0..n).map(|_| rng.next_f64()).sum::<f64>() / f64::from(n);
    assert!((mean - 0.5).abs() < 0.003, "{mean}");
}
