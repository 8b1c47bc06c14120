//! The latency model's event loop: Poisson arrivals, FIFO servers that pause, copies,
//! hedge timers, cancellation.
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use herd::budget::{Budget, BudgetConfig, RetryBudget};
use herd::clock::FakeClock;
use herd::hedge::{LatencyHistogram, MAX_COPIES};
use herd::rng::{Rng, SplitMix64};

use super::report::LatencyResult;
use super::scenario::{Distribution, Plan, Policy, PolicyKind};

/// Independent streams of one seed: arrivals, routing and service times, then one per
/// server for its pauses. Arrivals and pauses do not depend on the policy, so every policy of
/// a scenario meets the same users and the same hiccups (common random numbers).
const ARRIVALS: u64 = 1;
const ROUTING: u64 = 2;
const SERVICE: u64 = 3;
const HICCUPS: u64 = 1 << 32;

pub(crate) fn stream(seed: u64, which: u64) -> SplitMix64 {
    // SplitMix64 hashes its state on output, so streams seeded a golden-ratio step apart
    // do not overlap in any run this model can make.
    SplitMix64::new(seed ^ which.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// An exponential draw with the given mean: `−mean · ln(1 − u)`.
#[inline]
fn exponential(rng: &mut SplitMix64, mean: f64) -> f64 {
    -mean * (1.0 - rng.next_f64()).ln()
}

/// A standard normal draw (Box–Muller, one of the pair).
#[inline]
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Nanoseconds, rounded, at least 1 (a copy always takes some time).
#[inline]
fn to_ns(x: f64) -> u64 {
    if x >= 1.8e19 {
        u64::MAX / 4
    } else {
        (x.round() as u64).max(1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyState {
    Queued,
    Serving,
    Cancelled,
    Finished,
}

#[derive(Clone, Copy, Debug)]
struct Copy {
    sub: u32,
    server: u32,
    state: CopyState,
    dispatched: u64,
    started: u64,
}

#[derive(Clone, Copy, Debug)]
struct Sub {
    user: u32,
    done: bool,
    started: bool,
    sent: u8,
    /// Copies in a queue or in service (a cancelled copy still in a queue counts).
    live: u8,
    /// Hedge timers pending.
    timers: u8,
    copies: [u32; MAX_COPIES as usize],
}

#[derive(Clone, Copy, Debug)]
struct User {
    arrival: u64,
    remaining: u32,
    measured: bool,
}

/// A slab with a free list: ids are reused, so memory follows the requests in flight.
struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: std::marker::Copy> Slab<T> {
    fn new() -> Self {
        Self {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
    #[inline]
    fn insert(&mut self, item: T) -> u32 {
        if let Some(id) = self.free.pop() {
            self.items[id as usize] = item;
            id
        } else {
            self.items.push(item);
            (self.items.len() - 1) as u32
        }
    }
    #[inline]
    fn remove(&mut self, id: u32) {
        self.free.push(id);
    }
}

impl<T> std::ops::Index<u32> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: u32) -> &T {
        &self.items[id as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, id: u32) -> &mut T {
        &mut self.items[id as usize]
    }
}

/// One server: a FIFO queue, the copy in service, and its schedule of pauses.
struct Server {
    queue: VecDeque<u32>,
    busy: Option<u32>,
    /// Bumped when the copy in service is cancelled, so its completion event is ignored.
    generation: u32,
    hiccups: SplitMix64,
    pause_start: u64,
    pause_end: u64,
}

impl Server {
    fn new(seed: u64, index: u32) -> Self {
        Self {
            queue: VecDeque::new(),
            busy: None,
            generation: 0,
            hiccups: stream(seed, HICCUPS + u64::from(index)),
            pause_start: 0,
            pause_end: 0,
        }
    }

    /// When a copy that needs `work` ns of service and starts at `start` finishes: pauses in
    /// between stop the server (and the copy) for their whole length.
    #[inline]
    fn finish_time(&mut self, start: u64, work: u64, every: Option<f64>, pause: u64) -> u64 {
        let Some(every) = every else {
            return start.saturating_add(work);
        };
        let (mut t, mut w) = (start, work);
        loop {
            while self.pause_end <= t {
                self.pause_start = self
                    .pause_end
                    .saturating_add(to_ns(exponential(&mut self.hiccups, every)));
                self.pause_end = self.pause_start.saturating_add(pause);
            }
            if t >= self.pause_start {
                t = self.pause_end;
                continue;
            }
            let up = self.pause_start - t;
            if w <= up {
                return t + w;
            }
            w -= up;
            t = self.pause_end;
        }
    }
}

/// An event: a server finishing the copy it serves, or a hedge timer of a sub-request.
/// Packed in one word: the top bit says which.
const HEDGE_BIT: u64 = 1 << 63;

#[inline]
fn done_event(server: u32, generation: u32) -> u64 {
    (u64::from(server) << 31) | u64::from(generation & 0x7FFF_FFFF)
}

struct World<'p> {
    plan: &'p Plan,
    policy: &'p Policy,
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, u64)>>,
    /// Hedge timers of a fixed delay: scheduled in time order, so a queue keeps them sorted
    /// (the heap holds them when the delay is learned and may shrink).
    timers: VecDeque<(u64, u64, u64)>,
    fifo_timers: bool,
    servers: Vec<Server>,
    copies: Slab<Copy>,
    subs: Slab<Sub>,
    users: Slab<User>,
    routing: SplitMix64,
    service: SplitMix64,
    budget: Option<(RetryBudget<FakeClock>, FakeClock)>,
    histogram: Option<LatencyHistogram>,
    latencies: Vec<u64>,
    // Counts over measured users' sub-requests.
    measured_subs: u64,
    measured_copies: u64,
    hedges_refused: u64,
    cancelled: u64,
    busy_ns: u128,
}

impl World<'_> {
    #[inline]
    fn schedule(&mut self, at: u64, event: u64) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, event)));
    }

    fn schedule_hedge(&mut self, at: u64, sub: u32) {
        self.seq += 1;
        let event = HEDGE_BIT | u64::from(sub);
        if self.fifo_timers {
            self.timers.push_back((at, self.seq, event));
        } else {
            self.events.push(Reverse((at, self.seq, event)));
        }
    }

    /// The next event, in (time, order scheduled), from the heap or the timer queue.
    fn next_event(&self) -> Option<(u64, u64)> {
        let heap = self.events.peek().map(|Reverse((t, q, _))| (*t, *q));
        let fifo = self.timers.front().map(|&(t, q, _)| (t, q));
        match (heap, fifo) {
            (Some(h), Some(f)) => Some(h.min(f)),
            (h, f) => h.or(f),
        }
    }

    fn pop_event(&mut self) -> Option<(u64, u64)> {
        let next = self.next_event()?;
        if self.timers.front().is_some_and(|&(t, q, _)| (t, q) == next) {
            self.timers.pop_front().map(|(t, _, e)| (t, e))
        } else {
            self.events.pop().map(|Reverse((t, _, e))| (t, e))
        }
    }

    fn service_time(&mut self) -> u64 {
        let mean = self.plan.service_mean_ns;
        match self.plan.distribution {
            Distribution::Constant => to_ns(mean),
            Distribution::Exponential => to_ns(exponential(&mut self.service, mean)),
            Distribution::Lognormal => {
                let s = self.plan.sigma;
                let mu = mean.ln() - s * s / 2.0;
                to_ns((mu + s * normal(&mut self.service)).exp())
            }
        }
    }

    /// The delay before the next copy, or `None` if no copy should follow on a timer.
    fn hedge_delay(&self) -> Option<u64> {
        match self.policy.kind {
            PolicyKind::Delay => Some(self.policy.delay_ns),
            PolicyKind::Percentile => {
                let h = self.histogram.as_ref()?;
                h.roll(Duration::from_nanos(self.now));
                h.percentile()
                    .map(|p| u64::try_from(p.as_nanos()).unwrap_or(u64::MAX))
            }
            PolicyKind::None | PolicyKind::Tied => None,
        }
    }

    fn arrive(&mut self, measured: bool) {
        let fan_out = self.plan.fan_out;
        let user = self.users.insert(User {
            arrival: self.now,
            remaining: fan_out,
            measured,
        });
        for _ in 0..fan_out {
            let sub = self.subs.insert(Sub {
                user,
                done: false,
                started: false,
                sent: 0,
                live: 0,
                timers: 0,
                copies: [0; MAX_COPIES as usize],
            });
            if measured {
                self.measured_subs += 1;
            }
            if let Some((budget, clock)) = &self.budget {
                clock.set(Duration::from_nanos(self.now));
                budget.on_request();
            }
            self.dispatch(sub);
            if self.policy.kind == PolicyKind::Tied {
                self.dispatch(sub);
            } else if self.policy.max_copies > 1
                && let Some(delay) = self.hedge_delay()
            {
                self.subs[sub].timers += 1;
                self.schedule_hedge(self.now.saturating_add(delay), sub);
            }
        }
    }

    /// Sends one more copy of `sub` to a server it has not used yet (when there is one).
    fn dispatch(&mut self, sub: u32) {
        let s = self.subs[sub];
        let n = self.plan.servers;
        let used = &s.copies[..usize::from(s.sent)];
        let server = loop {
            let pick = self.routing.below(u64::from(n)) as u32;
            if usize::from(s.sent) >= n as usize
                || !used.iter().any(|&c| self.copies[c].server == pick)
            {
                break pick;
            }
        };
        let copy = self.copies.insert(Copy {
            sub,
            server,
            state: CopyState::Queued,
            dispatched: self.now,
            started: 0,
        });
        let entry = &mut self.subs[sub];
        entry.copies[usize::from(entry.sent)] = copy;
        entry.sent += 1;
        entry.live += 1;
        if self.users[entry.user].measured {
            self.measured_copies += 1;
        }
        let srv = &mut self.servers[server as usize];
        srv.queue.push_back(copy);
        if srv.busy.is_none() {
            self.start_next(server);
        }
    }

    /// The server takes the next copy from its queue that is still wanted.
    fn start_next(&mut self, server: u32) {
        while let Some(copy) = self.servers[server as usize].queue.pop_front() {
            let c = self.copies[copy];
            let s = self.subs[c.sub];
            let unwanted = c.state == CopyState::Cancelled
                || (self.policy.kind == PolicyKind::Tied && s.started)
                || (s.done && self.policy.cancel_losers);
            if unwanted {
                if c.state != CopyState::Cancelled {
                    self.cancelled += 1;
                }
                self.copies[copy].state = CopyState::Cancelled;
                self.release(c.sub);
                continue;
            }
            let work = self.service_time();
            let (every, pause) = (self.plan.hiccup_every_ns, self.plan.hiccup_ns);
            let srv = &mut self.servers[server as usize];
            let finish = srv.finish_time(self.now, work, every, pause);
            srv.busy = Some(copy);
            let generation = srv.generation;
            self.copies[copy].state = CopyState::Serving;
            self.copies[copy].started = self.now;
            self.subs[c.sub].started = true;
            self.schedule(finish, done_event(server, generation));
            if self.policy.kind == PolicyKind::Tied {
                // Tied requests: the other copy learns that this one started, and leaves its
                // queue when it reaches the head.
                let s = self.subs[c.sub];
                for &other in &s.copies[..usize::from(s.sent)] {
                    if other != copy && self.copies[other].state == CopyState::Queued {
                        self.copies[other].state = CopyState::Cancelled;
                        self.cancelled += 1;
                    }
                }
            }
            return;
        }
    }

    /// One copy of `sub` has left its queue or its server; frees the sub-request (and its
    /// copies) once nothing refers to it.
    fn release(&mut self, sub: u32) {
        let s = &mut self.subs[sub];
        s.live -= 1;
        self.free_if_idle(sub);
    }

    fn free_if_idle(&mut self, sub: u32) {
        let s = self.subs[sub];
        if s.done && s.live == 0 && s.timers == 0 {
            for &c in &s.copies[..usize::from(s.sent)] {
                self.copies.remove(c);
            }
            self.subs.remove(sub);
        }
    }

    fn on_done(&mut self, server: u32, generation: u32) {
        let srv = &mut self.servers[server as usize];
        if srv.generation & 0x7FFF_FFFF != generation {
            return; // the copy was cancelled in service
        }
        let Some(copy) = srv.busy.take() else {
            return;
        };
        let c = self.copies[copy];
        self.busy_ns += u128::from(self.now - c.started);
        self.copies[copy].state = CopyState::Finished;
        let sub = c.sub;
        if !self.subs[sub].done {
            self.subs[sub].done = true;
            if let Some(h) = &self.histogram {
                let now = Duration::from_nanos(self.now);
                h.record(now, Duration::from_nanos(self.now - c.dispatched));
            }
            if let Some((budget, clock)) = &self.budget {
                clock.set(Duration::from_nanos(self.now));
                budget.on_success();
            }
            let user = self.subs[sub].user;
            let u = &mut self.users[user];
            u.remaining -= 1;
            if u.remaining == 0 {
                if u.measured {
                    self.latencies.push(self.now - u.arrival);
                }
                self.users.remove(user);
            }
            if self.policy.cancel_losers {
                self.cancel_losers(sub, copy);
            }
        }
        self.release(sub);
        self.start_next(server);
    }

    /// The winner answered: queued copies leave when they reach the head of their queue,
    /// and copies in service stop now, freeing their servers.
    fn cancel_losers(&mut self, sub: u32, winner: u32) {
        let s = self.subs[sub];
        for &other in &s.copies[..usize::from(s.sent)] {
            if other == winner {
                continue;
            }
            let c = self.copies[other];
            match c.state {
                CopyState::Queued => {
                    self.copies[other].state = CopyState::Cancelled;
                    self.cancelled += 1;
                }
                CopyState::Serving => {
                    self.copies[other].state = CopyState::Cancelled;
                    self.cancelled += 1;
                    self.busy_ns += u128::from(self.now - c.started);
                    let srv = &mut self.servers[c.server as usize];
                    srv.busy = None;
                    srv.generation = srv.generation.wrapping_add(1);
                    self.release(sub);
                    self.start_next(c.server);
                }
                CopyState::Cancelled | CopyState::Finished => {}
            }
        }
    }

    fn on_hedge_timer(&mut self, sub: u32) {
        self.subs[sub].timers -= 1;
        let s = self.subs[sub];
        if !s.done && u32::from(s.sent) < self.policy.max_copies {
            let allowed = match &self.budget {
                Some((budget, clock)) => {
                    clock.set(Duration::from_nanos(self.now));
                    budget.try_retry()
                }
                None => true,
            };
            if allowed {
                self.dispatch(sub);
                if u32::from(self.subs[sub].sent) < self.policy.max_copies
                    && let Some(delay) = self.hedge_delay()
                {
                    self.subs[sub].timers += 1;
                    self.schedule_hedge(self.now.saturating_add(delay), sub);
                }
            } else if self.users[s.user].measured {
                self.hedges_refused += 1;
            }
        }
        self.free_if_idle(sub);
    }
}

