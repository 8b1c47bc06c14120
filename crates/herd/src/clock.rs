//! Time, injected.
//!
//! Nothing in herd's core reads the wall clock or `Instant::now()` directly: budgets, breakers
//! and retry loops ask a [`Clock`]. Production code uses [`SystemClock`] (a monotonic
//! [`Instant`] since the clock was made); tests and the storm simulator use [`FakeClock`],
//! whose clones share one time that only moves when told to. That is what lets a test check a
//! ten-second deadline in microseconds, and what lets the simulator drive a retry budget step
//! by step (the same idea as governor's `clock.rs`).
//!
//! A clock reports a [`Duration`] since *its own* epoch, not an `Instant`: a fake clock can
//! then start at zero, be set to any step, and be shared across threads as one atomic word.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::clock::{Clock, FakeClock};
//!
//! let clock = FakeClock::new();
//! let shared = clock.clone();
//! clock.advance(Duration::from_secs(3));
//! assert_eq!(shared.now(), Duration::from_secs(3)); // clones share time
//! shared.set(Duration::from_millis(500));
//! assert_eq!(clock.now(), Duration::from_millis(500));
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A monotonic source of time: the [`Duration`] elapsed since the clock's own epoch.
///
/// Clones must observe the same time (a clock is a cheap handle). `now` must never go
/// backwards for [`SystemClock`]; a [`FakeClock`] goes where its owner sets it, and every user
/// of a clock in herd tolerates a step back without panicking.
pub trait Clock: Clone + Send + Sync + 'static {
    /// Time since this clock's epoch.
    fn now(&self) -> Duration;

    /// The wall-clock time now, used only to turn an HTTP-date (`Retry-After: Wed, 21 Oct
    /// 2026 07:28:00 GMT`) into a delay. [`SystemClock`] reads the system time; a
    /// [`FakeClock`] answers [`FakeClock::wall_epoch`] plus its own time, so tests of date
    /// parsing are deterministic.
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The real monotonic clock: time since the handle was created, from [`Instant`].
///
/// # Examples
///
/// ```
/// use herd::clock::{Clock, SystemClock};
/// let clock = SystemClock::new();
/// let a = clock.now();
/// assert!(clock.now() >= a);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    epoch: Instant,
}

impl SystemClock {
    /// A clock whose epoch is now.
    #[must_use]
    pub fn new() -> Self {
        Self {
            epoch: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }
}

/// A clock that moves only when told to. Clones share the time (one `Arc<AtomicU64>` of
/// nanoseconds), so a test, a budget and a retry loop can all hold a handle.
///
/// The time saturates at `u64::MAX` nanoseconds (about 584 years) instead of wrapping.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use herd::clock::{Clock, FakeClock};
///
/// let clock = FakeClock::at(Duration::from_secs(10));
/// clock.advance(Duration::from_millis(250));
/// assert_eq!(clock.now(), Duration::from_millis(10_250));
/// ```
#[derive(Clone, Debug, Default)]
pub struct FakeClock {
    nanos: Arc<AtomicU64>,
}

impl FakeClock {
    /// The wall-clock time a fake clock reports at its own time zero:
    /// 2026-01-01T00:00:00Z.
    pub const WALL_EPOCH_SECS: u64 = 1_767_225_600;

    /// The wall-clock time a fake clock reports at its own time zero, as a [`SystemTime`].
    #[must_use]
    pub fn wall_epoch() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(Self::WALL_EPOCH_SECS)
    }

    /// A fake clock at time zero.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A fake clock at time `start`.
    #[must_use]
    pub fn at(start: Duration) -> Self {
        let clock = Self::new();
        clock.set(start);
        clock
    }

    /// Moves time forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        let by = saturating_nanos(by);
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Sets the time (forwards or backwards).
    pub fn set(&self, to: Duration) {
        self.nanos.store(saturating_nanos(to), Ordering::Release);
    }
}

impl Clock for FakeClock {
    #[inline]
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Acquire))
    }

    fn wall(&self) -> SystemTime {
        let epoch = Self::wall_epoch();
        epoch.checked_add(self.now()).unwrap_or(epoch)
    }
}

/// A duration in nanoseconds, saturating at `u64::MAX`.
#[inline]
pub(crate) fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_saturates_instead_of_wrapping() {
        let clock = FakeClock::at(Duration::from_nanos(u64::MAX - 5));
        clock.advance(Duration::from_secs(1));
        assert_eq!(clock.now(), Duration::from_nanos(u64::MAX));
        clock.set(Duration::MAX);
        assert_eq!(clock.now(), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn fake_clock_is_shared_across_threads() {
        let clock = FakeClock::new();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = clock.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.advance(Duration::from_nanos(1));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(clock.now(), Duration::from_nanos(4000));
    }

    #[test]
    fn fake_wall_clock_follows_fake_time() {
        let clock = FakeClock::new();
        clock.advance(Duration::from_secs(60));
        let since = clock.wall().duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(since.as_secs(), FakeClock::WALL_EPOCH_SECS + 60);
    }
}
