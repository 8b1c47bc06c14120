//! Google SRE adaptive throttling ("client-side throttling"), in the book's form and in
//! grpc-go's.
//!
//! The SRE book ("Handling Overload", chapter 21) has each client keep, over the last two
//! minutes, the number of `requests` it attempted and of `accepts` the backend accepted, and
//! reject a new request *locally* with probability
//! `max(0, (requests − K · accepts) / (requests + 1))`, K = 2; locally rejected requests
//! count as requests. It gates every request, first attempts included.
//!
//! grpc-go's RLS adaptive throttler (`balancer/rls/internal/adaptive/adaptive.go`) is the
//! same idea in code, with three differences, all offered here as settings:
//! - padding 8 instead of 1 (`defaultRequestsPadding`), which keeps the probability low
//!   while there is little history;
//! - a 30 s lookback in 100 bins (`defaultDuration`, `defaultBins`; `lookback.go`);
//! - requests are counted *when the response arrives* (`RegisterBackendResponse`:
//!   `requests = accepts + throttles`) or when the throttler rejects locally
//!   (`ShouldThrottle`), not when they are sent: [`RequestCounting::OnResponse`].
//!
//! A request is throttled when a uniform draw `u ∈ [0, 1)` is below the probability (grpc-go:
//! `if throttleProbability <= randomProbability { return false }`).

use std::sync::Arc;
use std::time::Duration;

use super::{InvalidThrottle, check, generator};
use crate::budget::Budget;
use crate::clock::{Clock, SystemClock, saturating_nanos};
use crate::rng::{Rng, SplitMix64};
use crate::sync::{Mutex, lock};

/// When a request is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestCounting {
    /// When it is sent or rejected locally (the SRE book).
    OnSend,
    /// When its response arrives, or when it is rejected locally (grpc-go's
    /// `RegisterBackendResponse` / `ShouldThrottle`).
    OnResponse,
}

/// Settings of [`SreThrottle`]. Start from [`book`](Self::book) (the default) or
/// [`grpc_rls`](Self::grpc_rls) and change fields.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SreThrottleConfig {
    /// K, the multiplier of accepts (grpc-go's `RatioForAccepts`); `[1, 1000]`.
    pub k: f64,
    /// Added to the denominator (1 in the book, grpc-go's `RequestsPadding` 8); `(0, 10⁶]`.
    pub padding: f64,
    /// How much history counts; between 1 ns and 1 day.
    pub history: Duration,
    /// Bins the history is kept in (expiry granularity `history / bins`); `[1, 10 000]`.
    pub bins: u32,
    /// When a request is counted.
    pub counting: RequestCounting,
    /// Seed of the throttle's own random draws; `None` draws one from the thread's generator.
    pub seed: Option<u64>,
}

impl SreThrottleConfig {
    /// The SRE book: K = 2, padding 1, two minutes of history (kept in 120 one-second bins;
    /// the book does not say how), requests counted when sent.
    #[must_use]
    pub fn book() -> Self {
        Self {
            k: 2.0,
            padding: 1.0,
            history: Duration::from_secs(120),
            bins: 120,
            counting: RequestCounting::OnSend,
            seed: None,
        }
    }

    /// grpc-go's RLS adaptive throttler (`adaptive.go`: `defaultRatioForAccepts` 2.0,
    /// `defaultRequestsPadding` 8.0, `defaultDuration` 30 s, `defaultBins` 100), requests
    /// counted on response.
    #[must_use]
    pub fn grpc_rls() -> Self {
        Self {
            k: 2.0,
            padding: 8.0,
            history: Duration::from_secs(30),
            bins: 100,
            counting: RequestCounting::OnResponse,
            seed: None,
        }
    }
}

impl Default for SreThrottleConfig {
    /// [`SreThrottleConfig::book`].
    fn default() -> Self {
        Self::book()
    }
}

/// A sum over the last `bins` bins of time (grpc-go's `lookback.go`): adding at a time more
/// than `bins` bins behind the newest is ignored, and a time that steps back adds to its own
/// (still live) bin.
struct Lookback {
    buf: Vec<u64>,
    width: u64,
    head: u64,
    total: u64,
}

impl Lookback {
    fn new(bins: u32, history: Duration) -> Self {
        Self {
            buf: vec![0; bins as usize],
            width: (saturating_nanos(history) / u64::from(bins)).max(1),
            head: 0,
            total: 0,
        }
    }

    fn bins(&self) -> u64 {
        self.buf.len() as u64
    }

