//! Retry budgets: a limit on retries shared by every call to one dependency.
//!
//! # Why budgets and not only max attempts?
//!
//! "Three attempts" sounds modest, but it is a multiplier: when a dependency is down, every
//! caller sends three times the load it sent while the dependency was healthy, exactly when
//! it can least afford it; with retries at several layers the multipliers compound (3 · 3 · 3
//! = 27). A budget caps retries to a *fraction of the traffic*: with 10 %, the retries earned
//! by requests add at most 10 % to a fully failed dependency's load, whatever the attempt
//! limits say. The per-call attempt limit still bounds the latency of one call; the budget
//! protects the server. (Finagle's `RetryBudget`, tower's `TpsBudget`, the Google SRE book's
//! "retry budget", chapter 22.)
//!
//! **The reserve is on top of the percentage.** `min_per_sec` lets a quiet client still
//! retry, so the real bound is `percent` of the requests *plus* `min_per_sec` retries per
//! second; and since the reserve is a balance over the whole window, not a rate, all
//! `min_per_sec · window` of it can be spent in one burst (the default 10/s over 10 s is 100
//! retries at once). For a client whose traffic is small next to that reserve, the reserve,
//! not the percentage, is the limit: size it to what the dependency can take in a burst, or
//! set it to zero.
//!
//! Two forms are offered, both cheap `Clone` handles onto shared state, safe to use from many
//! threads at once:
//!
//! - [`RetryBudget`] (ratio form): each request [`deposit`](RetryBudget::deposit)s
//!   `percent / 100` of a retry, each retry [`withdraw`](RetryBudget::withdraw)s one; deposits
//!   expire after `window`. Time comes from an injected [`Clock`], so the storm simulator and
//!   tests drive it with a [`FakeClock`](crate::clock::FakeClock). A deposit takes no lock (but once per slot, when
//!   time moves on); a
//!   withdrawal (a retry, the rare case) takes a short lock so that racing threads never take
//!   more than the balance holds.
//! - [`GrpcThrottle`] (gRPC's retry throttling, proposal A6): a token bucket that loses one
//!   token per failed attempt, gains `token_ratio` per success, and allows retries only while
//!   more than half of `max_tokens` remain.
//!
//! Both implement [`Budget`], which is what a [`RetryPolicy`](crate::policy::RetryPolicy)
//! consults. The policy deposits only for calls that were actually sent: a call an open
//! breaker refused earns no retries.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::budget::{BudgetConfig, RetryBudget};
//! use herd::clock::FakeClock;
//!
//! let clock = FakeClock::new();
//! let budget = RetryBudget::new(
//!     BudgetConfig::default().percent(10.0).min_per_sec(0).window(Duration::from_secs(10)),
//!     clock.clone(),
//! )?;
//! assert!(!budget.withdraw(), "no requests yet, no reserve: no retries");
//! for _ in 0..20 {
//!     budget.deposit(); // 20 requests at 10 % earn 2 retries
//! }
//! assert!(budget.withdraw());
//! assert!(budget.withdraw());
//! assert!(!budget.withdraw());
//! clock.advance(Duration::from_secs(11)); // the deposits expired
//! budget.deposit();
//! assert!(!budget.withdraw());
//! # Ok::<(), herd::budget::InvalidBudget>(())
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock, saturating_nanos};
use crate::sync::{AtomicU64, Ordering};
use crate::window::Ring;

