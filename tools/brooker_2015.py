# Marc Brooker's contention simulator, as published with "Exponential Backoff And Jitter"
# (AWS Architecture Blog, 2015): aws-samples/aws-arch-backoff-simulator, src/backoff_simulator.py,
# licensed under the Apache License 2.0 (the repository's LICENSE). Everything above the
# line `# ---- the driver` is his code unchanged; the driver below it differs only in that it runs
# on Python 3 (range, not xrange), seeds Python's generator (--seed), writes no per-write
# timestamp files, prints exact means instead of integer-divided ones, and can run only some
# client counts and rules (--clients, --rule; by default all, in the article's order).
#
# docs/contention.md compares herd's `convention = "brooker-2015"` with these figures:
#
#   python3 tools/brooker_2015.py --seed 1 > brooker.csv     # about a minute
#   python3 tools/brooker_2015.py --seed 2 --runs 1000 --clients 20 --rule exponential   # one cell
#
# Simulator for the effects of backoff and jitter on a remote OCC system.
# This code was used for the post on backoff on the AWS architecture blog
# at http://www.awsarchitectureblog.com/
import heapq
import random

# Net models the natural delay and variance of the network
class Net:
    def __init__(self, mean, sd):
        self.mean = mean
        self.sd = sd
    
    def delay(self):
        # We use a normal distribution model. Networks are more likely to be a Weibull model
        # in reality, but this is close enough for the model comparison.
        return abs(random.normalvariate(self.mean, self.sd))

# Base class for all the backoff implementations        
class Backoff:
    def __init__(self, base, cap):
        self.base = base
        self.cap = cap
    
    def expo(self, n):
        return min(self.cap, pow(2, n)*self.base)

class NoBackoff(Backoff):
    def backoff(self, n):
        return 0
        
class ExpoBackoff(Backoff):
    def backoff(self, n):
        return self.expo(n)

class ExpoBackoffEqualJitter(Backoff):
    def backoff(self, n):
        v = self.expo(n)
        return v/2 + random.uniform(0, v/2)
        
class ExpoBackoffFullJitter(Backoff):
    def backoff(self, n):
        v = self.expo(n)
        return random.uniform(0, v)
        
class ExpoBackoffDecorr(Backoff):
    def __init__(self, base, cap):
        Backoff.__init__(self, base, cap)
        self.sleep = self.base
        
    def backoff(self, n):
        self.sleep = min(self.cap, random.uniform(self.base, self.sleep * 3))
        return self.sleep

# Small class to track two counters        
class Stats:
    def __init__(self):
        self.failures = 0
        self.calls = 0

# Build a message to be added to the simulated network
def msg(tm, send_to, reply_to, payload):
    assert tm >= 0
    assert send_to is not None
    return (tm, send_to, reply_to, payload)

# The OCC server. It models a single "row" with a single version.
class OccServer:
    def __init__(self, net, stats, ts_f):
        self.version = 0
        self.net = net
        self.stats = stats
        self.ts_f = ts_f
    
    # Try to write the row. If you provide the right version number (obtained from a read),
    # the write will succeed.
    def write(self, tm, request):
        self.ts_f.write("%d\n"%(tm))
        success = False
        self.stats.calls += 1
        if request[3] == self.version:
            self.version += 1
            success = True
        else:
            self.stats.failures += 1
        return msg(tm + self.net.delay(), request[2], None, success)

    # Read the current version number of the row.
    def read(self, tm, request):
        return msg(tm + self.net.delay(), request[2], None, self.version)

# The OCC client. It models a client that tries to update the row exactly once,
# then stops.        
class OccClient:
    def __init__(self, server, net, backoff):
        self.server = server
        self.net = net
        self.attempt = 0
        self.backoff = backoff
    
    def start(self, tm):
        return msg(tm + self.net.delay(), self.server.read, self.read_rsp, None)
        
    def read_rsp(self, tm, request):
        return msg(tm + self.net.delay(), self.server.write, self.write_rsp, request[3])
        
    def write_rsp(self, tm, request):
        if not request[3]:
            self.attempt += 1
            return msg(tm + self.net.delay() + self.backoff.backoff(self.attempt), self.server.read, self.read_rsp, None)
        else:
            return None

# The main loop of the simulation.            
def run_sim(queue):
    tm = 0
    while len(queue) > 0:
        # Pull an event off the priority queue
        msg = heapq.heappop(queue)
        assert msg[0] >= tm # TIme must move forward
        tm = msg[0]
        next_msg = msg[1](tm, msg)
        if next_msg is not None:
            # If it cause another event to be generated, enqueue it
            heapq.heappush(queue, next_msg)
    return tm

# ---- the driver (see the header) ----
import argparse
import sys


class NullFile:
    def write(self, _):
        pass


def setup_sim(clients, backoff_cls, ts_f, stats):
    net = Net(10, 2)
    queue = []
    server = OccServer(net, stats, ts_f)
    for i in range(0, clients):
        client = OccClient(server, net, backoff_cls(5, 2000))
        heapq.heappush(queue, client.start(0))
    return (queue, stats)


backoff_types = ((ExpoBackoff, "exponential"),
                 (ExpoBackoffDecorr, "decorrelated"),
                 (ExpoBackoffEqualJitter, "equal"),
                 (ExpoBackoffFullJitter, "full"),
                 (NoBackoff, "immediate"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--clients", type=int, action="append",
                        help="only these client counts (repeatable; default the article's 10..190)")
    parser.add_argument("--rule", action="append",
                        help="only these rules (repeatable; default all five)")
    args = parser.parse_args()
    random.seed(args.seed)
    out = sys.stdout
    out.write("clients,rule,completion_ms,calls\n")
    for clients in args.clients or [i * 10 for i in range(1, 20)]:
        for backoff_cls, name in backoff_types:
            if args.rule and name not in args.rule:
                continue
            stats = Stats()
            tm = 0
            for _ in range(args.runs):
                queue, stats = setup_sim(clients, backoff_cls, NullFile(), stats)
                tm += run_sim(queue)
            out.write("%d,%s,%.3f,%.3f\n" % (clients, name, tm / args.runs, stats.calls / args.runs))


if __name__ == "__main__":
    main()
