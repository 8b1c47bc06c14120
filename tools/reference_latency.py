#!/usr/bin/env python3
"""An independent reference simulation of the latency model of docs/model.md ("Latency").

Written from the model's definition, not from herd's engine, for comparison only: an event
heap, servers with FIFO queues and pause schedules, and Python's own Mersenne Twister for
every draw, so it can agree with herd only in distribution, which is what
crates/herd-sim/tests/suite/python_latency_reference.rs checks (each figure's mean over seeds,
within standard errors).

The model, as docs/model.md states it:

- user requests arrive as a Poisson process of `--rate` a second; each sends `--fan-out`
  sub-requests at once; its latency is the time until its last sub-request is answered;
- `--servers` servers, each a FIFO queue serving one copy at a time; a sub-request's first
  copy goes to a server drawn uniformly at random, a further copy to one drawn uniformly
  among those the sub-request has not used;
- a copy's service time is drawn when it starts: exponential of mean `--service-ms`;
- each server runs for an exponential time of mean `--every-s`, then pauses for
  `--pause-ms`, and so on; a pause stops the copy in service, which resumes when it ends,
  and a paused server starts nothing;
- policies: `none` (one copy); `delay` (while no copy has answered, one more copy every
  `--delay-ms`, up to `--max-copies`); `tied` (two copies at once to two servers; when one
  starts service the other is cancelled); losers are not cancelled (`cancel_losers =
  false`): a copy whose sub-request is answered still runs to its end;
- figures over the requests after the first `--warmup`: p50, p99, p99.9 by nearest rank,
  the mean, the extra load (copies sent beyond one per sub-request, per sub-request) and the
  utilisation (server time spent serving, over servers x the run's length).

Not supported (herd has them): the `percentile` policy, budgets, `cancel_losers = true`,
constant and lognormal service times.

    python3 tools/reference_latency.py --policy delay --seeds 20 --json
"""
import argparse
import heapq
import json
import random
from collections import deque


class Server:
    def __init__(self, rng, every_ns, pause_ns):
        self.queue = deque()
        self.busy = None  # (copy, started at)
        self.waiting = False  # paused with copies queued: a resume is scheduled
        self.rng = rng
        self.every_ns = every_ns
        self.pause_ns = pause_ns
        self.pauses = deque()  # (start, end) not over at the last time asked
        self.drawn_until = 0.0

    def _pause(self, i):
        while len(self.pauses) <= i:
            start = self.drawn_until + self.rng.expovariate(1.0 / self.every_ns)
            self.pauses.append((start, start + self.pause_ns))
            self.drawn_until = start + self.pause_ns
        return self.pauses[i]

    def paused_until(self, t):
        """The end of the pause under way at t, or None."""
        if self.every_ns is None:
            return None
        while self._pause(0)[1] <= t:
            self.pauses.popleft()
        start, end = self._pause(0)
        return end if t >= start else None

    def finish(self, t, work):
        """When `work` ns of service begun at t (not in a pause) end, pauses included."""
        if self.every_ns is None:
            return t + work
        i = 0
        while True:
            start, end = self._pause(i)
            if end <= t:
                i += 1
                continue
            if t + work <= start:
                return t + work
            work -= max(0.0, start - t)
            t = end
            i += 1


