//! The latency of a retry: the network's noise between a client and the server.
//!
//! # Why
//!
//! Without it the storm model has no timing noise at all, so clients that fail together and
//! pause alike (exponential backoff without jitter) come back together forever. Real networks
//! delay each attempt a little differently; `[clients.latency]` adds that, so the model can
//! answer how much noise it takes before such a herd falls apart by itself (docs/storm.md,
//! "Does network noise desynchronise the herd?").
//!
//! # The model (docs/model.md, "Latency of an attempt")
//!
//! Each retry reaches the server `delay` after the client sends it: the retry is due at
//! `step + timeout + wait + delay`, `delay` drawn for that attempt, in whole steps. A first
//! attempt's arrival is where the scenario puts it (`start_s`, the open-loop rate).
//!
//! - `normal`: `d = max(0, mean + sd · z)`; `lognormal`: `d = exp(μ + σ · z)` with
//!   `σ² = ln(1 + sd²/mean²)` and `μ = ln(mean) − σ²/2`, so that `d` has the mean and standard
//!   deviation given. `z` is one Box–Muller draw from the world's generator:
//!   `u1 = 1 − next_f64()`, `u2 = next_f64()`, `z = sqrt(−2 ln u1) · cos(2π u2)`.
//! - The delay in steps is `d` to the nearest step, halves up: `floor(d / step + 1/2)`, and at
//!   most `reach` = the horizon plus the deadline in steps (a longer delay has the same fate:
//!   past the horizon and past the deadline).
//! - With `sd_ms = 0` the delay is the mean in steps, and nothing is drawn; with the mean 0 too
//!   there is no latency at all, so the run is the one without it, bit for bit.
//!
//! The cohort engine splits a count of clients over the delay's **law in steps**: cell `k`
//! holds `P((k − 1/2) · step ≤ D < (k + 1/2) · step)` from the normal (or log-normal)
//! distribution function, through libm's `erfc` (a few ulps; each probability is computed
//! from the tail it is accurate in), the last cell all of `D ≥ (reach − 1/2) · step`. The law
//! stops where the upper tail is 0 in `f64` (below 10^−308): no other truncation.
use herd::rng::Rng;

use crate::error::ScenarioError;
use crate::fields;
use crate::sample::standard_normal;
use crate::storm::scenario::{Latency, LatencyDistribution};

/// The most cells the cohort engine splits a count over; a longer law is refused.
pub(crate) const MAX_LAW_CELLS: u64 = 1 << 16;

/// The checked latency of the scenario's retries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AttemptLatency {
    /// The step in milliseconds.
    step_ms: f64,
    /// The longest delay in steps (see the module docs).
    reach: u64,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// `sd_ms = 0`: this many steps, nothing drawn.
    Constant(u64),
    /// `max(0, mean + sd · z)`, in milliseconds.
    Normal { mean: f64, sd: f64 },
    /// `exp(mu + sigma · z)`, in milliseconds.
    Lognormal { mu: f64, sigma: f64 },
}

/// `P(Z ≥ z)` for a standard normal `Z`.
#[inline]
fn upper_tail(z: f64) -> f64 {
    0.5 * libm::erfc(z / std::f64::consts::SQRT_2)
}

impl AttemptLatency {
    /// Checks `[clients.latency]` for a run in steps of `step_ns` whose delays matter up to
    /// `reach` steps; `None` when there is no latency (mean and `sd_ms` both 0).
    ///
    /// # Errors
    ///
    /// A mean or standard deviation that is not a number of milliseconds in `[0, 10^12]`, or a
    /// log-normal spread without a mean, naming the field.
    pub(crate) fn new(
        latency: &Latency,
        step_ns: u64,
        reach: u64,
    ) -> Result<Option<Self>, ScenarioError> {
        fields::millis("clients.latency.mean_ms", latency.mean_ms)?;
        fields::millis("clients.latency.sd_ms", latency.sd_ms)?;
        let (mean, sd) = (latency.mean_ms, latency.sd_ms);
        let step_ms = step_ns as f64 / 1e6;
        let mut this = Self {
            step_ms,
            reach,
            kind: Kind::Constant(0),
        };
        this.kind = if sd == 0.0 {
            if mean == 0.0 {
                return Ok(None);
            }
            Kind::Constant(this.steps_of(mean))
        } else {
            match latency.distribution {
                LatencyDistribution::Normal => Kind::Normal { mean, sd },
                LatencyDistribution::Lognormal => {
                    if mean == 0.0 {
                        return Err(ScenarioError::field(
                            "clients.latency.mean_ms",
                            format!(
                                "must be above 0 for a lognormal latency with sd_ms {sd}, got 0"
                            ),
                        ));
                    }
                    let ratio = sd / mean;
                    let var = (ratio * ratio).ln_1p();
                    Kind::Lognormal {
                        mu: mean.ln() - var / 2.0,
                        sigma: var.sqrt(),
                    }
                }
            }
        };
        Ok(Some(this))
    }

