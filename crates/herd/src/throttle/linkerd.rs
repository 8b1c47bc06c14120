//! Linkerd's retry budget, which is herd's ratio [`RetryBudget`].
//!
//! A ServiceProfile's `retryBudget { retryRatio, minRetriesPerSecond, ttl }` reaches the proxy
//! as `destination::RetryBudget { retry_ratio, min_retries_per_second, ttl }` (linkerd2-proxy's
//! budget module converts it field for field). Linkerd documents it as: retries may add
//! `retryRatio` of the original requests, plus `minRetriesPerSecond` retries per second
//! whatever the traffic, counted over the last `ttl`. That is what [`RetryBudget`] does (the
//! Finagle and tower design): each request deposits `retry_ratio` of a retry, each retry
//! withdraws one, deposits expire after `ttl`, and `min_retries_per_second · ttl` retries are
//! in reserve; so `percent = 100 · retry_ratio`, `min_per_sec = min_retries_per_second`,
//! `window = ttl`. Linkerd's defaults: `retryRatio` 0.2, `minRetriesPerSecond` 10, `ttl` 10 s
//! (the ServiceProfile reference).

use std::time::Duration;

use crate::budget::{BudgetConfig, InvalidBudget, RetryBudget};
use crate::clock::Clock;

/// A Linkerd ServiceProfile's `retryBudget`, in Linkerd's own terms.
///
/// # Examples
///
/// ```
/// use herd::clock::FakeClock;
/// use herd::throttle::LinkerdRetryBudget;
///
/// let budget = LinkerdRetryBudget::default().build(FakeClock::new())?;
/// // No traffic yet: the reserve, 10 retries per second over 10 s, is all there is.
/// assert_eq!(budget.available(), 100.0);
/// # Ok::<(), herd::budget::InvalidBudget>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LinkerdRetryBudget {
    /// Retries allowed per request (`retryRatio`).
    pub retry_ratio: f64,
    /// Retries allowed per second whatever the traffic (`minRetriesPerSecond`).
    pub min_retries_per_second: u32,
    /// How long a request's deposit counts (`ttl`).
    pub ttl: Duration,
}

impl Default for LinkerdRetryBudget {
    /// `retryRatio` 0.2, `minRetriesPerSecond` 10, `ttl` 10 s.
    fn default() -> Self {
        Self {
            retry_ratio: 0.2,
            min_retries_per_second: 10,
            ttl: Duration::from_secs(10),
        }
    }
}

impl LinkerdRetryBudget {
    /// The ratio budget's settings.
    #[must_use]
    pub fn budget_config(&self) -> BudgetConfig {
        BudgetConfig {
            percent: self.retry_ratio * 100.0,
            min_per_sec: self.min_retries_per_second,
            window: self.ttl,
        }
    }

    /// The budget, driven by `clock`.
    ///
    /// # Errors
    ///
    /// [`InvalidBudget`] for a ratio outside `[0, 10]` or a `ttl` outside 1 ms – 1 day.
    pub fn build<C: Clock>(&self, clock: C) -> Result<RetryBudget<C>, InvalidBudget> {
        RetryBudget::new(self.budget_config(), clock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    #[test]
    fn maps_onto_the_ratio_budget() {
        assert_eq!(
            LinkerdRetryBudget::default().budget_config(),
            BudgetConfig {
                percent: 20.0,
                min_per_sec: 10,
                window: Duration::from_secs(10),
            }
        );
    }

    /// With no reserve, 100 requests earn 20 retries; the reserve adds
    /// `minRetriesPerSecond · ttl`; after `ttl` the deposits are gone.
    #[test]
    fn ratio_and_reserve_behave_as_linkerd_says() {
        let clock = FakeClock::new();
        let settings = LinkerdRetryBudget {
            min_retries_per_second: 0,
            ..LinkerdRetryBudget::default()
        };
        let budget = settings.build(clock.clone()).unwrap();
        for _ in 0..100 {
            budget.deposit();
        }
        let retries = std::iter::from_fn(|| budget.withdraw().then_some(()))
            .take(100)
            .count();
        assert_eq!(retries, 20);

        let with_reserve = LinkerdRetryBudget::default().build(clock.clone()).unwrap();
        for _ in 0..100 {
            with_reserve.deposit();
        }
        assert_eq!(with_reserve.available(), 120.0);
        clock.advance(Duration::from_secs(11));
        assert_eq!(with_reserve.available(), 100.0);
    }
}
