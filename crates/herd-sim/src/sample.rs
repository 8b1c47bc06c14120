//! Exact samplers for counts: binomial, hypergeometric and their multivariate forms.
//!
//! The cohort engine moves clients in counts, not one by one, so where the agent engine draws
//! a coin per client it draws one *count*: how many of `n` clients land on a given pause
//! (binomial), and how many of a cohort are among the `s` served of `A` arrivals
//! (hypergeometric). These must be exact in distribution for any `n` up to 10^12, and every
//! draw must come from the world's [`Rng`] (SplitMix64, docs/rng.md), so they are written here
//! rather than taken from a crate whose algorithm may change between versions.
//!
//! Three algorithms, chosen by the variance `σ²` of the distribution and its family:
//!
//! - **Inversion** (`σ² < 10`): one uniform `u`, then walk the probability mass function from
//!   its lower end with the ratio recurrence `f(k+1)/f(k)` until the cumulative sum passes
//!   `u`. Exact; expected cost O(1 + mean), and the mean is below 40 on this branch.
//! - **Transformed rejection** (binomial, `σ² ≥ 10`): Hörmann's BTRS ("The generation of
//!   binomial random variates", J. Statist. Comput. Simul. 46, 1993; the method behind
//!   numpy's and Rust `rand_distr`'s large-mean binomials). Draw `u` on `[−½, ½)` and `v` on
//!   `[0, 1)`, map `u` through `x = (2a/(½ − |u|) + b) u + c`, a transform whose density
//!   hugs the binomial's shape, and accept `k = ⌊x⌋` at once under a squeeze (`|u| ≤ 0.43`
//!   and `v ≤ v_r`: 40 % of candidates at `σ² = 10`, 79 % for large `σ²`), else when
//!   `v α / (a/(½ − |u|)² + b) ≤ f(k)/f(mode)`. The hat's area is `α`, so a draw takes
//!   `α f(mode) ≈ (2.83 + 5.1/b)/√(2π)` candidates: 1.35 at `σ² = 10`, 1.13 for large `σ²`,
//!   against the ratio of uniforms' 1.4 or so, each with a log-ratio to decide. Exact as long as the hat encloses `f` and the squeeze lies under it;
//!   a unit test checks both over a grid of parameters.
//! - **Ratio of uniforms** (hypergeometric, `σ² ≥ 10`): Stadlober's method for log-concave
//!   discrete distributions ("The ratio of uniforms approach for generating discrete random
//!   variates", J. Comput. Appl. Math. 31, 1990; the method behind numpy's HRUA). Draw
//!   `U ∈ (0, 1]`, `V ∈ [0, 1)`, let `X = a + h (V − ½) / U` with `a = μ + ½` and
//!   `h = 2√(2/e) · √(σ² + ½) + 3 − 2√(3/e)`, and accept `k = ⌊X⌋` when
//!   `U² ≤ f(k) / f(mode)`. Accepted `k` follow `f` exactly as long as the rectangle encloses
//!   the acceptance region, `|x − a| · √(f(⌊x⌋)/f(mode)) ≤ h/2` for all `x`; a unit test
//!   checks that bound over a grid of parameters. Expected cost O(1) (acceptance ≈ 0.7 or
//!   better) for any `n`.
//!
//! The acceptance test needs `ln f(k) − ln f(mode)`, a difference of log-factorials of numbers
//! up to 10^12 (about 2.7·10^13 each). Subtracting two Stirling series would lose about
//! 10^-3 of absolute precision; [`ln_factorial_ratio`] instead computes `ln(a!/b!)` directly
//! from a rearranged Stirling series, accurate to about 10^-12 relative, so the sampled
//! probabilities are those of the distribution to floating-point accuracy.
//!
//! Most candidates are decided without that computation: near the mode, `near_mode.rs`
//! brackets the value it would return (a Taylor series of the log-ratio with certain bounds
//! on its remainder and on both computations' rounding), and the sampler computes it only
//! when the bracket straddles its test. The decisions, so the draws, are the same bit for
//! bit; what is saved is the libm calls (a test draws with and without the brackets).
//!
//! The multivariate forms (conditional method): a multinomial split of `n` over probabilities
//! `p₁ … p_m` is `c₁ ~ B(n, p₁)`, then `c₂ ~ B(n − c₁, p₂ / (1 − p₁))`, …; a multivariate
//! hypergeometric draw of `s` of `A = n₁ + … + n_m` is `x₁ ~ H(A, n₁, s)`, then
//! `x₂ ~ H(A − n₁, n₂, s − x₁)`, …. Both are exact factorisations of the joint law. When
//! `min(s, A − s)` is at most half of `m`, the hypergeometric picks those items one at a time
//! instead, each uniform among the rest, from a Fenwick tree of the groups: the counts of a
//! uniformly random subset, the same law for far fewer draws.
use std::cell::OnceCell;

use herd::rng::Rng;

use crate::near_mode::{self, NearMode};

/// A standard normal draw: Box–Muller, one of the pair, from two uniforms of `rng`
/// (`u1 = 1 − next_f64()`, `u2 = next_f64()`, `z = sqrt(−2 ln u1) · cos(2π u2)`), through
/// libm (docs/rng.md). Every model's normal draws come from here.
#[inline]
pub(crate) fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `2·√(2/e)`, Stadlober's constant for the width of the ratio-of-uniforms rectangle.
const ROU_D1: f64 = 1.715_527_769_921_413_5;
/// `3 − 2·√(3/e)`, Stadlober's additive constant.
const ROU_D2: f64 = 0.898_916_162_058_898_8;
/// Below this variance, inversion; at or above it, transformed rejection or the ratio of
/// uniforms.
const INVERSION_BELOW_VARIANCE: f64 = 10.0;
/// `ln k!` is tabulated below this `k`.
const TABLE: usize = 256;

/// `ln k!` for `k < TABLE`, summed exactly once.
fn ln_factorial_table() -> &'static [f64; TABLE] {
    use std::sync::OnceLock;
    static T: OnceLock<[f64; TABLE]> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = [0.0; TABLE];
        for k in 1..TABLE {
            t[k] = t[k - 1] + (k as f64).ln();
        }
        t
    })
}

/// The Stirling series' correction `ln Γ(x) − ((x − ½) ln x − x + ½ ln 2π)`, for `x ≥ TABLE`.
fn stirling_correction(x: f64) -> f64 {
    let r = 1.0 / x;
    let r2 = r * r;
    r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 / 1680.0)))
}

/// `ln k!`.
pub(crate) fn ln_factorial(k: u64) -> f64 {
    if k < TABLE as u64 {
        return ln_factorial_table()[k as usize];
    }
    let x = k as f64 + 1.0;
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + stirling_correction(x)
}

