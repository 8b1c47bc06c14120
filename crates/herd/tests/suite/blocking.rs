//! The blocking loop on a fake clock: limits, classification, server delays, budgets, the
//! breaker, idempotency, the outcome and the hooks. Nothing sleeps in real time: the fake
//! clock is the sleeper, and operations "take time" by advancing it.

use std::io;
use std::time::Duration;

use herd::breaker::{BreakerConfig, CircuitBreaker};
use herd::budget::{GrpcThrottle, GrpcThrottleConfig, RetryBudget};
use herd::classify::{self, Verdict};
use herd::clock::{Clock, FakeClock};
use herd::idempotency::IdempotencyKey;
use herd::outcome::{RetryError, RetryEvent};
use herd::policy::{PolicyBuilder, RetryPolicy};
use herd::rng::SplitMix64;
use herd::{Rule, StopReason};

use crate::support;

use support::{budget, ended, fails, fails_as, secs};

fn constant(pause: Duration, clock: &FakeClock) -> PolicyBuilder<FakeClock> {
    RetryPolicy::builder(Rule::constant(pause).unwrap()).clock(clock.clone())
}

#[test]
fn success_reports_the_value_and_the_attempts() {
    let clock = FakeClock::new();
    let policy = constant(secs(1), &clock).max_attempts(5).build().unwrap();
    let ok = policy
        .call(|a| {
            if a.number < 3 {
                Err("blip")
            } else {
                Ok(a.number * 10)
            }
        })
        .run_with(&clock)
        .unwrap();
    assert_eq!((ok.value, ok.attempts), (30, 3));
    assert_eq!(clock.now(), secs(2));
}

/// Up to ten attempts a second apart within a 10 s deadline.
fn ten_a_second_apart_within_10s(clock: &FakeClock) -> PolicyBuilder<FakeClock> {
    constant(secs(1), clock).max_attempts(10).deadline(secs(10))
}

#[test]
fn the_deadline_counts_attempt_time_not_only_sleeps() {
    // Regression: a deadline that only counts sleeps would allow 10 attempts here
    // (9 pauses of 1 s < 10 s), running for 39 s.
    let clock = FakeClock::new();
    let policy = ten_a_second_apart_within_10s(&clock).build().unwrap();
    let err = policy
        .call(|_| {
            clock.advance(secs(3)); // each attempt takes 3 s
            Err::<(), _>("slow failure")
        })
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(err.reason(), StopReason::Deadline);
    assert_eq!(err.attempts(), 3); // 0–3, pause, 4–7, pause, 8–11
    assert_eq!(err.elapsed(), secs(11));
    assert_eq!(err.last_error(), Some(&"slow failure"));
}

#[test]
fn a_pause_that_would_end_past_the_deadline_stops_at_once() {
    let clock = FakeClock::new();
    let policy = RetryPolicy::builder(Rule::exponential(secs(4), secs(60)).unwrap())
        .max_attempts(10)
        .deadline(secs(5))
        .clock(clock.clone())
        .build()
        .unwrap();
    let err = policy
        .call(|_| Err::<(), _>("down"))
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(err.reason(), StopReason::Deadline);
    assert_eq!(err.attempts(), 2);
    // Slept 4 s once; did not sleep the 8 s that would cross the deadline.
    assert_eq!(clock.now(), secs(4));
}

#[test]
fn max_attempts_stops_with_the_last_error() {
    let clock = FakeClock::new();
    let policy = constant(secs(1), &clock).max_attempts(4).build().unwrap();
    let err = policy
        .call(|a| Err::<(), _>(a.number))
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(err.reason(), StopReason::Attempts);
    assert_eq!((err.attempts(), err.into_last_error()), (4, Some(4)));
}

#[test]
fn permanent_errors_are_not_retried() {
    let clock = FakeClock::new();
    let policy = constant(secs(1), &clock).max_attempts(5).build().unwrap();
    let err = policy
        .call(|_| Err::<(), _>(io::Error::from(io::ErrorKind::PermissionDenied)))
        .classify(classify::io_error)
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(ended(&err), (StopReason::Permanent, 1));
    assert_eq!(clock.now(), Duration::ZERO);
}

/// Two attempts 100 ms apart, honouring a server's delay of up to 30 s.
fn server_delays_up_to_30s(clock: &FakeClock) -> RetryPolicy<FakeClock> {
    constant(Duration::from_millis(100), clock)
        .max_attempts(2)
        .max_server_delay(secs(30))
        .build()
        .unwrap()
}

