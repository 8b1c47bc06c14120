//! A circuit breaker: stop calling a dependency that is failing, then probe it gently.
//!
//! Retries help with blips; against a dependency that is down they only add load and
//! latency. A breaker watches the failure rate over a sliding window and, once it passes a
//! threshold (with at least `min_calls` calls seen, so two failures out of two do not trip
//! it), **opens**: calls fail at once without reaching the dependency. After a cool-down it
//! goes **half-open** and lets a bounded number of probe calls through; if they all succeed it
//! **closes**, and one failure opens it again.
//!
//! The cool-down is jittered (uniform in `[cool_down, cool_down · (1 + jitter)]`): breakers in
//! a fleet that opened together would otherwise all probe in the same instant, the very herd
//! this crate exists to break up. Each breaker draws from its own generator, seeded per breaker
//! unless you fix the seed for a test.
//!
//! A closed breaker, the common case, is lock-free: admitting a call is one atomic load and
//! recording an outcome is one atomic add on a ten-slot sliding window (the same window the
//! retry budget uses). State changes (opening, probing, closing) take a mutex held for a few
//! instructions.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::breaker::{BreakerConfig, BreakerState, CircuitBreaker};
//! use herd::clock::FakeClock;
//!
//! let clock = FakeClock::new();
//! let config = BreakerConfig { min_calls: 4, cool_down_jitter: 0.0, ..BreakerConfig::default() };
//! let breaker = CircuitBreaker::new(config, clock.clone())?;
//! for _ in 0..4 {
//!     assert!(breaker.try_acquire());
//!     breaker.record_failure();
//! }
//! assert_eq!(breaker.state(), BreakerState::Open);
//! assert!(!breaker.try_acquire());
//! clock.advance(Duration::from_secs(5));
//! assert_eq!(breaker.state(), BreakerState::HalfOpen);
//! assert!(breaker.try_acquire()); // the one probe
//! assert!(!breaker.try_acquire());
//! breaker.record_success();
//! assert_eq!(breaker.state(), BreakerState::Closed);
//! # Ok::<(), herd::breaker::InvalidBreaker>(())
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::clock::{Clock, SystemClock, saturating_nanos};
use crate::rng::{Rng, SplitMix64, ThreadRng};
use crate::window::Ring;

/// What a retry loop asks of a breaker; implemented by [`CircuitBreaker`].
pub trait Breaker: Send + Sync {
    /// May an attempt be made now? In half-open state this takes one of the probe permits.
    fn try_acquire(&self) -> bool;
    /// The attempt succeeded (or the dependency answered, even with a permanent error).
    fn record_success(&self);
    /// The attempt failed transiently.
    fn record_failure(&self);
    /// Whether calls are being refused right now (without taking a permit).
    fn is_open(&self) -> bool;
}

/// The three states of a breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through; failures are counted.
    Closed,
    /// Calls are refused until the cool-down ends.
    Open,
    /// A bounded number of probe calls go through.
    HalfOpen,
}

/// Settings of a [`CircuitBreaker`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BreakerConfig {
    /// Failure rate that opens the breaker, in `(0, 1]`.
    pub failure_rate: f64,
    /// The sliding window over which the rate is measured (ten slots).
    pub window: Duration,
    /// Calls needed in the window before the rate is trusted; at least 1.
    pub min_calls: u32,
    /// How long the breaker stays open before probing.
    pub cool_down: Duration,
    /// Extra random fraction of the cool-down, in `[0, 1]`.
    pub cool_down_jitter: f64,
    /// Probe calls let through while half-open; all must succeed to close. At least 1.
    pub half_open_probes: u32,
}

impl Default for BreakerConfig {
    /// 50 % failures over 10 s with at least 20 calls; open for 5 s (+ up to 20 %); one probe.
    fn default() -> Self {
        Self {
            failure_rate: 0.5,
            window: Duration::from_secs(10),
            min_calls: 20,
            cool_down: Duration::from_secs(5),
            cool_down_jitter: 0.2,
            half_open_probes: 1,
        }
    }
}

/// Why a breaker could not be built. Each variant names the field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InvalidBreaker {
    /// `failure_rate` must be in `(0, 1]`.
    FailureRate(f64),
    /// `window` must be at least 1 ms.
    Window(Duration),
    /// `min_calls` must be at least 1.
    MinCalls,
    /// `cool_down_jitter` must be in `[0, 1]`.
    CoolDownJitter(f64),
    /// `half_open_probes` must be at least 1.
    HalfOpenProbes,
}

