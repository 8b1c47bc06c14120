//! Certain bounds on `ln f(k) − ln f(mode)` near the mode of a binomial or hypergeometric
//! law, cheap enough to decide most rejection candidates without a logarithm.
//!
//! # Why
//!
//! The samplers of `sample.rs` accept a candidate `k` by comparing a function of their uniform
//! `U` with `t = ln f(k) − ln f(mode)`. Computed exactly (to rounding), `t` costs two `ln_1p`
//! per candidate and three logarithms per law for a binomial, four and four for a
//! hypergeometric: at a billion clients the cohort engine spent about half its time in libm.
//!
//! Near the mode `m`, `t(m + j)` is a sum of `j` log-ratios
//! `h(m + i) = ln f(m + i + 1)/f(m + i)`, and `h` is a sum of terms `± ln(c ± x)`: smooth.
//! Its Taylor series at `m` to third order, summed over `i` in closed form (power sums),
//! gives `t` up to a remainder bounded by the fourth derivative over the interval. Adding a
//! bound on the rounding of this sum *and* of the exact computation as the sampler makes it
//! gives an interval `[t̃ − e, t̃ + e]` that certainly holds the value the exact computation
//! would return. The sampler decides from the interval whenever its test comes out the same
//! at both ends (monotone floating-point operations keep that true bit for bit), and
//! computes the exact value only otherwise: so it takes exactly the decisions it took
//! before, and draws the same words. `debug_assertions` builds check every interval against
//! the exact value.
//!
//! The bound is tried within half the smallest factorial argument of the mode, when that is
//! at least 512 (so that the exact computation takes its Stirling branch, whose rounding is
//! bounded below); elsewhere, and at the rare candidates far from the mode, the sampler
//! computes `t` exactly.

/// The machine epsilon, `2^-52`.
const EPS: f64 = f64::EPSILON;
/// Rounding bounds are this many times the sum of magnitudes times [`EPS`]: far above the
/// few ulps that the operations (libm's `ln` and `ln_1p` within one ulp included) can lose.
const SLACK: f64 = 64.0;
/// The smallest factorial argument at the mode for which a bound is tried.
pub(crate) const MIN_ARGUMENT: u64 = 512;

/// One term `sign · ln(c + x)` (`rising`) or `sign · ln(c − x)` of `h`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Term {
    pub(crate) sign: f64,
    pub(crate) c: f64,
    pub(crate) rising: bool,
}

impl Term {
    /// The first three derivatives of `sign · ln(c ± x)` at `x`.
    fn derivatives(&self, x: f64) -> [f64; 3] {
        let r = 1.0 / if self.rising { self.c + x } else { self.c - x };
        let beta = if self.rising { 1.0 } else { -1.0 };
        let s = self.sign;
        [s * beta * r, -s * r * r, s * 2.0 * beta * r * r * r]
    }
}

/// The Taylor coefficients of `h` at the mode and what bounds the error; see the module docs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NearMode {
    mode: u64,
    /// `h(m)`, `h′(m)`, `h″(m) / 2`, `h‴(m) / 6`.
    h: [f64; 4],
    /// `1 / least`, with `least` the least of the terms' arguments `c ± m` at the mode
    /// (each moves by at most the distance from the mode over the interval summed).
    inverse_least: f64,
    /// The farthest `|k − m|` the bound is tried at.
    reach: u64,
    /// `|h⁗| / 4! ≤ fourth / v⁴` with `v` the least argument over the interval: the terms
    /// used times 6 / 24, rounded up.
    fourth: f64,
    /// The rounding to allow per unit of `|k − m|`: from `h(m)` (8 EPS) and from the exact
    /// computation's magnitudes, times [`EPS`] · [`SLACK`].
    per_step: f64,
}

/// An upper bound on `ln(n + 1)`: the bit length of `n` times `ln 2`.
pub(crate) fn ln_bound(n: u64) -> f64 {
    f64::from(64 - n.leading_zeros()) * std::f64::consts::LN_2
}

/// `ln(1 + z)` to within 8 EPS, without libm when `|z| ≤ 1/64`: the series to `z⁷`, whose
/// tail is below `|z|⁸ / 8 · 64/63 < 3 · 10⁻¹⁶`.
pub(crate) fn ln_1p_small(z: f64) -> f64 {
    if z.abs() > 1.0 / 64.0 {
        return z.ln_1p();
    }
    z * (1.0
        - z * (1.0 / 2.0
            - z * (1.0 / 3.0
                - z * (1.0 / 4.0 - z * (1.0 / 5.0 - z * (1.0 / 6.0 - z * (1.0 / 7.0)))))))
}

