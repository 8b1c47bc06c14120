//! The arithmetic of two rules that real systems ship, kept apart so that each line can be
//! read beside the source it follows.
//!
//! **`grpc-retry`**, gRPC's retry backoff. gRFC A6 (grpc/proposal `A6-client-retries.md`,
//! "Exponential Backoff") first specified `random(0, min(initialBackoff ·
//! backoffMultiplier^(n−1), maxBackoff))`; the implementations jitter by ±20 % instead:
//! grpc-go `stream.go` (`csAttempt.shouldRetry`) computes
//! `cur := min(float64(rp.InitialBackoff)*fact, float64(rp.MaxBackoff))`, then
//! `cur *= 0.8 + 0.4*rand.Float64()` and `dur = time.Duration(int64(cur))`, and gRPC core's
//! retry filter builds its `BackOff` with a jitter of 0.2. herd follows the code: `c ·
//! ((1 − jitter) + 2 · jitter · u)` with `u` uniform on `[0, 1)`, so that jitter 0.2 is
//! grpc-go's `0.8 + 0.4 · u` to the last bit; the jittered pause is not capped again, so it
//! reaches `1.2 · maxBackoff`. `fact` is `multiplier^numRetriesSincePushback`; herd multiplies
//! the current backoff by the multiplier after each failure (then caps it), which differs
//! from `math.Pow` only in the last bits. gRPC Java (`RetriableStream.java`) still draws
//! `nextBackoffIntervalNanos · random.nextDouble()`, the first A6 formula: herd's `full` rule
//! when the multiplier is 2.
//!
//! **`randomized`**, Resilience4j's exponential random backoff (resilience4j-core
//! `io/github/resilience4j/core/IntervalFunction.java`, `ofExponentialRandomBackoff` with a
//! maximum): the interval starts at `initialIntervalMillis` and each step is
//! `x -> (long) (x * multiplier)`; the wait is `Math.min((long) randomize(interval, f),
//! maxIntervalMillis)` where `IntervalFunctionCompanion.randomize` returns `min + random ·
//! (max − min)` with `min = current − f · current`, `max = current + f · current`. The
//! interval is never capped, so once `interval · (1 − f)` passes the maximum every wait *is*
//! the maximum: the jitter is gone. herd computes the same in nanoseconds where Resilience4j
//! truncates to whole milliseconds (each truncation moves a pause by under a millisecond).
use crate::rng::Rng;

use super::InvalidRule;

/// Both rules take a finite multiplier above 0 (A6 and Resilience4j both accept one below 1,
/// a shrinking backoff) and a jitter fraction in `[0, 1]`.
pub(super) fn check(multiplier: f64, jitter: f64) -> Result<(), InvalidRule> {
    if !multiplier.is_finite() || multiplier <= 0.0 {
        return Err(InvalidRule::Multiplier(multiplier));
    }
    if !(0.0..=1.0).contains(&jitter) {
        return Err(InvalidRule::Jitter(jitter));
    }
    Ok(())
}

/// The factor `(1 − jitter) + 2 · jitter · u` of `grpc-retry`, non-decreasing in `u`.
#[inline(always)]
fn spread(jitter: f64, u: f64) -> f64 {
    (1.0 - jitter) + 2.0 * jitter * u
}

/// The largest `grpc-retry` pause: the current backoff is at most `cap` and the factor at
/// most its value at `u = 1`, and every operation is monotone, so no pause exceeds this.
pub(super) fn grpc_retry_top(cap: u64, jitter: f64) -> u64 {
    (cap as f64 * spread(jitter, 1.0)) as u64
}

/// One `grpc-retry` pause from the current backoff `current` (nanoseconds, at most `cap`):
/// the pause, and the next current backoff.
#[inline(always)]
pub(super) fn grpc_retry<R: Rng + ?Sized>(
    current: f64,
    cap: u64,
    multiplier: f64,
    jitter: f64,
    rng: &mut R,
) -> (u64, f64) {
    let u = rng.next_f64();
    // `as` saturates, so no overflow is possible.
    let pause = (current * spread(jitter, u)) as u64;
    (pause, (current * multiplier).min(cap as f64))
}

