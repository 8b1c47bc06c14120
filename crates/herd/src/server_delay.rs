//! The server's delay: how long to wait when the server said when to come back, or to stop.
//!
//! A server that answers `Retry-After: 30` or `grpc-retry-pushback-ms: 250` knows more than any
//! backoff rule, so its delay is a floor the client never undercuts. But a delay is input from
//! the network, not configuration, and two things can go wrong with honouring it blindly:
//!
//! - **It is too long.** A delay longer than the policy's
//!   [`max_server_delay`](ServerDelayLimits::max_server_delay), or longer than what is left of
//!   the call's deadline, cannot be honoured. Waiting *less* than asked would send the retry
//!   into a server that said it is not ready, so the call **stops** instead
//!   ([`ServerStop::TooLong`], [`ServerStop::PastDeadline`]). It is never clamped downwards.
//! - **It is zero** (`Retry-After: 0`, or an HTTP-date already past because of clock skew).
//!   Every client told "now" would come back in the same instant. So a `Retry-After` is a
//!   floor *under the rule's own pause*: the client waits `max(rule pause, delay)` plus a
//!   random extra of up to [`jitter`](ServerDelayLimits::jitter_ppm) of that wait. The rule's
//!   pause is already spread (it is the client's own jitter), and the extra spreads a herd
//!   that was told the same long delay.
//!
//! gRPC pushback follows gRPC proposal A6 instead: the client retries after *exactly* the
//! pushback (the server is pacing its clients itself; no jitter, no rule floor), and the
//! backoff sequence starts over afterwards (the policy resets its rule state, as grpc-go
//! does). A negative or malformed pushback means "do not retry" ([`ServerStop::DoNotRetry`]).
//!
//! The decision is one pure function, `decide`, shared by the retry loops and the storm
//! simulator so that the two cannot drift. It reads no clock, allocates nothing, and does
//! exact integer arithmetic on nanoseconds. [`RetryPolicy`](crate::RetryPolicy) applies it
//! for you; it is public only with the `sim` feature, for the simulator.
//!
//! # Examples
//!
//! What `decide` gives (feature `sim`):
//!
//! ```
//! use std::time::Duration;
//! use herd::rng::SplitMix64;
//! use herd::server_delay::{decide, ServerDelay, ServerDelayLimits, ServerStop, ServerWait};
//!
//! let limits = ServerDelayLimits::new(Duration::from_secs(60), 0.1)?;
//! let mut rng = SplitMix64::new(1);
//! let rule_pause = Duration::from_millis(200);
//!
//! // Told 30 s: between 30 and 33 s, never earlier.
//! let ServerWait::Wait(w) = decide(rule_pause, ServerDelay::RetryAfter(Duration::from_secs(30)), None, &limits, &mut rng)
//! else { unreachable!() };
//! assert!(w >= Duration::from_secs(30) && w <= Duration::from_secs(33));
//!
//! // Told an hour, with a 60 s limit: stop rather than come back early.
//! assert_eq!(
//!     decide(rule_pause, ServerDelay::RetryAfter(Duration::from_secs(3600)), None, &limits, &mut rng),
//!     ServerWait::Stop(ServerStop::TooLong)
//! );
//!
//! // Told "now": the rule's pause (plus up to 10 % of it), not the same instant as everyone.
//! let ServerWait::Wait(w) = decide(rule_pause, ServerDelay::RetryAfter(Duration::ZERO), None, &limits, &mut rng)
//! else { unreachable!() };
//! assert!(w >= rule_pause && w <= Duration::from_millis(220));
//!
//! // gRPC pushback: exactly the pushback.
//! assert_eq!(
//!     decide(rule_pause, ServerDelay::Pushback(Duration::from_millis(250)), None, &limits, &mut rng),
//!     ServerWait::Wait(Duration::from_millis(250))
//! );
//! # Ok::<(), herd::policy::InvalidPolicy>(())
//! ```

use std::fmt;
use std::time::Duration;

use crate::invalid_policy::InvalidPolicy;
use crate::rng::Rng;

/// What the server said about when to come back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerDelay {
    /// HTTP `Retry-After` (either form, already turned into a delay): a floor under the
    /// rule's pause, jittered upwards.
    RetryAfter(Duration),
    /// gRPC `grpc-retry-pushback-ms` with a non-negative value: retry after exactly this
    /// delay, then restart the backoff sequence.
    Pushback(Duration),
    /// gRPC pushback with a negative or malformed value: do not retry.
    DoNotRetry,
}