impl NearMode {
    /// The bound for a law with mode `mode`, `h = Σ terms` (unused terms have sign 0), `h(m)`
    /// computed by the caller to within 8 EPS, `least_argument` at most every term's
    /// `c ± m` and every log-factorial argument at the mode, and `magnitude_per_step`: how
    /// much the exact computation's terms add up to, in absolute value, per unit of
    /// `|k − m|` (within half of `least_argument`).
    pub(crate) fn new(
        mode: u64,
        terms: [Term; 4],
        h0: f64,
        least_argument: u64,
        magnitude_per_step: f64,
    ) -> Option<Self> {
        if least_argument < MIN_ARGUMENT {
            return None;
        }
        let x = mode as f64;
        let mut h = [h0, 0.0, 0.0, 0.0];
        let mut used = 0.0;
        for term in terms.iter().filter(|t| t.sign != 0.0) {
            let d = term.derivatives(x);
            for r in 0..3 {
                h[r + 1] += d[r];
            }
            used += term.sign.abs();
        }
        h[2] *= 0.5;
        h[3] *= 1.0 / 6.0;
        Some(Self {
            mode,
            h,
            inverse_least: 1.0 / least_argument as f64,
            reach: least_argument / 2,
            fourth: used * 0.25 * (1.0 + 1e-9),
            per_step: SLACK * EPS * (h0.abs() + 8.0 + magnitude_per_step),
        })
    }

    /// `Some((t̃, e))` such that the exact computation of `ln f(k) − ln f(m)` returns a value
    /// within `t̃ ± e`, or `None` when `k` is too far from the mode to try.
    #[inline(always)]
    pub(crate) fn bound(&self, k: u64) -> Option<(f64, f64)> {
        let m = self.mode;
        if k == m {
            // Both exact computations return 0 exactly here.
            return Some((0.0, 0.0));
        }
        let (distance, above) = if k > m { (k - m, true) } else { (m - k, false) };
        if distance > self.reach {
            return None;
        }
        // The sum runs over i = 0..j−1 above the mode, i = −J..−1 below it: power sums over
        // 1..=top, odd powers negated below. (Divisions by constants are multiplications:
        // their rounding is within the allowance for this sum's own.)
        let count = distance as f64;
        let top = if above { count - 1.0 } else { count };
        let pair = top * (top + 1.0);
        let half = 0.5 * pair; // Σ i
        let squares = pair * (2.0 * top + 1.0) * (1.0 / 6.0); // Σ i²
        let fourths = squares * (3.0 * pair - 1.0) * 0.2; // Σ i⁴
        let [h0, h1, h2, h3] = self.h;
        let (linear, quadratic, cubic) = (h1 * half, h2 * squares, h3 * half * half);
        // Above: t = count·h0 + h1 Σi + h2/2 Σi² + h3/6 Σi³. Below, the odd sums change sign
        // and the whole sum is negated.
        let t = if above {
            count * h0 + linear + quadratic + cubic
        } else {
            -(count * h0) + linear - quadratic + cubic
        };
        // The remainder: every argument over the interval is at least least − distance, and
        // 1 / (least − distance) = r / (1 − x) ≤ r (1 + 2x) with r = 1 / least and
        // x = distance · r ≤ 1/2 (no division; the 1e-9 in `fourth` covers the rounding).
        let r = self.inverse_least * (1.0 + 2.0 * count * self.inverse_least);
        let remainder = self.fourth * fourths * ((r * r) * (r * r));
        // Rounding: of this sum and of the exact computation.
        let rounding = count * self.per_step
            + SLACK * EPS * (linear.abs() + quadratic.abs() + cubic.abs() + 2.0);
        Some((t, remainder + rounding))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Σ_{i=0}^{j-1} h(m + i)` by brute force for a binomial, to compare with the series.
    #[test]
    fn series_matches_the_direct_sum_within_its_bound() {
        let (n, p) = (1_000_000u64, 0.3f64);
        let q = 1.0 - p;
        let m = ((n as f64 + 1.0) * p).floor() as u64;
        let terms = [
            Term {
                sign: 1.0,
                c: n as f64,
                rising: false,
            },
            Term {
                sign: -1.0,
                c: 1.0,
                rising: true,
            },
            Term {
                sign: 0.0,
                c: 1.0,
                rising: true,
            },
            Term {
                sign: 0.0,
                c: 1.0,
                rising: true,
            },
        ];
        let h = |x: u64| ((n - x) as f64 * p).ln() - ((x + 1) as f64 * q).ln();
        let near = NearMode::new(m, terms, h(m), m.min(n - m), 0.0).unwrap();
        for j in [1i64, 2, 7, 100, 1000, 3000, -1, -2, -50, -2500] {
            let k = (m as i64 + j) as u64;
            let direct: f64 = if j > 0 {
                (m..k).map(h).sum()
            } else {
                -(k..m).map(h).sum::<f64>()
            };
            let (t, e) = near.bound(k).unwrap();
            // The direct sum's own rounding: |j| terms of a few ulps of ln(n).
            let slack = j.unsigned_abs() as f64 * 1e-14;
            assert!(
                (t - direct).abs() <= e + slack,
                "j {j}: {t} vs {direct} ± {e}"
            );
            assert!(e < 1e-3, "j {j}: the bound is useful ({e})");
        }
        assert!(near.bound(m + m.min(n - m)).is_none());
    }
}
