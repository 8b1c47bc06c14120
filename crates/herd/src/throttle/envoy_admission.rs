//! Envoy's admission control filter: reject requests at random when the recent success rate
//! falls below a threshold.
//!
//! Ported from `source/extensions/filters/http/admission_control/` (`admission_control.cc`,
//! `thread_local_controller.cc`, `config.cc`). Over a sliding `sampling_window` the filter
//! keeps `n` requests and `s` successes (in one-second history entries, dropped once as old
//! as the window); a new request is rejected with probability
//!
//! `min(max(0, (n − s / sr_threshold) / (n + 1))^(1 / aggression), max_rejection_probability)`
//!
//! drawn to four digits (`10⁴ · p > r mod 10⁴`), and not at all while the average rate
//! `n / window` (whole requests per second) is below `rps_threshold`. Rejected requests are
//! not recorded ("this taints the measurements"). Defaults: `sampling_window` 30 s
//! (`config.cc` `defaultSamplingWindow`), `sr_threshold` 95 %, `aggression` 1.0,
//! `rps_threshold` 0, `max_rejection_probability` 80 % (`admission_control.cc`). Envoy raises
//! an `aggression` below 1 to 1 (`std::max<double>(1.0, ...)`) and cuts `sr_threshold` at
//! 100 %; so does herd.
//!
//! Envoy keeps one controller per worker thread; herd keeps one per handle (share it, or give
//! each worker its own, as you choose).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use super::{InvalidThrottle, check, generator};
use crate::budget::Budget;
use crate::clock::{Clock, SystemClock};
use crate::rng::{Rng, SplitMix64};
use crate::sync::{Mutex, lock};

/// One history entry's span (`thread_local_controller.cc` `defaultHistoryGranularity`).
const GRANULARITY: Duration = Duration::from_secs(1);
/// The probability is drawn to four digits (`admission_control.cc` `accuracy`).
const ACCURACY: u64 = 10_000;

/// Settings of [`AdmissionControl`], Envoy's fields with its defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct AdmissionControlConfig {
    /// History that counts; whole seconds from 1 s to 1 day.
    pub sampling_window: Duration,
    /// Success rate, in percent, below which requests are rejected; `(0, 100]`.
    pub sr_threshold: f64,
    /// How steeply the probability rises as the success rate falls; `> 0` (below 1 acts as
    /// 1).
    pub aggression: f64,
    /// Average requests per second below which nothing is rejected.
    pub rps_threshold: u32,
    /// The highest rejection probability, in percent; `[0, 100]`.
    pub max_rejection_probability: f64,
    /// Seed of the filter's own random draws; `None` draws one from the thread's generator.
    pub seed: Option<u64>,
}

impl Default for AdmissionControlConfig {
    fn default() -> Self {
        Self {
            sampling_window: Duration::from_secs(30),
            sr_threshold: 95.0,
            aggression: 1.0,
            rps_threshold: 0,
            max_rejection_probability: 80.0,
            seed: None,
        }
    }
}

#[derive(Clone, Copy)]
struct Entry {
    start: Duration,
    requests: u64,
    successes: u64,
}

struct History {
    entries: VecDeque<Entry>,
    requests: u64,
    successes: u64,
    rng: SplitMix64,
}

impl History {
    /// `maybeUpdateHistoricalData` without the empty entry it adds: drops entries as old as
    /// the window.
    fn purge(&mut self, now: Duration, window: Duration) {
        while let Some(oldest) = self.entries.front() {
            if now.saturating_sub(oldest.start) < window {
                break;
            }
            self.requests -= oldest.requests;
            self.successes -= oldest.successes;
            self.entries.pop_front();
        }
    }
}

struct Shared<C> {
    clock: C,
    window: Duration,
    sr_threshold: f64,
    aggression: f64,
    rps_threshold: u32,
    max_rejection: f64,
    history: Mutex<History>,
}