/// Runs one policy of a checked scenario.
pub(crate) fn run(plan: &Plan, policy: &Policy) -> (LatencyResult, Vec<u64>) {
    let budget = policy.budget_percent.map(|percent| {
        let clock = FakeClock::new();
        let config = BudgetConfig {
            percent,
            min_per_sec: 0,
            window: Duration::from_secs(10),
        };
        // The scenario's check kept `percent` in [0, 1000], which the budget accepts.
        let budget = RetryBudget::new(config, clock.clone())
            .unwrap_or_else(|e| unreachable!("checked budget refused: {e}"));
        (budget, clock)
    });
    let histogram = (policy.kind == PolicyKind::Percentile)
        .then(|| LatencyHistogram::new(policy.quantile, Duration::from_secs(1), 100));
    let mut world = World {
        plan,
        policy,
        now: 0,
        seq: 0,
        events: BinaryHeap::with_capacity(plan.servers as usize * 2),
        timers: VecDeque::new(),
        fifo_timers: policy.kind == PolicyKind::Delay,
        servers: (0..plan.servers)
            .map(|i| Server::new(plan.seed, i))
            .collect(),
        copies: Slab::new(),
        subs: Slab::new(),
        users: Slab::new(),
        routing: stream(plan.seed, ROUTING),
        service: stream(plan.seed, SERVICE),
        budget,
        histogram,
        latencies: Vec::with_capacity(plan.requests as usize),
        measured_subs: 0,
        measured_copies: 0,
        hedges_refused: 0,
        cancelled: 0,
        busy_ns: 0,
    };
    let mut arrivals = stream(plan.seed, ARRIVALS);
    let total = plan.warmup + plan.requests;
    let mut arrived = 0u64;
    let mut next_arrival = to_ns(exponential(&mut arrivals, plan.interarrival_ns));
    loop {
        let next_event = world.next_event().map(|(t, _)| t);
        if arrived < total && next_event.is_none_or(|t| next_arrival <= t) {
            world.now = next_arrival;
            world.arrive(arrived >= plan.warmup);
            arrived += 1;
            next_arrival = next_arrival
                .saturating_add(to_ns(exponential(&mut arrivals, plan.interarrival_ns)));
        } else if let Some((t, event)) = world.pop_event() {
            world.now = t;
            if event & HEDGE_BIT != 0 {
                world.on_hedge_timer((event & !HEDGE_BIT) as u32);
            } else {
                world.on_done((event >> 31) as u32, (event & 0x7FFF_FFFF) as u32);
            }
        } else {
            break;
        }
    }
    let elapsed = world.now.max(1);
    let result = LatencyResult::new(
        policy.name.clone(),
        &mut world.latencies,
        world.measured_subs,
        world.measured_copies,
        world.hedges_refused,
        world.cancelled,
        world.busy_ns as f64 / (f64::from(plan.servers) * elapsed as f64),
    );
    (result, world.latencies)
}
