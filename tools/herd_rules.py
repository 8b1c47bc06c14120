#!/usr/bin/env python3
"""A port of herd's generator and retry rules in plain Python (standard library only).

It reproduces `herd rules` bit for bit: same flags, same output. It exists so that anyone can
check herd's schedules without trusting the Rust code, and so that the specification in
docs/rng.md is executable. crates/herd-cli/tests/suite/python_port.rs compares the two.

    python3 tools/herd_rules.py --rule full --base-ms 100 --cap-ms 20000 --failures 10 \
        --samples 1000 --seed 7
"""
import argparse
import math
import sys

M64 = (1 << 64) - 1


class SplitMix64:
    """SplitMix64 (Steele, Lea, Flood 2014); the state starts at the seed."""

    def __init__(self, seed):
        self.state = seed & M64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def next_f64(self):
        """Uniform in [0, 1): the top 53 bits times 2^-53."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def below(self, n):
        """Uniform in [0, n) by Lemire's multiply-and-reject; n == 0 means 2^64."""
        if n == 0:
            return self.next_u64()
        m = self.next_u64() * n
        low = m & M64
        if low < n:
            threshold = ((1 << 64) - n) % n
            while low < threshold:
                m = self.next_u64() * n
                low = m & M64
        return m >> 64

    def range_inclusive(self, lo, hi):
        if hi < lo:
            lo, hi = hi, lo
        return (lo + self.below((hi - lo + 1) & M64)) & M64


def to_u64(x):
    """Rust's saturating `f64 as u64`: NaN and negatives to 0, large values to 2^64 - 1."""
    if x != x or x <= 0.0:
        return 0
    if x >= 18446744073709551616.0:
        return M64
    return int(x)


def exp2(t):
    try:
        return math.exp2(t) if hasattr(math, "exp2") else 2.0 ** t
    except OverflowError:
        return math.inf


def grow(base, cap, k):
    """min(cap, base * 2^(k-1)) without overflow."""
    shift = max(k - 1, 0)
    if shift >= 64 or base > (cap >> shift):
        return cap
    return base << shift


POLLY_SCALE = 1.0 / 1.4
POLLY_P = 4.0


def pause(rule, p, state, rng):
    """One more failure: returns the pause in nanoseconds and updates state [failures, memory]."""
    previous_failures = state[0]
    state[0] = min(state[0] + 1, 0xFFFFFFFF)
    k = state[0]
    base, cap = p["base"], p["cap"]
    if rule == "immediate":
        return 0
    if rule == "constant":
        return p["pause"]
    if rule == "exponential":
        return grow(base, cap, k)
    if rule == "full":
        return rng.range_inclusive(0, grow(base, cap, k))
    if rule == "equal":
        g = grow(base, cap, k)
        half = g // 2
        return (g - half) + rng.range_inclusive(0, half)
    if rule == "decorrelated":
        previous = base if previous_failures == 0 else state[1]
        drawn = rng.range_inclusive(base, max(min(previous * 3, M64), base))
        state[1] = min(drawn, cap)
        return state[1]
    if rule == "grpc":
        current = base if previous_failures == 0 else state[1]
        u = rng.next_f64()
        jittered = float(current) * (1.0 + p["jitter"] * (2.0 * u - 1.0))
        state[1] = min(to_u64(float(current) * p["multiplier"]), cap)
        return min(to_u64(jittered), cap)
    if rule == "decorrelated-v2":
        previous = 0.0 if previous_failures == 0 else state[1]
        t = float(k - 1) + rng.next_f64()
        nxt = exp2(t) * math.tanh(math.sqrt(POLLY_P * t))
        state[1] = nxt
        if math.isinf(nxt):
            return cap
        value = (nxt - previous) * POLLY_SCALE * float(base)
        return min(to_u64(max(value, 0.0)), cap)
    if rule == "grpc-retry":
        current = float(base) if previous_failures == 0 else state[1]
        u = rng.next_f64()
        j = p["jitter"]
        result = to_u64(current * ((1.0 - j) + 2.0 * j * u))
        state[1] = min(current * p["multiplier"], float(cap))
        return result
    if rule == "randomized":
        current = float(base if previous_failures == 0 else state[1])
        delta = p["jitter"] * current
        lo, hi = current - delta, current + delta
        u = rng.next_f64()
        state[1] = to_u64(current * p["multiplier"])
        return min(to_u64(lo + u * (hi - lo)), cap)
    raise ValueError("unknown rule " + rule)


def ms_to_ns(ms):
    # Rust: (ms * 1e6).round() as u64; round() takes halves away from zero.
    x = ms * 1_000_000.0
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)


def format_ms(ns):
    whole, frac = divmod(ns, 1_000_000)
    if frac == 0:
        return str(whole)
    return "%d.%s" % (whole, ("%06d" % frac).rstrip("0"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rule", required=True)
    ap.add_argument("--base-ms", type=float, default=100.0)
    ap.add_argument("--cap-ms", type=float, default=20000.0)
    ap.add_argument("--pause-ms", type=float, default=1000.0)
    ap.add_argument("--multiplier", type=float, default=1.6)
    ap.add_argument("--jitter", type=float, default=0.2)
    ap.add_argument("--failures", type=int, default=10)
    ap.add_argument("--samples", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    p = {
        "base": ms_to_ns(a.base_ms),
        "cap": ms_to_ns(a.cap_ms),
        "pause": ms_to_ns(a.pause_ms),
        "multiplier": a.multiplier,
        "jitter": a.jitter,
    }
    rng = SplitMix64(a.seed)
    out = sys.stdout
    for _ in range(a.samples):
        state = [0, 0]
        out.write(" ".join(format_ms(pause(a.rule, p, state, rng)) for _ in range(a.failures)))
        out.write("\n")


if __name__ == "__main__":
    main()
