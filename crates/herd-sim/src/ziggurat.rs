//! Standard normal draws by Marsaglia and Tsang's ziggurat, for the contention model's hops.
//!
//! Box–Muller (`crate::sample::standard_normal`) costs a `ln`, a `sqrt` and a `cos` of libm per
//! draw, about 40 % of a contention run. The ziggurat ("The Ziggurat Method for Generating
//! Random Variables", G. Marsaglia and W. W. Tsang, Journal of Statistical Software 5(8), 2000)
//! covers the density with 128 horizontal strips of equal area; a draw picks a strip and a
//! point in it, and about 98.8 % of draws land inside the part of the strip that lies wholly
//! under the curve, where the draw is accepted with one multiply and one compare. The rest
//! (the strips' wedges, and the tail beyond `R` in the base strip) use `exp` and `ln`. The
//! method is exact when the strips have equal areas: here they do to the 13 digits of the
//! published constants (the top strip, which closes the recursion, is off by 1.2·10⁻⁹ of its
//! area, so its draws are that much over- or under-weighted: far below anything a run can
//! detect).
//!
//! One draw, from one 64-bit word `w` of the generator (docs/rng.md):
//!
//! - the strip is `i = w & 127`, the sign is bit 7, and `u = (w >> 11) · 2^-53` (the same top
//!   53 bits as `next_f64`, disjoint from the strip's and the sign's bits);
//! - `x = u · X[i]`; if `x < X[i + 1]` the draw is `±x`;
//! - in the base strip (`i = 0`) otherwise, a tail draw: `a = −ln(1 − next_f64()) / R`,
//!   `b = −ln(1 − next_f64())`, repeated until `2b ≥ a²`; the draw is `±(R + a)`;
//! - in another strip, with `v = next_f64()`: if `F[i] + v · (F[i + 1] − F[i]) < exp(−x²/2)`
//!   the draw is `±x`, otherwise start again with a fresh word.
//!
//! `X[1] = R = 3.442619855899` and `V = 9.91256303526217·10⁻³` (each strip's area) are
//! Marsaglia and Tsang's constants for 128 strips; `X[0] = V / f(R)` is the base strip's
//! width (its rectangle plus the tail has area `V`), `X[i + 1] = f⁻¹(f(X[i]) + V / X[i])`,
//! `X[128] = 0`, and `F[i] = f(X[i])` with `f(x) = exp(−x²/2)`. The tables are computed once,
//! with the platform's libm, like every transcendental function in the models.
use std::sync::OnceLock;

use herd::rng::Rng;

/// Strips.
const STRIPS: usize = 128;
/// The base strip's right edge: where the tail starts.
const R: f64 = 3.442_619_855_899;
/// Each strip's area (under the unnormalised density `exp(−x²/2)`).
const V: f64 = 9.912_563_035_262_17e-3;

/// The strips' edges `X[0..=128]` and the density there, `F[i] = f(X[i])`.
struct Tables {
    x: [f64; STRIPS + 1],
    f: [f64; STRIPS + 1],
}

fn density(x: f64) -> f64 {
    (-0.5 * x * x).exp()
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let mut x = [0.0; STRIPS + 1];
        x[0] = V / density(R);
        x[1] = R;
        for i in 1..STRIPS - 1 {
            // f(X[i+1]) = f(X[i]) + V / X[i]
            x[i + 1] = (-2.0 * (V / x[i] + density(x[i])).ln()).sqrt();
        }
        x[STRIPS] = 0.0;
        let mut f = [0.0; STRIPS + 1];
        for i in 0..=STRIPS {
            f[i] = density(x[i]);
        }
        Tables { x, f }
    })
}

/// A standard normal draw (see the module docs for the exact sequence of draws).
#[inline]
pub(crate) fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let t = tables();
    loop {
        let w = rng.next_u64();
        let i = (w & (STRIPS as u64 - 1)) as usize;
        let sign = if w & (1 << 7) == 0 { 1.0 } else { -1.0 };
        let u = (w >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let x = u * t.x[i];
        if x < t.x[i + 1] {
            return sign * x;
        }
        if i == 0 {
            return sign * tail(rng);
        }
        let v = rng.next_f64();
        if t.f[i] + v * (t.f[i + 1] - t.f[i]) < density(x) {
            return sign * x;
        }
    }
}