    /// Moves the head to time `now` (never back), clearing the bins passed; the bin index of
    /// `now`.
    fn advance(&mut self, now: Duration) -> u64 {
        let new = saturating_nanos(now) / self.width;
        if new <= self.head {
            return new;
        }
        for j in 0..(new - self.head).min(self.bins()) {
            let i = ((self.head + j + 1) % self.bins()) as usize;
            self.total -= self.buf[i];
            self.buf[i] = 0;
        }
        self.head = new;
        new
    }

    fn add(&mut self, now: Duration, v: u64) {
        let pos = self.advance(now);
        if self.head - pos >= self.bins() {
            return;
        }
        let bin = (pos % self.bins()) as usize;
        self.buf[bin] += v;
        self.total += v;
    }

    fn sum(&mut self, now: Duration) -> u64 {
        self.advance(now);
        self.total
    }
}

struct State {
    requests: Lookback,
    accepts: Lookback,
    rng: SplitMix64,
}

struct Shared<C> {
    clock: C,
    k: f64,
    padding: f64,
    counting: RequestCounting,
    state: Mutex<State>,
}

/// Google SRE adaptive throttling: rejects requests locally, at random, in proportion to how
/// many more requests the client sends than the backend accepts.
///
/// `Clone` gives another handle onto the same throttle. Every operation takes one short lock
/// (as grpc-go's does).
///
/// # Examples
///
/// The book's example: with K = 2, a client whose backend accepts half its requests throttles
/// none of them; at a quarter, it throttles about a third.
///
/// ```
/// use herd::clock::FakeClock;
/// use herd::throttle::{SreThrottle, SreThrottleConfig};
///
/// let throttle = SreThrottle::new(SreThrottleConfig::book(), FakeClock::new())?;
/// for i in 0..100 {
///     throttle.record_send();
///     throttle.record_response(i % 2 == 0);
/// }
/// assert_eq!(throttle.probability(), 0.0); // 100 − 2·50 = 0
/// for _ in 0..100 {
///     throttle.record_send();
///     throttle.record_response(false);
/// }
/// // (200 − 2·50) / (200 + 1)
/// assert_eq!(throttle.probability(), 100.0 / 201.0);
/// # Ok::<(), herd::throttle::InvalidThrottle>(())
/// ```
#[derive(Clone)]
pub struct SreThrottle<C: Clock = SystemClock> {
    inner: Arc<Shared<C>>,
}

crate::debug_handle!(SreThrottle<C>, "probability", probability);

impl<C: Clock> SreThrottle<C> {
    /// A throttle with no history, driven by `clock`.
    ///
    /// # Errors
    ///
    /// [`InvalidThrottle`] naming `k`, `padding`, `history` or `bins`.
    pub fn new(config: SreThrottleConfig, clock: C) -> Result<Self, InvalidThrottle> {
        let SreThrottleConfig {
            k,
            padding,
            history,
            bins,
            counting,
            seed,
        } = config;
        check(
            k.is_finite() && (1.0..=1000.0).contains(&k),
            "k",
            k,
            "a number in [1, 1000]",
        )?;
        check(
            padding.is_finite() && padding > 0.0 && padding <= 1e6,
            "padding",
            padding,
            "a number in (0, 1000000]",
        )?;
        check(
            (1..=10_000).contains(&bins),
            "bins",
            f64::from(bins),
            "an integer in [1, 10000]",
        )?;
        check(
            history >= Duration::from_nanos(1) && history <= Duration::from_secs(86_400),
            "history",
            history.as_secs_f64(),
            "between 1 ns and 1 day",
        )?;
        Ok(Self {
            inner: Arc::new(Shared {
                clock,
                k,
                padding,
                counting,
                state: Mutex::new(State {
                    requests: Lookback::new(bins, history),
                    accepts: Lookback::new(bins, history),
                    rng: generator(seed),
                }),
            }),
        })
    }

    /// The probability that the next request is throttled now, in `[0, 1)`.
    #[must_use]
    pub fn probability(&self) -> f64 {
        let now = self.inner.clock.now();
        let mut state = lock(&self.inner.state);
        self.inner.probability_locked(&mut state, now)
    }

    /// Should the next request be sent? Draws from the throttle's own generator; `false` means
    /// it was throttled locally (and counted as a request). Call it before *every* request,
    /// first attempts included.
    pub fn admit(&self) -> bool {
        let now = self.inner.clock.now();
        let mut state = lock(&self.inner.state);
        let u = state.rng.next_f64();
        self.inner.decide_locked(&mut state, now, u)
    }