/// Envoy's admission control: rejects requests at random as the recent success rate falls
/// below `sr_threshold`.
///
/// `Clone` gives another handle onto the same history. Every operation takes one short lock.
///
/// # Examples
///
/// ```
/// use herd::clock::FakeClock;
/// use herd::throttle::{AdmissionControl, AdmissionControlConfig};
///
/// let filter = AdmissionControl::new(AdmissionControlConfig::default(), FakeClock::new())?;
/// for i in 0..1000 {
///     filter.record(i % 2 == 0); // half the requests succeed
/// }
/// // (1000 − 500 / 0.95) / 1001
/// assert_eq!(filter.rejection_probability(), (1000.0 - 500.0 / 0.95) / 1001.0);
/// for _ in 0..9000 {
///     filter.record(false);
/// }
/// // (10000 − 500 / 0.95) / 10001 ≈ 0.95, above the 80 % cap
/// assert_eq!(filter.rejection_probability(), 0.8);
/// # Ok::<(), herd::throttle::InvalidThrottle>(())
/// ```
#[derive(Clone)]
pub struct AdmissionControl<C: Clock = SystemClock> {
    inner: Arc<Shared<C>>,
}

crate::debug_handle!(
    AdmissionControl<C>,
    "rejection_probability",
    rejection_probability
);

impl<C: Clock> AdmissionControl<C> {
    /// A filter with no history, driven by `clock`.
    ///
    /// # Errors
    ///
    /// [`InvalidThrottle`] naming the field.
    pub fn new(config: AdmissionControlConfig, clock: C) -> Result<Self, InvalidThrottle> {
        let AdmissionControlConfig {
            sampling_window,
            sr_threshold,
            aggression,
            rps_threshold,
            max_rejection_probability,
            seed,
        } = config;
        check(
            sampling_window >= Duration::from_secs(1)
                && sampling_window <= Duration::from_secs(86_400)
                && sampling_window.subsec_nanos() == 0,
            "sampling_window",
            sampling_window.as_secs_f64(),
            "whole seconds from 1 s to 1 day",
        )?;
        check(
            sr_threshold.is_finite() && sr_threshold > 0.0 && sr_threshold <= 100.0,
            "sr_threshold",
            sr_threshold,
            "a percentage in (0, 100]",
        )?;
        check(
            aggression.is_finite() && aggression > 0.0,
            "aggression",
            aggression,
            "a finite number above 0",
        )?;
        check(
            max_rejection_probability.is_finite()
                && (0.0..=100.0).contains(&max_rejection_probability),
            "max_rejection_probability",
            max_rejection_probability,
            "a percentage in [0, 100]",
        )?;
        Ok(Self {
            inner: Arc::new(Shared {
                clock,
                window: sampling_window,
                sr_threshold: sr_threshold / 100.0,
                aggression: aggression.max(1.0),
                rps_threshold,
                max_rejection: max_rejection_probability / 100.0,
                history: Mutex::new(History {
                    entries: VecDeque::new(),
                    requests: 0,
                    successes: 0,
                    rng: generator(seed),
                }),
            }),
        })
    }

    /// Records a request's outcome (one that was not rejected).
    pub fn record(&self, success: bool) {
        let now = self.inner.clock.now();
        let mut history = lock(&self.inner.history);
        history.purge(now, self.inner.window);
        let fresh = history
            .entries
            .back()
            .is_none_or(|e| now.saturating_sub(e.start) >= GRANULARITY);
        if fresh {
            history.entries.push_back(Entry {
                start: now,
                requests: 0,
                successes: 0,
            });
        }
        let back = history
            .entries
            .back_mut()
            .expect("an entry was just ensured");
        back.requests += 1;
        back.successes += u64::from(success);
        history.requests += 1;
        history.successes += u64::from(success);
    }

    /// `(requests, successes)` in the window now.
    #[must_use]
    pub fn request_counts(&self) -> (u64, u64) {
        let now = self.inner.clock.now();
        let mut history = lock(&self.inner.history);
        history.purge(now, self.inner.window);
        (history.requests, history.successes)
    }

