//! The AWS SDKs' adaptive retry mode: a client-side rate limiter whose fill rate follows
//! CUBIC congestion control, and which can delay any request, first attempts included.
//!
//! Ported from smithy-rs `aws-smithy-runtime/src/client/retries/client_rate_limiter.rs` and
//! aws-sdk-go-v2 `aws/retry/adaptive_ratelimit.go`, whose constants it shares:
//! `MIN_FILL_RATE` 0.5 tokens/s, `MIN_CAPACITY` 1, `SMOOTH` 0.8 (the measured send rate is an
//! exponential average over 0.5 s buckets), `BETA` 0.7 (the cut after a throttle),
//! `SCALE_CONSTANT` 0.4; costs 1 for a first attempt (`INITIAL_REQUEST_COST`), 5 for a retry
//! (`RETRY_COST`), 10 (`RETRY_TIMEOUT_COST`). The bucket is off until the first throttling
//! error.
//!
//! On a throttle the rate becomes `0.7 · min(measured, fill)` (only `measured` while the bucket
//! is still off) and that rate is remembered as `last_max`; after it, the rate grows as
//! `0.4 · (t − t_throttle − W)³ + last_max` with `W = ((last_max · 0.3) / 0.4)^(1/3)`; the new
//! fill rate is never above twice the measured rate, nor below 0.5.
//!
//! Where the two SDKs differ, herd follows aws-sdk-go-v2's starting state (a measured rate of
//! 0, which its `TestAdaptiveRateLimit_Update` vectors need) over smithy-rs's
//! `ClientRateLimiter::new`, which starts the measured rate at `MIN_FILL_RATE`; and smithy-rs's
//! `acquire_permission_to_send_a_request` (take the tokens at once, answer how long to wait)
//! over go-v2's `AcquireToken` (take nothing, answer how long to wait and ask again). smithy-rs
//! charges a retry after a *throttling* error `RETRY_TIMEOUT_COST`
//! (`check_rate_limiter_for_delay`); [`AwsRequestKind`] leaves that choice to the caller.

use std::sync::Arc;
use std::time::Duration;

use crate::budget::Budget;
use crate::clock::{Clock, SystemClock};
use crate::sync::{Mutex, lock};

const RETRY_COST: f64 = 5.0;
const RETRY_TIMEOUT_COST: f64 = RETRY_COST * 2.0;
const INITIAL_REQUEST_COST: f64 = 1.0;
const MIN_FILL_RATE: f64 = 0.5;
const MIN_CAPACITY: f64 = 1.0;
const SMOOTH: f64 = 0.8;
const BETA: f64 = 0.7;
const SCALE_CONSTANT: f64 = 0.4;

/// Why a request is sent, which sets its cost in tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AwsRequestKind {
    /// A call's first attempt: 1 token.
    InitialRequest,
    /// A retry: 5 tokens.
    Retry,
    /// A retry after a timeout (smithy-rs also uses it after a throttling error): 10 tokens.
    RetryTimeout,
}

impl AwsRequestKind {
    fn cost(self) -> f64 {
        match self {
            AwsRequestKind::InitialRequest => INITIAL_REQUEST_COST,
            AwsRequestKind::Retry => RETRY_COST,
            AwsRequestKind::RetryTimeout => RETRY_TIMEOUT_COST,
        }
    }
}

/// The limiter's state, field for field smithy-rs's `Inner`. Times in seconds since the
/// clock's epoch.
#[derive(Clone, Debug, PartialEq)]
struct Inner {
    fill_rate: f64,
    max_capacity: f64,
    current_capacity: f64,
    last_timestamp: Option<f64>,
    enabled: bool,
    measured_tx_rate: f64,
    last_tx_rate_bucket: f64,
    request_count: u64,
    last_max_rate: f64,
    time_of_last_throttle: f64,
}

impl Inner {
    /// aws-sdk-go-v2 `newAdaptiveRateLimit`: the last rate bucket is the current whole second,
    /// the last throttle now, everything else zero, the bucket off.
    fn new(now: f64) -> Self {
        Self {
            fill_rate: 0.0,
            max_capacity: f64::MAX,
            current_capacity: 0.0,
            last_timestamp: None,
            enabled: false,
            measured_tx_rate: 0.0,
            last_tx_rate_bucket: now.floor(),
            request_count: 0,
            last_max_rate: 0.0,
            time_of_last_throttle: now,
        }
    }

    fn refill(&mut self, now: f64) {
        if let Some(last) = self.last_timestamp {
            let fill_amount = (now - last) * self.fill_rate;
            self.current_capacity =
                f64::min(self.max_capacity, self.current_capacity + fill_amount);
        }
        self.last_timestamp = Some(now);
    }