    /// A delay of `d` milliseconds in steps: to the nearest, halves up, at most `reach`.
    fn steps_of(&self, d: f64) -> u64 {
        let k = (d / self.step_ms + 0.5).floor();
        // `as` saturates (and a delay is never NaN: its inputs are checked).
        (k as u64).min(self.reach)
    }

    /// One retry's delay in steps, drawn from `rng` (one Box–Muller pair of uniforms) unless
    /// it is constant.
    #[inline]
    pub(crate) fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self.kind {
            Kind::Constant(k) => k,
            Kind::Normal { mean, sd } => {
                let z = standard_normal(rng);
                self.steps_of((mean + sd * z).max(0.0))
            }
            Kind::Lognormal { mu, sigma } => {
                let z = standard_normal(rng);
                self.steps_of((mu + sigma * z).exp())
            }
        }
    }

    /// A delay the calendar should hold in its ring: about the largest that matters (six
    /// standard deviations above the mean), at most `reach`. Longer ones still work.
    pub(crate) fn typical_longest(&self) -> u64 {
        match self.kind {
            Kind::Constant(k) => k,
            Kind::Normal { mean, sd } => self.steps_of(mean + 6.0 * sd),
            Kind::Lognormal { mu, sigma } => self.steps_of((mu + 6.0 * sigma).exp()),
        }
    }

    /// `x` (milliseconds) in standard deviations above the mean of the normal law behind the
    /// delay; `None` below a lognormal's support (`x ≤ 0`), where every delay lies above.
    fn standardized(&self, x: f64) -> Option<f64> {
        match self.kind {
            Kind::Constant(_) => unreachable!("a constant delay has no law to compute"),
            Kind::Normal { mean, sd } => Some((x - mean) / sd),
            Kind::Lognormal { .. } if x <= 0.0 => None,
            Kind::Lognormal { mu, sigma } => Some((x.ln() - mu) / sigma),
        }
    }

    /// `P(D ≥ x)` for a delay `D` before truncation and rounding, `x` in milliseconds.
    fn upper(&self, x: f64) -> f64 {
        self.standardized(x).map_or(1.0, upper_tail)
    }

    /// `P(a ≤ D < b)`, from the tail in which it is accurate.
    fn between(&self, a: f64, b: f64) -> f64 {
        let (ua, ub) = (self.upper(a), self.upper(b));
        let p = if ua <= 0.5 {
            ua - ub
        } else {
            // Both lower tails: P(D < b) − P(D < a), each 1 − upper, computed as the lower
            // tail directly by symmetry.
            self.lower(b) - self.lower(a)
        };
        p.max(0.0)
    }

    /// `P(D < x)`: the upper tail of `−z`, by symmetry (`(m − x) / s` is `−((x − m) / s)` to
    /// the bit, as IEEE subtraction and division round symmetrically).
    fn lower(&self, x: f64) -> f64 {
        self.standardized(x).map_or(0.0, |z| upper_tail(-z))
    }

    /// The delay's law in steps: `(steps, probability)` for every cell of positive
    /// probability, in increasing steps (see the module docs).
    ///
    /// # Errors
    ///
    /// A law of more than [`MAX_LAW_CELLS`] cells, naming `clients.latency.sd_ms`.
    pub(crate) fn law(&self) -> Result<Vec<(u64, f64)>, ScenarioError> {
        match self.kind {
            Kind::Constant(k) => Ok(vec![(k, 1.0)]),
            Kind::Normal { .. } | Kind::Lognormal { .. } => self.random_law(),
        }
    }

    fn random_law(&self) -> Result<Vec<(u64, f64)>, ScenarioError> {
        let edge = |k: u64| (k as f64 + 0.5) * self.step_ms;
        let mut cells = Vec::new();
        // Cell 0: everything below half a step (a normal's negative values included).
        let p0 = self.lower(edge(0));
        if p0 > 0.0 {
            cells.push((0, p0));
        }
        let mut k = 1u64;
        while k < self.reach && self.upper(edge(k - 1)) > 0.0 {
            if k >= MAX_LAW_CELLS {
                return Err(ScenarioError::field(
                    "clients.latency.sd_ms",
                    format!(
                        "the cohort engine splits clients over at most {MAX_LAW_CELLS} steps of latency; this one spreads over more before the horizon (use a longer step_ms, a smaller sd_ms or the agent engine)"
                    ),
                ));
            }
            let p = self.between(edge(k - 1), edge(k));
            if p > 0.0 {
                cells.push((k, p));
            }
            k += 1;
        }
        if k == self.reach && self.reach > 0 {
            let tail = self.upper(edge(self.reach - 1));
            if tail > 0.0 {
                cells.push((self.reach, tail));
            }
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::rng::SplitMix64;

    /// The latency of a scenario's `[clients.latency]`, in 100 ms steps, within `reach` steps.
    fn planned(
        distribution: LatencyDistribution,
        mean_ms: f64,
        sd_ms: f64,
        reach: u64,
    ) -> Result<Option<AttemptLatency>, ScenarioError> {
        let l = Latency {
            distribution,
            mean_ms,
            sd_ms,
        };
        AttemptLatency::new(&l, 100_000_000, reach)
    }

    fn latency(distribution: LatencyDistribution, mean_ms: f64, sd_ms: f64) -> AttemptLatency {
        planned(distribution, mean_ms, sd_ms, 36_000)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn no_latency_and_constant_latency_draw_nothing() {
        let none = Latency::default();
        assert_eq!(AttemptLatency::new(&none, 100_000_000, 10).unwrap(), None);
        let c = latency(LatencyDistribution::Lognormal, 149.0, 0.0);
        let mut rng = SplitMix64::new(1);
        let before = rng.clone();
        assert_eq!(c.draw(&mut rng), 1);
        assert_eq!(
            latency(LatencyDistribution::Normal, 150.0, 0.0).draw(&mut rng),
            2
        );
        assert_eq!(rng, before);
        assert_eq!(c.law().unwrap(), vec![(1, 1.0)]);
    }

    #[test]
    fn rounds_to_the_nearest_step_and_stops_at_the_reach() {
        let l = latency(LatencyDistribution::Normal, 0.0, 1.0);
        assert_eq!(l.steps_of(0.0), 0);
        assert_eq!(l.steps_of(49.999), 0);
        assert_eq!(l.steps_of(50.0), 1);
        assert_eq!(l.steps_of(149.9), 1);
        assert_eq!(l.steps_of(1e300), 36_000);
        assert_eq!(l.steps_of(f64::INFINITY), 36_000);
    }

    /// The law's distribution function is that of the drawn delays, within 6.5 standard
    /// errors: a false failure ≤ 10⁻⁶ over at most 10⁴ cells (Bonferroni, normal tails).
    #[test]
    fn the_law_in_steps_is_the_law_of_the_draws() {
        for l in [
            latency(LatencyDistribution::Normal, 30.0, 100.0),
            latency(LatencyDistribution::Normal, 500.0, 300.0),
            latency(LatencyDistribution::Lognormal, 100.0, 300.0),
            latency(LatencyDistribution::Lognormal, 1000.0, 30.0),
        ] {
            let law = l.law().unwrap();
            let total: f64 = law.iter().map(|c| c.1).sum();
            assert!((total - 1.0).abs() < 1e-12, "{l:?}: {total}");
            let mut rng = SplitMix64::new(7);
            let n = 400_000u64;
            let mut counts = std::collections::BTreeMap::<u64, u64>::new();
            for _ in 0..n {
                *counts.entry(l.draw(&mut rng)).or_default() += 1;
            }
            // The distribution function at every cell (a rare cell's own frequency is too
            // lumpy for a normal approximation; the tail beyond it is not).
            let (mut want, mut got) = (0.0, 0u64);
            for &(k, p) in &law {
                want += p;
                got += counts.get(&k).copied().unwrap_or(0);
                let f = got as f64 / n as f64;
                let q = want.min(1.0);
                let se = (q * (1.0 - q) / n as f64).sqrt();
                assert!(
                    (f - q).abs() <= 6.5 * se + 1e-9,
                    "{l:?} cell {k}: {f} vs {q}"
                );
            }
            assert!(counts.keys().all(|k| law.iter().any(|c| c.0 == *k)));
        }
    }

    #[test]
    fn a_normal_law_by_hand() {
        // Mean 0, sd 100 ms, 100 ms steps: cell 0 is P(X < 50) = Φ(0.5), cell 1
        // Φ(1.5) − Φ(0.5), cell 2 Φ(2.5) − Φ(1.5).
        let law = latency(LatencyDistribution::Normal, 0.0, 100.0)
            .law()
            .unwrap();
        let want = [
            0.691_462_461_274_013,
            0.241_730_337_457_129,
            0.060_597_535_943_081,
        ];
        for (cell, w) in law.iter().zip(want) {
            assert!((cell.1 - w).abs() < 1e-14, "{cell:?} vs {w}");
        }
    }

    #[test]
    fn bad_numbers_name_their_field() {
        let check = |mean_ms: f64, sd_ms: f64, distribution| {
            planned(distribution, mean_ms, sd_ms, 10)
                .unwrap_err()
                .to_string()
        };
        use LatencyDistribution::{Lognormal, Normal};
        assert_eq!(
            check(0.0, -1.0, Normal),
            "clients.latency.sd_ms: must be a finite number of milliseconds between 0 and 10^12, got -1"
        );
        assert!(check(f64::NAN, 1.0, Normal).starts_with("clients.latency.mean_ms: "));
        assert!(check(0.0, f64::INFINITY, Normal).starts_with("clients.latency.sd_ms: "));
        assert_eq!(
            check(0.0, 5.0, Lognormal),
            "clients.latency.mean_ms: must be above 0 for a lognormal latency with sd_ms 5, got 0"
        );
    }
}