/// One `randomized` pause from the interval `interval` (nanoseconds, uncapped): the pause,
/// and the next interval `⌊interval · multiplier⌋` (saturating).
#[inline(always)]
pub(super) fn randomized<R: Rng + ?Sized>(
    interval: u64,
    cap: u64,
    multiplier: f64,
    jitter: f64,
    rng: &mut R,
) -> (u64, u64) {
    let current = interval as f64;
    let delta = jitter * current;
    let (min, max) = (current - delta, current + delta);
    let u = rng.next_f64();
    let pause = ((min + u * (max - min)) as u64).min(cap);
    (pause, (current * multiplier) as u64)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::rng::SplitMix64;
    use crate::{Rule, RuleName, RuleParams, RuleState};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// grpc-go's sequence for the A6 example policy (0.1 s, 1 s, ×2), computed as grpc-go
    /// does with `math.Pow`: every pause within ±20 % of `min(0.1 · 2^n, 1)` s.
    #[test]
    fn grpc_retry_follows_grpc_go_bounds() {
        let rule = Rule::grpc_retry(ms(100), 2.0, 0.2, ms(1000)).unwrap();
        let mut rng = SplitMix64::new(5);
        for run in 0..200 {
            let mut state = RuleState::default();
            for n in 0..12 {
                let cur = (0.1e9 * 2f64.powi(n)).min(1e9);
                let p = rule.pause_nanos(&mut state, &mut rng) as f64;
                assert!(
                    p >= (cur * 0.8).floor() && p < cur * 1.2,
                    "run {run}, n {n}: {p}"
                );
            }
        }
        assert_eq!(rule.max_pause(), Duration::from_millis(1200));
    }

    /// The spread is grpc-go's `0.8 + 0.4 · u` bit for bit when the jitter is 0.2.
    #[test]
    fn grpc_retry_factor_is_grpc_go_s() {
        for u in [0.0, 0.25, 0.5, 0.999_999_9, 1.0 - f64::EPSILON] {
            assert_eq!(super::spread(0.2, u).to_bits(), (0.8 + 0.4 * u).to_bits());
        }
    }

    /// Resilience4j's `ofExponentialRandomBackoff(1000, 2.0, 0.5, 30000)`: intervals 1, 2, 4,
    /// 8, 16, 32, 64 s, each pause in `[i/2, 3i/2)` then capped at 30 s; from the seventh on
    /// (`64 · 0.5 = 32 > 30`) every pause is exactly the cap.
    #[test]
    fn randomized_follows_resilience4j() {
        let rule = Rule::randomized(ms(1000), 2.0, 0.5, ms(30_000)).unwrap();
        let mut rng = SplitMix64::new(8);
        let mut below_cap_at_six = 0;
        for _ in 0..500 {
            let mut state = RuleState::default();
            for n in 0..10u32 {
                let i = 1e9 * 2f64.powi(n as i32);
                let p = rule.pause_nanos(&mut state, &mut rng);
                let pf = p as f64;
                assert!(
                    pf >= (i * 0.5).min(30e9) && pf < (i * 1.5).min(30e9 + 1.0),
                    "{n}: {p}"
                );
                if n >= 6 {
                    assert_eq!(p, 30_000_000_000);
                }
                if n == 5 && p < 30_000_000_000 {
                    below_cap_at_six += 1;
                }
            }
        }
        // 32 s · [0.5, 1.5) lies below 30 s with probability 14/32: about 219 of 500 (sd 11;
        // the bounds are 6 sd away, a chance failure below 10⁻⁸ for any seed).
        assert!((150..290).contains(&below_cap_at_six), "{below_cap_at_six}");
    }

    /// Without jitter `randomized` is Resilience4j's `ofExponentialBackoff` with a maximum:
    /// `⌊⌊w · 1.5⌋ · 1.5⌋ …`, capped, and it draws a word it does not use.
    #[test]
    fn randomized_without_jitter_is_exponential_with_truncation() {
        let rule = Rule::randomized(Duration::from_nanos(1001), 1.5, 0.0, ms(1)).unwrap();
        let mut state = RuleState::default();
        let mut rng = SplitMix64::new(1);
        let got: Vec<u64> = (0..6)
            .map(|_| rule.pause_nanos(&mut state, &mut rng))
            .collect();
        // 1001, 1501 (1501.5), 2251 (2251.5), 3376 (3376.5), 5064, 7596
        assert_eq!(got, [1001, 1501, 2251, 3376, 5064, 7596]);
    }

    #[test]
    fn multipliers_below_one_shrink_and_bad_ones_are_refused() {
        let rule = Rule::grpc_retry(ms(100), 0.5, 0.0, ms(100)).unwrap();
        let pauses: Vec<u128> = rule
            .schedule(SplitMix64::new(1))
            .take(3)
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(pauses, [100, 50, 25]);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let params = RuleParams {
                multiplier: bad,
                ..RuleParams::default()
            };
            for name in [RuleName::GrpcRetry, RuleName::Randomized] {
                assert!(
                    matches!(name.build(&params), Err(crate::InvalidRule::Multiplier(_))),
                    "{name} {bad}"
                );
            }
        }
        let params = RuleParams {
            jitter: 1.5,
            ..RuleParams::default()
        };
        assert!(matches!(
            RuleName::Randomized.build(&params),
            Err(crate::InvalidRule::Jitter(_))
        ));
    }
}