    /// Requests per second over the whole window, in whole requests (Envoy's `averageRps`).
    #[must_use]
    pub fn average_rps(&self) -> u64 {
        self.request_counts().0 / self.inner.window.as_secs()
    }

    /// The probability of rejecting the next request now (0 below `rps_threshold`).
    #[must_use]
    pub fn rejection_probability(&self) -> f64 {
        let (n, s) = self.request_counts();
        self.inner.probability(n, s)
    }

    /// Should the next request be sent? Draws from the filter's own generator; `false` means
    /// rejected (and, as in Envoy, not recorded).
    pub fn admit(&self) -> bool {
        let p = self.rejection_probability();
        let r = lock(&self.inner.history).rng.next_u64();
        !reject(p, r)
    }

    /// [`admit`](Self::admit) with the draw taken from `rng`.
    pub fn admit_with<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        !reject(self.rejection_probability(), rng.next_u64())
    }
}

impl<C> Shared<C> {
    fn probability(&self, n: u64, s: u64) -> f64 {
        if n / self.window.as_secs() < u64::from(self.rps_threshold) {
            return 0.0;
        }
        let (n, s) = (n as f64, s as f64);
        let mut p = ((n - s / self.sr_threshold) / (n + 1.0)).max(0.0);
        if self.aggression != 1.0 {
            p = p.powf(1.0 / self.aggression);
        }
        p.min(self.max_rejection)
    }
}

/// `(accuracy * max(probability, 0.0)) > (r % accuracy)`.
fn reject(p: f64, r: u64) -> bool {
    ACCURACY as f64 * p > (r % ACCURACY) as f64
}