/// `ln(a! / b!)`, without the cancellation of subtracting two large log-factorials.
///
/// With `x = a + 1`, `y = b + 1` and Stirling's series,
/// `ln Γ(x) − ln Γ(y) = (x − y)(ln x − 1) + (y − ½) · ln(1 + (x − y)/y) + c(x) − c(y)`,
/// every term of which is computed to full relative precision.
pub(crate) fn ln_factorial_ratio(a: u64, b: u64) -> f64 {
    if a == b {
        return 0.0;
    }
    if a < TABLE as u64 || b < TABLE as u64 {
        // One side is small, so the result is not a difference of two huge numbers... unless
        // the other side is huge, where the small side's value is negligible in comparison.
        return ln_factorial(a) - ln_factorial(b);
    }
    let (x, y) = (a as f64 + 1.0, b as f64 + 1.0);
    let d = a as f64 - b as f64; // exact: both below 2^53 in any run we allow
    d * (x.ln() - 1.0) + (y - 0.5) * (d / y).ln_1p() + stirling_correction(x)
        - stirling_correction(y)
}

/// What [`ln_factorial_ratio`] computes from `a` alone, computed once for an `a` that many
/// ratios share (a distribution's mode): [`FactorialAt::ratio`] then gives
/// `ln_factorial_ratio(a, b)` bit for bit, with the same operations in the same order, and
/// half of its logarithms already done.
#[derive(Clone, Copy, Debug)]
struct FactorialAt {
    a: u64,
    /// `ln(a + 1)`.
    ln_x: f64,
    /// `stirling_correction(a + 1)` (only read when `a ≥ TABLE`).
    correction: f64,
}

impl FactorialAt {
    fn new(a: u64) -> Self {
        let x = a as f64 + 1.0;
        let big = a >= TABLE as u64;
        Self {
            a,
            ln_x: if big { x.ln() } else { 0.0 },
            correction: if big { stirling_correction(x) } else { 0.0 },
        }
    }

    /// `ln_factorial_ratio(self.a, b)`, bit for bit.
    #[inline]
    fn ratio(&self, b: u64) -> f64 {
        let a = self.a;
        if a == b {
            return 0.0;
        }
        if a < TABLE as u64 || b < TABLE as u64 {
            return ln_factorial(a) - ln_factorial(b);
        }
        let y = b as f64 + 1.0;
        let d = a as f64 - b as f64;
        d * (self.ln_x - 1.0) + (y - 0.5) * (d / y).ln_1p() + self.correction
            - stirling_correction(y)
    }
}

/// A uniform float in `(0, 1]`: one minus the documented `[0, 1)` float.
fn open_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    1.0 - rng.next_f64()
}

/// A log-concave discrete distribution on `lo..=hi`, as the ratio-of-uniforms sampler sees it.
trait LogConcave {
    fn support(&self) -> (u64, u64);
    fn mean(&self) -> f64;
    fn variance(&self) -> f64;
    /// `ln f(k) − ln f(mode)` (≤ 0).
    fn ln_ratio_to_mode(&self, k: u64) -> f64;
    /// Certain bounds on what [`LogConcave::ln_ratio_to_mode`] returns at `k`, when cheaply
    /// had (see `near_mode.rs`).
    fn near_mode(&self) -> Option<&NearMode>;
}

/// Half-width parameters of the ratio-of-uniforms rectangle: `(a, h)`.
fn rou_box<D: LogConcave>(d: &D) -> (f64, f64) {
    let a = d.mean() + 0.5;
    let h = ROU_D1 * (d.variance() + 0.5).sqrt() + ROU_D2;
    (a, h)
}

/// Stadlober's ratio of uniforms, with the two squeezes `ln u ≤ …` of numpy's HRUA:
/// `2 ln U ≤ U(4 − U) − 3` (so `U(4 − U) − 3 ≤ T` accepts) and `2 ln U > U − 1/U` for
/// `U < 1` (so `U(U − T) ≥ 1` rejects).
fn ratio_of_uniforms<D: LogConcave, R: Rng + ?Sized>(d: &D, rng: &mut R) -> u64 {
    let (a, h) = rou_box(d);
    let (lo, hi) = d.support();
    let (lo_f, end_f) = (lo as f64, hi as f64 + 1.0);
    loop {
        let u = open_unit(rng);
        let v = rng.next_f64();
        let x = a + h * (v - 0.5) / u;
        if !(x >= lo_f && x < end_f) {
            continue;
        }
        // `x ≥ lo ≥ 0`, so the cast's truncation is `floor` (without libm's call).
        let k = (x as u64).clamp(lo, hi);
        let squeeze = u * (4.0 - u) - 3.0;
        if let Some((approx, error)) = d.near_mode().and_then(|near| near.bound(k)) {
            // The exact `t` lies in `low..=high`: decide without it when every `t` there
            // decides alike (each test below is monotone in `t`, in floating point too).
            let (low, high) = (approx - error, approx + error);
            debug_assert!(
                (low..=high).contains(&d.ln_ratio_to_mode(k)),
                "k {k}: {} outside {low}..={high}",
                d.ln_ratio_to_mode(k)
            );
            if squeeze <= low {
                return k;
            }
            if squeeze > high {
                if u * (u - high) >= 1.0 {
                    continue;
                }
                if u * (u - low) < 1.0 {
                    let twice_ln_u = 2.0 * u.ln();
                    if twice_ln_u <= low {
                        return k;
                    }
                    if twice_ln_u > high {
                        continue;
                    }
                }
            }
        }
        let t = d.ln_ratio_to_mode(k);
        if squeeze <= t {
            return k;
        }
        if u * (u - t) >= 1.0 {
            continue;
        }
        if 2.0 * u.ln() <= t {
            return k;
        }
    }
}

/// Inversion from the lower end of the support: `f(lo)` is given, `ratio(k)` is
/// `f(k + 1) / f(k)`. Restarts on the (rounding-only) event of running off the top.
fn invert<R: Rng + ?Sized>(
    rng: &mut R,
    lo: u64,
    hi: u64,
    f_lo: f64,
    ratio: impl Fn(u64) -> f64,
) -> u64 {
    loop {
        let mut u = rng.next_f64();
        let mut f = f_lo;
        let mut k = lo;
        loop {
            if u < f {
                return k;
            }
            u -= f;
            if k >= hi {
                break;
            }
            f *= ratio(k);
            k += 1;
        }
    }
}

/// The binomial distribution `B(n, p)` with `0 < p ≤ ½` (the caller reflects).
struct Binomial {
    n: u64,
    p: f64,
    /// The mode `m`.
    mode: u64,
    /// `ln(p/q)`, and `ln m!` and `ln (n − m)!` as `ln_ratio_to_mode` needs them: computed
    /// once per distribution, and only when a candidate needs the exact value.
    exact: OnceCell<(f64, FactorialAt, FactorialAt)>,
    /// The bounds near the mode, built only when a candidate leaves the squeeze.
    near: OnceCell<Option<NearMode>>,
}