impl ServerDelay {
    /// The delay asked for, if the server asked for one.
    #[must_use]
    pub const fn delay(self) -> Option<Duration> {
        match self {
            ServerDelay::RetryAfter(d) | ServerDelay::Pushback(d) => Some(d),
            ServerDelay::DoNotRetry => None,
        }
    }
}

/// Why a server delay ends the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerStop {
    /// The delay is longer than [`ServerDelayLimits::max_server_delay`].
    TooLong,
    /// The delay does not end before the deadline (less the time an attempt needs).
    PastDeadline,
    /// The server asked not to be retried (a negative or malformed gRPC pushback).
    DoNotRetry,
}

/// What to do about a server delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerWait {
    /// Wait this long, then retry.
    Wait(Duration),
    /// Do not retry.
    Stop(ServerStop),
}

/// The limits on honouring server delays: the longest delay honoured and the jitter added to
/// a `Retry-After` wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ServerDelayLimits {
    max_server_delay: Duration,
    jitter_ppm: u32,
}

const PPM: u32 = 1_000_000;

impl ServerDelayLimits {
    /// Delays up to `max_server_delay` are honoured; a `Retry-After` wait gets a random extra
    /// of up to `jitter` (a fraction in `[0, 1]`, kept to millionths) of itself.
    ///
    /// # Errors
    ///
    /// [`InvalidPolicy::ServerDelayJitter`] if `jitter` is not in `[0, 1]`.
    pub fn new(max_server_delay: Duration, jitter: f64) -> Result<Self, InvalidPolicy> {
        if !(0.0..=1.0).contains(&jitter) {
            return Err(InvalidPolicy::ServerDelayJitter(jitter));
        }
        Ok(Self {
            max_server_delay,
            jitter_ppm: (jitter * f64::from(PPM)).round() as u32,
        })
    }

    /// The longest delay honoured; a longer one stops the call.
    #[must_use]
    pub const fn max_server_delay(&self) -> Duration {
        self.max_server_delay
    }

    /// The jitter fraction, in millionths (`100_000` is 10 %).
    #[must_use]
    pub const fn jitter_ppm(&self) -> u32 {
        self.jitter_ppm
    }
}

impl Default for ServerDelayLimits {
    /// 60 s, 10 % jitter.
    fn default() -> Self {
        Self {
            max_server_delay: Duration::from_secs(60),
            jitter_ppm: PPM / 10,
        }
    }
}

impl fmt::Display for ServerStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerStop::TooLong => "server delay longer than max_server_delay",
            ServerStop::PastDeadline => "server delay ends past the deadline",
            ServerStop::DoNotRetry => "server asked not to retry",
        })
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