/// What a retry loop asks of a budget. Implemented by [`RetryBudget`] and [`GrpcThrottle`];
/// implement it yourself to plug in another scheme.
pub trait Budget: Send + Sync {
    /// A logical call starts (its first attempt).
    fn on_request(&self);
    /// An attempt succeeded (or failed permanently: the server answered).
    fn on_success(&self) {}
    /// An attempt failed with a transient error.
    fn on_failure(&self) {}
    /// May one more retry be sent? Consumes it when the answer is yes.
    fn try_retry(&self) -> bool;
    /// May one more retry be sent? Like [`try_retry`](Self::try_retry), but hands back what
    /// the retry holds until its outcome is known: a concurrency slot (Envoy's retry budget)
    /// or a cost that a success returns (the AWS SDKs' retry quota). The retry loop keeps the
    /// permit while the retry waits and runs, calls [`RetryPermit::succeeded`] if it
    /// succeeds, and otherwise drops it; a cancelled call drops it too, so nothing leaks.
    ///
    /// The default asks [`try_retry`](Self::try_retry) and holds nothing.
    fn try_retry_permit(&self) -> Option<RetryPermit> {
        self.try_retry().then(RetryPermit::empty)
    }
    /// Identifies the state behind this handle: two handles onto one budget (clones, or an
    /// `Arc` around one) return the same number. A retry loop and a hedge inside it that
    /// share the budget use it so that one logical call deposits once. The default is the
    /// handle's own address; a `Clone` handle onto shared state returns that state's address.
    fn identity(&self) -> usize {
        (self as *const Self).cast::<()>() as usize
    }
}

/// A budget that reserves something for each retry it admits and wants to hear when that
/// retry ends (see [`Budget::try_retry_permit`]).
pub trait PermitHolder: Send + Sync {
    /// The retry admitted with `token` ended; `succeeded` says whether its attempt succeeded
    /// (`false` also when the permit was dropped unused: a failure, a stop or a cancellation).
    fn release(&self, token: u64, succeeded: bool);
}

/// What one retry holds of a budget (see [`Budget::try_retry_permit`]): released as a
/// failure when dropped, as a success through [`succeeded`](Self::succeeded).
#[must_use = "dropping the permit ends the retry's hold at once"]
pub struct RetryPermit {
    holder: Option<Arc<dyn PermitHolder>>,
    token: u64,
}

impl RetryPermit {
    /// A permit that holds nothing (a ratio budget's or gRPC throttling's).
    pub fn empty() -> Self {
        Self {
            holder: None,
            token: 0,
        }
    }

    /// A permit that tells `holder` with `token` when the retry ends.
    pub fn new(holder: Arc<dyn PermitHolder>, token: u64) -> Self {
        Self {
            holder: Some(holder),
            token,
        }
    }

    /// The retry's attempt succeeded: release the permit as a success.
    pub fn succeeded(mut self) {
        if let Some(holder) = self.holder.take() {
            holder.release(self.token, true);
        }
    }

    /// Whether the permit holds nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.holder.is_none()
    }
}

impl Drop for RetryPermit {
    fn drop(&mut self) {
        if let Some(holder) = self.holder.take() {
            holder.release(self.token, false);
        }
    }
}

impl fmt::Debug for RetryPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPermit")
            .field("held", &!self.is_empty())
            .field("token", &self.token)
            .finish()
    }
}

impl<B: Budget + ?Sized> Budget for Arc<B> {
    fn on_request(&self) {
        (**self).on_request();
    }
    fn on_success(&self) {
        (**self).on_success();
    }
    fn on_failure(&self) {
        (**self).on_failure();
    }
    fn try_retry(&self) -> bool {
        (**self).try_retry()
    }
    fn try_retry_permit(&self) -> Option<RetryPermit> {
        (**self).try_retry_permit()
    }
    fn identity(&self) -> usize {
        (**self).identity()
    }
}

/// Why a budget could not be built. Each variant names the field.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum InvalidBudget {
    /// `percent` must be a finite number in `[0, 1000]`.
    Percent(f64),
    /// `window` must be between 1 ms and 1 day.
    Window(Duration),
    /// `max_tokens` must be a finite number in `(0, 1000]` (gRPC's limit).
    MaxTokens(f64),
    /// `token_ratio` must be a finite number in `(0, 1000]`.
    TokenRatio(f64),
}