impl Binomial {
    fn new(n: u64, p: f64) -> Self {
        // `as` truncates toward zero and saturates, so it is `floor` for every value here
        // (`(n + 1) p ≥ 0`; a negative or NaN would give 0 both ways) without libm's call.
        let mode = (((n as f64 + 1.0) * p) as u64).min(n);
        Self {
            n,
            p,
            mode,
            exact: OnceCell::new(),
            near: OnceCell::new(),
        }
    }

    fn near(&self) -> Option<NearMode> {
        let (n, p, mode) = (self.n, self.p, self.mode);
        let q = 1.0 - p;
        // h(x) = ln((n − x) p) − ln((x + 1) q); h(m) = ln(1 + ((n − m) p − (m + 1) q) / ((m + 1) q)),
        // a small argument whose rounding stays within a few EPS.
        let below = (mode + 1) as f64 * q;
        let h0 = near_mode::ln_1p_small(((n - mode) as f64 * p - below) / below);
        let unused = near_mode::Term {
            sign: 0.0,
            c: 1.0,
            rising: true,
        };
        let terms = [
            near_mode::Term {
                sign: 1.0,
                c: n as f64,
                rising: false,
            },
            near_mode::Term {
                sign: -1.0,
                c: 1.0,
                rising: true,
            },
            unused,
            unused,
        ];
        // The exact value's terms: two ratios of at most |j| (ln(n + 1) + 1) + 1.22 |j| each,
        // and |j| |ln(p/q)| ≤ |j| ln(n + 1) (n p q ≥ 10 here).
        let magnitude = 4.0 * near_mode::ln_bound(n) + 10.0;
        NearMode::new(mode, terms, h0, mode.min(n - mode), magnitude)
    }

    fn exact(&self) -> &(f64, FactorialAt, FactorialAt) {
        self.exact.get_or_init(|| {
            let ln_odds = (self.p / (1.0 - self.p)).ln();
            (
                ln_odds,
                FactorialAt::new(self.mode),
                FactorialAt::new(self.n - self.mode),
            )
        })
    }
}

impl LogConcave for Binomial {
    fn support(&self) -> (u64, u64) {
        (0, self.n)
    }
    fn mean(&self) -> f64 {
        self.n as f64 * self.p
    }
    fn variance(&self) -> f64 {
        self.n as f64 * self.p * (1.0 - self.p)
    }
    fn ln_ratio_to_mode(&self, k: u64) -> f64 {
        let m = self.mode;
        let (ln_odds, at_mode, at_rest) = self.exact();
        // f(k)/f(m) = m! (n−m)! / (k! (n−k)!) · (p/q)^(k−m)
        at_mode.ratio(k) + at_rest.ratio(self.n - k) + (k as f64 - m as f64) * ln_odds
    }
    fn near_mode(&self) -> Option<&NearMode> {
        self.near.get_or_init(|| self.near()).as_ref()
    }
}

/// A draw from the binomial distribution: successes in `n` independent trials of probability
/// `p`. Exact in distribution (see the module docs) for any `n`; `p` outside `[0, 1]` (or NaN)
/// is clamped, so the call never panics.
pub(crate) fn binomial<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64) -> u64 {
    if n == 0 || p.is_nan() || p <= 0.0 {
        return 0;
    }
    if p >= 1.0 {
        return n;
    }
    if p > 0.5 {
        return n - binomial_low(rng, n, 1.0 - p);
    }
    binomial_low(rng, n, p)
}

fn binomial_low<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64) -> u64 {
    let q = 1.0 - p;
    if n as f64 * p * (1.0 - p) < INVERSION_BELOW_VARIANCE {
        // f(0) = q^n; f(k+1)/f(k) = (n − k)/(k + 1) · p/q.
        let f0 = (n as f64 * (-p).ln_1p()).exp();
        let odds = p / q;
        invert(rng, 0, n, f0, |k| (n - k) as f64 / (k + 1) as f64 * odds)
    } else {
        transformed_rejection(&Binomial::new(n, p), n, p, rng)
    }
}

/// Hörmann's BTRS constants for `B(n, p)` with `p ≤ ½`, `n p q ≥ 10`: `(a, b, c, α, v_r)`.
fn btrs_constants(n: u64, p: f64) -> [f64; 5] {
    let spq = (n as f64 * p * (1.0 - p)).sqrt();
    let b = 1.15 + 2.53 * spq;
    let a = -0.0873 + 0.0248 * b + 0.01 * p;
    let c = n as f64 * p + 0.5;
    let alpha = (2.83 + 5.1 / b) * spq;
    let v_r = 0.92 - 4.2 / b;
    [a, b, c, alpha, v_r]
}

/// Hörmann's transformed rejection with squeeze, BTRS ("The generation of binomial random
/// variates", J. Statist. Comput. Simul. 46, 1993), for `d = B(n, p)` with `p ≤ ½` and
/// `n p q ≥ 10`: draw `u` uniform on `[−½, ½)` and `v` on `[0, 1)`, let `u_s = ½ − |u|` and
/// `k = ⌊(2a/u_s + b) u + c⌋`; accept at once when `u_s ≥ 0.07` and `v ≤ v_r` (the squeeze),
/// else when `ln(v α / (a/u_s² + b)) ≤ ln f(k) − ln f(m)`. The transform's
/// density in `x` is `1 / (a/u_s² + b)`, so accepted `k` follow `f` exactly as long as that
/// hat encloses `f(k)/f(m)` and the squeeze lies under it: a unit test checks both over a
/// grid of parameters. 1.13–1.35 candidates a draw; the squeeze decides 40–79 % of them, and
/// the rest go to the bounds near the mode, or to the exact log-ratio when those straddle.
fn transformed_rejection<D: LogConcave, R: Rng + ?Sized>(
    d: &D,
    n: u64,
    p: f64,
    rng: &mut R,
) -> u64 {
    let [a, b, c, alpha, v_r] = btrs_constants(n, p);
    let end = n as f64 + 1.0;
    loop {
        let u = rng.next_f64() - 0.5;
        let v = rng.next_f64();
        let us = 0.5 - u.abs();
        let x = (2.0 * a / us + b) * u + c;
        // Outside the support (or `u_s = 0`'s infinity): no mass, so rejected.
        if !(x >= 0.0 && x < end) {
            continue;
        }
        // `x ≥ 0`, so the cast's truncation is `floor`.
        let k = (x as u64).min(n);
        if us >= 0.07 && v <= v_r {
            return k;
        }
        let ln_v = (v * alpha / (a / (us * us) + b)).ln();
        if let Some((approx, error)) = d.near_mode().and_then(|near| near.bound(k)) {
            // Decided without the exact value when every value in its bracket decides alike.
            if ln_v <= approx - error {
                return k;
            }
            if ln_v > approx + error {
                continue;
            }
        }
        if ln_v <= d.ln_ratio_to_mode(k) {
            return k;
        }
    }
}

