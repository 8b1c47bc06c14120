//! The AWS SDKs' standard retry mode: a retry quota (a token bucket of retries) and
//! exponential backoff with full jitter, in its two presets.
//!
//! **`aws-standard`** (the SDKs' behaviour before 2026; smithy-rs
//! `aws-smithy-runtime/src/client/retries/token_bucket.rs` and `strategy/standard.rs`,
//! aws-sdk-go-v2 `aws/retry/standard.go`): a quota of 500 tokens
//! (`DEFAULT_CAPACITY`, `DefaultRetryRateTokens`); a retry costs 5 (`DefaultRetryCost`), 10
//! after a timeout (`DefaultRetryTimeoutCost`); a call whose first attempt succeeds adds 1
//! (`DefaultNoRetryIncrement`, `PERMIT_REGENERATION_AMOUNT`); a retry that succeeds returns its
//! cost. Pause before retry `i` (1-based): `U[0, 1) · min(1 s · 2^(i−1), 20 s)` (smithy-rs
//! `calculate_exponential_backoff`, `RetryConfig::standard()`: `initial_backoff` 1 s,
//! `max_backoff` 20 s, `max_attempts` 3); a server's `x-amz-retry-after` is taken as is, cut at
//! the 20 s cap.
//!
//! **`aws-standard-2026`** (botocore's default since 1.44.0, boto/botocore
//! `botocore/retries/standard.py` and `quota.py`; opt-in with `AWS_NEW_RETRIES_2026=true` in the
//! other SDKs and earlier botocore; smithy-rs
//! `RetrySpec::v2_1`, aws-sdk-php `src/Retry/Standard/QuotaManager.php` and
//! `src/Retry/V3/RetryMiddleware.php`, aws-sdk-go-v2 `aws/retry/retry2026_test.go`): a retry
//! after a throttling error costs 5 (`throttling_retry_cost`), any other retry 14
//! (`retry_cost`; there is no separate timeout cost); the pause base is 50 ms, 1 s after a
//! throttling error (`DEFAULT_BASE_DELAY_MS`, `THROTTLING_BASE_DELAY_MS`), still capped at
//! 20 s before the jitter; `x-amz-retry-after` (integer milliseconds) is clamped to
//! `[t, t + 5 s]` around the jittered pause `t`.
//!
//! A retry's cost is spent when the retry is admitted; a failed retry's cost is not returned
//! (aws-sdk-go-v2 `releaseToken.release`: nothing on error), only a successful one's. The
//! quota never exceeds its capacity.

use std::sync::Arc;
use std::time::Duration;

use super::{InvalidThrottle, check};
use crate::budget::{Budget, PermitHolder, RetryPermit};
use crate::rng::Rng;
use crate::sync::{AtomicU64, Ordering};

/// What the failed attempt was, as the SDKs' classifiers tell it apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AwsErrorKind {
    /// A transient error: a 500/502/503/504, a connection error, a `RequestTimeout` code.
    Transient,
    /// A timeout (smithy-rs `ErrorKind::TransientError`: a socket or connect timeout).
    Timeout,
    /// A throttling error (`Throttling`, `ThrottlingException`, `SlowDown`, ...).
    Throttling,
}

/// Settings of [`AwsRetryQuota`]: start from [`standard`](Self::standard) (the default) or
/// [`standard_2026`](Self::standard_2026).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AwsRetryQuotaConfig {
    /// Tokens the quota holds, and starts with; at most 500 000 000 (smithy-rs
    /// `MAXIMUM_CAPACITY`).
    pub capacity: u32,
    /// Cost of a retry after a transient error.
    pub retry_cost: u32,
    /// Cost of a retry after a timeout.
    pub timeout_retry_cost: u32,
    /// Cost of a retry after a throttling error.
    pub throttling_retry_cost: u32,
    /// Tokens a call whose first attempt succeeds adds back.
    pub no_retry_increment: u32,
}