    fn update_bucket_refill_rate(&mut self, now: f64, new_fill_rate: f64) {
        self.refill(now);
        self.fill_rate = f64::max(new_fill_rate, MIN_FILL_RATE);
        self.max_capacity = f64::max(new_fill_rate, MIN_CAPACITY);
        self.current_capacity = f64::min(self.current_capacity, self.max_capacity);
    }

    fn update_tokens_retrieved_per_second(&mut self, now: f64) {
        let next_time_bucket = (now * 2.0).floor() / 2.0;
        self.request_count += 1;
        if next_time_bucket > self.last_tx_rate_bucket {
            let current_rate =
                self.request_count as f64 / (next_time_bucket - self.last_tx_rate_bucket);
            self.measured_tx_rate = current_rate * SMOOTH + self.measured_tx_rate * (1.0 - SMOOTH);
            self.request_count = 0;
            self.last_tx_rate_bucket = next_time_bucket;
        }
    }

    fn calculate_time_window(&self) -> f64 {
        let base = (self.last_max_rate * (1.0 - BETA)) / SCALE_CONSTANT;
        base.powf(1.0 / 3.0)
    }

    fn cubic_success(&self, now: f64) -> f64 {
        let dt = now - self.time_of_last_throttle - self.calculate_time_window();
        (SCALE_CONSTANT * dt.powi(3)) + self.last_max_rate
    }

    /// smithy-rs `update_rate_limiter`.
    fn update(&mut self, now: f64, throttled: bool) {
        self.update_tokens_retrieved_per_second(now);
        let calculated_rate = if throttled {
            let rate_to_use = if self.enabled {
                f64::min(self.measured_tx_rate, self.fill_rate)
            } else {
                self.measured_tx_rate
            };
            self.last_max_rate = rate_to_use;
            self.time_of_last_throttle = now;
            self.enabled = true;
            cubic_throttle(rate_to_use)
        } else {
            self.cubic_success(now)
        };
        let new_rate = f64::min(calculated_rate, 2.0 * self.measured_tx_rate);
        self.update_bucket_refill_rate(now, new_rate);
    }

    /// smithy-rs `acquire_permission_to_send_a_request`: the tokens are taken either way; the
    /// answer is how long to wait before sending.
    fn acquire(&mut self, now: f64, amount: f64) -> Result<(), Duration> {
        if !self.enabled {
            return Ok(());
        }
        self.refill(now);
        let res = if amount > self.current_capacity {
            let wait = (amount - self.current_capacity) / self.fill_rate;
            Err(Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX))
        } else {
            Ok(())
        };
        self.current_capacity -= amount;
        res
    }

    /// Takes the tokens only if they are there now.
    fn try_acquire(&mut self, now: f64, amount: f64) -> bool {
        if !self.enabled {
            return true;
        }
        self.refill(now);
        if amount > self.current_capacity {
            return false;
        }
        self.current_capacity -= amount;
        true
    }
}

fn cubic_throttle(rate_to_use: f64) -> f64 {
    rate_to_use * BETA
}

struct Shared<C> {
    clock: C,
    state: Mutex<Inner>,
}

/// The AWS SDKs' adaptive-mode client rate limiter.
///
/// `Clone` gives another handle onto the same limiter (the SDKs share one per retry
/// partition). Every operation takes one short lock (as both SDKs do).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use herd::clock::FakeClock;
/// use herd::throttle::{AwsRateLimiter, AwsRequestKind};
///
/// let clock = FakeClock::new();
/// let limiter = AwsRateLimiter::new(clock.clone());
/// // Off until the first throttling error: nothing is delayed.
/// assert_eq!(limiter.acquire(AwsRequestKind::InitialRequest), Ok(()));
/// limiter.update(true); // a throttling error turns it on, at the minimum rate
/// assert_eq!(limiter.fill_rate(), 0.5);
/// clock.advance(Duration::from_secs(1));
/// // Half a token in the bucket: a first attempt (1 token) waits one more second.
/// assert_eq!(limiter.acquire(AwsRequestKind::InitialRequest), Err(Duration::from_secs(1)));
/// ```
#[derive(Clone)]
pub struct AwsRateLimiter<C: Clock = SystemClock> {
    inner: Arc<Shared<C>>,
}

crate::debug_handle!(AwsRateLimiter<C>, "fill_rate", fill_rate);

impl<C: Clock> AwsRateLimiter<C> {
    /// A limiter, off until the first throttling error, driven by `clock`.
    pub fn new(clock: C) -> Self {
        let now = clock.now().as_secs_f64();
        Self {
            inner: Arc::new(Shared {
                clock,
                state: Mutex::new(Inner::new(now)),
            }),
        }
    }

