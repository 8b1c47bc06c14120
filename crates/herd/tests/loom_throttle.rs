//! Model checks of the throttles' shared state (`herd::throttle`) with `loom`: every
//! interleaving of the small cases.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p herd --test loom_throttle --release`. Under
//! `cfg(loom)` the crate's `sync` shim swaps std's atomics and Mutex for loom's, so these
//! check the very code the crate ships.
#![cfg(loom)]

use herd::clock::FakeClock;
use herd::throttle::{
    AdmissionControl, AdmissionControlConfig, AwsErrorKind, AwsRetryQuota, AwsRetryQuotaConfig,
    EnvoyRetryBudgetConfig, EnvoyRetryLimit, EnvoyRetryLimitConfig, SreThrottle, SreThrottleConfig,
};
use loom::thread;

fn envoy_max_retries(n: u32) -> EnvoyRetryLimit {
    EnvoyRetryLimit::new(EnvoyRetryLimitConfig::max_retries(n)).unwrap()
}

/// Two threads race for Envoy's last retry place: exactly one gets it, and both places are
/// free once the permits drop.
#[test]
fn envoy_last_retry_place_goes_to_exactly_one_thread() {
    loom::model(|| {
        let limit = envoy_max_retries(1);
        let other = limit.clone();
        // Each thread keeps what it got until both are done.
        let t = thread::spawn(move || other.acquire_retry());
        let here = limit.acquire_retry();
        let there = t.join().unwrap();
        assert!(here.is_some() ^ there.is_some(), "{here:?} {there:?}");
        drop((here, there));
        assert_eq!(limit.retries_in_flight(), 0);
    });
}

/// A retry ending (its permit dropped) races another asking at the limit: the asker gets the
/// place exactly when it saw the release, and the count is exact either way.
#[test]
fn envoy_release_racing_an_acquire_at_the_limit() {
    loom::model(|| {
        let limit = envoy_max_retries(1);
        let held = limit.acquire_retry().unwrap();
        let t = thread::spawn(move || drop(held));
        let got = limit.acquire_retry();
        t.join().unwrap();
        assert_eq!(limit.retries_in_flight(), u64::from(got.is_some()));
        drop(got);
        assert_eq!(limit.retries_in_flight(), 0);
    });
}

/// With a budget, an active request starting races a retry asking: the retry is admitted
/// against the active count it read, never beyond the limit that count allows.
#[test]
fn envoy_budget_active_request_racing_a_retry() {
    loom::model(|| {
        let mut budget = EnvoyRetryBudgetConfig::default();
        budget.budget_percent = 100.0;
        budget.min_retry_concurrency = 0;
        let limit = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::budget(budget)).unwrap();
        let other = limit.clone();
        let t = thread::spawn(move || other.start_request());
        let retry = limit.acquire_retry();
        let active = t.join().unwrap();
        // 100 % of 0 active is 0, of 1 is 1: the retry got in only after the request started.
        assert!(limit.retries_in_flight() <= limit.active_requests());
        drop((retry, active));
        assert_eq!((limit.active_requests(), limit.retries_in_flight()), (0, 0));
    });
}

/// Two threads race for the AWS quota's last retry cost: exactly one pays, and a failed
/// retry's cost stays spent.
#[test]
fn aws_quota_last_cost_goes_to_exactly_one_thread() {
    loom::model(|| {
        let mut config = AwsRetryQuotaConfig::standard();
        config.capacity = 5;
        let quota = AwsRetryQuota::new(config).unwrap();
        let other = quota.clone();
        // Each thread keeps what it got until both are done.
        let t = thread::spawn(move || other.acquire(AwsErrorKind::Transient));
        let here = quota.acquire(AwsErrorKind::Transient);
        let there = t.join().unwrap();
        assert!(here.is_some() ^ there.is_some(), "{here:?} {there:?}");
        drop((here, there));
        assert_eq!(quota.available(), 0);
    });
}

/// A refund racing a first-attempt increment at the capacity: the quota never exceeds it.
#[test]
fn aws_quota_never_exceeds_capacity() {
    loom::model(|| {
        let mut config = AwsRetryQuotaConfig::standard();
        config.capacity = 6;
        let quota = AwsRetryQuota::new(config).unwrap();
        let permit = quota.acquire(AwsErrorKind::Transient).unwrap(); // 1 left
        quota.record_first_attempt_success(); // 2
        let other = quota.clone();
        let t = thread::spawn(move || other.record_first_attempt_success());
        permit.succeeded();
        t.join().unwrap();
        assert_eq!(quota.available(), 6);
    });
}

/// Two threads record into SRE throttling's history while a third decides: nothing recorded
/// is lost.
#[test]
fn sre_concurrent_records_lose_nothing() {
    loom::model(|| {
        let mut config = SreThrottleConfig::book();
        config.seed = Some(1);
        let th = SreThrottle::new(config, FakeClock::new()).unwrap();
        let other = th.clone();
        let t = thread::spawn(move || {
            other.record_send();
            other.record_response(true);
        });
        th.record_send();
        th.record_response(false);
        t.join().unwrap();
        assert_eq!(th.counts(), (2, 1));
    });
}

/// Two threads record outcomes with Envoy's admission control: the counts are exact.
#[test]
fn admission_concurrent_records_lose_nothing() {
    loom::model(|| {
        let mut config = AdmissionControlConfig::default();
        config.seed = Some(1);
        let f = AdmissionControl::new(config, FakeClock::new()).unwrap();
        let other = f.clone();
        let t = thread::spawn(move || other.record(true));
        f.record(false);
        t.join().unwrap();
        assert_eq!(f.request_counts(), (2, 1));
    });
}
