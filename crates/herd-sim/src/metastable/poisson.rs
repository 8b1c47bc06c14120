//! Poisson draws from herd's documented generator, written out so that they are portable.
//!
//! Knuth's multiplication method: with `L = e^−λ`, multiply uniforms `u = next_f64()` into a
//! product `p` (starting at 1) until `p <= L`; the number of factors minus one is the draw. It
//! costs `λ + 1` uniforms on average, which is O(arrivals), and is exact for small `λ`. For a
//! large mean (where `e^−λ` would underflow) the mean is split into equal chunks of at most
//! [`CHUNK`] and the chunk draws are added: a sum of independent Poisson variables is Poisson
//! with the summed mean, so the result is still exact.
use herd::rng::Rng;

/// The largest mean drawn in one piece.
pub(crate) const CHUNK: f64 = 30.0;

/// A sampler for a fixed mean, with `e^−λ` computed once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Poisson {
    chunks: u64,
    /// `e^−(λ / chunks)`.
    limit: f64,
}

impl Poisson {
    /// A sampler of mean `lambda` (finite, at least 0).
    pub(crate) fn new(lambda: f64) -> Self {
        let lambda = if lambda.is_finite() {
            lambda.max(0.0)
        } else {
            0.0
        };
        let chunks = (lambda / CHUNK).ceil().max(1.0) as u64;
        Self {
            chunks,
            limit: (-(lambda / chunks as f64)).exp(),
        }
    }

    /// One draw.
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        if self.limit >= 1.0 {
            return 0; // mean zero: draw nothing, so a silent scenario consumes no randomness
        }
        let mut total = 0;
        for _ in 0..self.chunks {
            let mut p = 1.0;
            let mut k = 0u64;
            loop {
                p *= rng.next_f64();
                if p <= self.limit {
                    break;
                }
                k += 1;
            }
            total += k;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::rng::SplitMix64;

    fn mean_and_variance(lambda: f64, n: u32) -> (f64, f64) {
        let p = Poisson::new(lambda);
        let mut rng = SplitMix64::new(11);
        let draws: Vec<f64> = (0..n).map(|_| p.sample(&mut rng) as f64).collect();
        let mean = draws.iter().sum::<f64>() / f64::from(n);
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / f64::from(n);
        (mean, var)
    }

    #[test]
    fn small_mean_has_poisson_moments() {
        let (mean, var) = mean_and_variance(0.28, 200_000);
        assert!((mean - 0.28).abs() < 0.01, "{mean}");
        assert!((var - 0.28).abs() < 0.01, "{var}");
    }

    #[test]
    fn large_mean_is_chunked_and_still_poisson() {
        let (mean, var) = mean_and_variance(250.0, 20_000);
        assert!((mean - 250.0).abs() < 1.0, "{mean}");
        assert!((var - 250.0).abs() < 15.0, "{var}");
    }

    #[test]
    fn zero_mean_draws_nothing() {
        let mut rng = SplitMix64::new(1);
        assert_eq!(Poisson::new(0.0).sample(&mut rng), 0);
        assert_eq!(rng, SplitMix64::new(1));
    }
}
