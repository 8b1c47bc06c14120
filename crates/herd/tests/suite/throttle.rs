//! The throttles under contention (exact accounting from many threads) and through a
//! `RetryPolicy`.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use herd::budget::Budget;
use herd::clock::FakeClock;
use herd::throttle::{
    AdmissionControl, AdmissionControlConfig, AwsErrorKind, AwsRetryQuota, AwsRetryQuotaConfig,
    EnvoyRetryBudgetConfig, EnvoyRetryLimit, EnvoyRetryLimitConfig, SreThrottle, SreThrottleConfig,
};
use herd::{RetryPolicy, Rule, StopReason, classify};

const THREADS: u64 = 4;
const ROUNDS: u64 = 20_000;

fn on_threads(work: impl Fn(u64) + Send + Sync + 'static) {
    let work = Arc::new(work);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let work = work.clone();
            thread::spawn(move || work(t))
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// Envoy: at 25 active requests and a 20 % budget, never more than 5 retries hold a place at
/// once, however the threads interleave; every place comes back.
#[test]
fn envoy_limit_is_never_exceeded_under_contention() {
    let limit = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::budget(
        EnvoyRetryBudgetConfig::default(),
    ))
    .unwrap();
    let active: Vec<_> = (0..25).map(|_| limit.start_request()).collect();
    let holders = Arc::new(AtomicU64::new(0));
    let most = Arc::new(AtomicU64::new(0));
    let admitted = Arc::new(AtomicU64::new(0));
    {
        let (limit, holders, most, admitted) = (
            limit.clone(),
            holders.clone(),
            most.clone(),
            admitted.clone(),
        );
        on_threads(move |_| {
            for _ in 0..ROUNDS {
                if let Some(permit) = limit.acquire_retry() {
                    let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    admitted.fetch_add(1, Ordering::Relaxed);
                    holders.fetch_sub(1, Ordering::SeqCst);
                    drop(permit);
                }
            }
        });
    }
    assert!(most.load(Ordering::SeqCst) <= 5);
    assert!(admitted.load(Ordering::Relaxed) > 0);
    assert_eq!(limit.retries_in_flight(), 0);
    drop(active);
    assert_eq!(limit.active_requests(), 0);
}

/// AWS: every token is accounted for: what is left is the capacity less the cost of every
/// retry that failed (successful retries returned theirs).
#[test]
fn aws_quota_accounts_for_every_token() {
    let quota = AwsRetryQuota::new(AwsRetryQuotaConfig::standard()).unwrap();
    let forfeited = Arc::new(AtomicU64::new(0));
    {
        let (quota, forfeited) = (quota.clone(), forfeited.clone());
        on_threads(move |t| {
            for i in 0..ROUNDS {
                if let Some(permit) = quota.acquire(AwsErrorKind::Transient) {
                    if (i + t) % 1000 == 0 {
                        forfeited.fetch_add(1, Ordering::Relaxed);
                        drop(permit);
                    } else {
                        permit.succeeded();
                    }
                }
            }
        });
    }
    let forfeited = forfeited.load(Ordering::Relaxed);
    assert_eq!(forfeited, 80);
    assert_eq!(quota.available(), 500 - 5 * forfeited);
}

/// SRE throttling and admission control: every record from every thread is counted.
#[test]
fn windowed_throttles_count_every_record() {
    let clock = FakeClock::new();
    let sre = SreThrottle::new(SreThrottleConfig::book(), clock.clone()).unwrap();
    let admission = AdmissionControl::new(AdmissionControlConfig::default(), clock).unwrap();
    {
        let (sre, admission) = (sre.clone(), admission.clone());
        on_threads(move |_| {
            for i in 0..ROUNDS {
                sre.record_send();
                sre.record_response(i % 2 == 0);
                admission.record(i % 4 == 0);
            }
        });
    }
    assert_eq!(sre.counts(), (THREADS * ROUNDS, THREADS * ROUNDS / 2));
    assert_eq!(
        admission.request_counts(),
        (THREADS * ROUNDS, THREADS * ROUNDS / 4)
    );
}

fn failing_twice() -> impl FnMut(herd::idempotency::Attempt) -> Result<u32, io::Error> {
    |attempt| {
        if attempt.number <= 2 {
            Err(io::ErrorKind::Interrupted.into())
        } else {
            Ok(attempt.number)
        }
    }
}