impl fmt::Display for InvalidBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidBudget::Percent(p) => {
                write!(f, "percent must be a finite number in [0, 1000], got {p}")
            }
            InvalidBudget::Window(w) => {
                write!(f, "window must be between 1 ms and 1 day, got {w:?}")
            }
            InvalidBudget::MaxTokens(t) => {
                write!(
                    f,
                    "max_tokens must be a finite number in (0, 1000], got {t}"
                )
            }
            InvalidBudget::TokenRatio(r) => {
                write!(
                    f,
                    "token_ratio must be a finite number in (0, 1000], got {r}"
                )
            }
        }
    }
}

impl std::error::Error for InvalidBudget {}

/// Settings of the ratio form, [`RetryBudget`]. Start from [`BudgetConfig::default`] and
/// change fields with the setters (the struct may gain fields).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct BudgetConfig {
    /// Retries allowed, as a percentage of requests in the window (10.0 means one retry per
    /// ten requests). `[0, 1000]`.
    pub percent: f64,
    /// Retries allowed per second regardless of traffic, so that a client with little traffic
    /// can still retry.
    pub min_per_sec: u32,
    /// How long a deposit counts. Tracked in ten slots, so expiry has a granularity of
    /// `window / 10`.
    pub window: Duration,
}

impl Default for BudgetConfig {
    /// 10 % of requests, 10 retries per second of reserve, over 10 seconds (Finagle's and
    /// tower's window and reserve, with the SRE book's 10 %).
    fn default() -> Self {
        Self {
            percent: 10.0,
            min_per_sec: 10,
            window: Duration::from_secs(10),
        }
    }
}

impl BudgetConfig {
    crate::breaker::setters! {
        percent: f64,
        min_per_sec: u32,
        window: Duration,
    }
}

/// One retry, in fixed-point units; a deposit at `percent` is `percent · 10^4` units, so
/// percentages with up to four decimals are exact.
const RETRY_COST: i64 = 1_000_000;

struct Ratio<C> {
    clock: C,
    /// Signed amounts (deposits positive, withdrawals negative) in wrapping `u64` words.
    ring: Ring,
    deposit: i64,
    reserve: i64,
}

/// The ratio-based retry budget: retries ≤ `percent` of requests over a sliding `window`, plus
/// `min_per_sec` retries per second of reserve.
///
/// `Clone` gives another handle onto the same budget. Each call costs a clock read and a few
/// atomic operations on ten slots, whatever the window.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use herd::budget::{BudgetConfig, RetryBudget};
/// use herd::clock::FakeClock;
///
/// // A reserve of 2 retries per second over a 1 s window, and no traffic.
/// let budget = RetryBudget::new(
///     BudgetConfig::default().percent(10.0).min_per_sec(2).window(Duration::from_secs(1)),
///     FakeClock::new(),
/// )?;
/// assert!(budget.withdraw());
/// assert!(budget.withdraw());
/// assert!(!budget.withdraw());
/// # Ok::<(), herd::budget::InvalidBudget>(())
/// ```
#[derive(Clone)]
pub struct RetryBudget<C: Clock = SystemClock> {
    inner: Arc<Ratio<C>>,
}

crate::debug_handle!(RetryBudget<C>, "available", available);

