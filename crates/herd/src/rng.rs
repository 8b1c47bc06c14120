//! Randomness that anyone can reproduce.
//!
//! Every random draw herd makes goes through the small [`Rng`] trait. The trait has one
//! required method, [`Rng::next_u64`]; the derivations of floats and of bounded integers are
//! *provided methods written out here*, not delegated to a crate whose algorithm may change
//! between versions. That is what lets a few lines of any language reproduce herd's pauses bit
//! for bit, and what makes a simulation replayable from its seed forever. The specification
//! is below; all arithmetic on 64-bit words is modulo 2^64.
//!
//! **The generator** is [`SplitMix64`] (Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014; the function Java's `SplittableRandom` and xoshiro's
//! seeding use). It is tiny, passes BigCrush, has a period of 2^64, and every seed (0
//! included) is good. The state is one word, initialised to the seed:
//!
//! ```text
//! next_u64():
//!     state = state + 0x9E3779B97F4A7C15
//!     z = state
//!     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//!     z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//!     return z ^ (z >> 31)
//! ```
//!
//! **Floats in [0, 1)**: `next_f64() = (next_u64() >> 11) · 2^-53`, the top 53 bits times
//! 2^-53. Both steps are exact in IEEE-754 binary64, so every language gets the same double;
//! the result is never 1.0.
//!
//! **Integers in [0, n) and [lo, hi]**: Lemire's multiply-and-reject ("Fast random integer
//! generation in an interval", ACM TOMACS 2019). For `n ≥ 1`:
//!
//! ```text
//! below(n):
//!     m = next_u64() * n                      (a 128-bit product)
//!     low = m mod 2^64
//!     if low < n:
//!         threshold = (2^64 − n) mod n
//!         while low < threshold:
//!             m = next_u64() * n
//!             low = m mod 2^64
//!     return m >> 64
//!
//! range_inclusive(lo, hi):             (swap the bounds first if hi < lo)
//!     return lo + below((hi − lo + 1) mod 2^64)      (below(0): one raw word)
//! ```
//!
//! This is unbiased and usually consumes exactly one word; how many words a draw consumes
//! depends only on the words, so streams stay in step across implementations. The check
//! values in the example below pin the generator.
//!
//! Production retry loops that do not need reproducibility draw from [`ThreadRng`], a
//! thread-local SplitMix64 seeded once per thread from the standard library's per-process
//! hash keys; no wall clock and no global lock is involved.
//!
//! # Examples
//!
//! ```
//! use herd::rng::{Rng, SplitMix64};
//!
//! let mut rng = SplitMix64::new(7);
//! let x = rng.next_f64();
//! assert!((0.0..1.0).contains(&x));
//! let die = rng.range_inclusive(1, 6);
//! assert!((1..=6).contains(&die));
//!
//! // Same seed, same stream.
//! assert_eq!(SplitMix64::new(7).next_u64(), SplitMix64::new(7).next_u64());
//!
//! // The specification's check values.
//! assert_eq!(SplitMix64::new(0).next_u64(), 0xE220A8397B1DCDAF);
//! let mut rng = SplitMix64::new(1234567);
//! let first: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
//! assert_eq!(first, [
//!     6457827717110365317, 3203168211198807973, 9817491932198370423,
//!     4593380528125082431, 16408922859458223821,
//! ]);
//! ```

use std::cell::Cell;

/// A source of uniformly distributed 64-bit words, with the documented derivations of floats
/// and bounded integers as provided methods.
///
/// Implement only [`next_u64`](Rng::next_u64); do not override the provided methods, or the
/// output stops matching the specification in the [module documentation](self).
pub trait Rng {
    /// The next 64 uniformly distributed bits.
    fn next_u64(&mut self) -> u64;

    /// A float uniform in `[0, 1)`: the top 53 bits of one word, times 2^-53.
    ///
    /// Every value is a multiple of 2^-53, so the conversion is exact and portable.
    #[inline]
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// An integer uniform in `[0, n)`, without bias, for `n >= 1`.
    ///
    /// Lemire's multiply-and-reject method ("Fast random integer generation in an interval",
    /// ACM TOMACS 2019): the 128-bit product of a word and `n`; its high half is the answer
    /// unless its low half falls below `2^64 mod n`, in which case a fresh word is drawn.
    /// Usually one word per draw, never a division on the fast path.
    ///
    /// `n == 0` is treated as the full range `2^64` (the value is then one raw word).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return self.next_u64();
        }
        let m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            return reject_below(self, m, n);
        }
        (m >> 64) as u64
    }

    /// An integer uniform in `[lo, hi]` (both ends included): `lo + below(hi - lo + 1)`.
    ///
    /// If `hi < lo` the bounds are swapped, so the call never panics.
    #[inline]
    fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        let (lo, hi) = if hi < lo { (hi, lo) } else { (lo, hi) };
        // hi - lo + 1 wraps to 0 only for the full range, which `below` treats as 2^64.
        lo.wrapping_add(self.below((hi - lo).wrapping_add(1)))
    }
}