impl AwsRetryQuotaConfig {
    /// `aws-standard`: capacity 500, costs 5 (10 after a timeout, 5 after throttling),
    /// increment 1.
    #[must_use]
    pub fn standard() -> Self {
        Self {
            capacity: 500,
            retry_cost: 5,
            timeout_retry_cost: 10,
            throttling_retry_cost: 5,
            no_retry_increment: 1,
        }
    }

    /// `aws-standard-2026`: capacity 500, costs 14 (timeouts too) and 5 after throttling,
    /// increment 1.
    #[must_use]
    pub fn standard_2026() -> Self {
        Self {
            capacity: 500,
            retry_cost: 14,
            timeout_retry_cost: 14,
            throttling_retry_cost: 5,
            no_retry_increment: 1,
        }
    }

    fn cost(&self, kind: AwsErrorKind) -> u64 {
        u64::from(match kind {
            AwsErrorKind::Transient => self.retry_cost,
            AwsErrorKind::Timeout => self.timeout_retry_cost,
            AwsErrorKind::Throttling => self.throttling_retry_cost,
        })
    }
}

impl Default for AwsRetryQuotaConfig {
    /// [`AwsRetryQuotaConfig::standard`].
    fn default() -> Self {
        Self::standard()
    }
}

struct Quota {
    tokens: AtomicU64,
    config: AwsRetryQuotaConfig,
}

impl Quota {
    /// Adds `amount`, never above the capacity.
    fn refill(&self, amount: u64) {
        let capacity = u64::from(self.config.capacity);
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(amount).min(capacity))
            });
    }
}

impl PermitHolder for Quota {
    /// A successful retry returns its cost; a failed one's stays spent.
    fn release(&self, cost: u64, succeeded: bool) {
        if succeeded {
            self.refill(cost);
        }
    }
}

/// The AWS SDKs' retry quota: retries spend tokens, successes earn them back; a retry whose
/// cost the quota cannot pay is not made.
///
/// `Clone` gives another handle onto the same quota (the SDKs share one per retry
/// partition, usually per region). Each operation is one atomic update.
///
/// # Examples
///
/// smithy-rs's `eventual_success` test: two retries after server errors, then a success.
///
/// ```
/// use herd::throttle::{AwsErrorKind, AwsRetryQuota, AwsRetryQuotaConfig};
///
/// let quota = AwsRetryQuota::new(AwsRetryQuotaConfig::standard())?;
/// let first = quota.acquire(AwsErrorKind::Transient).expect("500 tokens");
/// assert_eq!(quota.available(), 495);
/// drop(first); // that retry failed: its cost stays spent
/// let second = quota.acquire(AwsErrorKind::Transient).expect("495 tokens");
/// assert_eq!(quota.available(), 490);
/// second.succeeded(); // the second retry succeeded: its cost comes back
/// assert_eq!(quota.available(), 495);
/// # Ok::<(), herd::throttle::InvalidThrottle>(())
/// ```
#[derive(Clone)]
pub struct AwsRetryQuota {
    inner: Arc<Quota>,
}

crate::debug_handle!(AwsRetryQuota, "available", available);

impl AwsRetryQuota {
    /// A full quota.
    ///
    /// # Errors
    ///
    /// [`InvalidThrottle`] naming `capacity` (above 500 000 000).
    pub fn new(config: AwsRetryQuotaConfig) -> Result<Self, InvalidThrottle> {
        check(
            config.capacity <= 500_000_000,
            "capacity",
            f64::from(config.capacity),
            "at most 500000000",
        )?;
        Ok(Self {
            inner: Arc::new(Quota {
                tokens: AtomicU64::new(u64::from(config.capacity)),
                config,
            }),
        })
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> AwsRetryQuotaConfig {
        self.inner.config
    }

    /// Asks for a retry after an error of `kind`: spends its cost and hands back the permit
    /// the retry holds, or `None` when the quota cannot pay (the SDKs' "retry quota exceeded").
    /// Call [`RetryPermit::succeeded`] if the retry succeeds; drop the permit otherwise.
    pub fn acquire(&self, kind: AwsErrorKind) -> Option<RetryPermit> {
        let cost = self.inner.config.cost(kind);
        self.inner
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(cost))
            .ok()?;
        Some(RetryPermit::new(self.inner.clone(), cost))
    }