impl<C: Clock> RetryBudget<C> {
    /// A budget driven by `clock`.
    ///
    /// # Errors
    ///
    /// [`InvalidBudget::Percent`] or [`InvalidBudget::Window`].
    pub fn new(config: BudgetConfig, clock: C) -> Result<Self, InvalidBudget> {
        let BudgetConfig {
            percent,
            min_per_sec,
            window,
        } = config;
        if !percent.is_finite() || !(0.0..=1000.0).contains(&percent) {
            return Err(InvalidBudget::Percent(percent));
        }
        if window < Duration::from_millis(1) || window > Duration::from_secs(86_400) {
            return Err(InvalidBudget::Window(window));
        }
        let window_nanos = saturating_nanos(window);
        // min_per_sec retries per second, over the window; computed in u128 (cannot overflow:
        // u32 · 86 400 s · 10^6 units < 2^69) and saturated into i64.
        let reserve =
            u128::from(min_per_sec) * u128::from(window_nanos) * RETRY_COST as u128 / 1_000_000_000;
        let reserve = i64::try_from(reserve)
            .unwrap_or(i64::MAX / 4)
            .min(i64::MAX / 4);
        let deposit = (percent * 10_000.0).round() as i64;
        let ring = Ring::new(window, clock.now());
        Ok(Self {
            inner: Arc::new(Ratio {
                clock,
                ring,
                deposit,
                reserve,
            }),
        })
    }

    /// Records a request (a first attempt): earns `percent / 100` of a retry.
    #[inline]
    pub fn deposit(&self) {
        let inner = &*self.inner;
        inner.ring.add(inner.clock.now(), inner.deposit as u64);
    }

    /// Asks for one retry; takes it and answers `true` if the budget allows it.
    ///
    /// Exact under contention: the check and the withdrawal happen under the window's lock,
    /// so racing threads never take more retries than the balance holds. (Deposits stay
    /// lock-free; they only raise the balance.)
    #[inline]
    pub fn withdraw(&self) -> bool {
        let inner = &*self.inner;
        let locked = inner.ring.lock(inner.clock.now());
        if inner.balance(locked.sum()) >= RETRY_COST {
            locked.add(RETRY_COST.wrapping_neg() as u64);
            true
        } else {
            false
        }
    }

    /// Retries available now (fractional), for metrics and tests.
    #[must_use]
    pub fn available(&self) -> f64 {
        let inner = &*self.inner;
        inner.balance(inner.ring.sum(inner.clock.now())).max(0) as f64 / RETRY_COST as f64
    }
}

impl<C> Ratio<C> {
    /// The reserve plus the live slots' sum.
    #[inline]
    fn balance(&self, sum: u64) -> i64 {
        self.reserve.saturating_add(sum as i64)
    }
}

impl<C: Clock> Budget for RetryBudget<C> {
    #[inline]
    fn on_request(&self) {
        self.deposit();
    }
    #[inline]
    fn try_retry(&self) -> bool {
        self.withdraw()
    }
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
}

/// Settings of gRPC retry throttling ([`GrpcThrottle`]), as in a gRPC service config's
/// `retryThrottling`. Start from [`GrpcThrottleConfig::default`] and change fields with the
/// setters (the struct may gain fields).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct GrpcThrottleConfig {
    /// Bucket size, `(0, 1000]`. The bucket starts full.
    pub max_tokens: f64,
    /// Tokens regained per successful attempt, `(0, 1000]`; gRPC keeps three decimals.
    pub token_ratio: f64,
}

impl Default for GrpcThrottleConfig {
    /// `max_tokens` 10, `token_ratio` 0.1: the example of gRPC proposal A6.
    fn default() -> Self {
        Self {
            max_tokens: 10.0,
            token_ratio: 0.1,
        }
    }
}

impl GrpcThrottleConfig {
    crate::breaker::setters! {
        max_tokens: f64,
        token_ratio: f64,
    }
}

struct Tokens {
    /// Thousandths of a token.
    milli: AtomicU64,
    max: u64,
    ratio: u64,
}

/// gRPC retry throttling (proposal A6): every failed attempt costs one token, every success
/// earns `token_ratio`, and retries are allowed only while the bucket holds *more than half*
/// of `max_tokens`. It needs no clock: it reacts to the failure ratio, not to time.
///
/// # Examples
///
/// ```
/// use herd::budget::{GrpcThrottle, GrpcThrottleConfig};
///
/// let throttle = GrpcThrottle::new(GrpcThrottleConfig::default().max_tokens(4.0).token_ratio(0.5))?;
/// assert!(throttle.allows_retry());
/// throttle.record_failure(); // 3 tokens left, still more than 2
/// assert!(throttle.allows_retry());
/// throttle.record_failure(); // 2 left: not more than half, throttled
/// assert!(!throttle.allows_retry());
/// throttle.record_success(); // 2.5
/// assert!(throttle.allows_retry());
/// # Ok::<(), herd::budget::InvalidBudget>(())
/// ```
#[derive(Clone)]
pub struct GrpcThrottle {
    inner: Arc<Tokens>,
}

