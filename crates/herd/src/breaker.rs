//! A circuit breaker: stop calling a dependency that is failing, then probe it gently.
//!
//! Retries help with blips; against a dependency that is down they only add load and
//! latency. A breaker watches the failure rate over a sliding window and, once it passes a
//! threshold (with at least `min_calls` calls seen, so two failures out of two do not trip
//! it), **opens**: calls fail at once without reaching the dependency. After a cool-down it
//! goes **half-open** and lets a bounded number of probe calls through; if they all succeed it
//! **closes**, and one failure opens it again.
//!
//! **An outcome belongs to the permit it was admitted under.** Admission
//! ([`try_acquire`](CircuitBreaker::try_acquire)) hands out a [`BreakerPermit`] carrying the
//! breaker's generation, which moves on at every change of state; the outcome is recorded
//! through it ([`record`](CircuitBreaker::record)). An answer from an earlier state is
//! ignored: a slow success from a call admitted while the breaker was closed cannot close a
//! half-open breaker that is waiting for its probes, and a slow failure from before the
//! breaker closed cannot count against the fresh window.
//!
//! What counts: a success, a transient failure, and a downstream's `retry-exhausted` answer
//! (a failure: the layer below already retried and gave up). A permanent error (a 404, bad
//! input) says nothing about the dependency's health, so by default it counts as neither
//! ([`PermanentErrors`]).
//!
//! The cool-down is jittered (uniform in `[cool_down, cool_down · (1 + jitter)]`): breakers in
//! a fleet that opened together would otherwise all probe in the same instant, the very herd
//! this crate exists to break up. Each breaker draws from its own generator, seeded per breaker
//! unless you fix the seed for a test.
//!
//! A closed breaker, the common case, takes no lock: admitting a call is one atomic load and
//! recording an outcome is one atomic load and one atomic add on a ten-slot sliding window
//! (the same window the retry budget uses; it locks briefly once per slot, when time moves
//! on). State changes (opening, probing, closing) take a mutex held for a few instructions.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::breaker::{BreakerConfig, BreakerOutcome, BreakerState, CircuitBreaker};
//! use herd::clock::FakeClock;
//!
//! let clock = FakeClock::new();
//! let config = BreakerConfig::default().min_calls(4).cool_down_jitter(0.0);
//! let breaker = CircuitBreaker::new(config, clock.clone())?;
//! let early = breaker.try_acquire().unwrap(); // admitted while closed, answers late
//! for _ in 0..4 {
//!     let permit = breaker.try_acquire().unwrap();
//!     breaker.record(permit, BreakerOutcome::Failure);
//! }
//! assert_eq!(breaker.state(), BreakerState::Open);
//! assert!(breaker.try_acquire().is_none());
//! clock.advance(Duration::from_secs(5));
//! assert_eq!(breaker.state(), BreakerState::HalfOpen);
//! let probe = breaker.try_acquire().unwrap(); // the one probe
//! assert!(breaker.try_acquire().is_none());
//! breaker.record(early, BreakerOutcome::Success); // from the closed state: ignored
//! assert_eq!(breaker.state(), BreakerState::HalfOpen);
//! breaker.record(probe, BreakerOutcome::Success);
//! assert_eq!(breaker.state(), BreakerState::Closed);
//! # Ok::<(), herd::breaker::InvalidBreaker>(())
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock, saturating_nanos};
use crate::rng::{Rng, SplitMix64, ThreadRng};
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering, lock};
use crate::window::Ring;

/// Admission to one attempt, carrying the breaker's generation when it was issued. Record the
/// attempt's outcome through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BreakerPermit {
    generation: u64,
}

impl BreakerPermit {
    /// A permit for `generation` (for your own [`Breaker`] implementations).
    #[must_use]
    pub const fn new(generation: u64) -> Self {
        Self { generation }
    }

    /// The generation the permit was issued in.
    #[must_use]
    pub const fn generation(self) -> u64 {
        self.generation
    }
}

