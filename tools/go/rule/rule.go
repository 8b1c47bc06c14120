// Package rule is herd's retry rules (crates/herd/src/rule.rs) ported bit for bit: the pause
// after the k-th failure, in integer nanoseconds, drawn from herd's SplitMix64.
//
// Floating-point products that feed a sum are wrapped in float64(...) conversions: the Go
// specification lets a compiler fuse x*y + z into one rounding (and arm64's does), and an
// explicit conversion forbids it, so every platform rounds as Rust and Python do.
package rule

import (
	"fmt"
	"math"
	"strings"

	"herdtools/rng"
)

// Name is a rule's name, as spelled on the command line.
type Name int

// The rules, in the order of herd's tables (RuleName::ALL).
const (
	Immediate Name = iota
	Constant
	Exponential
	Full
	Equal
	Decorrelated
	Grpc
	DecorrelatedV2
	GrpcRetry
	Randomized
)

// All lists every rule in order.
var All = []Name{Immediate, Constant, Exponential, Full, Equal, Decorrelated, Grpc, DecorrelatedV2, GrpcRetry, Randomized}

var names = []string{"immediate", "constant", "exponential", "full", "equal", "decorrelated", "grpc", "decorrelated-v2", "grpc-retry", "randomized"}

func (n Name) String() string { return names[n] }

// Parse reads a rule's name, ignoring ASCII case, as herd does.
func Parse(s string) (Name, error) {
	for _, n := range All {
		if strings.EqualFold(names[n], s) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("unknown rule `%s` (expected one of: %s)", s, strings.Join(names, ", "))
}

// Params holds every parameter any rule takes, in nanoseconds where a duration.
type Params struct {
	Base, Cap, Pause uint64
	Multiplier       float64
	Jitter           float64
}

// Rule is a validated rule: its kind and parameters, and the opt-in spread below the cap.
type Rule struct {
	name        Name
	base, cap   uint64
	pause       uint64
	multiplier  float64
	jitter      float64
	belowCapPpm uint32
}

// State is one client's state between failures: the failures so far and one word of memory.
type State struct {
	Failures uint32
	Memory   uint64
}

const ppm = 1_000_000

// pollyP is Polly's smoothing factor for the first pause.
const pollyP = 4.0

// pollyScale is 1.0 / 1.4 divided in binary64 at run time, as Rust's constant is: a Go
// constant expression would be exact (5/7) and round differently.
var pollyScale = divide(1.0, 1.4)

//go:noinline
func divide(a, b float64) float64 { return a / b }

// Build checks the parameters the rule uses, with herd's error messages.
func Build(n Name, p Params) (Rule, error) {
	r := Rule{name: n, base: p.Base, cap: p.Cap, pause: p.Pause, multiplier: p.Multiplier, jitter: p.Jitter}
	switch n {
	case Immediate:
		return r, nil
	case Constant:
		if p.Pause == 0 {
			return r, fmt.Errorf("pause must be longer than zero (use the `immediate` rule to retry at once)")
		}
		return r, nil
	}
	if p.Base == 0 {
		return r, fmt.Errorf("base must be longer than zero")
	}
	if p.Cap < p.Base {
		return r, fmt.Errorf("cap (%s ms) must be at least base (%s ms)", FormatMs(p.Cap), FormatMs(p.Base))
	}
	if n == Grpc || n == GrpcRetry || n == Randomized {
		low := n == Grpc && p.Multiplier < 1 || p.Multiplier <= 0
		if math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0) || low {
			return r, fmt.Errorf("multiplier must be a finite number >= 1 (> 0 for grpc-retry and randomized), got %v", p.Multiplier)
		}
		if !(p.Jitter >= 0 && p.Jitter <= 1) {
			return r, fmt.Errorf("jitter must be a fraction in [0, 1], got %v", p.Jitter)
		}
	}
	return r, nil
}

// SpreadBelowCap spreads pauses that reach the cap over [cap·(1 − fraction), cap], drawing one
// more value for such a pause only (Rule::spread_below_cap).
func (r Rule) SpreadBelowCap(fraction float64) (Rule, error) {
	if !(fraction >= 0 && fraction <= 1) {
		return r, fmt.Errorf("jitter must be a fraction in [0, 1], got %v", fraction)
	}
	r.belowCapPpm = uint32(math.Round(fraction * ppm))
	return r, nil
}

// Grow is g(k) = min(cap, base · 2^(k−1)) for k ≥ 1, without overflow.
func Grow(base, cap uint64, k uint32) uint64 {
	shift := uint32(0)
	if k > 0 {
		shift = k - 1
	}
	if shift >= 64 || base > cap>>shift {
		return cap
	}
	return base << shift
}

// ToU64 is Rust's `f64 as u64`: truncation toward zero, NaN and negatives to 0, saturating.
func ToU64(x float64) uint64 {
	if !(x > 0) {
		return 0
	}
	if x >= 18446744073709551616.0 {
		return math.MaxUint64
	}
	return uint64(x)
}