    /// [`admit`](Self::admit) with the draw taken from `rng` (a simulator's or a test's
    /// generator).
    pub fn admit_with<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        let u = rng.next_f64();
        let now = self.inner.clock.now();
        let mut state = lock(&self.inner.state);
        self.inner.decide_locked(&mut state, now, u)
    }

    /// A request was sent without asking [`admit`](Self::admit) (counted under
    /// [`RequestCounting::OnSend`], ignored under `OnResponse`).
    pub fn record_send(&self) {
        if self.inner.counting == RequestCounting::OnSend {
            let now = self.inner.clock.now();
            lock(&self.inner.state).requests.add(now, 1);
        }
    }

    /// The backend answered a request: `accepted` unless it rejected it for overload (grpc-go's
    /// `RegisterBackendResponse(throttled = !accepted)`).
    pub fn record_response(&self, accepted: bool) {
        let now = self.inner.clock.now();
        let mut state = lock(&self.inner.state);
        if self.inner.counting == RequestCounting::OnResponse {
            state.requests.add(now, 1);
        }
        if accepted {
            state.accepts.add(now, 1);
        }
    }

    /// `(requests, accepts)` in the history now.
    #[must_use]
    pub fn counts(&self) -> (u64, u64) {
        let now = self.inner.clock.now();
        let mut state = lock(&self.inner.state);
        (state.requests.sum(now), state.accepts.sum(now))
    }
}

impl<C> Shared<C> {
    fn probability_locked(&self, state: &mut State, now: Duration) -> f64 {
        let requests = state.requests.sum(now) as f64;
        let accepts = state.accepts.sum(now) as f64;
        ((requests - self.k * accepts) / (requests + self.padding)).max(0.0)
    }

    /// Throttles when `u` is below the probability; counts the request (always when counted
    /// on send, only a throttled one when counted on response).
    fn decide_locked(&self, state: &mut State, now: Duration, u: f64) -> bool {
        let throttled = u < self.probability_locked(state, now);
        if throttled || self.counting == RequestCounting::OnSend {
            state.requests.add(now, 1);
        }
        !throttled
    }
}

