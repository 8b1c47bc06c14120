//! The summary of one cell over its seeds: mean and a 95 % interval on the mean.
//!
//! The interval is Student's t-interval, `mean ± t(0.975, n − 1) · s / √n`, with `s` the
//! sample standard deviation (divisor `n − 1`). The quantile is exact (to four decimals) from
//! a table for n − 1 ≤ 30 and the Cornish–Fisher expansion around the normal quantile 1.96
//! beyond (error below 10⁻⁴). It assumes the runs are independent draws of the metric, which
//! they are: each seed seeds an independent generator. With one run there is no interval.
//!
//! A t-interval whose lower end falls below 0 for values that are all at least 0 (a count or
//! a time with a few large values) is clipped at 0 and says so (`t_clipped`).
//!
//! A metric that did not happen in some runs (`all_served_s` when not everyone was served)
//! is summarised over the runs where it did; `defined` says how many those were.
//!
//! A 0/1 metric (a *proportion*, such as `recovered`) gets the Wilson score interval instead:
//! a t-interval on 0/1 values is a point when every run agrees (10 of 10 recovered says
//! nothing about the 11th) and can leave `[0, 1]`; Wilson's stays inside and is never a
//! point unless there are no runs.
use serde::Serialize;

/// Metrics that are 0 or 1 per run, summarised as a proportion with a Wilson interval.
pub const PROPORTIONS: [&str; 1] = ["recovered"];

/// `Φ⁻¹(0.975)`.
const Z975: f64 = 1.959_963_984_540_054;

/// Which interval a [`Stats`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Interval {
    /// Student's t-interval on the mean.
    T,
    /// Student's t-interval whose lower end fell below 0 for values that are all at least 0
    /// (counts, times): clipped at 0, since the mean of such values cannot be negative.
    #[serde(rename = "t_clipped")]
    TClipped,
    /// Wilson's score interval on a proportion.
    Wilson,
}

/// `t(0.975, df)` for df = 1..=30.
const T975: [f64; 30] = [
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
    2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
    2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
];

/// The 0.975 quantile of Student's t with `df` degrees of freedom (`df ≥ 1`).
///
/// # Examples
///
/// ```
/// use herd_sim::sweep::t975;
/// assert_eq!(t975(9), 2.2622);
/// assert!((t975(120) - 1.9799).abs() < 1e-4);
/// ```
#[must_use]
pub fn t975(df: u64) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T975[(df - 1) as usize],
        _ => {
            // Cornish–Fisher: t ≈ z + g1(z)/ν + g2(z)/ν² with z = Φ⁻¹(0.975).
            let z = 1.959_963_984_540_054_f64;
            let v = df as f64;
            let g1 = (z.powi(3) + z) / 4.0;
            let g2 = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
            z + g1 / v + g2 / (v * v)
        }
    }
}

/// One metric over the runs of one cell and rule.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Runs in which the metric had a value.
    pub defined: usize,
    /// The mean over those runs; `None` when there were none.
    pub mean: Option<f64>,
    /// The lower end of the 95 % interval on the mean; `None` with fewer than two values.
    pub lo: Option<f64>,
    /// The upper end of the 95 % interval on the mean.
    pub hi: Option<f64>,
    /// The kind of interval.
    pub interval: Interval,
}