    fn now(&self) -> f64 {
        self.inner.clock.now().as_secs_f64()
    }

    /// Asks to send a request of `kind`: `Ok` to send now, `Err(wait)` to send after `wait`
    /// (the tokens are taken either way, so that the wait is the caller's place in line).
    ///
    /// # Errors
    ///
    /// `Err(wait)`: not yet; send after `wait`.
    pub fn acquire(&self, kind: AwsRequestKind) -> Result<(), Duration> {
        let now = self.now();
        lock(&self.inner.state).acquire(now, kind.cost())
    }

    /// Takes the tokens for a request of `kind` only if the bucket holds them now; `false`
    /// leaves the bucket untouched.
    pub fn try_acquire(&self, kind: AwsRequestKind) -> bool {
        let now = self.now();
        lock(&self.inner.state).try_acquire(now, kind.cost())
    }

    /// A response arrived: `throttled` if it was a throttling error. Updates the measured
    /// send rate and the fill rate.
    pub fn update(&self, throttled: bool) {
        let now = self.now();
        lock(&self.inner.state).update(now, throttled);
    }

    /// Tokens per second the bucket refills at.
    #[must_use]
    pub fn fill_rate(&self) -> f64 {
        lock(&self.inner.state).fill_rate
    }

    /// The smoothed measured send rate.
    #[must_use]
    pub fn measured_rate(&self) -> f64 {
        lock(&self.inner.state).measured_tx_rate
    }

    /// Whether a throttling error has turned the bucket on.
    #[must_use]
    pub fn enabled(&self) -> bool {
        lock(&self.inner.state).enabled
    }

    /// Tokens in the bucket (negative while requests wait for their turn).
    #[must_use]
    pub fn capacity(&self) -> f64 {
        lock(&self.inner.state).current_capacity
    }
}

