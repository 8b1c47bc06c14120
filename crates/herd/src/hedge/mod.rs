//! Hedged requests: when an idempotent call is slow, send another copy and take whichever
//! answers first.
//!
//! Retries answer failures; hedges answer slowness. A hedge after the 95th percentile of
//! latency costs about 5 % more requests and cuts the tail that one slow server, one garbage
//! collection or one lost packet adds (Dean and Barroso, "The Tail at Scale", CACM 2013).
//! Unbounded, it adds load exactly when the servers are busiest, so a [`HedgePolicy`] has:
//!
//! - a **maximum number of copies** (gRPC's A6 caps `maxAttempts` at 5; so does herd);
//! - a **delay** before each further copy: fixed, or a percentile of recent latencies
//!   learned by a small concurrent [`LatencyHistogram`] (as `tower::hedge` does);
//! - an optional **budget** shared with retries ([`RetryBudget`](crate::budget::RetryBudget)
//!   or [`GrpcThrottle`](crate::budget::GrpcThrottle)): each hedge spends one retry, so hedges
//!   and retries together stay within one limit, as A6's retry throttling counts hedges;
//! - A6's rule on answers: an error the classifier calls **permanent** ("fatal") from any copy
//!   ends the call at once; a **transient** ("non-fatal") error sends the next copy at once
//!   instead of waiting for its delay.
//!
//! Only idempotent calls are hedged: [`HedgeCall::idempotent`]`(false)` sends one copy.
//! The first good answer wins, and the other copies are cancelled by dropping their futures.
//! The runner keeps its copies in place (at most five, pinned on the call's own future), so a
//! call whose first copy answers in time allocates nothing.
//!
//! To retry *and* hedge, put the hedge inside the retry loop: each retry attempt is then a
//! hedged call, and one budget can serve both. Such a call deposits once: the retry loop
//! marks its budget as paid while its attempts run, and a hedge on the same budget inside it
//! does not deposit again.
//!
//! # Examples
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! use std::time::Duration;
//! use herd::hedge::{HedgeDelay, HedgePolicy};
//! use herd::asynchronous::TokioClock;
//!
//! let policy = HedgePolicy::builder(HedgeDelay::fixed(Duration::from_millis(10)))
//!     .max_copies(2)
//!     .clock(TokioClock::new())
//!     .build()?;
//! // The first copy is stuck; the hedge sent after 10 ms answers.
//! let answer = policy
//!     .hedge(|copy| async move {
//!         if copy.number == 1 {
//!             tokio::time::sleep(Duration::from_secs(60)).await;
//!         }
//!         Ok::<_, std::io::Error>(copy.number)
//!     })
//!     .run_async()
//!     .await?;
//! assert_eq!((answer.value, answer.copies_sent), (2, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod histogram;
#[cfg(feature = "tower")]
pub mod layer;
mod run;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use histogram::LatencyHistogram;
#[cfg(feature = "tower")]
pub use layer::{CloneRequest, Hedge, HedgeLayer, HedgeOutcome, IntoOutcome, http_idempotent};
pub use run::{
    HedgeCall, HedgeCause, HedgeError, HedgeEvent, HedgeStop, Hedged, NoHedgeHook, OnHedge,
};

use crate::budget::Budget;
use crate::clock::{Clock, SystemClock};

/// gRPC's A6 cap on copies of one call.
pub const MAX_COPIES: u32 = 5;

/// When to send the next copy.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum HedgeDelay {
    /// After a fixed delay.
    Fixed(Duration),
    /// After the `quantile` of the latencies of recent calls, learned per `window` from at
    /// least `min_samples` of them, and kept within `[min, max]`. Until a window has had
    /// enough samples, the delay is `max`.
    Percentile {
        /// Which percentile, in `(0, 1)`: `0.95` hedges the slowest 5 %.
        quantile: f64,
        /// The shortest delay, whatever was learned.
        min: Duration,
        /// The longest delay, and the delay before anything was learned.
        max: Duration,
        /// How long each learning window lasts.
        window: Duration,
        /// How many samples a window needs before it is trusted.
        min_samples: u64,
    },
}

impl HedgeDelay {
    /// A fixed delay.
    #[must_use]
    pub const fn fixed(delay: Duration) -> Self {
        HedgeDelay::Fixed(delay)
    }

    /// The `quantile` of recent latencies, within `[min, max]`; windows of 10 s with at least
    /// 20 samples.
    #[must_use]
    pub const fn percentile(quantile: f64, min: Duration, max: Duration) -> Self {
        HedgeDelay::Percentile {
            quantile,
            min,
            max,
            window: Duration::from_secs(10),
            min_samples: 20,
        }
    }
}

/// Why a hedging policy could not be built. Each variant names the field.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum InvalidHedge {
    /// `max_copies` must be in `1..=5`.
    MaxCopies(u32),
    /// `quantile` must be a number in `(0, 1)`.
    Quantile(f64),
    /// `min` must not exceed `max`.
    DelayRange {
        /// The shortest delay asked for.
        min: Duration,
        /// The longest delay asked for.
        max: Duration,
    },
    /// `window` must be at least 1 ms.
    Window(Duration),
}

impl fmt::Display for InvalidHedge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidHedge::MaxCopies(n) => {
                write!(f, "max_copies must be in 1..={MAX_COPIES}, got {n}")
            }
            InvalidHedge::Quantile(q) => write!(f, "quantile must be in (0, 1), got {q}"),
            InvalidHedge::DelayRange { min, max } => {
                write!(f, "min ({min:?}) must not exceed max ({max:?})")
            }
            InvalidHedge::Window(w) => write!(f, "window must be at least 1 ms, got {w:?}"),
        }
    }
}