/// A draw from the normal tail beyond `R` (Marsaglia's method, exact).
#[cold]
fn tail<G: Rng + ?Sized>(rng: &mut G) -> f64 {
    loop {
        let a = -(1.0 - rng.next_f64()).ln() / R;
        let b = -(1.0 - rng.next_f64()).ln();
        if 2.0 * b >= a * a {
            return R + a;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::rng::SplitMix64;

    #[test]
    fn the_strips_close_at_zero_with_equal_areas() {
        let t = tables();
        // The last computed edge meets the top of the density: the top strip has area V, to
        // the 13 digits of Marsaglia and Tsang's constants (1.2·10⁻⁹ relative here).
        let top = t.x[STRIPS - 1] * (1.0 - t.f[STRIPS - 1]);
        assert!((top - V).abs() < 1e-8 * V, "last strip {top} vs {V}");
        // Strips 1 to 126 have area V by construction of the recursion.
        for i in 1..STRIPS - 1 {
            let area = t.x[i] * (t.f[i + 1] - t.f[i]);
            assert!((area - V).abs() < 1e-9 * V, "strip {i}: {area}");
        }
        assert!(t.x.windows(2).all(|w| w[0] > w[1]));
    }

    /// The draws' distribution function against the normal's at 41 points, and the first
    /// four moments. Fixed seed; the bounds are 6 standard errors of each figure over 4·10⁶
    /// draws (each fails by chance with probability below 2·10⁻⁹, so all 45 below 10⁻⁷).
    #[test]
    fn draws_follow_the_normal_law() {
        const N: usize = 4_000_000;
        let mut rng = SplitMix64::new(2015);
        let mut xs: Vec<f64> = (0..N).map(|_| standard_normal(&mut rng)).collect();
        let n = N as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let m2 = xs.iter().map(|x| x * x).sum::<f64>() / n;
        let m3 = xs.iter().map(|x| x * x * x).sum::<f64>() / n;
        let m4 = xs.iter().map(|x| x.powi(4)).sum::<f64>() / n;
        // Standard errors: sqrt(Var(X^k) / n) with Var = E[X^2k] − E[X^k]^2 = 1, 2, 15, 96.
        assert!(mean.abs() < 6.0 * (1.0 / n).sqrt(), "mean {mean}");
        assert!((m2 - 1.0).abs() < 6.0 * (2.0 / n).sqrt(), "E[X²] {m2}");
        assert!(m3.abs() < 6.0 * (15.0 / n).sqrt(), "E[X³] {m3}");
        assert!((m4 - 3.0).abs() < 6.0 * (96.0 / n).sqrt(), "E[X⁴] {m4}");
        xs.sort_by(f64::total_cmp);
        for k in -20..=20 {
            let z = f64::from(k) * 0.2;
            let p = normal_cdf(z);
            let seen = xs.partition_point(|&x| x < z) as f64 / n;
            let se = (p * (1.0 - p) / n).sqrt().max(1e-9);
            assert!((seen - p).abs() < 6.0 * se, "P(X < {z}) = {seen}, want {p}");
        }
        // The tail is reached, on both sides.
        assert!(xs[0] < -R && xs[N - 1] > R);
    }

    /// Φ(z) by the complementary error function's continued fraction-free series (Abramowitz
    /// and Stegun 7.1.26 is too coarse here): the integral by Simpson's rule on a fine grid.
    fn normal_cdf(z: f64) -> f64 {
        let (lo, steps) = (-12.0f64, 200_000);
        let h = (z - lo) / f64::from(steps);
        let f = |x: f64| (-0.5 * x * x).exp();
        let mut sum = f(lo) + f(z);
        for k in 1..steps {
            let x = lo + h * f64::from(k);
            sum += if k % 2 == 1 { 4.0 } else { 2.0 } * f(x);
        }
        sum * h / 3.0 / (2.0 * std::f64::consts::PI).sqrt()
    }
}
