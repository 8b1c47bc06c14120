//! The latency model's draws that do not depend on the policy: the users' arrival times and
//! each server's pauses. Public so that a replay on real servers (`herd lab hedge`) meets
//! the very arrivals and pauses the simulator's run of the same seed meets (common random
//! numbers), and differs from it only in what it cannot share: service times, routing, and
//! the real world's overhead.
//!
//! The streams and the arithmetic are the engine's own (`engine::stream`, exponential draws
//! `−mean · ln(1 − u)` rounded to whole nanoseconds, at least 1); a test replays a
//! one-server run from these draws and gets the engine's latencies, nanosecond for
//! nanosecond.
use std::collections::VecDeque;

use herd::rng::{Rng, SplitMix64};

use super::LatencyScenario;
use super::scenario::Distribution;
use super::scenario::LatencyPlan;

/// The streams of one run, by number: arrivals, routing, service times, then one per server
/// for its pauses (server `i` has `HICCUPS + i`). Every number is below 2³², so for seeds
/// below 2³² no two streams of any two runs start from the same state (docs/rng.md).
pub(crate) const ARRIVALS: u64 = 1;
/// Which server each copy goes to.
pub(crate) const ROUTING: u64 = 2;
/// Service times.
pub(crate) const SERVICE: u64 = 3;
/// The first stream of pauses.
pub(crate) const HICCUPS: u64 = 4;

/// Stream `which` of a run's `seed`: a generator seeded through a hash of both
/// (`SplitMix64::derive`). Streams seeded `seed ^ which · γ` (γ SplitMix64's increment)
/// would be the same sequence shifted by a few draws, since the state advances by γ a draw;
/// hashed seeds land at unrelated places of SplitMix64's cycle of 2⁶⁴, and a test checks
/// that no two streams of a run overlap within the draws it can make.
pub(crate) fn stream(seed: u64, which: u64) -> SplitMix64 {
    SplitMix64::derive(seed, which)
}

/// An exponential draw with the given mean, as the engine draws one: `−mean · ln(1 − u)`.
#[inline]
pub fn exponential(rng: &mut SplitMix64, mean: f64) -> f64 {
    -mean * (1.0 - rng.next_f64()).ln()
}

/// Nanoseconds, rounded (half away from zero, as `f64::round`), at least 1 (a copy always
/// takes some time), saturating at `u64::MAX / 4` from 1.8·10^19.
#[inline]
#[must_use]
pub fn to_ns(x: f64) -> u64 {
    if x < 9.2e18 {
        // The same rounding through `i64` (below 2^63), whose conversions are one
        // instruction each way on x86-64 where `u64`'s take several: a negative `x`
        // truncates towards 0 and rounds to at most 0, as `u64`'s 0 does; NaN is not here.
        let whole = x as i64;
        let rounded = whole + i64::from(x - whole as f64 >= 0.5);
        rounded.max(1) as u64
    } else if x >= 1.8e19 {
        u64::MAX / 4
    } else {
        // `x.round() as u64` without the libm call: the cast truncates (negative and NaN
        // to 0), and `x − trunc(x)` is exact for every finite double.
        let whole = x as u64;
        let rounded = if x - whole as f64 >= 0.5 {
            whole + 1
        } else {
            whole
        };
        rounded.max(1)
    }
}

/// A service time in nanoseconds, as the engine draws one: `constant` the mean,
/// `exponential` one [`exponential`] draw, `lognormal` `exp(μ + σ·z)` with
/// `μ = ln(mean) − σ²/2` (so that its mean is `mean_ns`) and one standard normal `z`.
#[inline]
pub fn service_time(
    distribution: Distribution,
    mean_ns: f64,
    sigma: f64,
    rng: &mut SplitMix64,
) -> u64 {
    match distribution {
        Distribution::Constant => to_ns(mean_ns),
        Distribution::Exponential => to_ns(exponential(rng, mean_ns)),
        Distribution::Lognormal => {
            let mu = mean_ns.ln() - sigma * sigma / 2.0;
            to_ns((mu + sigma * crate::sample::standard_normal(rng)).exp())
        }
    }
}