    /// A call succeeded on its first attempt: adds `no_retry_increment`.
    pub fn record_first_attempt_success(&self) {
        self.inner
            .refill(u64::from(self.inner.config.no_retry_increment));
    }

    /// Tokens in the quota now.
    #[must_use]
    pub fn available(&self) -> u64 {
        self.inner.tokens.load(Ordering::Acquire)
    }
}

/// Through a [`RetryPolicy`](crate::policy::RetryPolicy), which does not tell the budget the
/// error's kind: a retry costs `retry_cost` (a transient error's). The policy holds the cost
/// in the retry's [`try_retry_permit`], so a retry that succeeds returns it and only a first
/// attempt's success adds `no_retry_increment`, as the SDKs do. For a timeout's or a
/// throttling error's cost drive the quota directly: [`AwsRetryQuota::acquire`] and
/// [`AwsRetryQuota::record_first_attempt_success`].
///
/// [`try_retry_permit`]: Budget::try_retry_permit
impl Budget for AwsRetryQuota {
    /// Clones share one state, so they are one budget: a call deposits in it once.
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
    fn on_request(&self) {}
    fn on_success(&self) {
        self.record_first_attempt_success();
    }
    fn try_retry(&self) -> bool {
        self.acquire(AwsErrorKind::Transient).is_some()
    }
    fn try_retry_permit(&self) -> Option<RetryPermit> {
        self.acquire(AwsErrorKind::Transient)
    }
}

/// The standard mode's pauses: `U[0, 1) · min(base · 2^(i−1), max_backoff)` before retry `i`,
/// with the base of the error's kind, and the server's `x-amz-retry-after` applied as the
/// preset says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AwsBackoff {
    /// Base after a transient error or timeout.
    pub base: Duration,
    /// Base after a throttling error.
    pub throttling_base: Duration,
    /// Cap before the jitter (20 s in both presets).
    pub max_backoff: Duration,
    /// Attempts per call, the first included (3 in both presets).
    pub max_attempts: u32,
    /// `Some(w)`: `x-amz-retry-after` is clamped to `[t, t + w]` (2026: 5 s); `None`: it is
    /// taken as is, cut at `max_backoff`.
    pub retry_after_window: Option<Duration>,
}

impl AwsBackoff {
    /// `aws-standard`: base 1 s for every kind, 20 s cap, 3 attempts, `x-amz-retry-after` cut
    /// at 20 s (smithy-rs `RetryConfig::standard()`, `RetrySpec::v2_0`).
    #[must_use]
    pub fn standard() -> Self {
        Self {
            base: Duration::from_secs(1),
            throttling_base: Duration::from_secs(1),
            max_backoff: Duration::from_secs(20),
            max_attempts: 3,
            retry_after_window: None,
        }
    }

    /// `aws-standard-2026`: base 50 ms (1 s after throttling), 20 s cap, 3 attempts,
    /// `x-amz-retry-after` clamped to `[t, t + 5 s]` (smithy-rs `RetrySpec::v2_1`).
    #[must_use]
    pub fn standard_2026() -> Self {
        Self {
            base: Duration::from_millis(50),
            throttling_base: Duration::from_secs(1),
            max_backoff: Duration::from_secs(20),
            max_attempts: 3,
            retry_after_window: Some(Duration::from_secs(5)),
        }
    }

    /// `aws-standard-2026` for DynamoDB and DynamoDB Streams: base 25 ms (1 s after
    /// throttling), 20 s cap, 4 attempts (botocore 1.44 `standard.py` `_SERVICE_MAX_ATTEMPTS`,
    /// `ExponentialBackoff._SERVICE_BACKOFF_CONFIG`; aws/aws-sdk-go-v2#3416).
    #[must_use]
    pub fn dynamodb_2026() -> Self {
        Self {
            base: Duration::from_millis(25),
            max_attempts: 4,
            ..Self::standard_2026()
        }
    }

