//! A small concurrent latency histogram that answers "what is the p-th percentile of recent
//! latencies?" for a learned hedging delay.
//!
//! # Design
//!
//! - **Buckets**: log-linear over microseconds, 16 sub-buckets per power of two (as in
//!   HdrHistogram with one significant hex digit). Latencies below 16 µs are exact; above,
//!   a bucket spans at most 1/16 of its lower bound, so a percentile read from a bucket's
//!   upper bound is at most **6.25 % above** the exact sample percentile and never below it.
//!   976 buckets cover every `u64` of microseconds; they are allocated once, at construction.
//! - **Windows**: samples go into the current window (`window` long, on the injected clock).
//!   When a window ends, its percentile becomes the published delay, read with one atomic
//!   load until the next window ends (tower's `hedge` rotates its histogram the same way).
//!   A window with fewer than `min_samples` samples keeps the previous delay.
//! - **Concurrency**: recording is one `fetch_add`; the rotation, once per window, takes a
//!   mutex (as tower's budget does to expire its slots) so exactly one thread publishes the
//!   finished window and clears it. A sample recorded by a thread that raced the rotation may
//!   land in the next window: samples are never lost, only possibly counted one window late.
//!   The loom models in `tests/loom.rs` check these promises in every interleaving of their
//!   small cases; under `cfg(loom)` the histogram has 4 buckets instead of 976 (latencies of
//!   0, 1 and 2 µs exact, the rest in the last bucket), so that every rotation is short
//!   enough to explore.

use std::time::Duration;

use crate::clock::saturating_nanos;
use crate::sync::{AtomicU64, Mutex, Ordering, lock};

/// Sub-buckets per power of two, as a power of two.
#[cfg(not(loom))]
const SUB_BITS: u32 = 4;
/// The model checks' layout: 2 exact buckets, then 2 per power of two.
#[cfg(loom)]
const SUB_BITS: u32 = 1;
const SUB: u64 = 1 << SUB_BITS;
/// 16 exact buckets, then 16 per power of two from 2^4 to 2^63.
#[cfg(not(loom))]
pub(crate) const BUCKETS: usize = (SUB + (64 - SUB_BITS as u64) * SUB) as usize;
/// Buckets 0, 1 and 2 µs, then everything from 3 µs on in the last one.
#[cfg(loom)]
pub(crate) const BUCKETS: usize = 4;
/// Published when no window has had enough samples yet.
const UNSET: u64 = u64::MAX;

/// The bucket of a latency of `micros` microseconds.
#[inline]
pub(crate) fn bucket_of(micros: u64) -> usize {
    if micros < SUB {
        return micros as usize;
    }
    let e = 63 - micros.leading_zeros(); // >= SUB_BITS
    let sub = (micros >> (e - SUB_BITS)) & (SUB - 1);
    let bucket = (SUB + u64::from(e - SUB_BITS) * SUB + sub) as usize;
    #[cfg(loom)]
    let bucket = bucket.min(BUCKETS - 1);
    bucket
}

/// The largest latency (µs) that falls into `bucket`.
pub(crate) fn bucket_upper(bucket: usize) -> u64 {
    let b = bucket as u64;
    if bucket == BUCKETS - 1 {
        return u64::MAX;
    }
    if b < SUB {
        return b;
    }
    let e = (b - SUB) / SUB + u64::from(SUB_BITS);
    let sub = (b - SUB) % SUB;
    let width = 1u64 << (e - u64::from(SUB_BITS));
    ((SUB + sub) << (e - u64::from(SUB_BITS))).saturating_add(width - 1)
}