/// What became of an admitted attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakerOutcome {
    /// It succeeded.
    Success,
    /// It failed transiently, or a downstream layer retried and gave up (`retry-exhausted`).
    Failure,
    /// It failed permanently; counted as [`BreakerConfig::permanent`] says.
    Permanent,
    /// It was abandoned before it had an outcome: its future was dropped (a timeout above
    /// the retry loop, a cancelled request). Nothing is counted, and a half-open probe's
    /// permit is given back, so the next call probes at once.
    Dropped,
}

/// How a breaker counts permanent errors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PermanentErrors {
    /// Neither success nor failure (the default): a 404 or a rejected input says nothing
    /// about the dependency's health, and counting it as a success would let a client that
    /// sends bad requests close a half-open breaker.
    #[default]
    Ignore,
    /// As a success: the dependency answered.
    Success,
    /// As a failure.
    Failure,
}

/// What a retry loop asks of a breaker; implemented by [`CircuitBreaker`].
pub trait Breaker: Send + Sync {
    /// May an attempt be made now? `None` refuses it. In half-open state this takes one of
    /// the probe permits.
    fn try_acquire(&self) -> Option<BreakerPermit>;
    /// Records the outcome of the attempt admitted under `permit`. An outcome from an earlier
    /// generation must not change the present state.
    fn record(&self, permit: BreakerPermit, outcome: BreakerOutcome);
    /// Whether an attempt asked for now would be refused (open, or half-open with every probe
    /// out), without taking a permit. A retry loop asks this *before* pausing and spending
    /// budget on a retry that would be refused.
    fn refuses(&self) -> bool;
}

impl<B: Breaker + ?Sized> Breaker for Arc<B> {
    fn try_acquire(&self) -> Option<BreakerPermit> {
        (**self).try_acquire()
    }
    fn record(&self, permit: BreakerPermit, outcome: BreakerOutcome) {
        (**self).record(permit, outcome);
    }
    fn refuses(&self) -> bool {
        (**self).refuses()
    }
}

/// The three states of a breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerState {
    /// Calls go through; failures are counted.
    Closed,
    /// Calls are refused until the cool-down ends.
    Open,
    /// A bounded number of probe calls go through.
    HalfOpen,
}

/// Settings of a [`CircuitBreaker`]. Start from [`BreakerConfig::default`] and change fields
/// with the setters (the struct may gain fields).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
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
    /// How permanent errors count (default: neither success nor failure).
    pub permanent: PermanentErrors,
}

impl Default for BreakerConfig {
    /// 50 % failures over 10 s with at least 20 calls; open for 5 s (+ up to 20 %); one probe;
    /// permanent errors ignored.
    fn default() -> Self {
        Self {
            failure_rate: 0.5,
            window: Duration::from_secs(10),
            min_calls: 20,
            cool_down: Duration::from_secs(5),
            cool_down_jitter: 0.2,
            half_open_probes: 1,
            permanent: PermanentErrors::Ignore,
        }
    }
}

/// Writes a by-value setter for each field named, documented as setting it.
macro_rules! setters {
    ($($field:ident: $ty:ty),* $(,)?) => {$(
        #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
        #[must_use]
        pub const fn $field(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }
    )*};
}

pub(crate) use setters;

impl BreakerConfig {
    setters! {
        failure_rate: f64,
        window: Duration,
        min_calls: u32,
        cool_down: Duration,
        cool_down_jitter: f64,
        half_open_probes: u32,
        permanent: PermanentErrors,
    }
}

/// Why a breaker could not be built. Each variant names the field.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
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
    /// Moves on at every change of state (and every fresh round of probes).
    generation: u64,
    rng: SplitMix64,
}

/// `generation << 1 | 1` while closed, `generation << 1` otherwise: the closed path's one load.
const CLOSED: u64 = 1;

struct Shared<C> {
    config: BreakerConfig,
    clock: C,
    /// Mirrors `inner`'s generation and whether it is closed, so the closed path needs no lock.
    state: AtomicU64,
    successes: Ring,
    failures: Ring,
    inner: Mutex<Inner>,
}

/// A circuit breaker over a sliding window of calls. `Clone` gives another handle onto the
/// same breaker.
#[derive(Clone)]
pub struct CircuitBreaker<C: Clock = SystemClock> {
    shared: Arc<Shared<C>>,
}