    /// The pause before retry `retry` (1 for the first retry) after an error of `kind`, with
    /// the jitter factor `jitter` in `[0, 1]` (1 is the SDKs' "static exponential base" of
    /// their tests) and the server's `x-amz-retry-after`, if any.
    #[must_use]
    pub fn pause(
        &self,
        retry: u32,
        kind: AwsErrorKind,
        jitter: f64,
        retry_after: Option<Duration>,
    ) -> Duration {
        let base = if kind == AwsErrorKind::Throttling {
            self.throttling_base
        } else {
            self.base
        };
        let doubled = 2u32
            .checked_pow(retry.saturating_sub(1))
            .and_then(|p| base.checked_mul(p))
            .unwrap_or(self.max_backoff);
        let t = doubled
            .min(self.max_backoff)
            .mul_f64(jitter.clamp(0.0, 1.0));
        match (retry_after, self.retry_after_window) {
            (Some(after), Some(window)) => after.clamp(t, t.saturating_add(window)),
            (Some(after), None) => after.min(self.max_backoff),
            (None, _) => t,
        }
    }

    /// [`pause`](Self::pause) with the jitter drawn from `rng`.
    pub fn pause_with<R: Rng + ?Sized>(
        &self,
        retry: u32,
        kind: AwsErrorKind,
        rng: &mut R,
        retry_after: Option<Duration>,
    ) -> Duration {
        self.pause(retry, kind, rng.next_f64(), retry_after)
    }

    /// An `x-amz-retry-after` header value: whole milliseconds, digits only; anything else is
    /// ignored (aws-sdk-php `ctype_digit`, the SDKs' "invalid header falls back to the
    /// backoff").
    #[must_use]
    pub fn parse_retry_after(value: &str) -> Option<Duration> {
        let value = value.trim();
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        value.parse::<u64>().ok().map(Duration::from_millis)
    }
}

