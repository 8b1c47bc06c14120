#!/usr/bin/env python3
"""Runs Marc Brooker's own retry simulator ("Fixing retries with token buckets and circuit
breakers", 2022; mbrooker/simulator_example, retry_sim/) over many seeds, for comparison with
herd's partial-failure model (docs/brooker-2022.md).

His code is not copied here: point --repo at a checkout of mbrooker/simulator_example. This
driver imports retry_sim/client.py and retry_sim/retry_strategy.py as they are, and runs
retry_sim/retry_sim.py's definitions (Stats, Server, sim_loop) without its last line, which
starts one of his experiments at import. It then runs his `run_sims` experiment (100 clients
at 10 calls a second; his four strategies) or his `run_sims_clients` experiment (10, 100 and
1000 clients sharing 100 calls a second; his bucket and breaker), each point with seeds
1..N (Python's `random.seed(seed)` before each run), and prints per point the mean and the
standard error of the mean of work amplification (total_calls / unique_calls) and of the
success rate (successes / unique_calls).

    python3 tools/brooker_2022.py --repo DIR --experiment failure --seeds 20
    python3 tools/brooker_2022.py --repo DIR --experiment clients --seeds 10

Output: CSV, one row per point:
experiment,clients,failure_rate,name,runs,amplification_mean,amplification_se,success_mean,success_se
"""
import argparse
import math
import os
import random
import sys

FAILURE_RATES = [0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5]


def load(repo):
    sim_dir = os.path.join(repo, "retry_sim")
    sys.path.insert(0, sim_dir)
    path = os.path.join(sim_dir, "retry_sim.py")
    with open(path) as f:
        lines = f.read().split("\n")
    # Drop the module's top-level driver calls (`run_sims_retry_serial(10.0)` at the end).
    kept = [l for l in lines if not (l.startswith("run_sims") and l.rstrip().endswith(")"))]
    namespace = {"__name__": "retry_sim"}
    exec(compile("\n".join(kept), path, "exec"), namespace)
    return namespace


def mean_se(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, 0.0
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(var / n)


def run_point(ns, n_clients, rate_per_client, failure_rate, factory, name, seed, max_t):
    random.seed(seed)
    stats = ns["Stats"](failure_rate, name)
    server = ns["Server"](failure_rate)
    clients = [ns["Client"](factory.make(), rate_per_client, server, stats, 0.0)
               for _ in range(n_clients)]
    ns["sim_loop"](clients, max_t)
    return stats.total_calls / stats.unique_calls, stats.successes / stats.unique_calls


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", required=True, help="a checkout of mbrooker/simulator_example")
    p.add_argument("--experiment", choices=["failure", "clients"], default="failure")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--rates", default=",".join(str(r) for r in FAILURE_RATES),
                   help="failure rates, comma separated")
    p.add_argument("--clients", default="10,100,1000", help="client counts (clients experiment)")
    p.add_argument("--max-t", type=float, default=10.0)
    args = p.parse_args()
    ns = load(args.repo)
    NRetries = ns["NRetriesFactory"]
    Adaptive = ns["AdaptiveRetryFactory"]
    Breaker = ns["CircuitBreakerRetryFactory"]
    rates = [float(r) for r in args.rates.split(",")]
    if args.experiment == "failure":
        # run_sims: 100 clients at 10 calls a second each.
        points = [(100, 10.0, name, f) for name, f in [
            ("no_retries", NRetries(0)),
            ("three_retries", NRetries(3)),
            ("adaptive_10pct", Adaptive(0.1, 5)),
            ("breaker_10pct", Breaker(NRetries(3), 0.1))]]
    else:
        # run_sims_clients: `rate = 100.0` shared by n clients.
        points = []
        for n in [int(c) for c in args.clients.split(",")]:
            points += [(n, 100.0 / n, "adaptive_10pct", Adaptive(0.1, 5)),
                       (n, 100.0 / n, "breaker_10pct", Breaker(NRetries(3), 0.1))]
    print("experiment,clients,failure_rate,name,runs,amplification_mean,amplification_se,"
          "success_mean,success_se")
    for (n, rate, name, factory) in points:
        for fr in rates:
            amp, ok = [], []
            for seed in range(1, args.seeds + 1):
                a, s = run_point(ns, n, rate, fr, factory, name, seed, args.max_t)
                amp.append(a)
                ok.append(s)
            am, ase = mean_se(amp)
            sm, sse = mean_se(ok)
            print("%s,%d,%g,%s,%d,%.6f,%.6f,%.6f,%.6f" % (
                args.experiment, n, fr, name, args.seeds, am, ase, sm, sse), flush=True)


if __name__ == "__main__":
    main()