func minU64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func satMul3(x uint64) uint64 {
	if x > math.MaxUint64/3 {
		return math.MaxUint64
	}
	return x * 3
}

// MaxPause is the largest pause the rule can give, in nanoseconds.
func (r Rule) MaxPause() uint64 {
	switch r.name {
	case Immediate:
		return 0
	case Constant:
		return r.pause
	case GrpcRetry:
		return ToU64(float64(r.cap) * spread(r.jitter, 1.0))
	}
	return r.cap
}

// spread is grpc-retry's factor (1 − jitter) + 2 · jitter · u, never fused.
func spread(jitter, u float64) float64 {
	return float64(1.0-jitter) + float64(float64(2.0*jitter)*u)
}

// Pause records one more failure in s and returns the pause before the next attempt, in
// nanoseconds (Rule::pause).
func (r Rule) Pause(s *State, g *rng.SplitMix64) uint64 {
	previousFailures := s.Failures
	if s.Failures < math.MaxUint32 {
		s.Failures++
	}
	k := s.Failures
	var nanos uint64
	switch r.name {
	case Immediate:
		nanos = 0
	case Constant:
		nanos = r.pause
	case Exponential:
		nanos = Grow(r.base, r.cap, k)
	case Full:
		nanos = g.RangeInclusive(0, Grow(r.base, r.cap, k))
	case Equal:
		grown := Grow(r.base, r.cap, k)
		half := grown / 2
		nanos = (grown - half) + g.RangeInclusive(0, half)
	case Decorrelated:
		previous := r.base
		if previousFailures != 0 {
			previous = s.Memory
		}
		hi := satMul3(previous)
		if hi < r.base {
			hi = r.base
		}
		nanos = minU64(g.RangeInclusive(r.base, hi), r.cap)
		s.Memory = nanos
	case Grpc:
		current := r.base
		if previousFailures != 0 {
			current = s.Memory
		}
		u := g.NextF64()
		spread := float64(r.jitter * (float64(2.0*u) - 1.0))
		jittered := float64(current) * (1.0 + spread)
		s.Memory = minU64(ToU64(float64(current)*r.multiplier), r.cap)
		nanos = minU64(ToU64(jittered), r.cap)
	case DecorrelatedV2:
		previous := 0.0
		if previousFailures != 0 {
			previous = math.Float64frombits(s.Memory)
		}
		t := float64(k-1) + g.NextF64()
		next := exp2(t) * tanh(math.Sqrt(pollyP*t))
		s.Memory = math.Float64bits(next)
		if math.IsInf(next, 0) {
			nanos = r.cap
		} else {
			value := (next - previous) * pollyScale * float64(r.base)
			nanos = minU64(ToU64(math.Max(value, 0)), r.cap)
		}
	case GrpcRetry:
		current := float64(r.base)
		if previousFailures != 0 {
			current = math.Float64frombits(s.Memory)
		}
		u := g.NextF64()
		nanos = ToU64(current * spread(r.jitter, u))
		next := float64(current * r.multiplier)
		if capF := float64(r.cap); next > capF {
			next = capF
		}
		s.Memory = math.Float64bits(next)
	case Randomized:
		interval := r.base
		if previousFailures != 0 {
			interval = s.Memory
		}
		current := float64(interval)
		delta := float64(r.jitter * current)
		lo, hi := current-delta, current+delta
		u := g.NextF64()
		nanos = minU64(ToU64(lo+float64(u*(hi-lo))), r.cap)
		s.Memory = ToU64(float64(current * r.multiplier))
	}
	if r.belowCapPpm > 0 && nanos > 0 && nanos == r.MaxPause() {
		hi, lo := mul128(nanos, uint64(r.belowCapPpm))
		spread := uint64(math.MaxUint64)
		if hi < ppm {
			spread, _ = div128(hi, lo, ppm)
		}
		return nanos - g.RangeInclusive(0, spread)
	}
	return nanos
}

// Millis converts a user's milliseconds to nanoseconds as herd::rule::millis: finite, in
// [0, 10^12], rounded half away from zero.
func Millis(field string, ms float64) (uint64, error) {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 || ms > 1e12 {
		return 0, fmt.Errorf("%s must be a finite number of milliseconds between 0 and 10^12, got %v", field, ms)
	}
	return uint64(math.Round(ms * 1e6)), nil
}

// FormatMs prints nanoseconds as herd rules does: whole milliseconds, or up to six decimals
// with trailing zeros removed.
func FormatMs(ns uint64) string {
	whole, frac := ns/1_000_000, ns%1_000_000
	if frac == 0 {
		return fmt.Sprint(whole)
	}
	return fmt.Sprintf("%d.%s", whole, strings.TrimRight(fmt.Sprintf("%06d", frac), "0"))
}