impl fmt::Display for InvalidBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidBreaker::FailureRate(r) => {
                write!(f, "failure_rate must be in (0, 1], got {r}")
            }
            InvalidBreaker::Window(w) => write!(f, "window must be at least 1 ms, got {w:?}"),
            InvalidBreaker::MinCalls => f.write_str("min_calls must be at least 1"),
            InvalidBreaker::CoolDownJitter(j) => {
                write!(f, "cool_down_jitter must be in [0, 1], got {j}")
            }
            InvalidBreaker::HalfOpenProbes => f.write_str("half_open_probes must be at least 1"),
        }
    }
}

impl std::error::Error for InvalidBreaker {}

enum Phase {
    Closed,
    Open {
        until: u64,
    },
    /// `since`: when the current round of probes was issued (to expire lost probes).
    HalfOpen {
        issued: u32,
        succeeded: u32,
        since: u64,
    },
}

struct Inner {
    phase: Phase,
    rng: SplitMix64,
}

struct Shared<C> {
    config: BreakerConfig,
    clock: C,
    /// Mirrors `phase == Closed`, so the closed path needs no lock.
    closed: AtomicBool,
    successes: Ring,
    failures: Ring,
    inner: Mutex<Inner>,
}

/// A circuit breaker over a sliding window of calls. `Clone` gives another handle onto the
/// same breaker.
pub struct CircuitBreaker<C: Clock = SystemClock> {
    shared: Arc<Shared<C>>,
}

impl<C: Clock> Clone for CircuitBreaker<C> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<C: Clock> fmt::Debug for CircuitBreaker<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl<C: Clock> CircuitBreaker<C> {
    /// A closed breaker whose cool-down jitter is drawn from a per-breaker random seed.
    ///
    /// # Errors
    ///
    /// An [`InvalidBreaker`] naming the bad field.
    pub fn new(config: BreakerConfig, clock: C) -> Result<Self, InvalidBreaker> {
        Self::with_seed(config, clock, ThreadRng.next_u64())
    }

    /// Like [`new`](Self::new) with a fixed seed for the cool-down jitter (for tests and
    /// simulations).
    ///
    /// # Errors
    ///
    /// An [`InvalidBreaker`] naming the bad field.
    pub fn with_seed(config: BreakerConfig, clock: C, seed: u64) -> Result<Self, InvalidBreaker> {
        if !(config.failure_rate > 0.0 && config.failure_rate <= 1.0) {
            return Err(InvalidBreaker::FailureRate(config.failure_rate));
        }
        if config.window < Duration::from_millis(1) {
            return Err(InvalidBreaker::Window(config.window));
        }
        if config.min_calls == 0 {
            return Err(InvalidBreaker::MinCalls);
        }
        if !(0.0..=1.0).contains(&config.cool_down_jitter) {
            return Err(InvalidBreaker::CoolDownJitter(config.cool_down_jitter));
        }
        if config.half_open_probes == 0 {
            return Err(InvalidBreaker::HalfOpenProbes);
        }
        let now = clock.now();
        Ok(Self {
            shared: Arc::new(Shared {
                config,
                closed: AtomicBool::new(true),
                successes: Ring::new(config.window, now),
                failures: Ring::new(config.window, now),
                clock,
                inner: Mutex::new(Inner {
                    phase: Phase::Closed,
                    rng: SplitMix64::new(seed),
                }),
            }),
        })
    }