impl Default for AwsBackoff {
    /// [`AwsBackoff::standard`].
    fn default() -> Self {
        Self::standard()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Outcome {
        Success,
        Retry(Duration),
        MaxAttempts,
        QuotaExceeded,
    }
    use Outcome::*;

    /// One response of a test case: `None` for a 200, else the error's kind and its
    /// `x-amz-retry-after` header.
    type Response = Option<(AwsErrorKind, Option<&'static str>)>;

    const T500: Response = Some((AwsErrorKind::Transient, None));
    const THROTTLE: Response = Some((AwsErrorKind::Throttling, None));

    /// Plays aws-sdk-go-v2's `retry2026_test.go` loop: each step is one attempt's response;
    /// the expected outcome, quota after it and pause (jitter fixed at 1).
    fn play(
        quota: u32,
        max_attempts: u32,
        max_backoff: Option<Duration>,
        steps: &[(Response, Outcome, u64)],
    ) {
        // The test's `ratelimit.NewTokenRateLimit(initialTokens)`: capacity and start alike.
        let mut config = AwsRetryQuotaConfig::standard_2026();
        config.capacity = quota;
        let q = AwsRetryQuota::new(config).unwrap();
        let mut backoff = AwsBackoff::standard_2026();
        backoff.max_attempts = max_attempts;
        if let Some(max) = max_backoff {
            backoff.max_backoff = max;
        }
        let mut attempt = 0;
        let mut held: Option<RetryPermit> = None;
        for (i, &(response, want, want_quota)) in steps.iter().enumerate() {
            attempt += 1;
            let got = match response {
                None => {
                    match held.take() {
                        Some(permit) => permit.succeeded(),
                        None => {
                            if attempt == 1 {
                                q.record_first_attempt_success();
                            }
                        }
                    }
                    attempt = 0;
                    Success
                }
                Some((kind, header)) => {
                    drop(held.take()); // the retry failed: its cost stays spent
                    if attempt >= backoff.max_attempts {
                        MaxAttempts
                    } else {
                        match q.acquire(kind) {
                            None => QuotaExceeded,
                            Some(permit) => {
                                held = Some(permit);
                                let after = header.and_then(AwsBackoff::parse_retry_after);
                                Retry(backoff.pause(attempt, kind, 1.0, after))
                            }
                        }
                    }
                }
            };
            assert_eq!(got, want, "step {i}");
            assert_eq!(q.available(), want_quota, "step {i} quota");
        }
    }

    fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    /// Every standard-mode case of aws-sdk-go-v2's `TestRetry2026StandardMode` (the
    /// long-polling ones describe a caller's sleep, not the quota or the pause).
    #[test]
    fn go_v2_retry_2026_vectors() {
        // retry eventually succeeds
        play(
            500,
            3,
            None,
            &[
                (T500, Retry(ms(50)), 486),
                (T500, Retry(ms(100)), 472),
                (None, Success, 486),
            ],
        );
        // fail due to max attempts reached
        play(
            500,
            3,
            None,
            &[
                (T500, Retry(ms(50)), 486),
                (T500, Retry(ms(100)), 472),
                (T500, MaxAttempts, 472),
            ],
        );
        // retry quota reached after a single retry
        play(
            14,
            3,
            None,
            &[(T500, Retry(ms(50)), 0), (T500, QuotaExceeded, 0)],
        );
        // no retries at all if retry quota is 0
        play(0, 3, None, &[(T500, QuotaExceeded, 0)]);
        // verifying exponential backoff timing
        play(
            500,
            5,
            None,
            &[
                (T500, Retry(ms(50)), 486),
                (T500, Retry(ms(100)), 472),
                (T500, Retry(ms(200)), 458),
                (T500, Retry(ms(400)), 444),
                (T500, MaxAttempts, 444),
            ],
        );
        // verify max backoff time
        play(
            500,
            5,
            Some(ms(200)),
            &[
                (T500, Retry(ms(50)), 486),
                (T500, Retry(ms(100)), 472),
                (T500, Retry(ms(200)), 458),
                (T500, Retry(ms(200)), 444),
                (T500, MaxAttempts, 444),
            ],
        );
        // retry stops after retry quota exhaustion
        play(
            20,
            5,
            None,
            &[(T500, Retry(ms(50)), 6), (T500, QuotaExceeded, 6)],
        );
        // retry quota recovery after successful responses
        play(
            30,
            5,
            None,
            &[
                (T500, Retry(ms(50)), 16),
                (T500, Retry(ms(100)), 2),
                (None, Success, 16),
                (T500, Retry(ms(50)), 2),
                (None, Success, 16),
            ],
        );
        // throttling error token bucket drain and backoff duration
        play(
            500,
            3,
            None,
            &[(THROTTLE, Retry(ms(1000)), 495), (None, Success, 500)],
        );
        // honor x-amz-retry-after header (jitter 1: t = 50 ms, 1500 within [t, t + 5 s])
        let after = |h| Some((AwsErrorKind::Transient, Some(h)));
        play(
            500,
            3,
            None,
            &[(after("1500"), Retry(ms(1500)), 486), (None, Success, 500)],
        );
        // x-amz-retry-after minimum is exponential backoff duration
        play(
            500,
            3,
            None,
            &[(after("0"), Retry(ms(50)), 486), (None, Success, 500)],
        );
        // x-amz-retry-after maximum is 5+exponential backoff duration
        play(
            500,
            3,
            None,
            &[(after("10000"), Retry(ms(5050)), 486), (None, Success, 500)],
        );
        // invalid x-amz-retry-after falls back to exponential backoff
        play(
            500,
            3,
            None,
            &[(after("invalid"), Retry(ms(50)), 486), (None, Success, 500)],
        );
    }

    /// The DynamoDB case of the same table: base 25 ms and 4 attempts.
    #[test]
    fn go_v2_retry_2026_dynamodb_vector() {
        let mut b = AwsBackoff::standard_2026();
        b.base = ms(25);
        b.max_attempts = 4;
        let pauses: Vec<_> = (1..4)
            .map(|i| b.pause(i, AwsErrorKind::Transient, 1.0, None))
            .collect();
        assert_eq!(pauses, [ms(25), ms(50), ms(100)]);
    }

    /// smithy-rs `strategy/standard.rs` tests, legacy preset: `eventual_success`,
    /// `no_more_attempts` (costs 5, pauses 1 s and 2 s with the static base), and
    /// `should_retry_*_error_result` (after attempt 3 of 4, any kind: 4 s).
    #[test]
    fn smithy_rs_standard_vectors() {
        let b = AwsBackoff::standard();
        let q = AwsRetryQuota::new(AwsRetryQuotaConfig::standard()).unwrap();
        let first = q.acquire(AwsErrorKind::Transient).unwrap();
        assert_eq!(b.pause(1, AwsErrorKind::Transient, 1.0, None), ms(1000));
        assert_eq!(q.available(), 495);
        drop(first);
        let second = q.acquire(AwsErrorKind::Transient).unwrap();
        assert_eq!(b.pause(2, AwsErrorKind::Transient, 1.0, None), ms(2000));
        assert_eq!(q.available(), 490);
        second.succeeded();
        assert_eq!(q.available(), 495);
        for kind in [
            AwsErrorKind::Transient,
            AwsErrorKind::Timeout,
            AwsErrorKind::Throttling,
        ] {
            assert_eq!(b.pause(3, kind, 1.0, None), ms(4000));
        }
        // A timeout costs 10 in the legacy preset.
        let q = AwsRetryQuota::new(AwsRetryQuotaConfig::standard()).unwrap();
        drop(q.acquire(AwsErrorKind::Timeout));
        assert_eq!(q.available(), 490);
    }

    /// smithy-rs `token_bucket.rs` `test_bounded_permits_exhaustion`: a quota of 10 gives two
    /// retries of 5.
    #[test]
    fn smithy_rs_bounded_permits_exhaustion() {
        let mut config = AwsRetryQuotaConfig::standard();
        config.capacity = 10;
        let q = AwsRetryQuota::new(config).unwrap();
        let permits: Vec<_> = std::iter::from_fn(|| q.acquire(AwsErrorKind::Throttling))
            .take(100)
            .collect();
        assert_eq!(permits.len(), 2);
        assert!(q.acquire(AwsErrorKind::Throttling).is_none());
    }

    /// The 20 s cap holds at any retry number, and the legacy preset cuts a server delay at
    /// it.
    #[test]
    fn pauses_never_exceed_the_cap() {
        let b = AwsBackoff::standard();
        for retry in [1, 5, 6, 31, 32, 33, u32::MAX] {
            assert!(b.pause(retry, AwsErrorKind::Transient, 1.0, None) <= Duration::from_secs(20));
        }
        assert_eq!(
            b.pause(
                1,
                AwsErrorKind::Transient,
                0.5,
                Some(Duration::from_secs(60))
            ),
            Duration::from_secs(20)
        );
    }

    #[test]
    fn first_attempt_successes_refill_up_to_capacity() {
        let q = AwsRetryQuota::new(AwsRetryQuotaConfig::standard()).unwrap();
        q.record_first_attempt_success();
        assert_eq!(q.available(), 500);
        drop(q.acquire(AwsErrorKind::Transient));
        q.record_first_attempt_success();
        assert_eq!(q.available(), 496);
        let mut config = AwsRetryQuotaConfig::standard();
        config.capacity = 500_000_001;
        assert_eq!(AwsRetryQuota::new(config).unwrap_err().field, "capacity");
    }

    /// botocore 1.44 `standard.py`: DynamoDB's transient base is 25 ms and its attempts 4; a
    /// throttling error still waits on the 1 s base.
    #[test]
    fn dynamodb_2026_is_botocore_s() {
        let d = AwsBackoff::dynamodb_2026();
        assert_eq!(d.max_attempts, 4);
        let t = |n| d.pause(n, AwsErrorKind::Transient, 1.0, None);
        assert_eq!([t(1), t(2), t(3)], [ms(25), ms(50), ms(100)]);
        assert_eq!(d.pause(1, AwsErrorKind::Throttling, 1.0, None), ms(1000));
    }
}