#[test]
fn a_retry_after_longer_than_the_limit_stops_instead_of_coming_back_early() {
    // Regression: `Retry-After: 3600` with a 30 s limit used to be clamped and come back
    // after 27-30 s, earlier than the server asked.
    let clock = FakeClock::new();
    let policy = server_delays_up_to_30s(&clock);
    let err = fails_as(&policy, &clock, Verdict::transient().after(secs(3600)));
    assert_eq!(ended(&err), (StopReason::ServerDelay, 1));
    assert_eq!(clock.now(), Duration::ZERO, "no sleep before stopping");
}

#[test]
fn retry_after_is_a_floor_under_the_rule_and_jittered_upwards() {
    let clock = FakeClock::new();
    let policy = server_delays_up_to_30s(&clock);
    let mut pauses = Vec::new();
    let _ = policy
        .call(|_| Err::<(), _>(()))
        .classify(|_: &()| Verdict::transient().after(secs(20)))
        .on_retry(|e: &RetryEvent<'_, ()>| pauses.push((e.pause, e.server_delay)))
        .run_with(&clock);
    let (pause, server) = pauses[0];
    assert!(server);
    assert!(pause >= secs(20) && pause <= secs(22), "{pause:?}");

    // Parsed from the header text, both forms.
    for use_date in [false, true] {
        let header = if use_date {
            httpdate::fmt_http_date(clock.wall() + secs(5))
        } else {
            "5".to_owned()
        };
        let header = header.as_str();
        let mut pauses = Vec::new();
        let _ = policy
            .call(|_| Err::<(), _>(503u16))
            .classify(|s: &u16| {
                let after = herd::retry_after::parse_retry_after(header, clock.wall());
                classify::http_status_after(*s, after)
            })
            .on_retry(|e: &RetryEvent<'_, u16>| pauses.push(e.pause))
            .run_with(&clock);
        // Dates have whole-second resolution; the fake clock has moved on by the first pause.
        assert!(
            pauses[0] >= secs(4) && pauses[0] <= Duration::from_millis(5500),
            "{header}: {pauses:?}"
        );
    }
}

#[test]
fn a_retry_after_beyond_the_deadline_stops_without_sleeping() {
    let clock = FakeClock::new();
    let policy = constant(Duration::from_millis(100), &clock)
        .deadline(secs(10))
        .max_server_delay(secs(120))
        .build()
        .unwrap();
    let err = fails_as(&policy, &clock, Verdict::transient().after(secs(60)));
    assert_eq!(err.reason(), StopReason::ServerDelay);
    assert_eq!(clock.now(), Duration::ZERO);
}

#[test]
fn pushback_stop_ends_the_call() {
    let clock = FakeClock::new();
    let policy = constant(secs(1), &clock).max_attempts(5).build().unwrap();
    let err = policy
        .call(|_| Err::<(), _>("-1"))
        .classify(|v: &&str| match herd::retry_after::parse_pushback(v) {
            herd::retry_after::Pushback::Stop => Verdict::pushback_stop(),
            herd::retry_after::Pushback::After(d) => Verdict::transient().pushback(d),
            _ => Verdict::pushback_stop(),
        })
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(ended(&err), (StopReason::Pushback, 1));
}

#[test]
fn pushback_is_waited_exactly_and_restarts_the_backoff() {
    // gRPC A6: after a pushback the next backoff is the first one again (grpc-go resets it).
    let clock = FakeClock::new();
    let policy = RetryPolicy::builder(Rule::exponential(secs(1), secs(60)).unwrap())
        .clock(clock.clone())
        .max_attempts(6)
        .build()
        .unwrap();
    let mut pauses = Vec::new();
    let _ = policy
        .call(|a| Err::<(), _>(a.number))
        .classify(|n: &u32| {
            if *n == 3 {
                Verdict::transient().pushback(Duration::from_millis(250))
            } else {
                Verdict::transient()
            }
        })
        .on_retry(|e: &RetryEvent<'_, u32>| pauses.push(e.pause))
        .run_with(&clock);
    assert_eq!(
        pauses,
        [
            secs(1),
            secs(2),
            Duration::from_millis(250),
            secs(1),
            secs(2)
        ]
    );
}

#[test]
fn a_zero_retry_after_does_not_bring_every_client_back_at_once() {
    // Regression: 10 % jitter of a zero delay is zero, so every client told
    // `Retry-After: 0` retried in the same instant.
    let clock = FakeClock::new();
    let policy = RetryPolicy::builder(Rule::full(Duration::from_millis(100), secs(10)).unwrap())
        .clock(clock.clone())
        .max_attempts(2)
        .build()
        .unwrap();
    let mut pauses = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let _ = policy
            .call(|_| Err::<(), _>(()))
            .classify(|_: &()| Verdict::transient().after(Duration::ZERO))
            .rng(herd::rng::SplitMix64::new(seed))
            .on_retry(|e: &RetryEvent<'_, ()>| {
                pauses.insert(e.pause);
            })
            .run_with(&clock);
    }
    assert!(pauses.len() > 190, "{} distinct pauses", pauses.len());
}

#[test]
fn a_retry_needs_the_minimum_time_left_before_the_deadline() {
    let clock = FakeClock::new();
    let policy = ten_a_second_apart_within_10s(&clock)
        .min_time_left(secs(3))
        .build()
        .unwrap();
    let err = fails(&policy, &clock);
    // Retries start at 1, 2, ... 6 s (4 s left); a pause to 7 s would leave only the 3 s
    // minimum, so the call stops at 6 s without sleeping.
    assert_eq!(ended(&err), (StopReason::Deadline, 7));
    assert_eq!(clock.now(), secs(6));
}

#[test]
fn an_empty_budget_stops_retries_and_says_so() {
    let clock = FakeClock::new();
    let budget = budget(&clock, 10.0);
    let policy = constant(secs(1), &clock)
        .max_attempts(3)
        .budget(budget.clone())
        .build()
        .unwrap();
    // Ten calls deposit 1 retry in all; the first failing call takes it.
    for _ in 0..9 {
        budget.deposit();
    }
    let first = fails(&policy, &clock);
    assert_eq!(
        first.attempts(),
        2,
        "one retry allowed, then the budget is empty"
    );
    assert_eq!(first.reason(), StopReason::Budget);
    let second = fails(&policy, &clock);
    assert_eq!(ended(&second), (StopReason::Budget, 1));
}

#[test]
fn grpc_throttle_stops_retrying_at_half_the_tokens() {
    let clock = FakeClock::new();
    let throttle = GrpcThrottle::new(
        GrpcThrottleConfig::default()
            .max_tokens(4.0)
            .token_ratio(0.1),
    )
    .unwrap();
    let policy = constant(secs(1), &clock)
        .max_attempts(10)
        .budget(throttle.clone())
        .build()
        .unwrap();
    let err = fails(&policy, &clock);
    // 4 → 3 (retry) → 2 (not more than half: stop)
    assert_eq!(ended(&err), (StopReason::Budget, 2));
    assert_eq!(throttle.tokens(), 2.0);
}

#[test]
fn an_open_breaker_refuses_before_the_first_attempt() {
    let clock = FakeClock::new();
    let breaker =
        CircuitBreaker::with_seed(BreakerConfig::default().min_calls(2), clock.clone(), 1).unwrap();
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(5)
        .breaker(breaker.clone())
        .clock(clock.clone())
        .build()
        .unwrap();
    let first = fails(&policy, &clock);
    assert_eq!(ended(&first), (StopReason::Breaker, 2));
    let mut ran = false;
    let second = policy
        .call(|_| {
            ran = true;
            Ok::<_, &str>(())
        })
        .run_with(&clock)
        .unwrap_err();
    assert!(!ran);
    assert_eq!(ended(&second), (StopReason::Breaker, 0));
    assert_eq!(second.last_error(), None);
}

#[test]
fn non_idempotent_calls_retry_only_when_not_processed() {
    let clock = FakeClock::new();
    let policy = constant(secs(1), &clock)
        .max_attempts(3)
        .idempotent(false)
        .build()
        .unwrap();
    let run = |kind: io::ErrorKind| {
        policy
            .call(|_| Err::<(), _>(io::Error::from(kind)))
            .classify(classify::io_error)
            .run_with(&clock)
            .unwrap_err()
    };
    let timeout = run(io::ErrorKind::TimedOut);
    assert_eq!(ended(&timeout), (StopReason::NotIdempotent, 1));
    let refused = run(io::ErrorKind::ConnectionRefused);
    assert_eq!(ended(&refused), (StopReason::Attempts, 3));
}

#[test]
fn one_idempotency_key_per_call_shared_by_its_attempts() {
    let clock = FakeClock::new();
    let policy = constant(secs(1), &clock).max_attempts(3).build().unwrap();
    let mut keys: Vec<IdempotencyKey> = Vec::new();
    for _ in 0..2 {
        let _ = policy
            .call(|a| {
                keys.push(a.key);
                Err::<(), _>(())
            })
            .run_with(&clock);
    }
    assert_eq!(keys.len(), 6);
    assert!(keys[..3].iter().all(|k| *k == keys[0]));
    assert!(keys[3..].iter().all(|k| *k == keys[3]));
    assert_ne!(keys[0], keys[3]);
}

#[test]
fn hooks_see_each_retry_and_the_give_up_once() {
    let clock = FakeClock::new();
    let policy = constant(secs(2), &clock).max_attempts(3).build().unwrap();
    let mut events = Vec::new();
    let mut dead_letters = Vec::new();
    let err = policy
        .call(|a| Err::<(), _>(format!("failure {}", a.number)))
        .on_retry(|e: &RetryEvent<'_, String>| {
            events.push((e.attempt, e.error.cloned().unwrap(), e.pause))
        })
        .on_give_up(|e: &RetryError<String>| dead_letters.push((e.key(), e.reason())))
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(
        events,
        [
            (1, "failure 1".to_owned(), secs(2)),
            (2, "failure 2".to_owned(), secs(2))
        ]
    );
    assert_eq!(dead_letters, [(err.key(), StopReason::Attempts)]);
    assert_eq!(err.to_string(), "gave up after 3 attempts in 4s (attempts)");
    assert_eq!(
        format!("{err:#}"),
        "gave up after 3 attempts in 4s (attempts): failure 3"
    );

    let mut called = false;
    policy
        .call(|_| Ok::<_, String>(()))
        .on_give_up(|_: &RetryError<String>| called = true)
        .run_with(&clock)
        .unwrap();
    assert!(!called);
}