crate::debug_handle!(GrpcThrottle, "tokens", tokens);

impl GrpcThrottle {
    /// A full bucket.
    ///
    /// # Errors
    ///
    /// [`InvalidBudget::MaxTokens`] or [`InvalidBudget::TokenRatio`].
    pub fn new(config: GrpcThrottleConfig) -> Result<Self, InvalidBudget> {
        let GrpcThrottleConfig {
            max_tokens,
            token_ratio,
        } = config;
        if !(max_tokens > 0.0 && max_tokens <= 1000.0) {
            return Err(InvalidBudget::MaxTokens(max_tokens));
        }
        if !(token_ratio > 0.0 && token_ratio <= 1000.0) {
            return Err(InvalidBudget::TokenRatio(token_ratio));
        }
        let max = ((max_tokens * 1000.0).round() as u64).max(1);
        let ratio = ((token_ratio * 1000.0).round() as u64).max(1);
        Ok(Self {
            inner: Arc::new(Tokens {
                milli: AtomicU64::new(max),
                max,
                ratio,
            }),
        })
    }

    /// A failed attempt (a retryable status, or server pushback): one token less, never below
    /// zero.
    pub fn record_failure(&self) {
        let _ = self
            .inner
            .milli
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_sub(1000))
            });
    }

    /// A successful attempt: `token_ratio` more, never above `max_tokens`.
    pub fn record_success(&self) {
        let (ratio, max) = (self.inner.ratio, self.inner.max);
        let _ = self
            .inner
            .milli
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(ratio).min(max))
            });
    }

    /// Whether a retry may be sent: more than half of `max_tokens` remain.
    #[must_use]
    pub fn allows_retry(&self) -> bool {
        self.inner.milli.load(Ordering::Acquire).saturating_mul(2) > self.inner.max
    }

    /// Tokens in the bucket now.
    #[must_use]
    pub fn tokens(&self) -> f64 {
        self.inner.milli.load(Ordering::Acquire) as f64 / 1000.0
    }
}

impl Budget for GrpcThrottle {
    fn on_request(&self) {}
    fn on_success(&self) {
        self.record_success();
    }
    fn on_failure(&self) {
        self.record_failure();
    }
    fn try_retry(&self) -> bool {
        self.allows_retry()
    }
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    fn budget(
        percent: f64,
        min_per_sec: u32,
        window_s: u64,
    ) -> (RetryBudget<FakeClock>, FakeClock) {
        let clock = FakeClock::new();
        let b = RetryBudget::new(
            BudgetConfig {
                percent,
                min_per_sec,
                window: Duration::from_secs(window_s),
            },
            clock.clone(),
        )
        .unwrap();
        (b, clock)
    }

    #[test]
    fn ten_percent_of_a_hundred_requests_is_ten_retries() {
        let (b, _) = budget(10.0, 0, 10);
        for _ in 0..100 {
            b.deposit();
        }
        for i in 0..10 {
            assert!(b.withdraw(), "retry {i}");
        }
        assert!(!b.withdraw());
    }

    #[test]
    fn empty_budget_without_reserve_allows_nothing() {
        let (b, clock) = budget(10.0, 0, 10);
        assert!(!b.withdraw());
        clock.advance(Duration::from_secs(100));
        assert!(!b.withdraw());
        assert_eq!(b.available(), 0.0);
    }