    /// The state now. An open breaker whose cool-down has ended reports
    /// [`BreakerState::HalfOpen`].
    #[must_use]
    pub fn state(&self) -> BreakerState {
        if self.shared.closed.load(Ordering::Acquire) {
            return BreakerState::Closed;
        }
        let now = self.now();
        match self.lock().phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { until } if now < until => BreakerState::Open,
            Phase::Open { .. } | Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    /// May an attempt be made now? Closed: yes. Open: no, until the cool-down ends, when the
    /// breaker turns half-open. Half-open: yes for the first `half_open_probes` callers.
    ///
    /// A probe whose outcome is never recorded (its future was dropped, its thread panicked)
    /// would hold its permit forever; so when every permit is out and a whole cool-down has
    /// passed without a verdict, a fresh round of probes is issued.
    pub fn try_acquire(&self) -> bool {
        if self.shared.closed.load(Ordering::Acquire) {
            return true;
        }
        let probes = self.shared.config.half_open_probes;
        let mut inner = self.lock();
        match inner.phase {
            // Only a breaker that is not closed needs the time: the closed fast path reads
            // no clock.
            Phase::Closed => return true,
            Phase::Open { until } => {
                let now = self.now();
                if now < until {
                    return false;
                }
                inner.phase = Phase::HalfOpen {
                    issued: 0,
                    succeeded: 0,
                    since: now,
                };
            }
            Phase::HalfOpen { issued, since, .. } if issued >= probes => {
                let now = self.now();
                if now.saturating_sub(since) < saturating_nanos(self.shared.config.cool_down) {
                    return false;
                }
                inner.phase = Phase::HalfOpen {
                    issued: 0,
                    succeeded: 0,
                    since: now,
                };
            }
            Phase::HalfOpen { .. } => {}
        }
        match &mut inner.phase {
            Phase::HalfOpen { issued, .. } if *issued < probes => {
                *issued += 1;
                true
            }
            _ => false,
        }
    }

    /// Records a success. Half-open: once every probe has succeeded the breaker closes with a
    /// fresh window.
    pub fn record_success(&self) {
        let shared = &*self.shared;
        if shared.closed.load(Ordering::Acquire) {
            shared.successes.add(shared.clock.now(), 1);
            return;
        }
        let probes = shared.config.half_open_probes;
        let mut inner = self.lock();
        match &mut inner.phase {
            Phase::Closed => shared.successes.add(shared.clock.now(), 1),
            Phase::HalfOpen { succeeded, .. } => {
                *succeeded += 1;
                if *succeeded >= probes {
                    shared.successes.clear();
                    shared.failures.clear();
                    inner.phase = Phase::Closed;
                    shared.closed.store(true, Ordering::Release);
                }
            }
            Phase::Open { .. } => {}
        }
    }

    /// Records a transient failure. Closed: opens once the window holds at least `min_calls`
    /// calls and the failure rate reaches `failure_rate`. Half-open: opens again at once.
    pub fn record_failure(&self) {
        let shared = &*self.shared;
        let now = shared.clock.now();
        if shared.closed.load(Ordering::Acquire) {
            shared.failures.add(now, 1);
            shared.successes.slot(now); // expire old successes too
            let failed: u64 = shared.failures.words().fold(0, u64::wrapping_add);
            let ok: u64 = shared.successes.words().fold(0, u64::wrapping_add);
            let total = ok.saturating_add(failed);
            let config = &shared.config;
            if total < u64::from(config.min_calls)
                || (failed as f64) < config.failure_rate * total as f64
            {
                return;
            }
        }
        let mut inner = self.lock();
        match inner.phase {
            // Trip, unless a racing thread opened the breaker first.
            Phase::Closed => self.open(&mut inner, saturating_nanos(now)),
            Phase::HalfOpen { .. } => self.open(&mut inner, saturating_nanos(now)),
            Phase::Open { .. } => {}
        }
    }

    fn open(&self, inner: &mut Inner, now: u64) {
        let config = &self.shared.config;
        let base = saturating_nanos(config.cool_down);
        let spread = (base as f64 * config.cool_down_jitter) as u64;
        let cool_down = base.saturating_add(inner.rng.range_inclusive(0, spread));
        inner.phase = Phase::Open {
            until: now.saturating_add(cool_down),
        };
        self.shared.closed.store(false, Ordering::Release);
    }

    fn now(&self) -> u64 {
        saturating_nanos(self.shared.clock.now())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state is valid after any panic (plain counters), so a poisoned lock is usable.
        self.shared
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C: Clock> Breaker for CircuitBreaker<C> {
    fn try_acquire(&self) -> bool {
        CircuitBreaker::try_acquire(self)
    }
    fn record_success(&self) {
        CircuitBreaker::record_success(self);
    }
    fn record_failure(&self) {
        CircuitBreaker::record_failure(self);
    }
    fn is_open(&self) -> bool {
        self.state() == BreakerState::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    fn breaker(config: BreakerConfig) -> (CircuitBreaker<FakeClock>, FakeClock) {
        let clock = FakeClock::new();
        (
            CircuitBreaker::with_seed(config, clock.clone(), 1).unwrap(),
            clock,
        )
    }

    #[test]
    fn does_not_trip_below_min_calls() {
        let (b, _) = breaker(BreakerConfig {
            min_calls: 10,
            ..BreakerConfig::default()
        });
        for _ in 0..9 {
            b.record_failure();
        }
        assert_eq!(b.state(), BreakerState::Closed);
        b.record_failure();
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn trips_on_rate_not_count() {
        let (b, _) = breaker(BreakerConfig {
            min_calls: 10,
            failure_rate: 0.5,
            ..BreakerConfig::default()
        });
        for _ in 0..6 {
            b.record_success();
        }
        for _ in 0..5 {
            b.record_failure();
        }
        assert_eq!(b.state(), BreakerState::Closed, "5 of 11 is below 50 %");
        b.record_failure();
        assert_eq!(b.state(), BreakerState::Open, "6 of 12");
    }

    #[test]
    fn old_calls_leave_the_window() {
        let (b, clock) = breaker(BreakerConfig {
            min_calls: 4,
            ..BreakerConfig::default()
        });
        for _ in 0..3 {
            b.record_failure();
        }
        clock.advance(Duration::from_secs(11));
        b.record_failure();
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn cool_down_is_jittered_within_bounds() {
        let config = BreakerConfig {
            min_calls: 1,
            cool_down: Duration::from_secs(10),
            cool_down_jitter: 0.5,
            ..BreakerConfig::default()
        };
        let mut ends = std::collections::BTreeSet::new();
        for seed in 0..20 {
            let clock = FakeClock::new();
            let b = CircuitBreaker::with_seed(config, clock.clone(), seed).unwrap();
            b.record_failure();
            clock.advance(Duration::from_millis(9_999));
            assert_eq!(b.state(), BreakerState::Open);
            let mut ms = 9_999;
            while b.state() == BreakerState::Open {
                clock.advance(Duration::from_millis(1));
                ms += 1;
            }
            assert!((10_000..=15_000).contains(&ms), "{ms}");
            ends.insert(ms);
        }
        assert!(ends.len() > 10, "breakers must not all probe together");
    }

    #[test]
    fn half_open_probes_are_bounded_and_a_failure_reopens() {
        let (b, clock) = breaker(BreakerConfig {
            min_calls: 1,
            half_open_probes: 2,
            cool_down_jitter: 0.0,
            ..BreakerConfig::default()
        });
        b.record_failure();
        clock.advance(Duration::from_secs(5));
        assert!(b.try_acquire());
        assert!(b.try_acquire());
        assert!(!b.try_acquire());
        b.record_success();
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.record_failure();
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire());
    }

    #[test]
    fn lost_probes_are_reissued_after_a_cool_down() {
        let (b, clock) = breaker(BreakerConfig {
            min_calls: 1,
            cool_down_jitter: 0.0,
            ..BreakerConfig::default()
        });
        b.record_failure();
        clock.advance(Duration::from_secs(5));
        assert!(b.try_acquire()); // this probe's caller is cancelled and never reports
        clock.advance(Duration::from_secs(4));
        assert!(!b.try_acquire());
        clock.advance(Duration::from_secs(1));
        assert!(
            b.try_acquire(),
            "a lost probe must not wedge the breaker half-open"
        );
        b.record_success();
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn invalid_configs_name_the_field() {
        let bad = |c| CircuitBreaker::new(c, FakeClock::new()).unwrap_err();
        let d = BreakerConfig::default();
        assert!(matches!(
            bad(BreakerConfig {
                failure_rate: 0.0,
                ..d
            }),
            InvalidBreaker::FailureRate(_)
        ));
        assert_eq!(
            bad(BreakerConfig { min_calls: 0, ..d }),
            InvalidBreaker::MinCalls
        );
        assert_eq!(
            bad(BreakerConfig {
                half_open_probes: 0,
                ..d
            }),
            InvalidBreaker::HalfOpenProbes
        );
        assert!(matches!(
            bad(BreakerConfig {
                cool_down_jitter: f64::NAN,
                ..d
            }),
            InvalidBreaker::CoolDownJitter(_)
        ));
    }
}
