#!/usr/bin/env python3
"""A straightforward reference simulation of the storm model of docs/model.md, for comparison only.

It is what one would write first: an event heap of (step, client) knocks, popped one step at
a time, the server's window budget applied to each step's arrivals. It is *not* part of the
product: herd's engine is the implementation; this script exists to check the engine's
figures and to measure how much faster the engine is (docs/BENCHMARKS.md).

It makes its own choices where the engine could be wrong:

- refusal cost is exact: r is read as the decimal written (`fractions.Fraction("0.1")`)
  and a step serves the largest s <= A with s + r (A - s) <= B, counted in rationals;
- with `--draws independent`, pauses come from the rules' published definitions (full
  jitter uniform on [0, min(cap, base 2^(n-1))], equal jitter half that plus a uniform half,
  decorrelated uniform on [base, 3 x previous] capped, gRPC's multiplier and +-jitter),
  drawn from Python's own Mersenne Twister, and the served clients are a `random.sample`.
  With `--pauses continuous` they are drawn continuously and rounded up to whole steps (at
  least one). With `--pauses steps` (the default, as the engine's) they are drawn in whole
  ticks, as the storm model of docs/model.md defines them: full jitter an integer uniform
  on 0..g ticks, equal jitter g/2 plus an integer uniform on 0..floor(g/2), decorrelated an
  integer uniform on base..3 x previous ticks then capped, each at least one tick (gRPC's
  real-valued rule stays continuous in both modes). Such runs agree with herd's in
  distribution only, which is what crates/herd-sim/tests/suite/python_reference.rs checks.
  `--draws herd` (the default) uses the Python port of herd's rules and generator
  (tools/herd_rules.py), which matches the engine run for run on the deterministic rules.

    python3 tools/reference_storm.py --rule exponential            # default scenario
    python3 tools/reference_storm.py --rule full --clients 100000 --json
    python3 tools/reference_storm.py --rule full --draws independent --seeds 40 --json

Supported: a burst of clients, outages, capacity per window (window = step), refusal cost,
max attempts. Not supported (the engine has them): open-loop arrivals, deadlines, warm-up,
Retry-After, timeouts, collapse, budgets, windows longer than a step.
"""
import argparse
import heapq
import json
import math
import os
import random
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import herd_rules  # noqa: E402  (the port of the rules and of SplitMix64)


def served_of(budget, r, a):
    """The largest s in 0..a with s + r (a - s) <= budget, all rationals; 0 if none fits."""
    room = budget - r * a
    if room < 0:
        return 0
    return min(a, math.floor(room / (1 - r)))