/// A windowed latency histogram shared by every call of a hedging policy.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use herd::hedge::LatencyHistogram;
///
/// let h = LatencyHistogram::new(0.9, Duration::from_secs(1), 10);
/// for ms in 1..=100 {
///     h.record(Duration::from_millis(500), Duration::from_millis(ms));
/// }
/// assert_eq!(h.percentile(), None); // the first window is not over yet
/// h.record(Duration::from_millis(1500), Duration::from_millis(7)); // the next window starts
/// let p90 = h.percentile().unwrap();
/// assert!(p90 >= Duration::from_millis(90) && p90 <= Duration::from_micros(90_000 * 1_0625 / 1_0000));
/// ```
pub struct LatencyHistogram {
    counts: Box<[AtomicU64]>,
    /// The window (time since the clock's epoch divided by `window`) being recorded.
    window_index: AtomicU64,
    /// When that window ends, in nanoseconds on the clock (saturating): `roll` compares with
    /// it rather than dividing on every sample.
    window_end: AtomicU64,
    /// The published percentile in microseconds, or `UNSET`.
    published: AtomicU64,
    rotation: Mutex<()>,
    /// Which percentile, in millionths (exact integer ranks).
    quantile_ppm: u64,
    window_nanos: u64,
    min_samples: u64,
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("quantile_ppm", &self.quantile_ppm)
            .field("window_nanos", &self.window_nanos)
            .field("min_samples", &self.min_samples)
            .field("percentile", &self.percentile())
            .finish_non_exhaustive()
    }
}

impl LatencyHistogram {
    /// A histogram that publishes the `quantile` (in `(0, 1)`, e.g. `0.95`) of each `window`
    /// of samples that holds at least `min_samples` of them. The arguments are validated by
    /// [`HedgeDelay`](super::HedgeDelay)'s constructor; here they are clamped into range.
    #[must_use]
    pub fn new(quantile: f64, window: Duration, min_samples: u64) -> Self {
        let quantile = if quantile.is_finite() {
            quantile.clamp(0.000_001, 0.999_999)
        } else {
            0.95
        };
        let window_nanos = saturating_nanos(window).max(1);
        Self {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            window_index: AtomicU64::new(0),
            window_end: AtomicU64::new(window_nanos),
            published: AtomicU64::new(UNSET),
            rotation: Mutex::new(()),
            quantile_ppm: (quantile * 1e6).round() as u64,
            window_nanos,
            min_samples: min_samples.max(1),
        }
    }

    /// Records one latency, observed at time `now` (on the policy's clock). One atomic add,
    /// plus the rotation when a window has ended; never allocates.
    #[inline]
    pub fn record(&self, now: Duration, latency: Duration) {
        self.roll(now);
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.counts[bucket_of(micros)].fetch_add(1, Ordering::Relaxed);
    }

    /// Publishes the finished window if `now` lies past it.
    #[inline]
    pub fn roll(&self, now: Duration) {
        let nanos = saturating_nanos(now);
        // A stale (smaller) end read here only sends this thread to the lock, where the
        // window index decides.
        if nanos >= self.window_end.load(Ordering::Acquire) {
            self.rotate(nanos / self.window_nanos);
        }
    }

    #[cold]
    fn rotate(&self, index: u64) {
        let _guard = lock(&self.rotation);
        let current = self.window_index.load(Ordering::Acquire);
        if index <= current {
            return; // another thread rotated first
        }
        // Take the finished window's counts, leaving the buckets empty for the next one.
        let mut total = 0u64;
        let mut taken = [0u64; BUCKETS];
        for (slot, c) in taken.iter_mut().zip(self.counts.iter()) {
            *slot = c.swap(0, Ordering::AcqRel);
            total += *slot;
        }
        // Only a window that just ended is published; one older than that (a gap with no
        // samples recorded) is stale.
        if index == current + 1
            && total >= self.min_samples
            && let Some(p) = percentile_of(&taken, total, self.quantile_ppm)
        {
            self.published.store(p, Ordering::Release);
        }
        self.window_index.store(index, Ordering::Release);
        self.window_end.store(
            index.saturating_add(1).saturating_mul(self.window_nanos),
            Ordering::Release,
        );
    }

    /// The published percentile of the last finished window with enough samples, if any.
    #[must_use]
    pub fn percentile(&self) -> Option<Duration> {
        match self.published.load(Ordering::Acquire) {
            UNSET => None,
            micros => Some(Duration::from_micros(micros)),
        }
    }