/// The arrival times, in nanoseconds from the run's start, of the scenario's users (warm-up
/// first), as the simulator draws them for `seed`. Not checked: give a scenario that
/// [`LatencyModel::new`](super::LatencyModel::new) accepted.
pub fn arrivals(scenario: &LatencyScenario, seed: u64) -> impl Iterator<Item = u64> {
    let total = scenario.requests.saturating_add(scenario.warmup_requests);
    times(seed, 1e9 / scenario.traffic.rate_per_s, total)
}

/// The arrival times of a checked plan's users: the engine's.
pub(crate) fn arrivals_of(plan: &LatencyPlan) -> impl Iterator<Item = u64> {
    times(plan.seed, plan.interarrival_ns, plan.warmup + plan.requests)
}

/// `total` times whose gaps are exponential draws of mean `interarrival_ns`.
fn times(seed: u64, interarrival_ns: f64, total: u64) -> impl Iterator<Item = u64> {
    let mut rng = stream(seed, ARRIVALS);
    let mut at = 0u64;
    (0..total).map(move |_| {
        at = at.saturating_add(to_ns(exponential(&mut rng, interarrival_ns)));
        at
    })
}

/// One server's pauses, as the simulator draws them: up-times exponential of mean
/// `hiccups.every_s`, each followed by a pause of `hiccups.pause_ms`.
///
/// The schedule is drawn forward, lazily, and kept from the last time asked: the engine asks
/// at times that never decrease, but a finish it asked for may lie past pauses that a copy
/// stopped early (a loser cancelled in service) leaves its server to meet.
#[derive(Clone, Debug)]
pub struct ServerPauses {
    rng: SplitMix64,
    every_ns: Option<f64>,
    pause_ns: u64,
    /// The pauses drawn that had not ended at the last time asked, as (start, end), in order.
    ahead: VecDeque<(u64, u64)>,
    /// When the last pause drawn ends (0 before the first).
    drawn_until: u64,
}

impl ServerPauses {
    /// The pauses of server `server` (from 0) for `seed`.
    #[must_use]
    pub fn new(scenario: &LatencyScenario, seed: u64, server: u32) -> Self {
        let every = scenario.hiccups.every_s;
        Self::with(
            seed,
            server,
            (every > 0.0).then_some(every * 1e9),
            (scenario.hiccups.pause_ms * 1e6).round() as u64,
        )
    }

    /// The pauses of server `server` in a checked plan's run: the engine's.
    pub(crate) fn of_plan(plan: &LatencyPlan, server: u32) -> Self {
        Self::with(plan.seed, server, plan.hiccup_every_ns, plan.hiccup_ns)
    }

    fn with(seed: u64, server: u32, every_ns: Option<f64>, pause_ns: u64) -> Self {
        Self {
            rng: stream(seed, HICCUPS + u64::from(server)),
            every_ns,
            pause_ns,
            ahead: VecDeque::new(),
            drawn_until: 0,
        }
    }

    /// The `i`-th pause not yet over, drawn if need be.
    #[inline]
    fn pause(&mut self, every: f64, i: usize) -> (u64, u64) {
        while self.ahead.len() <= i {
            let start = self
                .drawn_until
                .saturating_add(to_ns(exponential(&mut self.rng, every)));
            let end = start.saturating_add(self.pause_ns);
            self.ahead.push_back((start, end));
            self.drawn_until = end;
        }
        self.ahead[i]
    }

    /// Forgets the pauses over by `t` (times asked never decrease).
    #[inline]
    fn forget_before(&mut self, every: f64, t: u64) {
        loop {
            let (_, end) = self.pause(every, 0);
            if end > t || end == u64::MAX {
                return;
            }
            self.ahead.pop_front();
        }
    }