class Independent:
    """The rules from their definitions, drawn from Python's own generator: continuous (in
    ns) or, with `ticks`, in whole ticks (base, cap and pause then in ticks)."""

    def __init__(self, rule, params, seed, ticks=False):
        self.rule = rule
        self.p = params
        self.random = random.Random(seed)
        self.ticks = ticks and rule != "grpc"

    def pause(self, state):
        state[0] += 1
        n = state[0]
        base, cap = self.p["base"], self.p["cap"]
        if self.ticks:
            g = min(cap, base * 2 ** (n - 1))
            if self.rule == "full":
                return self.random.randint(0, g)
            if self.rule == "equal":
                return g / 2 + self.random.randint(0, g // 2)
            if self.rule == "decorrelated":
                previous = base if n == 1 else state[1]
                state[1] = min(cap, self.random.randint(base, max(base, 3 * previous)))
                return state[1]
        g = min(cap, base * 2.0 ** (n - 1))
        if self.rule == "full":
            return self.random.uniform(0.0, g)
        if self.rule == "equal":
            return g / 2.0 + self.random.uniform(0.0, g / 2.0)
        if self.rule == "decorrelated":
            previous = base if n == 1 else state[1]
            state[1] = min(cap, self.random.uniform(base, max(base, 3.0 * previous)))
            return state[1]
        if self.rule == "grpc":
            current = base if n == 1 else state[1]
            state[1] = min(cap, current * self.p["multiplier"])
            j = self.p["jitter"]
            return min(cap, current * (1.0 + j * self.random.uniform(-1.0, 1.0)))
        if self.rule == "exponential":
            return g
        if self.rule == "constant":
            return self.p["pause"]
        if self.rule == "immediate":
            return 0.0
        raise ValueError("no independent definition for rule " + self.rule)

    def choose(self, due, served):
        chosen = set(self.random.sample(range(len(due)), served))
        return ([c for i, c in enumerate(due) if i in chosen],
                [c for i, c in enumerate(due) if i not in chosen])


def simulate(rule, clients, seed, step_ms=100, capacity=50, refusal_cost="0",
             outages=((0.0, 10.0),), base_ms=100.0, cap_ms=20000.0, pause_ms=1000.0,
             horizon_s=3600.0, max_attempts=0, draws="herd", pauses="steps"):
    step_ns = int(step_ms * 1_000_000)
    params = {
        "base": herd_rules.ms_to_ns(base_ms),
        "cap": herd_rules.ms_to_ns(cap_ms),
        "pause": herd_rules.ms_to_ns(pause_ms),
        "multiplier": 1.6,
        "jitter": 0.2,
    }
    # How many of the rule's units make a step: in ticks the rule's times are whole ticks.
    unit = step_ns
    if pauses == "steps" and rule not in ("grpc", "decorrelated-v2"):
        for key in ("base", "cap", "pause"):
            if params[key] % step_ns:
                raise ValueError(f"{key} is not a whole number of steps; use --pauses continuous")
            params[key] //= step_ns
        unit = 1
    elif pauses not in ("steps", "continuous"):
        raise ValueError("pauses must be steps or continuous")
    rng = herd_rules.SplitMix64(seed)
    own = Independent(rule, params, seed, ticks=unit == 1) if draws == "independent" else None
    r = Fraction(str(refusal_cost))
    if not 0 <= r < 1:
        raise ValueError("refusal cost must be at least 0 and below 1")
    horizon = int(round(horizon_s * 1000 / step_ms))
    down = [(int(round(a * 1000 / step_ms)), int(round(b * 1000 / step_ms))) for a, b in outages]
    last_outage_end = max((b for _, b in down), default=0)

    states = [[0, 0] for _ in range(clients)]
    attempts = [0] * clients
    heap = [(0, c) for c in range(clients)]
    heapq.heapify(heap)

    served_at = []
    gave_up = 0
    requests = 0
    arrivals_per_step = {}
    while heap and heap[0][0] < horizon:
        t = heap[0][0]
        due = []
        while heap and heap[0][0] == t:
            due.append(heapq.heappop(heap)[1])
        a = len(due)
        requests += a
        arrivals_per_step[t] = a
        if any(lo <= t < hi for lo, hi in down):
            served = 0
        else:
            served = served_of(Fraction(capacity), r, a)
        if own is not None:
            lucky, unlucky = own.choose(due, served)
        else:
            # Random order within the step: a partial Fisher-Yates picks who is served.
            for i in range(served):
                j = i + rng.below(a - i)
                due[i], due[j] = due[j], due[i]
            lucky, unlucky = due[:served], due[served:]
        for c in lucky:
            served_at.append(t)
        for c in unlucky:
            attempts[c] += 1
            if max_attempts and attempts[c] >= max_attempts:
                gave_up += 1
                continue
            if own is not None:
                steps = max(1, math.ceil(own.pause(states[c]) / unit))
            else:
                pause = herd_rules.pause(rule, params, states[c], rng)
                steps = max(1, -(-pause // unit))
            heapq.heappush(heap, (t + steps, c))

    served_at.sort()
    n = len(served_at)
    peak = max((v for k, v in arrivals_per_step.items() if k >= last_outage_end), default=0)
    to_s = lambda steps: round(steps * step_ms / 1000.0, 6)
    return {
        "rule": rule,
        "seed": seed,
        "clients": clients,
        "served": n,
        "gave_up": gave_up,
        "half_served_s": to_s(served_at[clients // 2]) if n > clients // 2 else None,
        "all_served_s": to_s(served_at[-1]) if n == clients else None,
        "requests": requests,
        "requests_per_client": requests / clients,
        "peak_after_outage": peak,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rule", default="exponential")
    ap.add_argument("--clients", type=int, default=2000)
    ap.add_argument("--capacity", type=int, default=None,
                    help="answers per window (default: 50, scaled with --clients)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1,
                    help="run seeds SEED..SEED+K-1, one result (JSON line) each")
    ap.add_argument("--refusal-cost", default="0",
                    help="a decimal, read exactly (0.1 is one tenth)")
    ap.add_argument("--outage-s", type=float, default=10.0, help="one outage [0, X); 0 = none")
    ap.add_argument("--horizon-s", type=float, default=3600.0)
    ap.add_argument("--base-ms", type=float, default=100.0)
    ap.add_argument("--cap-ms", type=float, default=20000.0)
    ap.add_argument("--max-attempts", type=int, default=0)
    ap.add_argument("--draws", choices=["herd", "independent"], default="herd",
                    help="herd: the port of herd's rules and generator; independent: the "
                         "rules' definitions with Python's own generator")
    ap.add_argument("--pauses", choices=["steps", "continuous"], default="steps",
                    help="steps: pauses in whole ticks (the model's default); continuous: "
                         "in nanoseconds, rounded up to whole steps")
    ap.add_argument("--json", action="store_true", help="print one JSON object per run")
    a = ap.parse_args()
    capacity = a.capacity if a.capacity is not None else max(1, round(50 * a.clients / 2000))
    outages = ((0.0, a.outage_s),) if a.outage_s > 0 else ()
    for seed in range(a.seed, a.seed + a.seeds):
        started = time.perf_counter()
        result = simulate(a.rule, a.clients, seed, capacity=capacity,
                          refusal_cost=a.refusal_cost, outages=outages, base_ms=a.base_ms,
                          cap_ms=a.cap_ms, horizon_s=a.horizon_s,
                          max_attempts=a.max_attempts, draws=a.draws, pauses=a.pauses)
        result["compute_s"] = time.perf_counter() - started
        if a.json:
            print(json.dumps(result))
        else:
            for k, v in result.items():
                print(f"{k:>20}: {v}")


if __name__ == "__main__":
    main()