/// Through a [`RetryPolicy`](crate::policy::RetryPolicy): successes and transient failures are
/// recorded, a retry is sent only if [`admit`](AdmissionControl::admit) allows it; first
/// attempts cannot be refused through the trait (call `admit` before each call).
impl<C: Clock> Budget for AdmissionControl<C> {
    /// Clones share one state, so they are one budget: a call deposits in it once.
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner).cast::<()>() as usize
    }
    fn on_request(&self) {}
    fn on_success(&self) {
        self.record(true);
    }
    fn on_failure(&self) {
        self.record(false);
    }
    fn try_retry(&self) -> bool {
        self.admit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    fn filter(window_s: u64, clock: &FakeClock) -> AdmissionControl<FakeClock> {
        let config = AdmissionControlConfig {
            sampling_window: Duration::from_secs(window_s),
            ..AdmissionControlConfig::default()
        };
        AdmissionControl::new(config, clock.clone()).unwrap()
    }

    /// One request a second for `window + 1` seconds, time left at the last one (Envoy's
    /// `fillHistorySlots`).
    fn fill(f: &AdmissionControl<FakeClock>, clock: &FakeClock, window_s: u64, success: bool) {
        for _ in 0..window_s {
            f.record(success);
            clock.advance(Duration::from_secs(1));
        }
        f.record(success);
    }

    /// `controller_test.cc` `BasicRecord`.
    #[test]
    fn envoy_basic_record() {
        let clock = FakeClock::new();
        let f = filter(5, &clock);
        assert_eq!(f.request_counts(), (0, 0));
        f.record(false);
        assert_eq!(f.request_counts(), (1, 0));
        f.record(true);
        assert_eq!(f.request_counts(), (2, 1));
    }

    /// `RemoveStaleSamples` and `RemoveStaleSamples2`.
    #[test]
    fn envoy_remove_stale_samples() {
        let clock = FakeClock::new();
        let f = filter(5, &clock);
        fill(&f, &clock, 5, true);
        assert_eq!(f.request_counts(), (5, 5));
        clock.advance(Duration::from_secs(1));
        fill(&f, &clock, 5, false);
        assert_eq!(f.request_counts(), (5, 0));
        clock.advance(Duration::from_secs(1));
        assert_eq!(f.request_counts(), (4, 0));

        let clock = FakeClock::new();
        let f = filter(5, &clock);
        fill(&f, &clock, 5, true);
        clock.advance(Duration::from_secs(86_400));
        assert_eq!(f.request_counts(), (0, 0));
    }

    /// `VerifyMemoryUsage`: sparse requests keep their counts.
    #[test]
    fn envoy_sparse_requests() {
        let clock = FakeClock::new();
        let f = filter(5, &clock);
        f.record(true);
        clock.advance(Duration::from_secs(1));
        f.record(true);
        clock.advance(Duration::from_secs(3));
        f.record(true);
        assert_eq!(f.request_counts(), (3, 3));
        assert_eq!(lock(&f.inner.history).entries.len(), 3);
    }

    /// `AverageRps`: whole requests per second over the whole window.
    #[test]
    fn envoy_average_rps() {
        let clock = FakeClock::new();
        let f = filter(5, &clock);
        assert_eq!(f.average_rps(), 0);
        f.record(true);
        f.record(false);
        assert_eq!(f.average_rps(), 0);
        f.record(true);
        f.record(false);
        f.record(true);
        assert_eq!(f.average_rps(), 1);
        clock.advance(Duration::from_secs(5));
        assert_eq!((f.request_counts().0, f.average_rps()), (0, 0));
    }

    /// `admission_control_filter_test.cc` `FilterBehaviorBasic`: 1000 failures reject (up to
    /// the 80 % cap); no history passes; 500 of 1000 successes reject at r = 4500 and pass at
    /// r = 5500.
    #[test]
    fn envoy_filter_behavior_basic() {
        let clock = FakeClock::new();
        let f = filter(30, &clock);
        for _ in 0..1000 {
            f.record(false);
        }
        let p = f.rejection_probability();
        assert_eq!(p, 0.8);
        assert!(reject(p, 0) && reject(p, 7999) && !reject(p, 8000));

        let f = filter(30, &clock);
        assert!(!reject(f.rejection_probability(), 0));
        for i in 0..1000 {
            f.record(i < 500);
        }
        let p = f.rejection_probability();
        assert!(!reject(p, 5500));
        assert!(reject(p, 4500));
    }

    /// The formula's other settings: aggression flattens the curve (and below 1 acts as 1), a
    /// lower threshold rejects less, the rps threshold turns it off.
    #[test]
    fn aggression_threshold_and_rps() {
        let clock = FakeClock::new();
        let with = |edit: fn(&mut AdmissionControlConfig)| {
            let mut c = AdmissionControlConfig {
                max_rejection_probability: 100.0,
                ..AdmissionControlConfig::default()
            };
            edit(&mut c);
            let f = AdmissionControl::new(c, clock.clone()).unwrap();
            for i in 0..100 {
                f.record(i < 50);
            }
            f.rejection_probability()
        };
        let base = (100.0 - 50.0 / 0.95) / 101.0;
        assert_eq!(with(|_| {}), base);
        assert_eq!(with(|c| c.aggression = 2.0), base.powf(0.5));
        assert_eq!(with(|c| c.aggression = 0.5), base);
        assert_eq!(with(|c| c.sr_threshold = 50.0), 0.0);
        // 100 requests over 30 s is 3 per second.
        assert_eq!(with(|c| c.rps_threshold = 3), base);
        assert_eq!(with(|c| c.rps_threshold = 4), 0.0);
    }

    #[test]
    fn invalid_settings_name_the_field() {
        let clock = FakeClock::new();
        let bad = |edit: fn(&mut AdmissionControlConfig)| {
            let mut c = AdmissionControlConfig::default();
            edit(&mut c);
            AdmissionControl::new(c, clock.clone()).unwrap_err().field
        };
        assert_eq!(
            bad(|c| c.sampling_window = Duration::ZERO),
            "sampling_window"
        );
        assert_eq!(
            bad(|c| c.sampling_window = Duration::from_millis(1500)),
            "sampling_window"
        );
        assert_eq!(bad(|c| c.sr_threshold = 0.0), "sr_threshold");
        assert_eq!(bad(|c| c.aggression = f64::INFINITY), "aggression");
        assert_eq!(
            bad(|c| c.max_rejection_probability = 101.0),
            "max_rejection_probability"
        );
    }
}