crate::debug_handle!(CircuitBreaker<C>, "state", state);

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
                state: AtomicU64::new(CLOSED),
                successes: Ring::new(config.window, now),
                failures: Ring::new(config.window, now),
                clock,
                inner: Mutex::new(Inner {
                    phase: Phase::Closed,
                    generation: 0,
                    rng: SplitMix64::new(seed),
                }),
            }),
        })
    }

    /// The state now. An open breaker whose cool-down has ended reports
    /// [`BreakerState::HalfOpen`].
    #[must_use]
    pub fn state(&self) -> BreakerState {
        if self.shared.state.load(Ordering::Acquire) & CLOSED == CLOSED {
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
    /// A probe whose call is dropped gives its permit back through
    /// [`BreakerOutcome::Dropped`] (herd's loops and layers record it from a guard's `Drop`).
    /// A probe whose outcome is never recorded at all (its thread panicked, a loop of your own
    /// forgot) would hold its permit forever; so when every permit is out and a whole
    /// cool-down has passed without a verdict, a fresh round of probes is issued (in a new
    /// generation, so the lost probes' late answers no longer count).
    pub fn try_acquire(&self) -> Option<BreakerPermit> {
        let state = self.shared.state.load(Ordering::Acquire);
        if state & CLOSED == CLOSED {
            return Some(BreakerPermit::new(state >> 1));
        }
        let probes = self.shared.config.half_open_probes;
        let mut inner = self.lock();
        match inner.phase {
            // Only a breaker that is not closed needs the time: the closed fast path reads
            // no clock.
            Phase::Closed => return Some(BreakerPermit::new(inner.generation)),
            Phase::HalfOpen { issued, .. } if issued < probes => {}
            // Open, or half-open with every probe out: a fresh round once the wait is over.
            Phase::Open { .. } | Phase::HalfOpen { .. } => {
                let now = self.now();
                if self.refuses_in(&inner.phase, now) {
                    return None;
                }
                self.enter(
                    &mut inner,
                    Phase::HalfOpen {
                        issued: 0,
                        succeeded: 0,
                        since: now,
                    },
                );
            }
        }
        let generation = inner.generation;
        match &mut inner.phase {
            Phase::HalfOpen { issued, .. } if *issued < probes => {
                *issued += 1;
                Some(BreakerPermit::new(generation))
            }
            _ => None,
        }
    }

    /// Whether an attempt asked for now would be refused, without taking a permit: open with
    /// the cool-down still running, or half-open with every probe out (and not yet lost).
    #[must_use]
    pub fn refuses(&self) -> bool {
        if self.shared.state.load(Ordering::Acquire) & CLOSED == CLOSED {
            return false;
        }
        let now = self.now();
        let inner = self.lock();
        self.refuses_in(&inner.phase, now)
    }

    /// Whether `phase` refuses an attempt at `now`: open with the cool-down still running, or
    /// half-open with every probe out and the round not yet expired.
    fn refuses_in(&self, phase: &Phase, now: u64) -> bool {
        match *phase {
            Phase::Closed => false,
            Phase::Open { until } => now < until,
            Phase::HalfOpen { issued, since, .. } => {
                issued >= self.shared.config.half_open_probes
                    && now.saturating_sub(since) < saturating_nanos(self.shared.config.cool_down)
            }
        }
    }

    /// Records the outcome of the attempt admitted under `permit`. An outcome from an earlier
    /// generation than the present one is ignored.
    ///
    /// Closed: successes and failures enter the window; the breaker opens once the window
    /// holds at least `min_calls` calls and the failure rate reaches `failure_rate`.
    /// Half-open: a failure opens it again at once; once every probe has succeeded it closes
    /// with a fresh window.
    pub fn record(&self, permit: BreakerPermit, outcome: BreakerOutcome) {
        let failed = match (outcome, self.shared.config.permanent) {
            (BreakerOutcome::Dropped, _) => return self.give_back(permit),
            (BreakerOutcome::Success, _)
            | (BreakerOutcome::Permanent, PermanentErrors::Success) => false,
            (BreakerOutcome::Failure, _)
            | (BreakerOutcome::Permanent, PermanentErrors::Failure) => true,
            (BreakerOutcome::Permanent, PermanentErrors::Ignore) => return,
        };
        let shared = &*self.shared;
        let now = shared.clock.now();
        let state = shared.state.load(Ordering::Acquire);
        if state == (permit.generation << 1 | CLOSED) {
            if !failed {
                shared.successes.add(now, 1);
                return;
            }
            shared.failures.add(now, 1);
            if !self.rate_trips(now) {
                return;
            }
        } else if state & CLOSED == CLOSED {
            // Closed in a later generation than the permit's: a late answer, ignored.
            return;
        }
        let mut inner = self.lock();
        if inner.generation != permit.generation {
            return;
        }
        let probes = shared.config.half_open_probes;
        match &mut inner.phase {
            // The closed path above already counted it; trip, unless a racing thread opened
            // the breaker first (then the generation would differ).
            Phase::Closed => {
                if failed && self.rate_trips(now) {
                    self.trip(&mut inner, saturating_nanos(now));
                }
            }
            Phase::HalfOpen { .. } if failed => self.trip(&mut inner, saturating_nanos(now)),
            Phase::HalfOpen { succeeded, .. } => {
                *succeeded += 1;
                if *succeeded >= probes {
                    shared.successes.clear();
                    shared.failures.clear();
                    self.enter(&mut inner, Phase::Closed);
                }
            }
            Phase::Open { .. } => {}
        }
    }

    /// A probe abandoned without an outcome: its permit goes back to the round it was issued
    /// in (a permit from another generation, or from the closed state, changes nothing).
    fn give_back(&self, permit: BreakerPermit) {
        if self.shared.state.load(Ordering::Acquire) & CLOSED == CLOSED {
            return;
        }
        let mut inner = self.lock();
        if inner.generation != permit.generation {
            return;
        }
        if let Phase::HalfOpen { issued, .. } = &mut inner.phase {
            *issued = issued.saturating_sub(1);
        }
    }

    /// Whether the window's failure rate, with enough calls, reaches the threshold.
    fn rate_trips(&self, now: Duration) -> bool {
        let shared = &*self.shared;
        let failed = shared.failures.sum(now);
        let ok = shared.successes.sum(now);
        let total = ok.saturating_add(failed);
        let config = &shared.config;
        total >= u64::from(config.min_calls) && failed as f64 >= config.failure_rate * total as f64
    }

    fn trip(&self, inner: &mut Inner, now: u64) {
        let config = &self.shared.config;
        let base = saturating_nanos(config.cool_down);
        let spread = (base as f64 * config.cool_down_jitter) as u64;
        let cool_down = base.saturating_add(inner.rng.range_inclusive(0, spread));
        self.enter(
            inner,
            Phase::Open {
                until: now.saturating_add(cool_down),
            },
        );
    }

    /// Moves to `phase` in a new generation, and publishes it for the lock-free paths.
    fn enter(&self, inner: &mut Inner, phase: Phase) {
        inner.generation = inner.generation.wrapping_add(1) & (u64::MAX >> 1);
        let closed = matches!(phase, Phase::Closed);
        inner.phase = phase;
        self.shared
            .state
            .store(inner.generation << 1 | u64::from(closed), Ordering::Release);
    }

    fn now(&self) -> u64 {
        saturating_nanos(self.shared.clock.now())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.shared.inner)
    }
}