/// The hypergeometric distribution with `successes ≤ total/2` and `draws ≤ total/2` (the
/// caller reflects): successes among `draws` taken without replacement from `total` items.
struct Hypergeometric {
    total: u64,
    successes: u64,
    draws: u64,
    mode: u64,
    /// The four log-factorials of `ln_ratio_to_mode` at the mode `m`: computed once, and only
    /// when a candidate needs the exact value.
    at_mode: OnceCell<[FactorialAt; 4]>,
    near: Option<NearMode>,
}

/// The variance of the hypergeometric distribution of `draws` of `total` with `successes`.
fn hypergeometric_variance(total: u64, successes: u64, draws: u64) -> f64 {
    let (n, k, d) = (total as f64, successes as f64, draws as f64);
    if total <= 1 {
        return 0.0;
    }
    d * (k / n) * (1.0 - k / n) * (n - d) / (n - 1.0)
}

impl Hypergeometric {
    fn new(total: u64, successes: u64, draws: u64) -> Self {
        let m = (u128::from(draws) + 1) * (u128::from(successes) + 1) / (u128::from(total) + 2);
        let mode = (m as u64).min(successes.min(draws));
        let rest = total - successes - draws;
        // h(x) = ln(s − x) + ln(d − x) − ln(x + 1) − ln(rest + x + 1); h(m) from the exact
        // integer difference of the products, so within a few EPS.
        let above = u128::from(successes - mode) * u128::from(draws - mode);
        let below = u128::from(mode + 1) * u128::from(rest + mode + 1);
        let h0 = near_mode::ln_1p_small((above as i128 - below as i128) as f64 / below as f64);
        let term = |sign: f64, c: u64, rising: bool| near_mode::Term {
            sign,
            c: c as f64,
            rising,
        };
        let terms = [
            term(1.0, successes, false),
            term(1.0, draws, false),
            term(-1.0, 1, true),
            term(-1.0, rest + 1, true),
        ];
        let least = mode.min(successes - mode).min(draws - mode);
        // The exact value's terms: four ratios of at most |j| (ln(total + 1) + 1) + 1.22 |j|.
        let magnitude = 8.0 * near_mode::ln_bound(total) + 20.0;
        Self {
            total,
            successes,
            draws,
            mode,
            at_mode: OnceCell::new(),
            near: NearMode::new(mode, terms, h0, least, magnitude),
        }
    }
}

impl LogConcave for Hypergeometric {
    fn support(&self) -> (u64, u64) {
        // With both at most total/2, the lower end is 0.
        (0, self.successes.min(self.draws))
    }
    fn mean(&self) -> f64 {
        self.draws as f64 * self.successes as f64 / self.total as f64
    }
    fn variance(&self) -> f64 {
        hypergeometric_variance(self.total, self.successes, self.draws)
    }
    fn ln_ratio_to_mode(&self, k: u64) -> f64 {
        let (s, d) = (self.successes, self.draws);
        let rest = self.total - s - d; // ≥ 0 since s, d ≤ total/2
        let [m, s_m, d_m, rest_m] = self.at_mode.get_or_init(|| {
            let mode = self.mode;
            [
                FactorialAt::new(mode),
                FactorialAt::new(s - mode),
                FactorialAt::new(d - mode),
                FactorialAt::new(rest + mode),
            ]
        });
        // f(k) ∝ 1 / (k! (s−k)! (d−k)! (rest+k)!)
        m.ratio(k) + s_m.ratio(s - k) + d_m.ratio(d - k) + rest_m.ratio(rest + k)
    }
    fn near_mode(&self) -> Option<&NearMode> {
        self.near.as_ref()
    }
}

/// A draw from the hypergeometric distribution: how many of `successes` marked items are
/// among `draws` items taken at random, without replacement, from `total`. Exact in
/// distribution for any sizes. Arguments out of range are clamped (`successes` and `draws`
/// to `total`), so the call never panics.
pub(crate) fn hypergeometric<R: Rng + ?Sized>(
    rng: &mut R,
    total: u64,
    successes: u64,
    draws: u64,
) -> u64 {
    let successes = successes.min(total);
    let draws = draws.min(total);
    if draws == 0 || successes == 0 {
        return 0;
    }
    if successes == total {
        return draws;
    }
    if draws == total {
        return successes;
    }
    // Reflect so that both are at most half the total (as numpy does): count the unmarked
    // items if they are fewer, and the items left behind if they are fewer.
    let flip_marked = successes > total - successes;
    let flip_drawn = draws > total - draws;
    let s = if flip_marked {
        total - successes
    } else {
        successes
    };
    let d = if flip_drawn { total - draws } else { draws };
    let mut x = if hypergeometric_variance(total, s, d) < INVERSION_BELOW_VARIANCE {
        let hi = s.min(d);
        let rest = total - s - d;
        // f(0) = C(total − s, d) / C(total, d); f(k+1)/f(k) = (s−k)(d−k) / ((k+1)(rest+k+1)).
        let ln_f0 = ln_factorial_ratio(total - s, rest) - ln_factorial_ratio(total, total - d);
        invert(rng, 0, hi, ln_f0.exp(), |k| {
            (s - k) as f64 * (d - k) as f64 / ((k + 1) as f64 * (rest + k + 1) as f64)
        })
    } else {
        ratio_of_uniforms(&Hypergeometric::new(total, s, d), rng)
    };
    if flip_marked {
        x = d - x;
    }
    if flip_drawn {
        x = successes - x;
    }
    x
}

/// Splits `n` items over outcomes with probabilities `probs` (summing to 1) by the conditional
/// binomial method, calling `emit(outcome, count)` for every non-zero count, in outcome order.
///
/// `tail[i]` must be `probs[i] + probs[i+1] + …` (precomputed, so no rounding drifts in). For
/// small `n` against many outcomes it draws each item's outcome by inversion of the cumulative
/// distribution `cdf` instead (same law, less work).
pub(crate) fn multinomial<R: Rng + ?Sized>(
    rng: &mut R,
    n: u64,
    probs: &[f64],
    tail: &[f64],
    cdf: &[f64],
    mut emit: impl FnMut(usize, u64),
) {
    let m = probs.len();
    if n == 0 || m == 0 {
        return;
    }
    if m == 1 {
        emit(0, n);
        return;
    }
    if n.saturating_mul(8) < m as u64 {
        // One inversion per item, then counted in outcome order.
        let mut picks: Vec<usize> = (0..n)
            .map(|_| {
                let u = rng.next_f64();
                cdf.partition_point(|&c| c <= u).min(m - 1)
            })
            .collect();
        picks.sort_unstable();
        let mut i = 0;
        while i < picks.len() {
            let j = picks[i..].partition_point(|&x| x == picks[i]) + i;
            emit(picks[i], (j - i) as u64);
            i = j;
        }
        return;
    }
    let mut left = n;
    for i in 0..m - 1 {
        let p = if tail[i] > 0.0 {
            probs[i] / tail[i]
        } else {
            0.0
        };
        let c = binomial(rng, left, p);
        if c > 0 {
            emit(i, c);
            left -= c;
        }
        if left == 0 {
            return;
        }
    }
    emit(m - 1, left);
}

