// Package rng is herd's generator, SplitMix64, with its derivations of floats and bounded
// integers, ported from crates/herd/src/rng.rs bit for bit. docs/rng.md specifies it.
package rng

import "math/bits"

// Gamma is SplitMix64's increment: the state advances by it at every draw.
const Gamma uint64 = 0x9E3779B97F4A7C15

// SplitMix64 is Steele, Lea and Flood's generator (OOPSLA 2014). Its state is one word,
// starting at the seed.
type SplitMix64 struct {
	State uint64
}

// New returns the generator whose stream is fully determined by seed.
func New(seed uint64) *SplitMix64 {
	return &SplitMix64{State: seed}
}

// Derive returns the generator of sub-stream `stream` of `seed`: seeded with the first
// output of New(seed ^ rotl(stream, 32)), as herd's SplitMix64::derive.
func Derive(seed, stream uint64) *SplitMix64 {
	mixer := New(seed ^ bits.RotateLeft64(stream, 32))
	return New(mixer.NextU64())
}

// NextU64 returns the next 64 uniformly distributed bits.
func (r *SplitMix64) NextU64() uint64 {
	r.State += Gamma
	z := r.State
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// NextF64 returns a float uniform in [0, 1): the top 53 bits of one word times 2^-53.
func (r *SplitMix64) NextF64() float64 {
	return unit(r.NextU64())
}

// unit maps a word to [0, 1): both steps are exact in binary64.
func unit(word uint64) float64 {
	return float64(word>>11) * (1.0 / float64(uint64(1)<<53))
}

// Below returns an integer uniform in [0, n) by Lemire's multiply-and-reject; n == 0 stands
// for the full range 2^64 (one raw word).
func (r *SplitMix64) Below(n uint64) uint64 {
	if n == 0 {
		return r.NextU64()
	}
	hi, lo := bits.Mul64(r.NextU64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(r.NextU64(), n)
		}
	}
	return hi
}

// RangeInclusive returns an integer uniform in [lo, hi], swapping the bounds if hi < lo.
func (r *SplitMix64) RangeInclusive(lo, hi uint64) uint64 {
	if hi < lo {
		lo, hi = hi, lo
	}
	return lo + r.Below(hi-lo+1)
}