impl std::error::Error for InvalidHedge {}

/// Builds a [`HedgePolicy`]; start with [`HedgePolicy::builder`].
#[must_use]
pub struct HedgeBuilder<C: Clock = SystemClock> {
    delay: HedgeDelay,
    max_copies: u32,
    budget: Option<Arc<dyn Budget>>,
    clock: C,
}

impl<C: Clock> HedgeBuilder<C> {
    /// How many copies a call may send in all, the first included (default 2; at most 5).
    pub fn max_copies(mut self, copies: u32) -> Self {
        self.max_copies = copies;
        self
    }

    /// A budget shared with retries: each hedge spends one retry from it, and each call
    /// deposits as a request, unless it runs as an attempt of a retry loop on the same budget
    /// (then the loop's call deposited once for all its attempts). Takes any [`Budget`], as
    /// [`PolicyBuilder::budget`](crate::policy::PolicyBuilder::budget) does: a handle such as
    /// [`RetryBudget`](crate::budget::RetryBudget) clones onto the same budget.
    pub fn budget(mut self, budget: impl Budget + 'static) -> Self {
        self.budget = Some(Arc::new(budget));
        self
    }

    /// The clock that times copies and windows (default the system's monotonic clock; use
    /// [`TokioClock`](crate::asynchronous::TokioClock) with tokio's paused test time).
    pub fn clock<C2: Clock>(self, clock: C2) -> HedgeBuilder<C2> {
        HedgeBuilder {
            delay: self.delay,
            max_copies: self.max_copies,
            budget: self.budget,
            clock,
        }
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`InvalidHedge`] naming the first field out of range.
    pub fn build(self) -> Result<HedgePolicy<C>, InvalidHedge> {
        if !(1..=MAX_COPIES).contains(&self.max_copies) {
            return Err(InvalidHedge::MaxCopies(self.max_copies));
        }
        let histogram = match self.delay {
            HedgeDelay::Fixed(_) => None,
            HedgeDelay::Percentile {
                quantile,
                min,
                max,
                window,
                min_samples,
            } => {
                if !(quantile > 0.0 && quantile < 1.0) {
                    return Err(InvalidHedge::Quantile(quantile));
                }
                if min > max {
                    return Err(InvalidHedge::DelayRange { min, max });
                }
                if window < Duration::from_millis(1) {
                    return Err(InvalidHedge::Window(window));
                }
                Some(Arc::new(LatencyHistogram::new(
                    quantile,
                    window,
                    min_samples,
                )))
            }
        };
        Ok(HedgePolicy {
            delay: self.delay,
            max_copies: self.max_copies,
            budget: self.budget,
            histogram,
            clock: self.clock,
        })
    }
}

/// How a call is hedged: copies, delay, budget, clock. Cheap to clone (the histogram and the
/// budget are shared), so one policy serves every call to a dependency.
#[derive(Clone)]
pub struct HedgePolicy<C: Clock = SystemClock> {
    delay: HedgeDelay,
    max_copies: u32,
    budget: Option<Arc<dyn Budget>>,
    histogram: Option<Arc<LatencyHistogram>>,
    clock: C,
}

impl<C: Clock> fmt::Debug for HedgePolicy<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgePolicy")
            .field("delay", &self.delay)
            .field("max_copies", &self.max_copies)
            .field("budget", &self.budget.is_some())
            .field("histogram", &self.histogram)
            .finish_non_exhaustive()
    }
}

impl HedgePolicy<SystemClock> {
    /// Starts a policy with `delay` before each further copy: 2 copies, no budget, the
    /// system clock.
    pub fn builder(delay: HedgeDelay) -> HedgeBuilder<SystemClock> {
        HedgeBuilder {
            delay,
            max_copies: 2,
            budget: None,
            clock: SystemClock::new(),
        }
    }
}

impl<C: Clock> HedgePolicy<C> {
    /// The delay a call starting now waits before its next copy.
    #[must_use]
    pub fn current_delay(&self) -> Duration {
        self.delay_at(self.clock.now())
    }

    /// The delay for a call starting at `now` (on the policy's clock).
    pub(crate) fn delay_at(&self, now: Duration) -> Duration {
        match self.delay {
            HedgeDelay::Fixed(d) => d,
            HedgeDelay::Percentile { min, max, .. } => {
                let Some(h) = &self.histogram else {
                    return max;
                };
                h.roll(now);
                h.percentile().map_or(max, |p| p.clamp(min, max))
            }
        }
    }

    /// How many copies a call may send, the first included.
    #[must_use]
    pub const fn max_copies(&self) -> u32 {
        self.max_copies
    }

    /// The learned-latency histogram, when the delay is a percentile.
    #[must_use]
    pub fn histogram(&self) -> Option<&LatencyHistogram> {
        self.histogram.as_deref()
    }

    /// The policy's clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub(crate) fn budget(&self) -> Option<&dyn Budget> {
        self.budget.as_deref()
    }

    /// Starts a hedged call of `op`, which is called once per copy with that copy's
    /// [`HedgeCopy`] (its number, 1 for the first).
    pub fn hedge<Op, Fut, T, E>(&self, op: Op) -> HedgeCall<'_, C, Op, E>
    where
        Op: FnMut(HedgeCopy) -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        HedgeCall::new(self, op)
    }
}

/// What the operation learns about the copy it is sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeCopy {
    /// 1 for the first copy, 2 for the first hedge, …
    pub number: u32,
}
