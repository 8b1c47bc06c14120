//! Invariants of the retry machinery, as properties: header parsing never panics, server
//! pauses stay within their bounds, budgets never hand out more than they earned, and the
//! loop never exceeds its attempt limit or sleeps past its deadline.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use herd::breaker::{BreakerConfig, CircuitBreaker};
use herd::budget::{BudgetConfig, RetryBudget};
use herd::classify::Verdict;
use herd::clock::{Clock, FakeClock};
use herd::policy::RetryPolicy;
use herd::retry_after::{parse_pushback, parse_retry_after};
use herd::rng::SplitMix64;
use herd::{RuleName, RuleParams};
use proptest::prelude::*;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

proptest! {
    #[test]
    fn retry_after_parsing_never_panics(value in ".{0,80}") {
        let _ = parse_retry_after(&value, now());
        let _ = parse_pushback(&value);
    }

    #[test]
    fn delta_seconds_parse_exactly(secs in any::<u64>()) {
        prop_assert_eq!(parse_retry_after(&secs.to_string(), now()), Some(Duration::from_secs(secs)));
    }

    #[test]
    fn server_waits_are_never_earlier_than_asked_or_past_the_deadline(
        rule_ms in any::<u32>(),
        delay_ms in any::<u64>(),
        max_ms in 0u64..10_000_000,
        left_ms in proptest::option::of(0u64..20_000_000),
        jitter in 0.0f64..=1.0,
        pushback in any::<bool>(),
        seed in any::<u64>(),
    ) {
        use herd::server_delay::{decide, ServerDelay, ServerDelayLimits, ServerStop, ServerWait};
        let limits = ServerDelayLimits::new(Duration::from_millis(max_ms), jitter).unwrap();
        let delay = Duration::from_millis(delay_ms);
        let left = left_ms.map(Duration::from_millis);
        let rule = Duration::from_millis(rule_ms.into());
        let kind = if pushback { ServerDelay::Pushback(delay) } else { ServerDelay::RetryAfter(delay) };
        match decide(rule, kind, left, &limits, &mut SplitMix64::new(seed)) {
            ServerWait::Wait(wait) => {
                prop_assert!(delay <= limits.max_server_delay());
                prop_assert!(wait >= delay, "came back before the server asked");
                if let Some(left) = left {
                    prop_assert!(wait < left, "{wait:?} not before {left:?}");
                }
                if pushback {
                    prop_assert_eq!(wait, delay);
                } else if left.is_none() {
                    prop_assert!(wait >= rule.max(delay));
                }
            }
            ServerWait::Stop(ServerStop::TooLong) => prop_assert!(delay > limits.max_server_delay()),
            ServerWait::Stop(ServerStop::PastDeadline) => {
                prop_assert!(delay <= limits.max_server_delay());
                prop_assert!(left.is_some_and(|l| delay >= l));
            }
            ServerWait::Stop(other) => prop_assert!(false, "{other:?}"),
        }
    }

    #[test]
    fn a_budget_never_gives_more_than_it_earned(
        percent in 0.0f64..=100.0,
        ops in proptest::collection::vec(0u8..3, 0..400),
    ) {
        let clock = FakeClock::new();
        let budget = RetryBudget::new(
            BudgetConfig { percent, min_per_sec: 0, window: Duration::from_secs(10) },
            clock.clone(),
        ).unwrap();
        let (mut deposits, mut retries) = (0u32, 0u32);
        for op in ops {
            match op {
                0 => { budget.deposit(); deposits += 1; }
                1 => { if budget.withdraw() { retries += 1; } }
                _ => clock.advance(Duration::from_millis(10)), // stays inside the window
            }
        }
        prop_assert!(f64::from(retries) <= f64::from(deposits) * percent / 100.0 + 1e-3);
    }

    #[test]
    fn breakers_survive_any_sequence(ops in proptest::collection::vec(0u8..4, 0..300), seed in any::<u64>()) {
        let clock = FakeClock::new();
        let breaker = CircuitBreaker::with_seed(
            BreakerConfig { min_calls: 3, half_open_probes: 2, ..BreakerConfig::default() },
            clock.clone(),
            seed,
        ).unwrap();
        for op in ops {
            match op {
                0 => { breaker.try_acquire(); }
                1 => breaker.record_success(),
                2 => breaker.record_failure(),
                _ => clock.advance(Duration::from_millis(700)),
            }
        }
        let _ = breaker.state();
    }

    #[test]
    fn the_loop_respects_attempts_and_never_sleeps_past_the_deadline(
        rule_index in 0usize..RuleName::ALL.len(),
        max_attempts in 1u32..20,
        deadline_ms in 1u64..60_000,
        attempt_ms in 0u64..5_000,
        server_ms in proptest::option::of(0u64..120_000),
        seed in any::<u64>(),
    ) {
        let rule = RuleName::ALL[rule_index].build(&RuleParams::default()).unwrap();
        let clock = FakeClock::new();
        let policy = RetryPolicy::builder(rule)
            .max_attempts(max_attempts)
            .deadline(Duration::from_millis(deadline_ms))
            .clock(clock.clone())
            .build()
            .unwrap();
        let mut started_at = Vec::new();
        let err = policy
            .call(|_| {
                started_at.push(clock.now());
                clock.advance(Duration::from_millis(attempt_ms));
                Err::<(), _>(())
            })
            .classify(|_: &()| match server_ms {
                Some(ms) => Verdict::transient().after(Duration::from_millis(ms)),
                None => Verdict::transient(),
            })
            .rng(SplitMix64::new(seed))
            .run_with(&clock)
            .unwrap_err();
        prop_assert!(err.attempts() <= max_attempts);
        prop_assert_eq!(err.attempts() as usize, started_at.len());
        // Every attempt starts before the deadline: no pause ever crosses it.
        for t in &started_at {
            prop_assert!(*t < Duration::from_millis(deadline_ms));
        }
    }
}