#[test]
fn a_seeded_generator_makes_the_pauses_reproducible() {
    let rule = Rule::full(Duration::from_millis(100), secs(10)).unwrap();
    let run = || {
        let clock = FakeClock::new();
        let policy = RetryPolicy::builder(rule)
            .max_attempts(6)
            .clock(clock.clone())
            .build()
            .unwrap();
        let mut pauses = Vec::new();
        let err = policy
            .call(|_| Err::<(), _>(()))
            .on_retry(|e: &RetryEvent<'_, ()>| pauses.push(e.pause))
            .rng(SplitMix64::new(42))
            .run_with(&clock)
            .unwrap_err();
        (pauses, err.key())
    };
    assert_eq!(run(), run());
    // The loop's pauses are exactly the rule's schedule after the key's two draws.
    let mut rng = SplitMix64::new(42);
    let key = IdempotencyKey::random(&mut rng);
    let expected: Vec<_> = rule.schedule(rng).take(5).collect();
    assert_eq!(run(), (expected, key));
}

#[test]
fn shared_handles_are_cheap_clones_that_cross_threads() {
    fn shared<T: Clone + Send + Sync + 'static>() {}
    shared::<RetryBudget<FakeClock>>();
    shared::<RetryBudget>();
    shared::<GrpcThrottle>();
    shared::<CircuitBreaker<FakeClock>>();
    shared::<RetryPolicy<FakeClock>>();
    shared::<FakeClock>();
}

/// A classifier can be a type implementing the trait, shared between call sites.
#[test]
fn a_classifier_type_shared_between_calls() {
    struct OnlyCode(u16);
    impl classify::Classify<u16> for OnlyCode {
        fn classify(&self, code: &u16) -> Verdict {
            if *code == self.0 {
                Verdict::transient()
            } else {
                Verdict::permanent()
            }
        }
    }
    let clock = FakeClock::new();
    let policy = constant(secs(1), &clock).max_attempts(3).build().unwrap();
    let busy = policy
        .call(|_| Err::<(), _>(503u16))
        .classifier(OnlyCode(503))
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(busy.attempts(), 3);
    // One instance shared by reference: wrap it in a closure.
    let shared = OnlyCode(503);
    let missing = policy
        .call(|_| Err::<(), _>(404u16))
        .classify(|code: &u16| classify::Classify::classify(&shared, code))
        .run_with(&clock)
        .unwrap_err();
    assert_eq!(
        (missing.attempts(), missing.reason()),
        (1, StopReason::Permanent)
    );
}