/// A `RetryPolicy` consults any throttle through `Budget`: here the AWS quota pays 5 per
/// retry, and a quota that cannot pay stops the call with `StopReason::Budget`.
#[test]
fn throttles_plug_into_a_retry_policy() {
    let quota = AwsRetryQuota::new(AwsRetryQuotaConfig::standard()).unwrap();
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .clock(FakeClock::new())
        .budget(quota.clone())
        .build()
        .unwrap();
    let ok = policy
        .call(failing_twice())
        .classify(classify::io_error)
        .run()
        .unwrap();
    assert_eq!(ok.attempts, 3);
    // Two retries at 5 each; the second succeeded and returns its cost, as the SDKs'
    // standard mode does, and adds nothing more (only a first attempt's success adds 1).
    // Before the policy held each retry's permit, this was 491: both costs spent, +1.
    assert_eq!(quota.available(), 495);
    let first = policy
        .call(|_| Ok::<_, io::Error>(1))
        .classify(classify::io_error)
        .run()
        .unwrap();
    assert_eq!(first.attempts, 1);
    assert_eq!(quota.available(), 496, "a first attempt's success adds 1");

    let mut config = AwsRetryQuotaConfig::standard();
    config.capacity = 5;
    let small = AwsRetryQuota::new(config).unwrap();
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .clock(FakeClock::new())
        .budget(small.clone())
        .build()
        .unwrap();
    let err = policy
        .call(failing_twice())
        .classify(classify::io_error)
        .run()
        .unwrap_err();
    assert_eq!(err.reason(), StopReason::Budget);
    assert_eq!(err.attempts(), 2);
    assert_eq!(small.available(), 0);
}

/// Through `try_retry_permit`, an Envoy limit holds each retry's place until the permit drops.
#[test]
fn envoy_permit_through_the_budget_trait() {
    let limit = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::max_retries(1)).unwrap();
    let budget: Arc<dyn Budget> = Arc::new(limit.clone());
    let permit = budget.try_retry_permit().expect("one place");
    assert!(budget.try_retry_permit().is_none());
    assert!(!budget.try_retry(), "no place free now");
    drop(permit);
    assert!(budget.try_retry(), "checks only");
    assert_eq!(limit.retries_in_flight(), 0);
}

/// Through a `RetryPolicy`, an Envoy retry keeps its place while it waits and runs: with
/// `max_retries = 1`, a second call's retry is refused until the first call's retry ends.
/// Before the policy held the permit, the place was given back the moment it was granted, so
/// both calls retried at once.
#[test]
fn a_retry_policy_holds_an_envoy_place_until_the_retry_ends() {
    use herd::classify::Verdict;
    use herd::policy::Decision;
    use herd::rng::SplitMix64;

    let limit = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::max_retries(1)).unwrap();
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .clock(FakeClock::new())
        .budget(limit.clone())
        .build()
        .unwrap();
    let mut rng = SplitMix64::new(1);
    let mut first = policy.begin(&mut rng);
    policy.before_attempt(&mut first).unwrap();
    assert!(matches!(
        policy.on_failure(&mut first, Verdict::transient(), &mut rng),
        Decision::Retry { .. }
    ));
    assert_eq!(
        limit.retries_in_flight(),
        1,
        "the first call's retry holds the place"
    );

    let mut second = policy.begin(&mut rng);
    policy.before_attempt(&mut second).unwrap();
    assert_eq!(
        policy.on_failure(&mut second, Verdict::transient(), &mut rng),
        Decision::Stop(StopReason::Budget)
    );

    // The first call's retry succeeds: its place is free again.
    policy.before_attempt(&mut first).unwrap();
    policy.on_success(&first);
    assert_eq!(limit.retries_in_flight(), 0);
    let mut third = policy.begin(&mut rng);
    policy.before_attempt(&mut third).unwrap();
    assert!(matches!(
        policy.on_failure(&mut third, Verdict::transient(), &mut rng),
        Decision::Retry { .. }
    ));
    // A call dropped mid-retry gives its place back.
    drop(third);
    assert_eq!(limit.retries_in_flight(), 0);
}
