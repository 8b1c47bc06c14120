#!/usr/bin/env python3
"""A straightforward reference simulation of the storm model of docs/model.md, for comparison only.

It is what one would write first: an event heap of (step, client) knocks, popped one step at
a time, the server's window budget applied to each step's arrivals, and pauses drawn with the
Python port of herd's rules (tools/herd_rules.py). It is *not* part of the product: herd's
engine is the implementation; this script exists to check the engine's figures on the
deterministic rules and to measure how much faster the engine is (docs/BENCHMARKS.md).

    python3 tools/reference_storm.py --rule exponential            # default scenario
    python3 tools/reference_storm.py --rule full --clients 100000 --json

Supported: a burst of clients, outages, capacity per window (window = step), refusal cost,
max attempts. Not supported (the engine has them): open-loop arrivals, deadlines, warm-up,
Retry-After, timeouts, collapse, budgets, windows longer than a step.
"""
import argparse
import heapq
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import herd_rules  # noqa: E402  (the port of the rules and of SplitMix64)


def simulate(rule, clients, seed, step_ms=100, capacity=50, refusal_cost=0.0,
             outages=((0.0, 10.0),), base_ms=100.0, cap_ms=20000.0, pause_ms=1000.0,
             horizon_s=3600.0, max_attempts=0):
    step_ns = int(step_ms * 1_000_000)
    params = {
        "base": herd_rules.ms_to_ns(base_ms),
        "cap": herd_rules.ms_to_ns(cap_ms),
        "pause": herd_rules.ms_to_ns(pause_ms),
        "multiplier": 1.6,
        "jitter": 0.2,
    }
    rng = herd_rules.SplitMix64(seed)
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
            budget = float(capacity)
            r = refusal_cost
            served = int(math.floor((budget - r * a) / (1.0 - r)))
            served = max(0, min(a, served))
        # Random order within the step: a partial Fisher-Yates picks who is served.
        for i in range(served):
            j = i + rng.below(a - i)
            due[i], due[j] = due[j], due[i]
        for c in due[:served]:
            served_at.append(t)
        for c in due[served:]:
            attempts[c] += 1
            if max_attempts and attempts[c] >= max_attempts:
                gave_up += 1
                continue
            pause_ns = herd_rules.pause(rule, params, states[c], rng)
            steps = max(1, -(-pause_ns // step_ns))
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
    ap.add_argument("--refusal-cost", type=float, default=0.0)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()
    capacity = a.capacity if a.capacity is not None else max(1, round(50 * a.clients / 2000))
    started = time.perf_counter()
    result = simulate(a.rule, a.clients, a.seed, capacity=capacity, refusal_cost=a.refusal_cost)
    result["compute_s"] = time.perf_counter() - started
    if a.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>20}: {v}")


if __name__ == "__main__":
    main()