    #[test]
    fn reserve_is_min_per_sec_over_the_window_and_refills() {
        let (b, clock) = budget(10.0, 3, 2);
        let mut got = 0;
        while b.withdraw() {
            got += 1;
        }
        assert_eq!(got, 6);
        clock.advance(Duration::from_secs(3));
        assert!(b.withdraw(), "withdrawals expire with the window");
    }

    #[test]
    fn deposits_expire_after_the_window_not_before() {
        let (b, clock) = budget(100.0, 0, 10);
        b.deposit();
        clock.advance(Duration::from_secs(8));
        assert!(b.available() >= 1.0);
        clock.advance(Duration::from_secs(3));
        assert_eq!(b.available(), 0.0);
    }

    #[test]
    fn clock_stepping_back_does_not_panic_or_lose_state() {
        let (b, clock) = budget(50.0, 0, 10);
        clock.set(Duration::from_secs(100));
        b.deposit();
        b.deposit();
        clock.set(Duration::from_secs(1));
        assert!(b.withdraw());
        assert!(!b.withdraw());
    }

    #[test]
    fn shared_across_threads_stays_close_to_the_ratio() {
        let (b, _) = budget(10.0, 0, 10);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    let mut retries = 0;
                    for _ in 0..10_000 {
                        b.deposit();
                        if b.withdraw() {
                            retries += 1;
                        }
                    }
                    retries
                })
            })
            .collect();
        let total: i32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        // 40 000 requests at 10 %: 4000 retries, plus at most one per racing thread.
        assert!((4000..=4004).contains(&total), "{total}");
    }

    #[test]
    fn invalid_configs_name_the_field() {
        let clock = FakeClock::new();
        let bad = |percent, window| {
            RetryBudget::new(
                BudgetConfig {
                    percent,
                    min_per_sec: 0,
                    window,
                },
                clock.clone(),
            )
            .unwrap_err()
        };
        assert!(matches!(
            bad(f64::NAN, Duration::from_secs(1)),
            InvalidBudget::Percent(_)
        ));
        assert!(matches!(
            bad(-1.0, Duration::from_secs(1)),
            InvalidBudget::Percent(_)
        ));
        assert_eq!(
            bad(10.0, Duration::ZERO),
            InvalidBudget::Window(Duration::ZERO)
        );
        assert!(bad(10.0, Duration::ZERO).to_string().starts_with("window"));
        let g = |max_tokens, token_ratio| {
            GrpcThrottle::new(GrpcThrottleConfig {
                max_tokens,
                token_ratio,
            })
            .unwrap_err()
        };
        assert!(matches!(g(0.0, 0.1), InvalidBudget::MaxTokens(_)));
        assert!(matches!(g(1001.0, 0.1), InvalidBudget::MaxTokens(_)));
        assert!(matches!(
            g(10.0, f64::INFINITY),
            InvalidBudget::TokenRatio(_)
        ));
    }

    #[test]
    fn huge_reserve_saturates_without_overflow() {
        let (b, _) = budget(1000.0, u32::MAX, 86_400);
        assert!(b.withdraw());
        for _ in 0..1000 {
            b.deposit();
        }
        assert!(b.available() > 1.0);
    }

    #[test]
    fn grpc_throttle_never_leaves_its_bounds() {
        let t = GrpcThrottle::new(GrpcThrottleConfig {
            max_tokens: 10.0,
            token_ratio: 0.1,
        })
        .unwrap();
        for _ in 0..50 {
            t.record_failure();
        }
        assert_eq!(t.tokens(), 0.0);
        assert!(!t.allows_retry());
        for _ in 0..1000 {
            t.record_success();
        }
        assert_eq!(t.tokens(), 10.0);
        // Stops at half: 5 failures leave 5 tokens, which is not more than half.
        for _ in 0..4 {
            t.record_failure();
        }
        assert!(t.allows_retry());
        t.record_failure();
        assert!(!t.allows_retry());
    }
}