/// Draws how many of each group are among `draws` taken without replacement from the union of
/// `groups` (a multivariate hypergeometric draw); writes them to `out` (cleared first), in
/// group order.
///
/// Two exact methods. The conditional one draws a hypergeometric per group,
/// `x₁ ~ H(A, n₁, s)`, then `x₂ ~ H(A − n₁, n₂, s − x₁)`, …: one draw per group. When the
/// items taken (or those left behind, whichever are fewer) number at most half the groups,
/// as when a server answers 50 of a billion clients spread over thousands of cohorts, it
/// instead picks them one at a time, each uniform among the items not yet picked (one
/// unbiased integer, `Rng::below`), and finds its group in a Fenwick tree of the groups'
/// remaining sizes: the counts of a uniformly random subset, so the same joint law, for
/// `O(groups + picks · log groups)` instead of a draw per group.
pub(crate) fn multivariate_hypergeometric<R: Rng + ?Sized>(
    rng: &mut R,
    groups: &[u64],
    draws: u64,
    out: &mut Vec<u64>,
) {
    out.clear();
    let mut total: u64 = groups.iter().sum();
    let mut left = draws.min(total);
    let fewer = left.min(total - left);
    if fewer > 0 && fewer.saturating_mul(2) <= groups.len() as u64 {
        pick_one_by_one(rng, groups, total, fewer, out);
        if fewer < left {
            // The picks were the items left behind.
            for (x, &g) in out.iter_mut().zip(groups) {
                *x = g - *x;
            }
        }
        return;
    }
    for &g in groups {
        let x = if left == 0 {
            0
        } else if left == total {
            g
        } else {
            hypergeometric(rng, total, g, left)
        };
        out.push(x);
        left -= x;
        total -= g;
    }
}

