//! Envoy's limits on concurrent retries: the cluster circuit breaker's `max_retries`, and the
//! retry budget that overrides it.
//!
//! Envoy counts *retries in flight*, not retries per second. A retry takes its place when the
//! router decides to retry (`RetryStateImpl::shouldRetry`: `retries().canCreate()`, then
//! `retries().inc()`) and gives it back when that retry's response is judged or the request
//! ends (`resetRetry()`: `retries().dec()`); the place is held through the backoff *and* the
//! retry's attempt. The limit (`source/common/upstream/resource_manager_impl.h`,
//! `RetryBudgetImpl::max`) is
//!
//! - with a `retry_budget`: `max(budget_percent / 100 · (active + pending requests),
//!   min_retry_concurrency)`, the product truncated to an integer; `budget_percent` defaults
//!   to 20.0 and `min_retry_concurrency` to 3 (the same file's `getDouble(..., 20.0)` and
//!   `getInteger(..., 3)`); a budget with either field set replaces `max_retries`;
//! - without one: `max_retries`, default 3 (`api/envoy/config/cluster/v3/circuit_breaker.proto`).
//!
//! A retry may start while the count is below the limit (`canCreate`: `count() < max()`).
//! Envoy checks and increments in two steps and accepts that racing workers overshoot the
//! limit ("Though atomics are used, it is possible for resources to temporarily go above the
//! supplied maximums"); herd takes the place in one atomic step, so the limit is exact.
//!
//! Active requests are the upstream requests (attempts) under way, retries included; hold an
//! [`EnvoyActiveRequest`] for each.

use std::sync::Arc;

use super::{InvalidThrottle, check};
use crate::budget::{Budget, PermitHolder, RetryPermit};
use crate::sync::{AtomicU64, Ordering};

/// Envoy's `CircuitBreakers.Thresholds.RetryBudget`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct EnvoyRetryBudgetConfig {
    /// Retries in flight allowed, as a percentage of active and pending requests; `[0, 100]`.
    pub budget_percent: f64,
    /// Retries in flight allowed whatever the traffic.
    pub min_retry_concurrency: u32,
}

impl Default for EnvoyRetryBudgetConfig {
    /// 20 % and 3 (`resource_manager_impl.h`).
    fn default() -> Self {
        Self {
            budget_percent: 20.0,
            min_retry_concurrency: 3,
        }
    }
}

/// The retry part of Envoy's `CircuitBreakers.Thresholds`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct EnvoyRetryLimitConfig {
    /// Retries in flight allowed without a budget (default 3).
    pub max_retries: u32,
    /// The budget that, when set, replaces `max_retries`.
    pub retry_budget: Option<EnvoyRetryBudgetConfig>,
}

impl Default for EnvoyRetryLimitConfig {
    /// `max_retries` 3 and no budget (`circuit_breaker.proto`: "If not specified, the default
    /// is 3").
    fn default() -> Self {
        Self::max_retries(3)
    }
}

impl EnvoyRetryLimitConfig {
    /// `max_retries` only.
    #[must_use]
    pub fn max_retries(max_retries: u32) -> Self {
        Self {
            max_retries,
            retry_budget: None,
        }
    }

    /// A retry budget (with `max_retries` left at its default, unused).
    #[must_use]
    pub fn budget(budget: EnvoyRetryBudgetConfig) -> Self {
        Self {
            max_retries: 3,
            retry_budget: Some(budget),
        }
    }
}

struct Counts {
    active: AtomicU64,
    retries: AtomicU64,
    config: EnvoyRetryLimitConfig,
}

impl Counts {
    fn limit(&self, active: u64) -> u64 {
        match self.config.retry_budget {
            // `std::max<uint64_t>(budget_percent / 100.0 * current_active, min)`: the product
            // converts to an integer by truncation.
            Some(b) => ((b.budget_percent / 100.0 * active as f64) as u64)
                .max(u64::from(b.min_retry_concurrency)),
            None => u64::from(self.config.max_retries),
        }
    }
}

impl PermitHolder for Counts {
    fn release(&self, _token: u64, _succeeded: bool) {
        self.retries.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Envoy's retry limit: a `max_retries` circuit breaker or a retry budget, counting retries in
/// flight.
///
/// `Clone` gives another handle onto the same limit (Envoy keeps one per cluster and
/// priority). Each operation is one or two atomic operations.
///
/// # Examples
///
/// Envoy's worked example: 20 % with a minimum of 3 allows 5 retries at 25 active requests.
///
/// ```
/// use herd::throttle::{EnvoyRetryBudgetConfig, EnvoyRetryLimit, EnvoyRetryLimitConfig};
///
/// let limit = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::budget(EnvoyRetryBudgetConfig::default()))?;
/// let active: Vec<_> = (0..25).map(|_| limit.start_request()).collect();
/// let retries: Vec<_> = std::iter::from_fn(|| limit.acquire_retry()).take(10).collect();
/// assert_eq!(retries.len(), 5);
/// drop(retries); // the retries ended: their places are free again
/// assert_eq!(limit.retries_in_flight(), 0);
/// # drop(active);
/// # Ok::<(), herd::throttle::InvalidThrottle>(())
/// ```
#[derive(Clone)]
pub struct EnvoyRetryLimit {
    inner: Arc<Counts>,
}

crate::debug_handle!(EnvoyRetryLimit, "retries_in_flight", retries_in_flight);

/// One active upstream request, counted while this guard lives.
#[must_use = "the request counts as active only while the guard lives"]
pub struct EnvoyActiveRequest {
    inner: Arc<Counts>,
}

impl Drop for EnvoyActiveRequest {
    fn drop(&mut self) {
        self.inner.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for EnvoyActiveRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvoyActiveRequest").finish_non_exhaustive()
    }
}

impl EnvoyRetryLimit {
    /// A limit with nothing in flight.
    ///
    /// # Errors
    ///
    /// [`InvalidThrottle`] naming `budget_percent`.
    pub fn new(config: EnvoyRetryLimitConfig) -> Result<Self, InvalidThrottle> {
        if let Some(b) = config.retry_budget {
            check(
                b.budget_percent.is_finite() && (0.0..=100.0).contains(&b.budget_percent),
                "budget_percent",
                b.budget_percent,
                "a percentage in [0, 100]",
            )?;
        }
        Ok(Self {
            inner: Arc::new(Counts {
                active: AtomicU64::new(0),
                retries: AtomicU64::new(0),
                config,
            }),
        })
    }

    /// Counts one upstream request as active until the guard drops.
    pub fn start_request(&self) -> EnvoyActiveRequest {
        self.inner.active.fetch_add(1, Ordering::AcqRel);
        EnvoyActiveRequest {
            inner: self.inner.clone(),
        }
    }

    /// Takes a place for one retry if fewer than [`limit`](Self::limit) are in flight; the
    /// permit holds it until dropped (or [`succeeded`](RetryPermit::succeeded)): keep it through
    /// the retry's pause and attempt.
    pub fn acquire_retry(&self) -> Option<RetryPermit> {
        let inner = &*self.inner;
        inner
            .retries
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                (r < inner.limit(inner.active.load(Ordering::Acquire))).then_some(r + 1)
            })
            .ok()?;
        Some(RetryPermit::new(self.inner.clone(), 0))
    }