    /// When `work` ns of service that start at `start` finish: every pause in between stops
    /// the server, and the copy in service, for its whole length. Ask at times that never
    /// decrease.
    #[inline]
    pub fn finish(&mut self, start: u64, work: u64) -> u64 {
        let Some(every) = self.every_ns else {
            return start.saturating_add(work);
        };
        self.forget_before(every, start);
        let (mut t, mut w) = (start, work);
        for i in 0.. {
            let (pause_start, pause_end) = self.pause(every, i);
            if t >= pause_start {
                t = t.max(pause_end);
                continue;
            }
            let up = pause_start - t;
            if w <= up {
                return t + w;
            }
            w -= up;
            t = pause_end;
        }
        unreachable!("a schedule of pauses never ends")
    }

    /// When the pause under way at `t` ends, or `None` when the server is up at `t`. A
    /// paused server starts nothing: a copy that reaches it waits in its queue until then.
    /// Ask at times that never decrease.
    #[inline]
    pub fn paused_until(&mut self, t: u64) -> Option<u64> {
        let every = self.every_ns?;
        self.forget_before(every, t);
        let (start, end) = self.pause(every, 0);
        (t >= start).then_some(end)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Distribution, LatencyModel, PolicySpec};
    use super::*;

    /// Whichever conversion it takes, `to_ns` is `f64::round` (half away from zero) then a
    /// saturating cast, at least 1, and `u64::MAX / 4` from 1.8·10¹⁹ up.
    #[test]
    fn to_ns_rounds_as_f64_round_does() {
        let reference = |x: f64| {
            if x >= 1.8e19 {
                u64::MAX / 4
            } else {
                (x.round() as u64).max(1)
            }
        };
        let edges = [
            0.0,
            -0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            -0.5,
            -3.7,
            -1e300,
            4_503_599_627_370_495.5,
            9.199_999_999_999_998e18,
            9.2e18,
            9.223_372_036_854_775e18,
            1.799_999_999_999_999_8e19,
            1.8e19,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut rng = SplitMix64::new(5);
        let halves = (0..100_000).map(|_| rng.below(1 << 40) as f64 + 0.5);
        let mut rng = SplitMix64::new(6);
        // Doubles of every exponent (the sign bit cleared), NaN and infinity among them.
        let any = (0..100_000).map(|_| f64::from_bits(rng.next_u64() >> 1));
        for x in edges.into_iter().chain(halves).chain(any) {
            assert_eq!(to_ns(x), reference(x), "{x:e}");
        }
    }

    /// One server, constant service, policy none: every latency follows from the arrivals
    /// and the pauses alone, so a replay from these draws must give the engine's latencies
    /// exactly, and its busy time.
    #[test]
    fn a_replay_from_the_draws_gives_the_engines_latencies() {
        let mut s = LatencyScenario {
            requests: 400,
            warmup_requests: 0,
            policies: vec![PolicySpec {
                name: "none".into(),
                ..PolicySpec::default()
            }],
            ..LatencyScenario::default()
        };
        s.servers.count = 1;
        s.traffic.rate_per_s = 300.0;
        s.traffic.fan_out = 1;
        s.service.distribution = Distribution::Constant;
        s.service.mean_ms = 1.5;
        s.hiccups.every_s = 0.2;
        s.hiccups.pause_ms = 30.0;
        let model = LatencyModel::new(&s).unwrap();
        for seed in [1, 7, 99] {
            let (result, engine) = model.run(0, seed, crate::Watch::none()).unwrap();
            let mut pauses = ServerPauses::new(&s, seed, 0);
            let mut free = 0u64;
            let mut busy = 0u64;
            let mut replay: Vec<u64> = arrivals(&s, seed)
                .map(|a| {
                    // A paused server starts nothing: the copy starts when the pause ends.
                    let ready = a.max(free);
                    let start = pauses.paused_until(ready).unwrap_or(ready);
                    let finish = pauses.finish(start, 1_500_000);
                    busy += finish - start;
                    free = finish;
                    finish - a
                })
                .collect();
            // The server's busy time counts a pause that stops a copy in service, not one
            // before the copy starts.
            let utilisation = busy as f64 / free as f64 * 100.0;
            assert!(
                (result.utilisation_percent - utilisation).abs() < 1e-9,
                "seed {seed}: {} against {utilisation}",
                result.utilisation_percent
            );
            replay.sort_unstable();
            assert_eq!(replay, engine, "seed {seed}");
            assert!(
                replay.last().unwrap() > &30_000_000,
                "some request met a pause"
            );
        }
    }

    /// A finish asked for far ahead does not hide the pauses before it: a copy stopped in
    /// service early (a cancelled loser) leaves its server to meet them.
    #[test]
    fn pauses_before_a_finish_asked_for_remain() {
        let mut s = LatencyScenario::default();
        s.hiccups.every_s = 0.01;
        s.hiccups.pause_ms = 5.0;
        let mut ahead = ServerPauses::new(&s, 3, 0);
        let mut step = ServerPauses::new(&s, 3, 0);
        // A second of work spans about 70 pauses.
        let finish = ahead.finish(0, 1_000_000_000);
        assert!(finish > 1_200_000_000, "{finish}");
        let mut paused = 0;
        for t in (0..finish).step_by(100_000) {
            let got = ahead.paused_until(t);
            assert_eq!(got, step.paused_until(t), "at {t} ns");
            paused += usize::from(got.is_some());
        }
        assert!(paused > 1000, "{paused} of the instants paused");
    }

    /// The inverse of an odd word modulo 2⁶⁴ (Newton's iteration doubles the correct bits).
    fn inverse(a: u64) -> u64 {
        let mut x = a;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        }
        x
    }