/// `picks` items drawn one by one without replacement from `groups` (holding `total`):
/// how many of each group, written to `out` (cleared first), in group order.
fn pick_one_by_one<R: Rng + ?Sized>(
    rng: &mut R,
    groups: &[u64],
    total: u64,
    picks: u64,
    out: &mut Vec<u64>,
) {
    let m = groups.len();
    out.clear();
    out.resize(m, 0);
    // A Fenwick tree, 1-based: `tree[i]` holds the remaining sizes of groups
    // `i − lowbit(i) + 1 ..= i`; built in O(m).
    let mut tree = Vec::with_capacity(m + 1);
    tree.push(0u64);
    tree.extend_from_slice(groups);
    for i in 1..=m {
        let parent = i + (i & i.wrapping_neg());
        if parent <= m {
            tree[parent] += tree[i];
        }
    }
    let top = if m == 0 { 0 } else { 1usize << m.ilog2() };
    let mut remaining = total;
    for _ in 0..picks {
        // The `r`-th remaining item (from 0): descend to the group whose prefix passes `r`.
        let mut r = rng.below(remaining);
        let mut at = 0usize;
        let mut step = top;
        while step > 0 {
            let next = at + step;
            if next <= m && tree[next] <= r {
                r -= tree[next];
                at = next;
            }
            step >>= 1;
        }
        // `at` is the last index whose prefix is at most `r`: the item is in group `at`
        // (0-based), one fewer there from now on.
        out[at] += 1;
        let mut i = at + 1;
        while i <= m {
            tree[i] -= 1;
            i += i & i.wrapping_neg();
        }
        remaining -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::rng::SplitMix64;

    fn ln_choose(n: u64, k: u64) -> f64 {
        ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
    }

    fn binomial_pmf(n: u64, p: f64, k: u64) -> f64 {
        (ln_choose(n, k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp()
    }

    fn hyper_pmf(total: u64, succ: u64, draws: u64, k: u64) -> f64 {
        if k > succ || k > draws || draws - k > total - succ {
            return 0.0;
        }
        (ln_choose(succ, k) + ln_choose(total - succ, draws - k) - ln_choose(total, draws)).exp()
    }

    /// Pearson's chi-square over `samples` draws against `pmf`, pooling cells with expected
    /// counts below 5; returns (statistic, degrees of freedom).
    fn chi_square(counts: &[u64], pmf: &[f64], samples: u64) -> (f64, usize) {
        let mut stat = 0.0;
        let mut cells = 0usize;
        let (mut obs, mut exp) = (0.0, 0.0);
        for (c, p) in counts.iter().zip(pmf) {
            obs += *c as f64;
            exp += p * samples as f64;
            if exp >= 5.0 {
                stat += (obs - exp) * (obs - exp) / exp;
                cells += 1;
                obs = 0.0;
                exp = 0.0;
            }
        }
        if exp > 0.0 {
            stat += (obs - exp) * (obs - exp) / exp.max(1e-9);
            cells += 1;
        }
        (stat, cells.saturating_sub(1))
    }

    /// The `1 − 10⁻⁸` point of chi-square with `df` degrees of freedom (Wilson–Hilferty), so
    /// a correct sampler fails the file's checks (under 100) with probability below 10⁻⁶.
    fn chi_square_limit(df: usize) -> f64 {
        let k = df.max(1) as f64;
        let z = 5.612;
        k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    /// Draws `samples` values of B(`n`, `p`) from `rng` and checks them against the exact mass
    /// function (Pearson's chi-square below [`chi_square_limit`]).
    fn binomial_fits(rng: &mut SplitMix64, n: u64, p: f64, samples: u64) {
        let mut counts = vec![0u64; n as usize + 1];
        for _ in 0..samples {
            counts[binomial(rng, n, p) as usize] += 1;
        }
        let pmf: Vec<f64> = (0..=n).map(|k| binomial_pmf(n, p, k)).collect();
        let (stat, df) = chi_square(&counts, &pmf, samples);
        assert!(
            stat < chi_square_limit(df),
            "B({n}, {p}): chi² {stat} on {df} df"
        );
    }

    /// Draws `samples` values of H(`total`, `s`, `d`) from `rng` and checks them against the
    /// exact mass function, as [`binomial_fits`].
    fn hypergeometric_fits(rng: &mut SplitMix64, total: u64, s: u64, d: u64, samples: u64) {
        let hi = s.min(d) as usize;
        let mut counts = vec![0u64; hi + 1];
        for _ in 0..samples {
            counts[hypergeometric(rng, total, s, d) as usize] += 1;
        }
        let pmf: Vec<f64> = (0..=hi as u64).map(|k| hyper_pmf(total, s, d, k)).collect();
        let (stat, df) = chi_square(&counts, &pmf, samples);
        assert!(
            stat < chi_square_limit(df),
            "H({total}, {s}, {d}): chi² {stat} on {df} df"
        );
    }

    #[test]
    fn ln_factorial_ratio_matches_direct_sums() {
        for (a, b) in [
            (300u64, 260u64),
            (1000, 999),
            (5000, 10_000),
            (255, 256),
            (7, 300),
        ] {
            let direct: f64 = if a >= b {
                ((b + 1)..=a).map(|i| (i as f64).ln()).sum()
            } else {
                -((a + 1)..=b).map(|i| (i as f64).ln()).sum::<f64>()
            };
            let got = ln_factorial_ratio(a, b);
            assert!(
                (got - direct).abs() < 1e-9 * direct.abs().max(1.0),
                "{a} {b}"
            );
        }
        // Huge arguments: ln((n+1)!/n!) = ln(n+1).
        let n = 999_999_999_999u64;
        assert!((ln_factorial_ratio(n + 1, n) - ((n + 1) as f64).ln()).abs() < 1e-9);
    }

    /// The cached form the samplers use is `ln_factorial_ratio` bit for bit, on both sides of
    /// the table and at the huge arguments of a billion clients.
    #[test]
    fn factorial_at_is_ln_factorial_ratio_bit_for_bit() {
        let points = [
            0u64,
            1,
            7,
            255,
            256,
            257,
            1000,
            123_456,
            999_999_999,
            1 << 40,
        ];
        for &a in &points {
            let at = FactorialAt::new(a);
            for &b in &points {
                for b in [b, b + 1, b.saturating_sub(3)] {
                    assert_eq!(
                        at.ratio(b).to_bits(),
                        ln_factorial_ratio(a, b).to_bits(),
                        "ln({a}!/{b}!)"
                    );
                }
            }
        }
    }

    #[test]
    fn rou_rectangle_encloses_the_acceptance_region() {
        // sup over x of |x − a|·√(f(⌊x⌋)/f(mode)) must not exceed h/2.
        fn check<D: LogConcave>(d: &D, what: &str) {
            let (a, h) = rou_box(d);
            let (lo, hi) = d.support();
            let sd = d.variance().sqrt();
            let from = (d.mean() - 40.0 * sd).max(lo as f64) as u64;
            let to = ((d.mean() + 40.0 * sd) as u64).min(hi);
            for k in from..=to {
                let s = (0.5 * d.ln_ratio_to_mode(k)).exp();
                let reach = (k as f64 - a).abs().max((k as f64 + 1.0 - a).abs());
                assert!(
                    reach * s <= h / 2.0 + 1e-9,
                    "{what}: k {k}: {} > {}",
                    reach * s,
                    h / 2.0
                );
            }
        }
        for (total, s, d) in [
            (100u64, 50u64, 50u64),
            (200, 30, 100),
            (10_000, 120, 5000),
            (10_000, 5000, 5000),
            (1_000_000, 400_000, 300),
            (1_000_000, 100, 500_000),
        ] {
            let h = Hypergeometric::new(total, s, d);
            if h.variance() >= INVERSION_BELOW_VARIANCE {
                check(&h, &format!("H({total}, {s}, {d})"));
            }
        }
    }

    /// BTRS is exact where its hat `α / (a/u_s² + b)` (the transform's density in `x`, over
    /// `f(m)`) encloses `f(k)/f(m)` on every cell `x ∈ [k, k + 1)`, and its squeeze accepts
    /// only under `f`: `v_r` times the hat stays below `f(k)/f(m)` wherever `u_s ≥ 0.07`. The
    /// transform is increasing in `u` and the hat falls with `|u|`, so each cell's least and
    /// greatest hat are at its ends (or at `u = 0`), found by bisection.
    #[test]
    fn btrs_hat_encloses_the_law_and_its_squeeze_lies_under_it() {
        let mut checked = 0;
        for n in [
            20u64,
            41,
            100,
            1000,
            12_345,
            1_000_000,
            1_000_000_000,
            1 << 40,
        ] {
            for p in [0.5, 0.3, 0.1, 0.02, 0.011, 0.000_01, 1e-9] {
                let d = Binomial::new(n, p);
                if d.variance() < INVERSION_BELOW_VARIANCE {
                    continue;
                }
                checked += 1;
                let [a, b, c, alpha, v_r] = btrs_constants(n, p);
                let x_of = |u: f64| (2.0 * a / (0.5 - u.abs()) + b) * u + c;
                // The `u` at which the transform reaches `x` (it rises on (−½, ½)).
                let u_at = |x: f64| {
                    let (mut lo, mut hi) = (-0.5f64, 0.5f64);
                    for _ in 0..70 {
                        let mid = 0.5 * (lo + hi);
                        if x_of(mid) < x { lo = mid } else { hi = mid }
                    }
                    0.5 * (lo + hi)
                };
                let ln_hat = |u: f64| {
                    let us = 0.5 - u.abs();
                    (alpha / (a / (us * us) + b)).ln()
                };
                let sd = d.variance().sqrt();
                let from = (c - 60.0 * sd).max(0.0) as u64;
                let to = ((c + 60.0 * sd) as u64).min(n);
                // Every k within 300 of the mode, and about 4000 spread over
                // the ±60 σ range beyond it (a dense walk of B(2⁴⁰, ½)'s
                // 60 M values would take minutes in a debug build).
                let stride = ((to - from) / 4000).max(1);
                let near = (c as u64).saturating_sub(300).max(from)..=((c as u64) + 300).min(to);
                let ks = near.chain((from..=to).step_by(stride as usize));
                for k in ks {
                    let t = d.ln_ratio_to_mode(k);
                    let (u0, u1) = (u_at(k as f64), u_at(k as f64 + 1.0));
                    let outer = if u0.abs() > u1.abs() { u0 } else { u1 };
                    assert!(
                        t <= ln_hat(outer),
                        "B({n}, {p}): k {k}: ln f/f(m) {t} above the hat {}",
                        ln_hat(outer)
                    );
                    let inner = if u0 <= 0.0 && u1 >= 0.0 {
                        0.0
                    } else if u0.abs() < u1.abs() {
                        u0
                    } else {
                        u1
                    };
                    if 0.5 - inner.abs() >= 0.07 {
                        assert!(
                            v_r.ln() + ln_hat(inner) <= t,
                            "B({n}, {p}): k {k}: the squeeze {} above ln f/f(m) {t}",
                            v_r.ln() + ln_hat(inner)
                        );
                    }
                }
                // The squeeze's cells lie inside the support.
                for u in [-0.43, 0.43] {
                    assert!(
                        x_of(u) >= 0.0 && x_of(u) < n as f64 + 1.0,
                        "B({n}, {p}): u {u}"
                    );
                }
            }
        }
        assert!(checked >= 30, "{checked} laws checked");
    }

    #[test]
    fn binomial_chi_square_small_and_large() {
        let mut rng = SplitMix64::new(11);
        for (n, p) in [
            (10u64, 0.3),
            (50, 0.5),
            (200, 0.9),
            (1000, 0.07),
            (3, 0.99),
            (400, 0.02),
            // Just past the inversion's threshold (n p q ≥ 10), where BTRS's hat is widest.
            (41, 0.5),
            (1011, 0.0101),
            (12_345, 0.3),
        ] {
            binomial_fits(&mut rng, n, p, 40_000);
        }
    }

    /// A law as the sampler saw it before the bounds near the mode: every candidate's
    /// `ln f(k) − ln f(mode)` computed exactly.
    struct WithoutBounds<'a, D>(&'a D);

    impl<D: LogConcave> LogConcave for WithoutBounds<'_, D> {
        fn support(&self) -> (u64, u64) {
            self.0.support()
        }
        fn mean(&self) -> f64 {
            self.0.mean()
        }
        fn variance(&self) -> f64 {
            self.0.variance()
        }
        fn ln_ratio_to_mode(&self, k: u64) -> f64 {
            self.0.ln_ratio_to_mode(k)
        }
        fn near_mode(&self) -> Option<&NearMode> {
            None
        }
    }

    /// The bounds near the mode change no decision: with and without them, the samplers draw
    /// the same values from the same words, for laws from a few thousand to 10¹² items.
    #[test]
    fn bounds_near_the_mode_draw_what_the_exact_test_draws() {
        fn same<D: LogConcave>(
            d: &D,
            binomial: Option<(u64, f64)>,
            seed: u64,
            what: &str,
        ) -> usize {
            let (mut fast, mut exact) = (SplitMix64::new(seed), SplitMix64::new(seed));
            for i in 0..3000 {
                let (a, b) = match binomial {
                    Some((n, p)) => (
                        transformed_rejection(d, n, p, &mut fast),
                        transformed_rejection(&WithoutBounds(d), n, p, &mut exact),
                    ),
                    None => (
                        ratio_of_uniforms(d, &mut fast),
                        ratio_of_uniforms(&WithoutBounds(d), &mut exact),
                    ),
                };
                assert_eq!(a, b, "{what}, seed {seed}, draw {i}");
            }
            assert_eq!(fast.next_u64(), exact.next_u64(), "{what}: the same words");
            usize::from(d.near_mode().is_some())
        }
        let mut bounded = 0;
        for (i, (n, p)) in [
            (2_000u64, 0.5),
            (5_000, 0.4),
            (100_000, 0.013),
            (1_000_000_000, 0.5),
            (1_000_000_000, 0.000_01),
            (1_000_000_000_000, 0.2),
            (999_999_999_999, 0.000_000_7),
        ]
        .into_iter()
        .enumerate()
        {
            let d = Binomial::new(n, p);
            bounded += same(&d, Some((n, p)), i as u64, &format!("B({n}, {p})"));
        }
        for (i, (total, s, d)) in [
            (4_000u64, 1_500u64, 2_000u64),
            (1_000_000, 400_000, 300_000),
            (2_000_000_000, 25_000_000, 1_000_000_000),
            (1_000_000_000_000, 400_000_000_000, 1_000_000),
        ]
        .into_iter()
        .enumerate()
        {
            let h = Hypergeometric::new(total, s, d);
            bounded += same(&h, None, 100 + i as u64, &format!("H({total}, {s}, {d})"));
        }
        assert_eq!(bounded, 11, "every law here is past the bounds' threshold");
    }

    /// Laws where the bounds near the mode decide most candidates, against the exact mass
    /// function.
    #[test]
    fn chi_square_where_the_bounds_decide() {
        let mut rng = SplitMix64::new(14);
        binomial_fits(&mut rng, 5_000, 0.4, 40_000);
        hypergeometric_fits(&mut rng, 20_000, 5_000, 8_000, 40_000);
    }

    #[test]
    fn hypergeometric_chi_square_small_and_large() {
        let mut rng = SplitMix64::new(12);
        for (total, s, d) in [
            (20u64, 7u64, 9u64),
            (100, 60, 30),
            (500, 100, 400),
            (1000, 500, 500),
            (10_000, 9_000, 300),
            (2000, 3, 1000),
        ] {
            hypergeometric_fits(&mut rng, total, s, d, 40_000);
        }
    }

    /// Mean and variance over `samples` draws within 6.1 standard errors of the exact moments:
    /// a false failure ≤ 10⁻⁶ over the file's checks (under 1000; Bonferroni, normal tails).
    fn moments_agree(draws: impl Fn(&mut SplitMix64) -> u64, mean: f64, var: f64, what: &str) {
        let mut rng = SplitMix64::new(13);
        let samples = 20_000;
        let xs: Vec<f64> = (0..samples).map(|_| draws(&mut rng) as f64).collect();
        let m = xs.iter().sum::<f64>() / samples as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (samples - 1) as f64;
        let se_mean = (var / samples as f64).sqrt();
        // The sample variance's standard error is about var·√(2/samples) for near-normal laws.
        let se_var = var * (2.0 / samples as f64).sqrt();
        assert!(
            (m - mean).abs() < 6.1 * se_mean + 1e-9,
            "{what}: mean {m} vs {mean}"
        );
        assert!(
            (v - var).abs() < 6.1 * se_var + 1e-9,
            "{what}: variance {v} vs {var}"
        );
    }

    #[test]
    fn binomial_moments_for_huge_n() {
        for (n, p) in [
            (1_000_000_000u64, 0.5),
            (1_000_000_000_000, 0.013),
            (123_456_789, 0.999),
        ] {
            let (mean, var) = (n as f64 * p, n as f64 * p * (1.0 - p));
            moments_agree(|r| binomial(r, n, p), mean, var, &format!("B({n}, {p})"));
        }
    }

    #[test]
    fn hypergeometric_moments_for_huge_populations() {
        for (total, s, d) in [
            (1_000_000_000u64, 300_000_000u64, 25_000_000u64),
            (1_000_000_000_000, 999_000_000_000, 400_000_000_000),
            (2_000_000_000, 40, 1_000_000_000),
        ] {
            let (n, k, dd) = (total as f64, s as f64, d as f64);
            let mean = dd * k / n;
            let var = dd * (k / n) * (1.0 - k / n) * (n - dd) / (n - 1.0);
            moments_agree(
                |r| hypergeometric(r, total, s, d),
                mean,
                var,
                &format!("H({total}, {s}, {d})"),
            );
        }
    }

    #[test]
    fn edges_never_panic() {
        let mut rng = SplitMix64::new(1);
        assert_eq!(binomial(&mut rng, 0, 0.5), 0);
        assert_eq!(binomial(&mut rng, 10, 0.0), 0);
        assert_eq!(binomial(&mut rng, 10, 1.0), 10);
        assert_eq!(binomial(&mut rng, 10, f64::NAN), 0);
        assert_eq!(binomial(&mut rng, u64::MAX >> 12, 1.5), u64::MAX >> 12);
        assert_eq!(hypergeometric(&mut rng, 0, 0, 0), 0);
        assert_eq!(hypergeometric(&mut rng, 10, 10, 4), 4);
        assert_eq!(hypergeometric(&mut rng, 10, 3, 10), 3);
        assert_eq!(hypergeometric(&mut rng, 10, 30, 40), 10);
        let mut out = Vec::new();
        multivariate_hypergeometric(&mut rng, &[5, 0, 7], 12, &mut out);
        assert_eq!(out, vec![5, 0, 7]);
        multivariate_hypergeometric(&mut rng, &[5, 0, 7], 3, &mut out);
        assert_eq!(out.iter().sum::<u64>(), 3);
    }

    /// Both methods of the multivariate hypergeometric, and picking the items left behind,
    /// draw the exact joint law: Pearson's chi-square over every outcome, against
    /// `∏ C(gᵢ, xᵢ) / C(total, draws)`.
    #[test]
    fn multivariate_hypergeometric_draws_the_joint_law() {
        fn joint(groups: &[u64], draws: u64) -> Vec<(Vec<u64>, f64)> {
            let total: u64 = groups.iter().sum();
            let mut outcomes = vec![(Vec::new(), 0.0f64)];
            for &g in groups {
                let mut next = Vec::new();
                for (x, ln_p) in &outcomes {
                    let used: u64 = x.iter().sum();
                    for k in 0..=g.min(draws - used) {
                        let mut y = x.clone();
                        y.push(k);
                        next.push((y, ln_p + ln_choose(g, k)));
                    }
                }
                outcomes = next;
            }
            outcomes
                .into_iter()
                .filter(|(x, _)| x.iter().sum::<u64>() == draws)
                .map(|(x, ln_p)| (x, (ln_p - ln_choose(total, draws)).exp()))
                .collect()
        }
        let mut rng = SplitMix64::new(19);
        let groups = [3u64, 0, 5, 2, 7, 1, 4, 2];
        // 3 of 24: picked one by one; 21: the 3 left behind picked; 8: a draw per group.
        for draws in [3u64, 21, 8] {
            let law = joint(&groups, draws);
            let index: std::collections::HashMap<Vec<u64>, usize> = law
                .iter()
                .enumerate()
                .map(|(i, (x, _))| (x.clone(), i))
                .collect();
            let samples = 100_000;
            let mut counts = vec![0u64; law.len()];
            let mut out = Vec::new();
            for _ in 0..samples {
                multivariate_hypergeometric(&mut rng, &groups, draws, &mut out);
                counts[index[&out]] += 1;
            }
            let pmf: Vec<f64> = law.iter().map(|(_, p)| *p).collect();
            assert!((pmf.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            let (stat, df) = chi_square(&counts, &pmf, samples);
            assert!(
                stat < chi_square_limit(df),
                "{draws} of {groups:?}: chi² {stat} on {df} df"
            );
        }
    }

    /// Picking one by one from thousands of large groups keeps every count within its group
    /// and sums to the draws, with each group's mean `draws · gᵢ / total` (within 5.3
    /// standard errors: false failure below 10⁻⁴ over the groups checked).
    #[test]
    fn picking_one_by_one_has_the_hypergeometric_means() {
        let mut sizes = SplitMix64::new(5);
        let groups: Vec<u64> = (0..3000).map(|_| 1 + sizes.below(1_000_000)).collect();
        let total: u64 = groups.iter().sum();
        let mut rng = SplitMix64::new(23);
        let (reps, draws) = (400u64, 1000u64);
        let mut sum = vec![0u64; groups.len()];
        let mut out = Vec::new();
        for _ in 0..reps {
            multivariate_hypergeometric(&mut rng, &groups, draws, &mut out);
            assert_eq!(out.iter().sum::<u64>(), draws);
            for (i, (&x, &g)) in out.iter().zip(&groups).enumerate() {
                assert!(x <= g);
                sum[i] += x;
            }
        }
        // The 20 largest groups, whose means are large enough for the normal tail.
        let mut by_size: Vec<usize> = (0..groups.len()).collect();
        by_size.sort_by_key(|&i| std::cmp::Reverse(groups[i]));
        for &i in &by_size[..20] {
            let q = groups[i] as f64 / total as f64;
            let n = draws as f64;
            let var = n * q * (1.0 - q) * (total as f64 - n) / (total as f64 - 1.0);
            let mean = sum[i] as f64 / reps as f64;
            let se = (var / reps as f64).sqrt();
            assert!(
                (mean - n * q).abs() <= 5.3 * se,
                "group {i}: mean {mean} against {}",
                n * q
            );
        }
    }

    #[test]
    fn multinomial_conserves_and_matches_means() {
        let probs = [0.1, 0.0, 0.25, 0.4, 0.25];
        let mut tail = [0.0; 5];
        let mut acc = 0.0;
        for i in (0..5).rev() {
            acc += probs[i];
            tail[i] = acc;
        }
        let mut cdf = [0.0; 5];
        let mut c = 0.0;
        for i in 0..5 {
            c += probs[i];
            cdf[i] = c;
        }
        let mut rng = SplitMix64::new(5);
        for n in [0u64, 1, 3, 1000, 1_000_000_000] {
            let mut sums = [0.0f64; 5];
            let reps = 2000;
            for _ in 0..reps {
                let mut got = [0u64; 5];
                multinomial(&mut rng, n, &probs, &tail, &cdf, |i, c| got[i] += c);
                assert_eq!(got.iter().sum::<u64>(), n);
                assert_eq!(got[1], 0);
                for i in 0..5 {
                    sums[i] += got[i] as f64;
                }
            }
            for i in 0..5 {
                let mean = sums[i] / reps as f64;
                let want = n as f64 * probs[i];
                let se = (n as f64 * probs[i] * (1.0 - probs[i]) / reps as f64).sqrt();
                // False failure ≤ 10⁻⁶ with the file's other checks (6.1 standard errors).
                assert!((mean - want).abs() <= 6.1 * se + 1e-9, "n {n} outcome {i}");
            }
        }
    }

    proptest::proptest! {
        // A fixed seed and no regression files, as every property test (tests/support/chance.rs).
        #![proptest_config(proptest::test_runner::Config {
            cases: 256,
            failure_persistence: None,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x6865_7264),
            ..proptest::test_runner::Config::default()
        })]

        /// Any sizes up to 10^12, any probability: a draw stays in its support.
        #[test]
        fn draws_stay_in_their_support(
            n in 0u64..=1_000_000_000_000,
            p in -0.5f64..1.5,
            total in 0u64..=1_000_000_000_000,
            marked in 0u64..=1_000_000_000_000,
            drawn in 0u64..=1_000_000_000_000,
            seed: u64,
        ) {
            let mut rng = SplitMix64::new(seed);
            proptest::prop_assert!(binomial(&mut rng, n, p) <= n);
            let (marked, drawn) = (marked.min(total), drawn.min(total));
            let x = hypergeometric(&mut rng, total, marked, drawn);
            proptest::prop_assert!(x <= marked.min(drawn));
            proptest::prop_assert!(drawn - x <= total - marked);
        }
    }
}