impl<C: Clock> Breaker for CircuitBreaker<C> {
    fn try_acquire(&self) -> Option<BreakerPermit> {
        CircuitBreaker::try_acquire(self)
    }
    fn record(&self, permit: BreakerPermit, outcome: BreakerOutcome) {
        CircuitBreaker::record(self, permit, outcome);
    }
    fn refuses(&self) -> bool {
        CircuitBreaker::refuses(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use BreakerOutcome::{Failure, Success};
    use BreakerState::{Closed, HalfOpen, Open};

    /// A call admitted now whose outcome is recorded at once.
    fn call(b: &CircuitBreaker<FakeClock>, outcome: BreakerOutcome) {
        let permit = b.try_acquire().expect("admitted");
        b.record(permit, outcome);
    }

    /// The state right after `outcome` is recorded under `permit`.
    fn recorded(
        b: &CircuitBreaker<FakeClock>,
        permit: BreakerPermit,
        outcome: BreakerOutcome,
    ) -> BreakerState {
        b.record(permit, outcome);
        b.state()
    }

    /// Fails `failures` calls, which must open the breaker, then waits out its 5 s cool-down.
    fn half_open(b: &CircuitBreaker<FakeClock>, clock: &FakeClock, failures: u32) {
        for _ in 0..failures {
            fail(b);
        }
        assert_eq!(b.state(), Open);
        clock.advance(Duration::from_secs(5));
    }

    /// A permit admitted while closed and still out when `failures` failures have opened the
    /// breaker and its cool-down has ended: an answer from an earlier state.
    fn late_permit(
        b: &CircuitBreaker<FakeClock>,
        clock: &FakeClock,
        failures: u32,
    ) -> BreakerPermit {
        let permit = b.try_acquire().unwrap();
        half_open(b, clock, failures);
        permit
    }

    fn fail(b: &CircuitBreaker<FakeClock>) {
        call(b, Failure);
    }

    fn succeed(b: &CircuitBreaker<FakeClock>) {
        call(b, Success);
    }

    /// Opens once `min_calls` calls failed; half-opens after exactly the cool-down.
    fn exact(min_calls: u32) -> BreakerConfig {
        BreakerConfig::default()
            .min_calls(min_calls)
            .cool_down_jitter(0.0)
    }

    fn breaker(config: BreakerConfig) -> (CircuitBreaker<FakeClock>, FakeClock) {
        let clock = FakeClock::new();
        (
            CircuitBreaker::with_seed(config, clock.clone(), 1).unwrap(),
            clock,
        )
    }

    #[test]
    fn does_not_trip_below_min_calls() {
        let (b, _) = breaker(BreakerConfig::default().min_calls(10));
        for _ in 0..9 {
            fail(&b);
        }
        assert_eq!(b.state(), Closed);
        fail(&b);
        assert_eq!(b.state(), Open);
    }

    #[test]
    fn trips_on_rate_not_count() {
        let (b, _) = breaker(BreakerConfig::default().min_calls(10).failure_rate(0.5));
        for _ in 0..6 {
            succeed(&b);
        }
        for _ in 0..5 {
            fail(&b);
        }
        assert_eq!(b.state(), Closed, "5 of 11 is below 50 %");
        fail(&b);
        assert_eq!(b.state(), Open, "6 of 12");
    }

    #[test]
    fn old_calls_leave_the_window() {
        let (b, clock) = breaker(BreakerConfig::default().min_calls(4));
        for _ in 0..3 {
            fail(&b);
        }
        clock.advance(Duration::from_secs(11));
        fail(&b);
        assert_eq!(b.state(), Closed);
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
            fail(&b);
            clock.advance(Duration::from_millis(9_999));
            assert_eq!(b.state(), Open);
            let mut ms = 9_999;
            while b.state() == Open {
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
        let (b, clock) = breaker(exact(1).half_open_probes(2));
        half_open(&b, &clock, 1);
        let first = b.try_acquire().unwrap();
        let second = b.try_acquire().unwrap();
        assert!(b.try_acquire().is_none());
        assert!(b.refuses(), "every probe is out");
        assert_eq!(recorded(&b, first, Success), HalfOpen);
        assert_eq!(recorded(&b, second, Failure), Open);
        assert!(b.try_acquire().is_none());
    }

    #[test]
    fn lost_probes_are_reissued_after_a_cool_down() {
        let (b, clock) = breaker(exact(1));
        half_open(&b, &clock, 1);
        let lost = b.try_acquire().unwrap(); // this probe's caller is cancelled
        clock.advance(Duration::from_secs(4));
        assert!(b.try_acquire().is_none());
        clock.advance(Duration::from_secs(1));
        let fresh = b
            .try_acquire()
            .expect("a lost probe must not wedge the breaker half-open");
        b.record(lost, Failure);
        assert_eq!(
            b.state(),
            HalfOpen,
            "the lost probe's late answer belongs to the expired round"
        );
        assert_eq!(recorded(&b, fresh, Success), Closed);
    }

    #[test]
    fn a_dropped_probe_gives_its_permit_back_to_its_own_round_only() {
        let (b, clock) = breaker(exact(1));
        fail(&b);
        clock.advance(Duration::from_secs(5));
        let probe = b.try_acquire().unwrap();
        assert!(b.try_acquire().is_none());
        b.record(probe, BreakerOutcome::Dropped);
        let again = b.try_acquire().unwrap();
        // A second drop of the first permit (or any permit from before) changes nothing
        // once its round is over.
        b.record(again, BreakerOutcome::Failure);
        assert_eq!(b.state(), BreakerState::Open);
        clock.advance(Duration::from_secs(5));
        let probe = b.try_acquire().unwrap();
        b.record(again, BreakerOutcome::Dropped);
        assert!(
            b.try_acquire().is_none(),
            "a permit of an earlier round gave nothing back"
        );
        b.record(probe, BreakerOutcome::Success);
        assert_eq!(b.state(), BreakerState::Closed);
        b.record(probe, BreakerOutcome::Dropped);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn a_late_success_from_the_closed_state_cannot_close_a_half_open_breaker() {
        // Regression: outcomes were not tied to the state they were admitted in, so a slow
        // call admitted while closed closed the half-open breaker before any probe answered.
        let (b, clock) = breaker(exact(2));
        let slow = late_permit(&b, &clock, 2);
        let probe = b.try_acquire().unwrap();
        assert_eq!(recorded(&b, slow, Success), HalfOpen);
        let after = recorded(&b, slow, Failure);
        assert_eq!(after, HalfOpen, "nor reopen it");
        assert_eq!(recorded(&b, probe, Success), Closed);
    }

    #[test]
    fn a_late_failure_from_before_closing_does_not_count_in_the_fresh_window() {
        let (b, clock) = breaker(exact(1));
        let slow = late_permit(&b, &clock, 1);
        succeed(&b); // the probe closes it
        assert_eq!(b.state(), Closed);
        assert_eq!(recorded(&b, slow, Failure), Closed);
    }

    #[test]
    fn permanent_errors_count_as_configured() {
        let config = exact(2);
        // Default: neither. Two permanent errors then one failure: 1 call in the window.
        let (b, _) = breaker(config);
        call(&b, BreakerOutcome::Permanent);
        call(&b, BreakerOutcome::Permanent);
        fail(&b);
        assert_eq!(b.state(), Closed);
        fail(&b);
        assert_eq!(b.state(), Open);
        // As failures: two of them trip it.
        let (b, _) = breaker(config.permanent(PermanentErrors::Failure));
        call(&b, BreakerOutcome::Permanent);
        call(&b, BreakerOutcome::Permanent);
        assert_eq!(b.state(), Open);
        // As successes: they dilute the rate.
        let (b, _) = breaker(config.permanent(PermanentErrors::Success).min_calls(3));
        call(&b, BreakerOutcome::Permanent);
        call(&b, BreakerOutcome::Permanent);
        fail(&b);
        assert_eq!(b.state(), Closed, "1 of 3 is below 50 %");
        // And a permanent error from a half-open probe neither closes nor reopens by default.
        let (b, clock) = breaker(config);
        half_open(&b, &clock, 2);
        call(&b, BreakerOutcome::Permanent);
        assert_eq!(b.state(), HalfOpen);
    }

    #[test]
    fn refuses_only_when_an_attempt_now_would_be_refused() {
        let (b, clock) = breaker(exact(1));
        assert!(!b.refuses());
        fail(&b);
        assert!(b.refuses());
        clock.advance(Duration::from_secs(5));
        assert!(!b.refuses(), "cool-down over: a probe would be admitted");
        let _probe = b.try_acquire().unwrap();
        assert!(b.refuses());
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