    /// The `x` with `x ^ (x >> k) == y`.
    fn unshift(y: u64, k: u32) -> u64 {
        let mut x = y;
        for _ in 0..64 / k {
            x = y ^ (x >> k);
        }
        x
    }

    /// Where a generator stands on SplitMix64's one cycle of 2⁶⁴ states: its state is
    /// `position · γ`, so the stream's next draws are positions `position + 1, + 2, …`.
    /// Read from its first output by undoing the output's mixing, so the check holds for
    /// any way of seeding the streams.
    fn position(rng: &SplitMix64) -> u64 {
        const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
        let out = rng.clone().next_u64();
        let z = unshift(out, 31).wrapping_mul(inverse(0x94D0_49BB_1331_11EB));
        let z = unshift(z, 27).wrapping_mul(inverse(0xBF58_476D_1CE4_E5B9));
        let state = unshift(z, 30).wrapping_sub(GAMMA);
        state.wrapping_mul(inverse(GAMMA))
    }

    #[test]
    fn position_undoes_the_generator() {
        for seed in [0, 1, 7, u64::MAX] {
            let mut rng = SplitMix64::new(seed);
            let start = position(&rng);
            rng.next_u64();
            assert_eq!(position(&rng), start.wrapping_add(1));
            assert_eq!(
                position(&SplitMix64::new(
                    seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(5))
                )),
                start.wrapping_add(5)
            );
        }
    }

    /// No two streams of a run overlap within the draws a run can make, for seeds 1–1000 and
    /// pools of up to 1000 servers: arrivals, routing and service times draw at most 2⁴⁰
    /// words each (a run of that size takes days), a server's pauses at most 2²⁸ (85 years
    /// of pauses every 10 s). A stream at position p draws positions p + 1 … p + D, so in
    /// the streams sorted by position each must end before the next begins. Streams seeded
    /// `seed ^ which · γ` failed this at seed 1: arrivals and service times were one
    /// sequence two draws apart.
    #[test]
    fn no_two_streams_of_a_run_overlap() {
        const SERVERS: u64 = 1000;
        let draws = |which: u64| if which < HICCUPS { 1u64 << 40 } else { 1 << 28 };
        for seed in 1..=1000u64 {
            let mut streams: Vec<(u64, u64)> = [ARRIVALS, ROUTING, SERVICE]
                .into_iter()
                .chain((0..SERVERS).map(|i| HICCUPS + i))
                .map(|which| (position(&stream(seed, which)), which))
                .collect();
            streams.sort_unstable();
            for (i, &(at, which)) in streams.iter().enumerate() {
                let (next, other) = streams[(i + 1) % streams.len()];
                assert!(
                    next.wrapping_sub(at) >= draws(which),
                    "seed {seed}: stream {other} begins {} draws after stream {which}",
                    next.wrapping_sub(at)
                );
            }
        }
    }
}