def run(args, policy, seed):
    rng = random.Random(seed)
    servers = [
        Server(random.Random(rng.getrandbits(64)),
               args.every_s * 1e9 if args.every_s > 0 else None,
               args.pause_ms * 1e6)
        for _ in range(args.servers)
    ]
    route = random.Random(rng.getrandbits(64))
    service = random.Random(rng.getrandbits(64))
    arrivals = random.Random(rng.getrandbits(64))
    mean_service = args.service_ms * 1e6
    delay = args.delay_ms * 1e6
    max_copies = {"none": 1, "tied": 2, "delay": args.max_copies}[policy]

    events = []  # (time, order, kind, payload)
    order = [0]

    def push(t, kind, payload):
        order[0] += 1
        heapq.heappush(events, (t, order[0], kind, payload))

    users = []  # [arrival, remaining, measured]
    subs = []  # dict per sub-request
    latencies = []
    busy_ns = [0.0]
    sent_measured = [0]
    subs_measured = [0]
    now = [0.0]

    def start_next(i):
        srv = servers[i]
        if srv.queue:
            end = srv.paused_until(now[0])
            if end is not None:
                srv.waiting = True
                push(end, "resume", i)
                return
        while srv.queue:
            sub, k = srv.queue.popleft()
            s = subs[sub]
            if s["state"][k] == "cancelled":
                continue
            s["state"][k] = "serving"
            if policy == "tied":
                for j in range(len(s["state"])):
                    if j != k and s["state"][j] == "queued":
                        s["state"][j] = "cancelled"
            work = service.expovariate(1.0 / mean_service)
            srv.busy = (sub, k, now[0])
            push(srv.finish(now[0], work), "done", i)
            return

    def send(sub):
        s = subs[sub]
        used = s["servers"]
        free = [i for i in range(args.servers) if i not in used]
        i = route.choice(free) if free else route.randrange(args.servers)
        used.append(i)
        s["state"].append("queued")
        s["sent_at"].append(now[0])
        if s["measured"]:
            sent_measured[0] += 1
        srv = servers[i]
        srv.queue.append((sub, len(s["state"]) - 1))
        if srv.busy is None and not srv.waiting:
            start_next(i)

    def arrive(user, measured):
        users.append([now[0], args.fan_out, measured])
        for _ in range(args.fan_out):
            sub = len(subs)
            subs.append({"user": user, "measured": measured, "done": False,
                         "servers": [], "state": [], "sent_at": []})
            if measured:
                subs_measured[0] += 1
            send(sub)
            if policy == "tied":
                if subs[sub]["state"][0] == "queued":
                    send(sub)
                else:  # the first copy started at once: its twin is cancelled on sending
                    subs[sub]["state"].append("cancelled")
                    subs[sub]["servers"].append(-1)
                    if measured:
                        sent_measured[0] += 1
            elif max_copies > 1:
                push(now[0] + delay, "hedge", sub)

    total = args.requests + args.warmup
    t = 0.0
    for u in range(total):
        t += arrivals.expovariate(args.rate / 1e9)
        push(t, "arrive", u)
    # Arrivals at the same time as another event go first: they were all scheduled first.
    while events:
        now[0], _, kind, payload = heapq.heappop(events)
        if kind == "arrive":
            arrive(payload, payload >= args.warmup)
        elif kind == "resume":
            servers[payload].waiting = False
            start_next(payload)
        elif kind == "hedge":
            s = subs[payload]
            if not s["done"] and len(s["state"]) < max_copies:
                send(payload)
                if len(s["state"]) < max_copies:
                    push(now[0] + delay, "hedge", payload)
        else:
            srv = servers[payload]
            sub, k, started = srv.busy
            srv.busy = None
            busy_ns[0] += now[0] - started
            s = subs[sub]
            s["state"][k] = "finished"
            if not s["done"]:
                s["done"] = True
                user = users[s["user"]]
                user[1] -= 1
                if user[1] == 0 and user[2]:
                    latencies.append(now[0] - user[0])
            start_next(payload)
    latencies.sort()
    n = len(latencies)

    def rank(per_mille):
        """Nearest rank: the ceil(n q)-th smallest, in integers."""
        return latencies[max(1, -(-n * per_mille // 1000)) - 1] / 1e6

    return {
        "policy": policy,
        "seed": seed,
        "p50_ms": rank(500),
        "p99_ms": rank(990),
        "p999_ms": rank(999),
        "mean_ms": sum(latencies) / n / 1e6,
        "extra_load_percent": 100.0 * (sent_measured[0] - subs_measured[0]) / subs_measured[0],
        "utilisation_percent": 100.0 * busy_ns[0] / (args.servers * now[0]),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", choices=["none", "delay", "tied"], required=True)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--warmup", type=int, default=400)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--fan-out", type=int, default=5)
    ap.add_argument("--servers", type=int, default=10)
    ap.add_argument("--service-ms", type=float, default=1.0)
    ap.add_argument("--every-s", type=float, default=1.0)
    ap.add_argument("--pause-ms", type=float, default=20.0)
    ap.add_argument("--delay-ms", type=float, default=10.0)
    ap.add_argument("--max-copies", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    for seed in range(a.seed, a.seed + a.seeds):
        r = run(a, a.policy, seed)
        if a.json:
            print(json.dumps(r))
        else:
            print("  ".join("%s %s" % (k, v) for k, v in r.items()))


if __name__ == "__main__":
    main()
