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
use herd::rng::{Rng, SplitMix64};

use super::LatencyScenario;
use super::scenario::Distribution;
use super::scenario::Plan;

/// The stream of arrivals.
const ARRIVALS: u64 = 1;
/// The first stream of pauses; server `i` has `HICCUPS + i`.
const HICCUPS: u64 = 1 << 32;

/// Stream `which` of a run's `seed` (the engine's routing and service times have theirs).
pub(crate) fn stream(seed: u64, which: u64) -> SplitMix64 {
    // SplitMix64 hashes its state on output, so streams seeded a golden-ratio step apart
    // do not overlap in any run this model can make.
    SplitMix64::new(seed ^ which.wrapping_mul(0x9E37_79B9_7F4A_7C15))
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
pub(crate) fn arrivals_of(plan: &Plan) -> impl Iterator<Item = u64> {
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
#[derive(Clone, Debug)]
pub struct Pauses {
    rng: SplitMix64,
    every_ns: Option<f64>,
    pause_ns: u64,
    start: u64,
    end: u64,
}

impl Pauses {
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
    pub(crate) fn of_plan(plan: &Plan, server: u32) -> Self {
        Self::with(plan.seed, server, plan.hiccup_every_ns, plan.hiccup_ns)
    }

    fn with(seed: u64, server: u32, every_ns: Option<f64>, pause_ns: u64) -> Self {
        Self {
            rng: stream(seed, HICCUPS + u64::from(server)),
            every_ns,
            pause_ns,
            start: 0,
            end: 0,
        }
    }

    /// When `work` ns of service that start at `start` finish: every pause in between stops
    /// the server, and the copy in service, for its whole length. Ask in the order the
    /// server starts its copies (the schedule is drawn forward).
    #[inline]
    pub fn finish(&mut self, start: u64, work: u64) -> u64 {
        let Some(every) = self.every_ns else {
            return start.saturating_add(work);
        };
        let (mut t, mut w) = (start, work);
        loop {
            while self.end <= t {
                self.start = self
                    .end
                    .saturating_add(to_ns(exponential(&mut self.rng, every)));
                self.end = self.start.saturating_add(self.pause_ns);
            }
            if t >= self.start {
                t = self.end;
                continue;
            }
            let up = self.start - t;
            if w <= up {
                return t + w;
            }
            w -= up;
            t = self.end;
        }
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
    /// exactly.
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
            let (_, engine) = model.run_policy(0, seed).unwrap();
            let mut pauses = Pauses::new(&s, seed, 0);
            let mut free = 0u64;
            let mut replay: Vec<u64> = arrivals(&s, seed)
                .map(|a| {
                    let finish = pauses.finish(a.max(free), 1_500_000);
                    free = finish;
                    finish - a
                })
                .collect();
            replay.sort_unstable();
            assert_eq!(replay, engine, "seed {seed}");
            assert!(
                replay.last().unwrap() > &30_000_000,
                "some request met a pause"
            );
        }
    }
}