/// Through a [`RetryPolicy`](crate::policy::RetryPolicy), which cannot wait for the limiter
/// nor tell a throttling error from another: first attempts are not delayed (call
/// [`acquire`](AwsRateLimiter::acquire) before each call and wait what it asks), a retry is
/// sent only if the bucket holds its 5 tokens now ([`try_acquire`](AwsRateLimiter::try_acquire)),
/// a success updates the limiter as unthrottled and every transient failure as a throttle
/// (the cautious reading; call [`update`](AwsRateLimiter::update) yourself to tell them apart).
impl<C: Clock> Budget for AwsRateLimiter<C> {
    /// Clones share one state, so they are one budget: a call deposits in it once.
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
    fn on_request(&self) {}
    fn on_success(&self) {
        self.update(false);
    }
    fn on_failure(&self) {
        self.update(true);
    }
    fn try_retry(&self) -> bool {
        self.try_acquire(AwsRequestKind::Retry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::rng::{Rng, SplitMix64};

    /// aws-sdk-go-v2 `floatEqual`: within 1e-15, the SDK's own tolerance.
    #[track_caller]
    fn assert_float(expected: f64, actual: f64) {
        assert!(
            (expected - actual).abs() < 1e-15,
            "expected {expected}, got {actual}"
        );
    }

    /// The tests' starting state: last_max_rate 10 at a throttle at t = 5.
    fn after_throttle_at_5() -> Inner {
        Inner {
            last_max_rate: 10.0,
            time_of_last_throttle: 5.0,
            ..Inner::new(0.0)
        }
    }

    /// smithy-rs `test_calculated_rate_with_successes` = go-v2 `TestAdaptiveRateLimit_cubic`
    /// "success".
    #[test]
    fn cubic_success_vectors() {
        let inner = after_throttle_at_5();
        let table = [
            (5.0, 7.0),
            (6.0, 9.64893600966),
            (7.0, 10.000030849917364),
            (8.0, 10.453284520772092),
            (9.0, 13.408697022224185),
            (10.0, 21.26626835427364),
            (11.0, 36.425998516920465),
        ];
        for (t, want) in table {
            assert_float(want, inner.cubic_success(t));
        }
    }

    /// smithy-rs `test_calculated_rate_with_throttles` = go-v2 "mixed".
    #[test]
    fn cubic_mixed_vectors() {
        let mut inner = after_throttle_at_5();
        let table = [
            (false, 5.0, 7.0),
            (false, 6.0, 9.64893600966),
            (true, 7.0, 6.754255206761999),
            (true, 8.0, 4.727978644733399),
            (false, 9.0, 4.670125557970046),
            (false, 10.0, 4.770870456867401),
            (false, 11.0, 6.011819748005445),
            (false, 12.0, 10.792973431384178),
        ];
        let mut rate = 0.0;
        for (throttled, t, want) in table {
            if throttled {
                rate = cubic_throttle(rate);
                inner.time_of_last_throttle = t;
                inner.last_max_rate = rate;
            } else {
                rate = inner.cubic_success(t);
            }
            assert_float(want, rate);
        }
    }

    /// smithy-rs `should_match_beta_decrease`.
    #[test]
    fn beta_decrease() {
        assert_float(7.0, cubic_throttle(10.0));
        let inner = Inner {
            last_max_rate: 10.0,
            time_of_last_throttle: 1.0,
            ..Inner::new(0.0)
        };
        assert_float(7.0, inner.cubic_success(1.0));
    }

    /// smithy-rs `test_client_sending_rates` = go-v2 `TestAdaptiveRateLimit_Update` "base": a
    /// response every 200 ms from t = 0, throttles at 2.0 s and 3.2 s; the measured rate and
    /// the fill rate after each, through the public API on a fake clock.
    #[test]
    fn client_sending_rate_vectors() {
        let clock = FakeClock::new();
        let limiter = AwsRateLimiter::new(clock.clone());
        let table = [
            (false, 0.0, 0.5),
            (false, 0.0, 0.5),
            (false, 4.800000000000001, 0.5),
            (false, 4.800000000000001, 0.5),
            (false, 4.16, 0.5),
            (false, 4.16, 0.6912),
            (false, 4.16, 1.0975999999999997),
            (false, 5.632000000000001, 1.6384000000000005),
            (false, 5.632000000000001, 2.3328),
            (true, 4.3264, 3.0284799999999996),
            (false, 4.3264, 3.48663917347026),
            (false, 4.3264, 3.821874416040255),
            (false, 5.66528, 4.053385727709987),
            (false, 5.66528, 4.200373108479454),
            (false, 4.333056, 4.282036558348658),
            (true, 4.333056, 2.99742559084406),
            (false, 4.333056, 3.4522263943863463),
        ];
        for (i, (throttled, measured, fill)) in table.into_iter().enumerate() {
            clock.advance(Duration::from_millis(200));
            limiter.update(throttled);
            assert_float(measured, limiter.measured_rate());
            assert_float(fill, limiter.fill_rate());
            assert_eq!(limiter.enabled(), i >= 9, "step {i}");
        }
    }

    /// smithy-rs `throttling_is_enabled_once_throttling_error_is_received`.
    #[test]
    fn enabled_by_the_first_throttle() {
        let limiter = AwsRateLimiter::new(FakeClock::new());
        assert!(!limiter.enabled());
        limiter.update(false);
        assert!(!limiter.enabled());
        limiter.update(true);
        assert!(limiter.enabled());
    }

    /// smithy-rs `test_when_throttling_is_enabled_requests_can_still_be_sent`: after a
    /// throttle, a hundred first attempts at random intervals (seeded), each waiting what the
    /// limiter asks, are all sent, and the limiter keeps the fake clock's time.
    #[test]
    fn requests_can_still_be_sent_when_enabled() {
        let clock = FakeClock::new();
        let limiter = AwsRateLimiter::new(clock.clone());
        limiter.update(true);
        let mut rng = SplitMix64::new(11);
        for _ in 0..100 {
            clock.advance(Duration::from_secs_f64(rng.next_f64()));
            if let Err(wait) = limiter.acquire(AwsRequestKind::InitialRequest) {
                assert!(wait <= Duration::from_secs(2), "{wait:?}");
                clock.advance(wait);
            }
            limiter.update(false);
        }
        assert!(limiter.enabled());
        let last = lock(&limiter.inner.state).last_timestamp.unwrap();
        assert!((last - clock.now().as_secs_f64()).abs() <= 1e-4 * last);
    }

    /// A retry through the `Budget` trait is refused, not delayed, when its 5 tokens are not
    /// there; the bucket is then left as it was.
    #[test]
    fn try_acquire_takes_nothing_when_short() {
        let clock = FakeClock::new();
        let limiter = AwsRateLimiter::new(clock.clone());
        assert!(limiter.try_retry(), "off: everything passes");
        limiter.update(true);
        clock.advance(Duration::from_secs(4)); // 2 tokens at 0.5/s, capacity 1
        assert!(!limiter.try_retry());
        assert_float(1.0, limiter.capacity());
        assert!(limiter.try_acquire(AwsRequestKind::InitialRequest));
        assert_float(0.0, limiter.capacity());
    }
}
