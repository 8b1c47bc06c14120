//! Invariants of the retry machinery, as properties: header parsing never panics, server
//! pauses stay within their bounds, budgets never hand out more than they earned, and the
//! loop never exceeds its attempt limit or sleeps past its deadline.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::chance;
use herd::breaker::{BreakerConfig, BreakerOutcome, BreakerPermit, BreakerState, CircuitBreaker};
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
    #![proptest_config(chance::proptest_config(256))]
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
            other => prop_assert!(false, "{other:?}"),
        }
    }

    #[test]
    fn a_budget_never_gives_more_than_it_earned(
        percent in 0.0f64..=100.0,
        ops in proptest::collection::vec(0u8..3, 0..400),
    ) {
        let clock = FakeClock::new();
        let budget = RetryBudget::new(
            BudgetConfig::default().percent(percent).min_per_sec(0).window(Duration::from_secs(10)),
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
    fn a_breaker_follows_its_specification_under_any_sequence(
        ops in proptest::collection::vec((0u8..5, any::<prop::sample::Index>()), 0..300),
        probes in 1u32..4,
        seed in any::<u64>(),
    ) {
        // A long window (nothing expires within the test) and no jitter, so a small
        // independent model can say exactly what the breaker must do after every step.
        let clock = FakeClock::new();
        let config = BreakerConfig::default()
            .min_calls(3)
            .half_open_probes(probes)
            .window(Duration::from_secs(86_400))
            .cool_down(Duration::from_secs(5))
            .cool_down_jitter(0.0);
        let breaker = CircuitBreaker::with_seed(config, clock.clone(), seed).unwrap();
        let mut model = BreakerModel::new(probes);
        let mut outstanding: Vec<(BreakerPermit, u64)> = Vec::new();
        for (op, index) in ops {
            match op {
                0 => {
                    let got = breaker.try_acquire();
                    let expected = model.acquire();
                    prop_assert_eq!(got.is_some(), expected.is_some(), "admission");
                    if let (Some(permit), Some(generation)) = (got, expected) {
                        outstanding.push((permit, generation));
                    }
                }
                1..=3 if !outstanding.is_empty() => {
                    let (permit, generation) = outstanding.remove(index.index(outstanding.len()));
                    let outcome = match op {
                        1 => BreakerOutcome::Success,
                        2 => BreakerOutcome::Failure,
                        _ => BreakerOutcome::Permanent,
                    };
                    breaker.record(permit, outcome);
                    if op != 3 {
                        model.record(generation, op == 2);
                    }
                }
                _ => {
                    clock.advance(Duration::from_millis(700));
                    model.now += 700;
                }
            }
            prop_assert_eq!(breaker.state(), model.state());
            prop_assert_eq!(breaker.refuses(), model.refuses());
        }
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

    /// The loop keeps retrying while the attempt limit and the deadline allow: the number of
    /// attempts is exactly what a reference computes from the same draws, so a loop that gave
    /// up early (a lower bound) fails this as surely as one that ran late (an upper bound).
    #[test]
    fn the_loop_keeps_retrying_while_attempts_and_deadline_allow(
        rule_index in 0usize..RuleName::ALL.len(),
        max_attempts in 1u32..30,
        deadline_ms in proptest::option::of(1u64..120_000),
        attempt_ms in 0u64..3_000,
        min_left_ms in prop_oneof![Just(0u64), 0u64..5_000],
        seed in any::<u64>(),
    ) {
        use herd::rng::Rng;
        let rule = RuleName::ALL[rule_index].build(&RuleParams::default()).unwrap();
        let clock = FakeClock::new();
        let mut builder = RetryPolicy::builder(rule)
            .max_attempts(max_attempts)
            .min_time_left(Duration::from_millis(min_left_ms))
            .clock(clock.clone());
        if let Some(ms) = deadline_ms {
            builder = builder.deadline(Duration::from_millis(ms));
        }
        let policy = builder.build().unwrap();
        let err = policy
            .call(|_| {
                clock.advance(Duration::from_millis(attempt_ms));
                Err::<(), _>(())
            })
            .rng(SplitMix64::new(seed))
            .run_with(&clock)
            .unwrap_err();

        // The reference: the same generator (two words for the key, then the rule's draws).
        let mut rng = SplitMix64::new(seed);
        rng.next_u64();
        rng.next_u64();
        let mut state = herd::RuleState::default();
        let deadline = deadline_ms.map(Duration::from_millis);
        let min_left = Duration::from_millis(min_left_ms);
        let (mut now, mut attempts) = (Duration::ZERO, 0u32);
        let expected_reason = loop {
            attempts += 1;
            now += Duration::from_millis(attempt_ms);
            if attempts == max_attempts {
                break herd::StopReason::Attempts;
            }
            let pause = rule.pause(&mut state, &mut rng);
            if let Some(deadline) = deadline {
                let left = deadline.saturating_sub(now).saturating_sub(min_left);
                if pause >= left {
                    break herd::StopReason::Deadline;
                }
            }
            now += pause;
        };
        prop_assert_eq!(err.attempts(), attempts, "attempts");
        prop_assert_eq!(err.reason(), expected_reason);
        prop_assert_eq!(clock.now(), now);
    }
}

/// The breaker's specification, in milliseconds, with nothing expiring and no jitter.
enum Phase {
    /// Counting the outcomes: it opens once at least 3 are in and half or more failed.
    Closed { ok: u64, failed: u64 },
    /// Refusing every call until `until`.
    Open { until: u64 },
    /// Letting a round of probes through: it closes when they all succeed, opens on a failure.
    HalfOpen {
        /// The probes let through in this round.
        issued: u32,
        /// Of those, the ones that succeeded.
        succeeded: u32,
        /// When the round began; once every probe is out, a new round begins a cool-down
        /// later (the probes of this one were lost).
        since: u64,
    },
}

struct BreakerModel {
    phase: Phase,
    generation: u64,
    now: u64,
    probes: u32,
}

impl BreakerModel {
    const COOL_DOWN: u64 = 5_000;

    fn new(probes: u32) -> Self {
        Self {
            phase: Phase::Closed { ok: 0, failed: 0 },
            generation: 0,
            now: 0,
            probes,
        }
    }

    fn acquire(&mut self) -> Option<u64> {
        match self.phase {
            Phase::Closed { .. } => return Some(self.generation),
            Phase::Open { until } if self.now < until => return None,
            Phase::HalfOpen { issued, since, .. }
                if issued >= self.probes && self.now - since < Self::COOL_DOWN =>
            {
                return None;
            }
            Phase::HalfOpen { issued, .. } if issued < self.probes => {}
            _ => {
                // The cool-down ended (or every probe of the round was lost): a new round.
                self.generation += 1;
                self.phase = Phase::HalfOpen {
                    issued: 0,
                    succeeded: 0,
                    since: self.now,
                };
            }
        }
        if let Phase::HalfOpen { issued, .. } = &mut self.phase {
            *issued += 1;
        }
        Some(self.generation)
    }

    fn record(&mut self, generation: u64, failed: bool) {
        if generation != self.generation {
            return; // an answer from an earlier state
        }
        match &mut self.phase {
            Phase::Closed {
                ok,
                failed: failures,
            } => {
                if failed {
                    *failures += 1;
                    let total = *ok + *failures;
                    if total >= 3 && *failures as f64 >= 0.5 * total as f64 {
                        self.open();
                    }
                } else {
                    *ok += 1;
                }
            }
            Phase::HalfOpen { .. } if failed => self.open(),
            Phase::HalfOpen { succeeded, .. } => {
                *succeeded += 1;
                if *succeeded >= self.probes {
                    self.generation += 1;
                    self.phase = Phase::Closed { ok: 0, failed: 0 };
                }
            }
            Phase::Open { .. } => {}
        }
    }

    fn open(&mut self) {
        self.generation += 1;
        self.phase = Phase::Open {
            until: self.now + Self::COOL_DOWN,
        };
    }

    fn state(&self) -> BreakerState {
        match self.phase {
            Phase::Closed { .. } => BreakerState::Closed,
            Phase::Open { until } if self.now < until => BreakerState::Open,
            _ => BreakerState::HalfOpen,
        }
    }

    fn refuses(&self) -> bool {
        match self.phase {
            Phase::Closed { .. } => false,
            Phase::Open { until } => self.now < until,
            Phase::HalfOpen { issued, since, .. } => {
                issued >= self.probes && self.now - since < Self::COOL_DOWN
            }
        }
    }
}