/// Through a [`RetryPolicy`](crate::policy::RetryPolicy): the policy's first attempts are
/// recorded ([`record_send`](SreThrottle::record_send)) but cannot be refused (call
/// [`admit`](SreThrottle::admit) before a call to gate them); a retry is sent only if
/// [`admit`](SreThrottle::admit) allows it; a success is an accept and a transient failure a
/// rejection by the backend.
impl<C: Clock> Budget for SreThrottle<C> {
    /// Clones share one state, so they are one budget: a call deposits in it once.
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
    fn on_request(&self) {
        self.record_send();
    }
    fn on_success(&self) {
        self.record_response(true);
    }
    fn on_failure(&self) {
        self.record_response(false);
    }
    fn try_retry(&self) -> bool {
        self.admit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    /// A generator whose every float is exactly `u` (`u` a multiple of 2⁻⁵³).
    struct Fixed(f64);
    impl Rng for Fixed {
        fn next_u64(&mut self) -> u64 {
            ((self.0 * (1u64 << 53) as f64) as u64) << 11
        }
    }

    fn grpc(k: f64, padding: f64, history: Duration, bins: u32) -> SreThrottleConfig {
        SreThrottleConfig {
            k,
            padding,
            history,
            bins,
            seed: Some(1),
            ..SreThrottleConfig::grpc_rls()
        }
    }

    /// grpc-go `adaptive_test.go` `TestRegisterBackendResponse`: ticks in nanoseconds, a
    /// lookback of `bins` ns in `bins` bins; (accepts, throttles) after each step.
    #[test]
    fn grpc_register_backend_response_vectors() {
        const E: u8 = 0;
        const A: u8 = 1;
        const T: u8 = 2;
        /// Name, bins, ticks, responses, accepts and throttles wanted.
        type Case = (&'static str, u32, [u64; 3], [u8; 3], [u64; 3], [u64; 3]);
        let cases: [Case; 4] = [
            ("Accumulate", 3, [0, 1, 2], [A, T, E], [1, 1, 1], [0, 1, 1]),
            (
                "LightTimeTravel",
                3,
                [1, 0, 2],
                [A, T, E],
                [1, 1, 1],
                [0, 1, 1],
            ),
            (
                "HeavyTimeTravel",
                3,
                [8, 0, 9],
                [A, A, A],
                [1, 1, 2],
                [0, 0, 0],
            ),
            ("Rollover", 1, [0, 1, 2], [A, T, E], [1, 0, 0], [0, 1, 0]),
        ];
        for (name, bins, ticks, responses, accepts, throttles) in cases {
            let clock = FakeClock::new();
            let th = SreThrottle::new(
                grpc(2.0, 8.0, Duration::from_nanos(u64::from(bins)), bins),
                clock.clone(),
            )
            .unwrap();
            for i in 0..3 {
                clock.set(Duration::from_nanos(ticks[i]));
                if responses[i] != E {
                    th.record_response(responses[i] == A);
                }
                let (requests, accepted) = th.counts();
                assert_eq!(
                    (accepted, requests - accepted),
                    (accepts[i], throttles[i]),
                    "{name} step {i}"
                );
            }
        }
    }

    /// grpc-go `TestShouldThrottleOptions`: the draw fixed at 0.5, a 1 ns lookback in 1 bin,
    /// time standing at 0.
    #[test]
    fn grpc_should_throttle_options_vectors() {
        const A: bool = true;
        const T: bool = false;
        let responses = [T, T, T, T, T, T, T, T, T, A, A, A, A, A, A, T, T, T, T];
        let (n, y) = (false, true);
        let cases = [
            (
                "Baseline",
                1.1,
                8.0,
                [n, n, n, n, n, n, n, n, y, y, y, y, y, n, n, n, y, y, y],
            ),
            (
                "ChangePadding",
                1.1,
                7.0,
                [n, n, n, n, n, n, n, y, y, y, y, y, y, y, y, y, y, y, y],
            ),
            (
                "ChangeRatioForAccepts",
                1.4,
                8.0,
                [n, n, n, n, n, n, n, n, y, y, n, n, n, n, n, n, n, n, n],
            ),
        ];
        for (name, k, padding, want) in cases {
            let th = SreThrottle::new(
                grpc(k, padding, Duration::from_nanos(1), 1),
                FakeClock::new(),
            )
            .unwrap();
            for (i, accepted) in responses.into_iter().enumerate() {
                th.record_response(accepted);
                let throttled = !th.admit_with(&mut Fixed(0.5));
                assert_eq!(throttled, want[i], "{name} index {i}");
            }
        }
    }

    /// The book: local rejections count as requests, so a client that keeps being refused
    /// keeps a high probability (it does not talk itself back to zero).
    #[test]
    fn book_counts_local_rejections_as_requests() {
        let th = SreThrottle::new(
            SreThrottleConfig {
                seed: Some(7),
                ..SreThrottleConfig::book()
            },
            FakeClock::new(),
        )
        .unwrap();
        for _ in 0..100 {
            if th.admit() {
                th.record_response(false);
            }
        }
        let (requests, accepts) = th.counts();
        assert_eq!((requests, accepts), (100, 0));
        assert_eq!(th.probability(), 100.0 / 101.0);
    }

    /// History older than two minutes no longer counts (the book's window).
    #[test]
    fn book_history_expires_after_two_minutes() {
        let clock = FakeClock::new();
        let th = SreThrottle::new(SreThrottleConfig::book(), clock.clone()).unwrap();
        for _ in 0..10 {
            th.record_send();
        }
        clock.set(Duration::from_secs(119));
        assert_eq!(th.counts(), (10, 0));
        clock.set(Duration::from_secs(120));
        assert_eq!(th.counts(), (0, 0));
        assert_eq!(th.probability(), 0.0);
    }

    /// It gates first attempts: through `admit`, with no retries at all, a failing backend
    /// sees its load cut.
    #[test]
    fn first_attempts_are_throttled_too() {
        let th = SreThrottle::new(
            SreThrottleConfig {
                seed: Some(3),
                ..SreThrottleConfig::grpc_rls()
            },
            FakeClock::new(),
        )
        .unwrap();
        let sent = (0..1000)
            .filter(|_| {
                let sent = th.admit();
                if sent {
                    th.record_response(false);
                }
                sent
            })
            .count();
        // With every request refused, p = n/(n + 8) → 1: after 1000 requests almost all are
        // throttled; the sent ones are those drawn above p, about Σ 8/(n + 8) ≈ 8·ln(1000/8).
        assert!((10..100).contains(&sent), "{sent}");
    }

    #[test]
    fn invalid_settings_name_the_field() {
        let clock = FakeClock::new();
        let bad = |c: SreThrottleConfig| SreThrottle::new(c, clock.clone()).unwrap_err().field;
        let base = SreThrottleConfig::book();
        assert_eq!(bad(SreThrottleConfig { k: 0.5, ..base }), "k");
        assert_eq!(
            bad(SreThrottleConfig {
                k: f64::NAN,
                ..base
            }),
            "k"
        );
        assert_eq!(
            bad(SreThrottleConfig {
                padding: 0.0,
                ..base
            }),
            "padding"
        );
        assert_eq!(bad(SreThrottleConfig { bins: 0, ..base }), "bins");
        assert_eq!(
            bad(SreThrottleConfig {
                history: Duration::ZERO,
                ..base
            }),
            "history"
        );
        let err = SreThrottle::new(SreThrottleConfig { k: 0.5, ..base }, clock).unwrap_err();
        assert_eq!(err.to_string(), "k must be a number in [1, 1000], got 0.5");
    }
}