impl Stats {
    /// Summarises the values of the runs, skipping those where the metric did not happen.
    ///
    /// # Examples
    ///
    /// ```
    /// use herd_sim::sweep::Stats;
    /// let s = Stats::of([Some(1.0), Some(2.0), Some(3.0), None]);
    /// assert_eq!((s.defined, s.mean), (3, Some(2.0)));
    /// // s = 1, t(0.975, 2) = 4.3027: 2 ± 4.3027 / √3
    /// assert!((s.hi.unwrap() - 4.4842).abs() < 1e-4);
    /// ```
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Self {
        let values: Vec<f64> = values.into_iter().flatten().collect();
        let n = values.len();
        if n == 0 {
            return Self {
                defined: 0,
                mean: None,
                lo: None,
                hi: None,
                interval: Interval::T,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Self {
                defined: 1,
                mean: Some(mean),
                lo: None,
                hi: None,
                interval: Interval::T,
            };
        }
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half = t975(n as u64 - 1) * (var / n as f64).sqrt();
        // A quantity that is never negative (a count, a time) has a mean that is not either.
        let clipped = mean - half < 0.0 && values.iter().all(|&v| v >= 0.0);
        Self {
            defined: n,
            mean: Some(mean),
            lo: Some(if clipped { 0.0 } else { mean - half }),
            hi: Some(mean + half),
            interval: if clipped {
                Interval::TClipped
            } else {
                Interval::T
            },
        }
    }

    /// Summarises 0/1 values as a proportion: the share of ones, with the 95 % Wilson score
    /// interval `(p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)`, `z = 1.96`.
    ///
    /// # Examples
    ///
    /// ```
    /// use herd_sim::sweep::Stats;
    /// // 10 of 10: the share is 1, but the interval admits 0.72.
    /// let s = Stats::proportion([Some(1.0); 10]);
    /// assert_eq!(s.mean, Some(1.0));
    /// assert!((s.lo.unwrap() - 0.7225).abs() < 1e-4 && s.hi == Some(1.0));
    /// ```
    pub fn proportion(values: impl IntoIterator<Item = Option<f64>>) -> Self {
        let values: Vec<f64> = values.into_iter().flatten().collect();
        let n = values.len();
        if n == 0 {
            return Self {
                interval: Interval::Wilson,
                ..Self::of([])
            };
        }
        let ones = values.iter().filter(|&&v| v >= 0.5).count();
        let (nf, p) = (n as f64, ones as f64 / n as f64);
        let z2 = Z975 * Z975;
        let centre = (p + z2 / (2.0 * nf)) / (1.0 + z2 / nf);
        let half = Z975 / (1.0 + z2 / nf) * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt();
        Self {
            defined: n,
            mean: Some(p),
            // Exactly 0 and 1 at the ends (the algebra gives them; floats may not).
            lo: Some(if ones == 0 {
                0.0
            } else {
                (centre - half).max(0.0)
            }),
            hi: Some(if ones == n {
                1.0
            } else {
                (centre + half).min(1.0)
            }),
            interval: Interval::Wilson,
        }
    }

    /// [`Stats::proportion`] for the metrics in [`PROPORTIONS`], [`Stats::of`] otherwise.
    pub fn of_metric(name: &str, values: impl IntoIterator<Item = Option<f64>>) -> Self {
        if PROPORTIONS.contains(&name) {
            Self::proportion(values)
        } else {
            Self::of(values)
        }
    }

    /// Half the width of the interval, when there is one.
    #[must_use]
    pub fn half_width(&self) -> Option<f64> {
        Some((self.hi? - self.lo?) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_on_a_known_sample() {
        // 10 values 1..=10: mean 5.5, s = 3.02765, t(0.975, 9) = 2.2622.
        let s = Stats::of((1..=10).map(|v| Some(f64::from(v))));
        assert_eq!(s.mean, Some(5.5));
        let half = 2.2622 * 3.027_650_354_097_491_7 / 10f64.sqrt();
        assert!((s.lo.unwrap() - (5.5 - half)).abs() < 1e-12);
        assert!((s.hi.unwrap() - (5.5 + half)).abs() < 1e-12);
        assert!((s.half_width().unwrap() - 2.1659).abs() < 1e-4);
    }

    #[test]
    fn constant_sample_has_a_point_interval() {
        let s = Stats::of([Some(4.0); 5]);
        assert_eq!((s.lo, s.hi), (Some(4.0), Some(4.0)));
    }

    #[test]
    fn undefined_runs_are_counted_apart() {
        assert_eq!(Stats::of([None, None]).defined, 0);
        assert_eq!(Stats::of([None, None]).mean, None);
        let one = Stats::of([None, Some(3.0)]);
        assert_eq!((one.defined, one.mean, one.lo), (1, Some(3.0), None));
    }

    /// Regression: `recovered` got a t-interval, a point at 10 of 10 and below 0 at 1 of 10.
    #[test]
    fn proportions_get_wilson_intervals() {
        let all = Stats::of_metric("recovered", [Some(1.0); 10]);
        assert_eq!(all.interval, Interval::Wilson);
        assert!(all.lo.unwrap() < 0.73 && all.hi == Some(1.0));
        let one = Stats::of_metric("recovered", (0..10).map(|i| Some(f64::from(i == 0))));
        // Wilson for 1 of 10: [0.0179, 0.4042].
        assert!((one.lo.unwrap() - 0.0179).abs() < 1e-4, "{one:?}");
        assert!((one.hi.unwrap() - 0.4042).abs() < 1e-4, "{one:?}");
        // The t-interval would have gone below zero (now clipped at 0, and marked so).
        assert_eq!(
            Stats::of((0..10).map(|i| Some(f64::from(i == 0)))).interval,
            Interval::TClipped
        );
        assert_eq!(
            Stats::of_metric("served", [Some(1.0); 3]).interval,
            Interval::T
        );
    }

    #[test]
    fn t_quantile_is_continuous_past_the_table() {
        // Tabulated t(0.975, 40) = 2.0211, 60 → 2.0003, 120 → 1.9799.
        assert!((t975(40) - 2.0211).abs() < 1e-4);
        assert!((t975(60) - 2.0003).abs() < 1e-4);
        assert!((t975(31) - 2.0395).abs() < 2e-4);
        assert!(t975(1_000_000) > 1.9599 && t975(1_000_000) < 1.9601);
    }
}

#[cfg(test)]
mod clipped_tests {
    use super::*;

    /// Before: 0, 0, 0, 9 gave 2.25 ± 7.16, an interval from −4.9 for a count.
    #[test]
    fn a_count_never_gets_a_negative_lower_end() {
        let s = Stats::of([Some(0.0), Some(0.0), Some(0.0), Some(9.0)]);
        assert_eq!(s.lo, Some(0.0));
        assert_eq!(s.interval, Interval::TClipped);
        // A quantity that can be negative keeps its interval.
        let s = Stats::of([Some(-1.0), Some(0.0), Some(0.0), Some(9.0)]);
        assert!(s.lo.unwrap() < 0.0);
        assert_eq!(s.interval, Interval::T);
    }
}