    /// The samples recorded in the current window so far (for tests and metrics).
    #[must_use]
    pub fn current_count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// The upper bound (µs) of the bucket holding the sample of rank `ceil(q · total)`.
fn percentile_of(counts: &[u64], total: u64, quantile_ppm: u64) -> Option<u64> {
    if total == 0 {
        return None;
    }
    // Rank (1-based) of the percentile sample, in exact integers: ceil(total · q).
    let rank = (u128::from(total) * u128::from(quantile_ppm)).div_ceil(1_000_000);
    let rank = u64::try_from(rank).unwrap_or(total).clamp(1, total);
    let mut seen = 0u64;
    for (bucket, &c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(bucket_upper(bucket));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_within_a_sixteenth() {
        let mut expected_lower = 0u64;
        for b in 0..BUCKETS {
            let upper = bucket_upper(b);
            assert_eq!(bucket_of(expected_lower), b, "lower bound of bucket {b}");
            assert_eq!(bucket_of(upper), b, "upper bound of bucket {b}");
            if expected_lower >= SUB {
                // width / lower <= 1/16
                assert!(
                    (upper - expected_lower + 1) * SUB <= expected_lower,
                    "bucket {b}"
                );
            }
            if upper == u64::MAX {
                assert_eq!(b, BUCKETS - 1);
                break;
            }
            expected_lower = upper + 1;
        }
    }

    #[test]
    fn percentile_matches_a_sorted_reference_within_the_bucket_error() {
        let mut rng = crate::rng::SplitMix64::new(11);
        use crate::rng::Rng;
        for q_ppm in [500_000u64, 900_000, 990_000, 999_000] {
            let samples: Vec<u64> = (0..10_000)
                .map(|_| {
                    let bits = 1 + rng.below(30);
                    1 + rng.below(1 << bits)
                })
                .collect();
            let mut counts = vec![0u64; BUCKETS];
            for &s in &samples {
                counts[bucket_of(s)] += 1;
            }
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            let rank = (sorted.len() as u64 * q_ppm).div_ceil(1_000_000) as usize;
            let exact = sorted[rank - 1];
            let got = percentile_of(&counts, sorted.len() as u64, q_ppm).unwrap();
            assert!(got >= exact, "q {q_ppm}: {got} < exact {exact}");
            assert!(
                got * 16 <= exact * 17,
                "q {q_ppm}: {got} more than 1/16 over {exact}"
            );
        }
    }

    #[test]
    fn a_sparse_window_keeps_the_previous_delay_and_a_gap_is_not_published() {
        let h = LatencyHistogram::new(0.5, Duration::from_secs(1), 3);
        let ms = Duration::from_millis;
        for l in [10, 20, 30] {
            h.record(ms(100), ms(l));
        }
        h.roll(ms(1000));
        let first = h.percentile().unwrap();
        assert!(first >= ms(20) && first <= ms(22), "{first:?}");
        h.record(ms(1100), ms(900)); // one sample: too few
        h.roll(ms(2000));
        assert_eq!(h.percentile(), Some(first));
        for l in [1, 2, 3] {
            h.record(ms(2100), ms(l));
        }
        h.roll(ms(9000)); // the window ending at 3 s is long gone: stale, not published
        assert_eq!(h.percentile(), Some(first));
        assert_eq!(h.current_count(), 0);
    }

    #[test]
    fn four_threads_lose_no_sample() {
        let h = std::sync::Arc::new(LatencyHistogram::new(0.5, Duration::from_secs(3600), 1));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        h.record(Duration::ZERO, Duration::from_micros(t * 1000 + i % 7));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(h.current_count(), 40_000);
        h.roll(Duration::from_secs(3600));
        // Half the samples are thread 0's and 1's (< 1.01 ms), so the median is below that.
        let median = h.percentile().unwrap();
        assert!(
            median >= Duration::from_micros(1000) && median < Duration::from_micros(1040),
            "{median:?}"
        );
    }
}