    /// Retries in flight allowed now.
    #[must_use]
    pub fn limit(&self) -> u64 {
        self.inner.limit(self.inner.active.load(Ordering::Acquire))
    }

    /// Retries in flight now.
    #[must_use]
    pub fn retries_in_flight(&self) -> u64 {
        self.inner.retries.load(Ordering::Acquire)
    }

    /// Active requests now.
    #[must_use]
    pub fn active_requests(&self) -> u64 {
        self.inner.active.load(Ordering::Acquire)
    }
}

/// Through a [`RetryPolicy`](crate::policy::RetryPolicy), a retry's place is held until the
/// retry ends: the policy keeps the permit of [`try_retry_permit`](Budget::try_retry_permit)
/// while the retry waits and runs. The plain [`try_retry`](Budget::try_retry), which has
/// nowhere to keep it, only checks that a place is free now. Active requests are those whose [`start_request`](EnvoyRetryLimit::start_request)
/// guards live.
impl Budget for EnvoyRetryLimit {
    /// Clones share one state, so they are one budget: a call deposits in it once.
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
    fn on_request(&self) {}
    fn try_retry(&self) -> bool {
        self.acquire_retry().is_some()
    }
    fn try_retry_permit(&self) -> Option<RetryPermit> {
        self.acquire_retry()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(percent: f64, min: u32) -> EnvoyRetryLimit {
        EnvoyRetryLimit::new(EnvoyRetryLimitConfig::budget(EnvoyRetryBudgetConfig {
            budget_percent: percent,
            min_retry_concurrency: min,
        }))
        .unwrap()
    }

    /// Envoy's worked example (retry budget docs, PR #9069): 20 % with a minimum of 3 allows 5
    /// retries at 25 active requests, 3 at 10.
    #[test]
    fn worked_example_five_retries_at_twenty_five_active() {
        let limit = budget(20.0, 3);
        let mut active: Vec<_> = (0..25).map(|_| limit.start_request()).collect();
        assert_eq!(limit.limit(), 5);
        let held: Vec<_> = std::iter::from_fn(|| limit.acquire_retry())
            .take(9)
            .collect();
        assert_eq!(held.len(), 5);
        drop(held);
        active.truncate(10);
        assert_eq!(limit.limit(), 3); // 20 % of 10 is 2: the minimum holds
        let held: Vec<_> = std::iter::from_fn(|| limit.acquire_retry())
            .take(9)
            .collect();
        assert_eq!(held.len(), 3);
    }

    /// The product is truncated: 20 % of 29 is 5.8, so 5.
    #[test]
    fn budget_truncates_like_envoy() {
        let limit = budget(20.0, 0);
        let _active: Vec<_> = (0..29).map(|_| limit.start_request()).collect();
        assert_eq!(limit.limit(), 5);
        let _one_more = limit.start_request();
        assert_eq!(limit.limit(), 6);
    }

    /// Without a budget, `max_retries` (default 3) bounds the retries in flight, whatever the
    /// traffic; a finished retry frees its place.
    #[test]
    fn max_retries_circuit_breaker() {
        let limit3 = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::default()).unwrap();
        let _active: Vec<_> = (0..1000).map(|_| limit3.start_request()).collect();
        let a = limit3.acquire_retry().unwrap();
        let _b = limit3.acquire_retry().unwrap();
        let _c = limit3.acquire_retry().unwrap();
        assert!(limit3.acquire_retry().is_none());
        a.succeeded();
        assert!(limit3.acquire_retry().is_some());
    }

    #[test]
    fn guards_release_on_drop() {
        let limit = budget(20.0, 3);
        {
            let _r = limit.start_request();
            let _p = limit.acquire_retry();
            assert_eq!((limit.active_requests(), limit.retries_in_flight()), (1, 1));
        }
        assert_eq!((limit.active_requests(), limit.retries_in_flight()), (0, 0));
    }

    #[test]
    fn budget_percent_is_checked() {
        let bad = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::budget(EnvoyRetryBudgetConfig {
            budget_percent: 120.0,
            min_retry_concurrency: 3,
        }))
        .unwrap_err();
        assert_eq!(bad.field, "budget_percent");
    }
}