crate::sim_pub! {
    /// Decides what a server delay leads to: a wait, or a stop.
    ///
    /// - `rule_pause`: the pause the backoff rule drew for this failure (the caller draws it
    ///   before calling; it is only used for [`ServerDelay::RetryAfter`]).
    /// - `delay`: what the server said.
    /// - `left`: the longest wait after which another attempt is still worth starting — the time
    ///   left before the deadline, less any minimum an attempt needs — or `None` without a
    ///   deadline.
    /// - `limits`: the longest delay honoured and the `Retry-After` jitter.
    /// - `rng`: the jitter's source.
    ///
    /// In this order:
    ///
    /// 1. [`ServerDelay::DoNotRetry`] gives `Stop(DoNotRetry)`.
    /// 2. A delay longer than `limits.max_server_delay()`: `Stop(TooLong)`.
    /// 3. With a deadline, a delay `>= left`: `Stop(PastDeadline)` (a wait must end strictly
    ///    before the point past which no attempt is worth starting).
    /// 4. [`ServerDelay::Pushback`]: `Wait(delay)`, exactly.
    /// 5. [`ServerDelay::RetryAfter`]: `base = max(rule_pause, delay)`,
    ///    `spread = floor(base · jitter_ppm / 10^6)` (exact, in 128-bit integer nanoseconds,
    ///    saturated to `u64`), `extra = rng.range_inclusive(0, spread)`, and
    ///    `Wait(min(base + extra, left − 1 ns))` (saturating; without a deadline, no cut).
    ///    Since `delay < left`, the wait is never shorter than the delay: the cut at the
    ///    deadline only trims the rule's floor or the jitter.
    ///
    /// **What is drawn from `rng`:** exactly one call of
    /// [`Rng::range_inclusive`]`(0, spread)` in case 5 (which takes one word, rarely more, as
    /// [`Rng::below`] documents — even when `spread` is 0), and nothing in cases 1–4.
    ///
    /// All arithmetic is on `u64` nanoseconds (durations beyond 584 years saturate), with no
    /// floating point and no allocation, so a step-based simulator can call it with
    /// `Duration::from_nanos` and get the very waits the retry loops get.
    #[must_use]
    pub fn decide<R: Rng + ?Sized>(
        rule_pause: Duration,
        delay: ServerDelay,
        left: Option<Duration>,
        limits: &ServerDelayLimits,
        rng: &mut R,
    ) -> ServerWait {
        let (asked, jittered) = match delay {
            ServerDelay::DoNotRetry => return ServerWait::Stop(ServerStop::DoNotRetry),
            ServerDelay::RetryAfter(d) => (d, true),
            ServerDelay::Pushback(d) => (d, false),
        };
        if asked > limits.max_server_delay {
            return ServerWait::Stop(ServerStop::TooLong);
        }
        if left.is_some_and(|left| asked >= left) {
            return ServerWait::Stop(ServerStop::PastDeadline);
        }
        if !jittered {
            return ServerWait::Wait(asked);
        }
        let base = nanos(rule_pause).max(nanos(asked));
        let spread = u128::from(base) * u128::from(limits.jitter_ppm) / u128::from(PPM);
        let spread = u64::try_from(spread).unwrap_or(u64::MAX);
        let extra = rng.range_inclusive(0, spread);
        let mut wait = base.saturating_add(extra);
        if let Some(left) = left {
            // `asked < left`, so `left` is at least 1 ns and the cut stays at or above `asked`.
            wait = wait.min(nanos(left) - 1);
        }
        ServerWait::Wait(Duration::from_nanos(wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    const MS: Duration = Duration::from_millis(1);
    const S: Duration = Duration::from_secs(1);

    fn limits() -> ServerDelayLimits {
        ServerDelayLimits::new(60 * S, 0.1).unwrap()
    }

    fn wait(w: ServerWait) -> Duration {
        match w {
            ServerWait::Wait(d) => d,
            ServerWait::Stop(s) => panic!("stopped: {s}"),
        }
    }

    #[test]
    fn a_delay_past_the_limit_stops_instead_of_coming_back_early() {
        // Regression: `Retry-After: 3600` with a 60 s limit used to come back after 54–60 s.
        let mut rng = SplitMix64::new(1);
        for d in [61 * S, 3600 * S, Duration::MAX] {
            for delay in [ServerDelay::RetryAfter(d), ServerDelay::Pushback(d)] {
                assert_eq!(
                    decide(MS, delay, None, &limits(), &mut rng),
                    ServerWait::Stop(ServerStop::TooLong)
                );
            }
        }
        // Exactly the limit is honoured.
        assert!(
            wait(decide(
                MS,
                ServerDelay::RetryAfter(60 * S),
                None,
                &limits(),
                &mut rng
            )) >= 60 * S
        );
    }

    #[test]
    fn a_delay_that_does_not_end_before_the_deadline_stops() {
        let mut rng = SplitMix64::new(1);
        for delay in [
            ServerDelay::RetryAfter(10 * S),
            ServerDelay::Pushback(10 * S),
        ] {
            assert_eq!(
                decide(MS, delay, Some(10 * S), &limits(), &mut rng),
                ServerWait::Stop(ServerStop::PastDeadline)
            );
            assert!(matches!(
                decide(
                    MS,
                    delay,
                    Some(10 * S + Duration::from_nanos(1)),
                    &limits(),
                    &mut rng
                ),
                ServerWait::Wait(_)
            ));
        }
    }

    #[test]
    fn the_wait_is_cut_at_the_deadline_but_never_below_the_delay() {
        let mut rng = SplitMix64::new(3);
        let left = 10 * S + MS;
        for _ in 0..1000 {
            let w = wait(decide(
                MS,
                ServerDelay::RetryAfter(10 * S),
                Some(left),
                &limits(),
                &mut rng,
            ));
            assert!(w >= 10 * S && w < left, "{w:?}");
        }
        // A rule pause longer than what is left is cut too.
        let w = wait(decide(
            20 * S,
            ServerDelay::RetryAfter(S),
            Some(5 * S),
            &limits(),
            &mut rng,
        ));
        assert_eq!(w, 5 * S - Duration::from_nanos(1));
    }

    #[test]
    fn a_zero_delay_spreads_clients_by_the_rule_pause() {
        // Regression: the jitter used to be 10 % of 0, so every client told "0" came back at
        // once.
        let mut rng = SplitMix64::new(4);
        let rule = crate::Rule::full(100 * MS, 10 * S).unwrap();
        let waits: std::collections::BTreeSet<Duration> = (0..1000)
            .map(|_| {
                let pause = rule.pause(&mut crate::RuleState::default(), &mut rng);
                wait(decide(
                    pause,
                    ServerDelay::RetryAfter(Duration::ZERO),
                    None,
                    &limits(),
                    &mut rng,
                ))
            })
            .collect();
        assert!(waits.len() > 990, "only {} distinct waits", waits.len());
        // And the floor is the larger of the two, plus at most 10 %.
        for _ in 0..1000 {
            let w = wait(decide(
                2 * S,
                ServerDelay::RetryAfter(S),
                None,
                &limits(),
                &mut rng,
            ));
            assert!(w >= 2 * S && w <= 2200 * MS, "{w:?}");
        }
    }

    #[test]
    fn pushback_is_exact_and_draws_nothing() {
        let mut rng = SplitMix64::new(5);
        let before = rng.clone();
        assert_eq!(
            decide(
                7 * S,
                ServerDelay::Pushback(250 * MS),
                None,
                &limits(),
                &mut rng
            ),
            ServerWait::Wait(250 * MS)
        );
        assert_eq!(
            decide(
                7 * S,
                ServerDelay::Pushback(Duration::ZERO),
                None,
                &limits(),
                &mut rng
            ),
            ServerWait::Wait(Duration::ZERO)
        );
        assert_eq!(
            decide(MS, ServerDelay::DoNotRetry, None, &limits(), &mut rng),
            ServerWait::Stop(ServerStop::DoNotRetry)
        );
        assert_eq!(rng, before);
    }

    #[test]
    fn retry_after_draws_exactly_one_range_and_matches_the_documented_formula() {
        let mut rng = SplitMix64::new(6);
        let mut mirror = rng.clone();
        let l = ServerDelayLimits::new(60 * S, 0.25).unwrap();
        let w = wait(decide(
            3 * S,
            ServerDelay::RetryAfter(S),
            None,
            &l,
            &mut rng,
        ));
        let base = 3_000_000_000u64;
        let extra = mirror.range_inclusive(0, base / 4);
        assert_eq!(w, Duration::from_nanos(base + extra));
        assert_eq!(rng, mirror);
        // Zero spread still draws one value.
        let l = ServerDelayLimits::new(60 * S, 0.0).unwrap();
        let w = wait(decide(
            Duration::ZERO,
            ServerDelay::RetryAfter(S),
            None,
            &l,
            &mut rng,
        ));
        assert_eq!(w, S);
        mirror.range_inclusive(0, 0);
        assert_eq!(rng, mirror);
    }

    #[test]
    fn extreme_values_never_panic() {
        let mut rng = SplitMix64::new(7);
        let l = ServerDelayLimits::new(Duration::MAX, 1.0).unwrap();
        for rule in [Duration::ZERO, Duration::MAX] {
            for d in [
                Duration::ZERO,
                Duration::from_nanos(u64::MAX),
                Duration::MAX,
            ] {
                for left in [None, Some(Duration::from_nanos(1)), Some(Duration::MAX)] {
                    let _ = decide(rule, ServerDelay::RetryAfter(d), left, &l, &mut rng);
                    let _ = decide(rule, ServerDelay::Pushback(d), left, &l, &mut rng);
                }
            }
        }
        assert!(ServerDelayLimits::new(S, 1.5).is_err());
        assert!(ServerDelayLimits::new(S, f64::NAN).is_err());
    }
}