/// Lemire's slow path, out of line: the low half of the product `m` fell below `n` (chance
/// `n / 2^64`, about one in 10^9 for a 20 s cap in nanoseconds), so the threshold `2^64 mod n`
/// is computed (a division) and words are drawn while the low half is below it.
///
/// A call, not inlined: the caller's common path is then a multiply, a compare and a branch
/// not taken, and the registers this loop and its division would hold stay free for the
/// caller. (Inlined and only marked cold, ten `full` pauses in `benches/rules.rs` were no
/// faster than with the loop in place; as a call, about 20 % faster.)
#[cold]
#[inline(never)]
fn reject_below<R: Rng + ?Sized>(rng: &mut R, mut m: u128, n: u64) -> u64 {
    let threshold = n.wrapping_neg() % n;
    while (m as u64) < threshold {
        m = u128::from(rng.next_u64()) * u128::from(n);
    }
    (m >> 64) as u64
}

impl<R: Rng + ?Sized> Rng for &mut R {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        (**self).next_u64()
    }
}

/// The documented, portable, seeded generator: SplitMix64.
///
/// ```text
/// state = state + 0x9E3779B97F4A7C15            (mod 2^64)
/// z = state
/// z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9      (mod 2^64)
/// z = (z ^ (z >> 27)) * 0x94D049BB133111EB      (mod 2^64)
/// return z ^ (z >> 31)
/// ```
///
/// The initial state is the seed itself.
///
/// # Examples
///
/// ```
/// use herd::rng::{Rng, SplitMix64};
/// // The first output for seed 0 is the published reference value.
/// assert_eq!(SplitMix64::new(0).next_u64(), 0xE220A8397B1DCDAF);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose stream is fully determined by `seed`.
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator for an independent sub-stream, derived from this seed and a stream number.
    ///
    /// The derived generator's seed is the first output of
    /// `SplitMix64::new(seed ^ stream.rotate_left(32))`: a hash of both, so the sub-streams
    /// of one seed start at unrelated places of SplitMix64's cycle, where seeds a few
    /// multiples of its increment apart would make one sequence shifted by a few draws.
    ///
    /// # Examples
    ///
    /// The check values a port of the derivation must give:
    ///
    /// ```
    /// use herd::rng::{Rng, SplitMix64};
    ///
    /// assert_eq!(SplitMix64::derive(1, 1).next_u64(), 0x7B86_3400_BC02_6A40);
    /// assert_eq!(SplitMix64::derive(7, 4).next_u64(), 0x8172_296E_9634_BEE3);
    /// ```
    #[must_use]
    pub fn derive(seed: u64, stream: u64) -> Self {
        let mut mixer = SplitMix64::new(seed ^ stream.rotate_left(32));
        Self::new(mixer.next_u64())
    }
}

impl Rng for SplitMix64 {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

thread_local! {
    static THREAD_STATE: Cell<u64> = Cell::new(thread_seed());
}

/// A seed that differs per thread and per process, without reading the clock.
fn thread_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState carries per-process random keys (and bumps them per instance).
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_usize(&hasher as *const _ as usize);
    hasher.finish()
}

/// A handle to the fast thread-local generator used when no seeded generator is injected.
///
/// It is a SplitMix64 per thread, seeded from the standard library's random hash keys. It is
/// `Copy` and zero-sized: every handle on a thread draws from the same stream.
///
/// # Examples
///
/// ```
/// use herd::rng::{Rng, ThreadRng};
/// let x = ThreadRng.next_f64();
/// assert!((0.0..1.0).contains(&x));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadRng;

impl Rng for ThreadRng {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        THREAD_STATE.with(|cell| {
            let mut generator = SplitMix64::new(cell.get());
            let out = generator.next_u64();
            cell.set(generator.state);
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_vectors() {
        // Reference outputs of the published C implementation for seed 1234567.
        let mut rng = SplitMix64::new(1_234_567);
        let expected = [
            6_457_827_717_110_365_317u64,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
            4_593_380_528_125_082_431,
            16_408_922_859_458_223_821,
        ];
        for want in expected {
            assert_eq!(rng.next_u64(), want);
        }
    }

    /// The documented check values, which the Python and Go ports are held to as well.
    #[test]
    fn derive_matches_the_documented_check_values() {
        assert_eq!(SplitMix64::derive(1, 1).next_u64(), 0x7B86_3400_BC02_6A40);
        assert_eq!(SplitMix64::derive(7, 4).next_u64(), 0x8172_296E_9634_BEE3);
        let mixed = SplitMix64::new(7 ^ (4 << 32)).next_u64();
        assert_eq!(SplitMix64::derive(7, 4), SplitMix64::new(mixed));
    }

    #[test]
    fn floats_are_in_unit_interval_and_exact() {
        struct Fixed(u64);
        impl Rng for Fixed {
            fn next_u64(&mut self) -> u64 {
                self.0
            }
        }
        assert_eq!(Fixed(0).next_f64(), 0.0);
        assert_eq!(Fixed(u64::MAX).next_f64(), 1.0 - f64::EPSILON / 2.0);
        assert!(Fixed(u64::MAX).next_f64() < 1.0);
    }

    #[test]
    fn below_is_unbiased_on_small_ranges() {
        let mut rng = SplitMix64::new(3);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[rng.below(6) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn range_inclusive_covers_edges_without_panicking() {
        let mut rng = SplitMix64::new(9);
        assert_eq!(rng.range_inclusive(5, 5), 5);
        let _ = rng.range_inclusive(0, u64::MAX);
        let x = rng.range_inclusive(10, 3);
        assert!((3..=10).contains(&x));
        let mut seen = [false; 3];
        for _ in 0..100 {
            seen[(rng.range_inclusive(7, 9) - 7) as usize] = true;
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn thread_rng_draws_change() {
        let a = ThreadRng.next_u64();
        let b = ThreadRng.next_u64();
        assert_ne!(a, b);
    }
}
