//! The latency model's event loop: Poisson arrivals, FIFO servers that pause, copies,
//! hedge timers, cancellation.
//!
//! Events run in (time, order scheduled). They are kept where that order is cheap to find:
//! each server's one pending event in a tournament tree (a completion, or the end of a
//! pause with copies waiting; a copy stopped in service takes its completion out at once),
//! and hedge timers in runs that are already sorted (timers scheduled while the delay does
//! not shrink come due in the order they were set).
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use herd::budget::{Budget, RetryPermit};
use herd::clock::FakeClock;
use herd::hedge::{LatencyHistogram, MAX_COPIES};
use herd::rng::{Rng, SplitMix64};
use herd::throttle::{EnvoyActiveRequest, EnvoyRetryLimit};

use super::draws::{ROUTING, SERVICE, ServerPauses, arrivals_of, service_time, stream};
use super::report::LatencyResult;
use super::scenario::{LatencyPlan, Policy, PolicyKind};
use crate::error::ScenarioError;
use crate::watch::Watch;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyState {
    Queued,
    Serving,
    Cancelled,
    Finished,
}

const COPIES: usize = MAX_COPIES as usize;

/// A sub-request and its copies, kept inline: copy `k` of sub-request `sub` is named
/// `sub << 3 | k` in the servers' queues.
#[derive(Clone, Copy, Debug)]
struct Sub {
    user: u32,
    /// Whether its user request is measured.
    measured: bool,
    done: bool,
    started: bool,
    sent: u8,
    /// Copies in a queue or in service (a cancelled copy still in a queue counts).
    live: u8,
    /// Hedge timers pending.
    timers: u8,
    state: [CopyState; COPIES],
    server: [u32; COPIES],
    dispatched: [u64; COPIES],
}

#[inline]
fn copy_id(sub: u32, k: usize) -> u64 {
    (u64::from(sub) << 3) | k as u64
}

#[inline]
fn copy_parts(copy: u64) -> (u32, usize) {
    ((copy >> 3) as u32, (copy & 7) as usize)
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
    queue: VecDeque<u64>,
    busy: Option<u64>,
    /// Paused with copies waiting: its pending event is the end of the pause, when it
    /// takes the next copy, not a completion.
    resuming: bool,
    /// When the copy in service started.
    busy_since: u64,
    pauses: ServerPauses,
}

impl Server {
    fn new(plan: &LatencyPlan, index: u32) -> Self {
        Self {
            queue: VecDeque::new(),
            busy: None,
            resuming: false,
            busy_since: 0,
            pauses: ServerPauses::of_plan(plan, index),
        }
    }
}

/// An event's place in the order, as one number: its time in the high word, then the order
/// it was scheduled in, then (for a completion) its server, which never decides the order
/// (no two events share a `seq`) but rides along. `NEVER` is no event.
///
/// `seq` fits its 47 bits: a run makes at most 14 events per sub-request (5 completions,
/// 4 timers, and 5 ends of pauses: a server that waits out a pause then starts a copy, or
/// drops cancelled ones, so it waits at most once per copy), and at most
/// 2·10⁷ × 2 requests × 10⁴ sub-requests, 5.6·10¹² < 2⁴⁷ events.
type Key = u128;
const NEVER: Key = Key::MAX;
const SERVER_BITS: u32 = 17;
const _: () = assert!(super::MAX_SERVERS <= 1 << SERVER_BITS);

#[inline]
fn key(at: u64, seq: u64, server: u32) -> Key {
    debug_assert!(seq < 1 << (64 - SERVER_BITS));
    (Key::from(at) << 64) | Key::from(seq << SERVER_BITS) | Key::from(server)
}

#[inline]
fn key_time(key: Key) -> u64 {
    (key >> 64) as u64
}

#[inline]
fn key_server(key: Key) -> u32 {
    (key as u32) & ((1 << SERVER_BITS) - 1)
}

/// Each server's pending completion (at most one), in a tournament tree of four children a
/// node: every inner node holds the earliest of its children, so the next completion is the
/// root, and setting a server's completion rewrites the log₄(servers) nodes above it (3 for
/// 20 servers, where a binary tree has 5), without a branch (which child wins is a coin toss
/// the branch predictor would often lose): the earliest child is picked with conditional
/// moves. The root is node 0, node `p`'s children are `4p + 1 ..= 4p + 4`, and the leaves,
/// one a server, come after the inner nodes.
struct Completions {
    inner: usize,
    keys: Vec<Key>,
}

impl Completions {
    fn new(servers: u32) -> Self {
        let mut leaves = 1usize;
        while leaves < servers as usize {
            leaves *= 4;
        }
        let inner = (leaves - 1) / 3;
        Self {
            inner,
            keys: vec![NEVER; inner + leaves],
        }
    }

    /// The next completion (its key names its server).
    #[inline]
    fn first(&self) -> Key {
        self.keys[0]
    }

    #[inline]
    fn get(&self, server: u32) -> Key {
        self.keys[self.inner + server as usize]
    }

    #[inline]
    fn set(&mut self, server: u32, key: Key) {
        let mut j = self.inner + server as usize;
        self.keys[j] = key;
        while j > 0 {
            // The children are read back from memory rather than the winner carried up in
            // a register: a value carried from one turn of the loop to the next through a
            // select is what LLVM's x86 back end turns into a branch (which profiled at a
            // sixth of the run), while this compiles to `cmov`.
            j = (j - 1) / 4;
            let first = 4 * j + 1;
            let [a, b, c, d] = self.keys[first..first + 4] else {
                unreachable!("a node has four children");
            };
            let ab = if b < a { b } else { a };
            let cd = if d < c { d } else { c };
            self.keys[j] = if cd < ab { cd } else { ab };
        }
    }
}

/// Pending hedge timers, as runs sorted by key. A timer goes at the end of the last run
/// unless it is due before that run's last timer (the learned delay shrank); then it starts
/// a new run. A fixed delay needs one run; a learned one, a run per shrink still pending.
struct Timers {
    runs: Vec<VecDeque<(Key, u32)>>,
    spare: Vec<VecDeque<(Key, u32)>>,
}

impl Timers {
    fn new() -> Self {
        Self {
            runs: vec![VecDeque::new()],
            spare: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, key: Key, sub: u32) {
        let last = self.runs.len() - 1;
        if self.runs[last].back().is_some_and(|&(k, _)| k > key) {
            let run = self.spare.pop().unwrap_or_default();
            self.runs.push(run);
        }
        let last = self.runs.len() - 1;
        self.runs[last].push_back((key, sub));
    }

    /// The first timer's key and its run (`NEVER` when none is pending).
    #[inline]
    fn first(&self) -> (Key, usize) {
        let mut best = (self.runs[0].front().map_or(NEVER, |t| t.0), 0);
        for (i, run) in self.runs.iter().enumerate().skip(1) {
            if let Some(&(k, _)) = run.front()
                && k < best.0
            {
                best = (k, i);
            }
        }
        best
    }

    #[inline]
    fn pop(&mut self, run: usize) -> u32 {
        let (_, sub) = self.runs[run]
            .pop_front()
            .unwrap_or_else(|| unreachable!("popped an empty run"));
        if self.runs[run].is_empty() && run + 1 < self.runs.len() {
            let empty = self.runs.remove(run);
            self.spare.push(empty);
        }
        sub
    }
}

/// The length of the learning windows of the `percentile` policy's histogram.
pub const LEARNING_WINDOW: Duration = Duration::from_secs(1);
/// The samples a learning window needs before the `percentile` policy hedges on it.
pub const LEARNING_MIN_SAMPLES: u64 = 100;

struct World<'p> {
    plan: &'p LatencyPlan,
    policy: &'p Policy,
    tied: bool,
    now: u64,
    seq: u64,
    completions: Completions,
    /// The latest time a copy stopped in service would have finished: the run lasts until
    /// then, as if its server had served it out of sight.
    stopped_until: u64,
    timers: Timers,
    servers: Vec<Server>,
    subs: Slab<Sub>,
    users: Slab<User>,
    routing: SplitMix64,
    service: SplitMix64,
    /// The policy's budget, or `[retry.throttle]`: the library's type as a hedge uses it.
    budget: Option<(Arc<dyn Budget>, FakeClock)>,
    /// Envoy's limit, whose active requests are the copies in flight (one guard each).
    envoy: Option<EnvoyRetryLimit>,
    active: Vec<EnvoyActiveRequest>,
    /// The permits of the hedges sent, held until their sub-request is answered.
    permits: HashMap<u32, Vec<RetryPermit>>,
    histogram: Option<LatencyHistogram>,
    /// The learned delay read from the histogram, valid until the end of its window (no
    /// rotation, so no new percentile, can happen before then).
    learned: Option<u64>,
    learned_until: u64,
    latencies: Vec<u64>,
    // Counts over measured users' sub-requests.
    measured_subs: u64,
    measured_copies: u64,
    hedges_refused: u64,
    cancelled: u64,
    busy_ns: u128,
}

impl World<'_> {
    fn schedule_hedge(&mut self, at: u64, sub: u32) {
        self.seq += 1;
        self.timers.push(key(at, self.seq, 0), sub);
    }

    fn service_time(&mut self) -> u64 {
        let p = &self.plan;
        service_time(
            p.distribution,
            p.service_mean_ns,
            p.sigma,
            &mut self.service,
        )
    }

    /// The delay before the next copy, or `None` if no copy should follow on a timer.
    #[inline]
    fn hedge_delay(&mut self) -> Option<u64> {
        match self.policy.kind {
            PolicyKind::Delay => Some(self.policy.delay_ns),
            PolicyKind::Percentile => {
                if self.now >= self.learned_until {
                    let h = self.histogram.as_ref()?;
                    h.roll(Duration::from_nanos(self.now));
                    self.learned = h
                        .percentile()
                        .map(|p| u64::try_from(p.as_nanos()).unwrap_or(u64::MAX));
                    let window = LEARNING_WINDOW.as_nanos() as u64;
                    self.learned_until =
                        (self.now / window).saturating_add(1).saturating_mul(window);
                }
                self.learned
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
        if let Some((_, clock)) = &self.budget {
            clock.set(Duration::from_nanos(self.now));
        }
        for _ in 0..fan_out {
            let sub = self.subs.insert(Sub {
                user,
                measured,
                done: false,
                started: false,
                sent: 0,
                live: 0,
                timers: 0,
                state: [CopyState::Queued; COPIES],
                server: [0; COPIES],
                dispatched: [0; COPIES],
            });
            if measured {
                self.measured_subs += 1;
            }
            if let Some((budget, _)) = &self.budget {
                budget.on_request();
            }
            self.dispatch(sub);
            if self.tied {
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
        let n = self.plan.servers;
        let s = &self.subs[sub];
        let k = usize::from(s.sent);
        let server = loop {
            let pick = self.routing.below(u64::from(n)) as u32;
            if k >= n as usize || !s.server[..k].contains(&pick) {
                break pick;
            }
        };
        let s = &mut self.subs[sub];
        s.server[k] = server;
        s.dispatched[k] = self.now;
        s.sent += 1;
        if s.measured {
            self.measured_copies += 1;
        }
        if self.tied && s.started {
            // The tied copy already started service: this one is cancelled now. It would
            // otherwise be dropped when it reached its queue's head, which takes no time,
            // so its server's work and every figure are the same.
            s.state[k] = CopyState::Cancelled;
            self.cancelled += 1;
            return;
        }
        s.state[k] = CopyState::Queued;
        s.live += 1;
        if let Some(limit) = &self.envoy {
            self.active.push(limit.start_request());
        }
        let copy = copy_id(sub, k);
        let srv = &mut self.servers[server as usize];
        srv.queue.push_back(copy);
        if srv.busy.is_none() && !srv.resuming {
            // The server was idle, its queue empty: it starts the copy, unless paused.
            self.start_next(server);
        }
    }

    /// The server takes the next copy from its queue that is still wanted, or goes idle.
    /// A paused server starts nothing: with copies waiting, it takes the next when the
    /// pause ends (Dean and Barroso's tied requests cancel when a server *begins* a copy,
    /// and a paused process dequeues nothing).
    fn start_next(&mut self, server: u32) {
        let srv = &mut self.servers[server as usize];
        if !srv.queue.is_empty()
            && let Some(end) = srv.pauses.paused_until(self.now)
        {
            srv.resuming = true;
            self.seq += 1;
            self.completions.set(server, key(end, self.seq, server));
            return;
        }
        while let Some(copy) = self.servers[server as usize].queue.pop_front() {
            if self.try_start(server, copy) {
                return;
            }
        }
        self.completions.set(server, NEVER);
    }

    /// Starts serving `copy` on the idle, running `server` if it is still wanted; otherwise
    /// drops it.
    fn try_start(&mut self, server: u32, copy: u64) -> bool {
        let (sub, k) = copy_parts(copy);
        let s = &self.subs[sub];
        let state = s.state[k];
        let unwanted = state == CopyState::Cancelled
            || (self.tied && s.started)
            || (s.done && self.policy.cancel_losers);
        if unwanted {
            if state != CopyState::Cancelled {
                self.cancelled += 1;
                self.subs[sub].state[k] = CopyState::Cancelled;
            }
            self.release(sub);
            return false;
        }
        let work = self.service_time();
        let srv = &mut self.servers[server as usize];
        let finish = srv.pauses.finish(self.now, work);
        srv.busy = Some(copy);
        srv.busy_since = self.now;
        let s = &mut self.subs[sub];
        s.state[k] = CopyState::Serving;
        s.started = true;
        self.seq += 1;
        self.completions.set(server, key(finish, self.seq, server));
        if self.tied {
            // Tied requests: the other copy learns that this one started, and leaves its
            // queue when it reaches the head.
            let s = &mut self.subs[sub];
            for j in 0..usize::from(s.sent) {
                if j != k && s.state[j] == CopyState::Queued {
                    s.state[j] = CopyState::Cancelled;
                    self.cancelled += 1;
                }
            }
        }
        true
    }

    /// One copy of `sub` has left its queue or its server; frees the sub-request once
    /// nothing refers to it.
    #[inline]
    fn release(&mut self, sub: u32) {
        self.subs[sub].live -= 1;
        self.active.pop();
        self.free_if_idle(sub);
    }

    /// Frees `sub` once it is answered and no copy or timer refers to it.
    #[inline]
    fn free_if_idle(&mut self, sub: u32) {
        let s = &self.subs[sub];
        if s.done && s.live == 0 && s.timers == 0 {
            self.subs.remove(sub);
        }
    }

    /// The server's pending event: a completion, or the end of a pause with copies waiting.
    fn on_server_event(&mut self, server: u32) {
        let srv = &mut self.servers[server as usize];
        if srv.resuming {
            srv.resuming = false;
            self.start_next(server);
        } else {
            self.on_done(server);
        }
    }

    fn on_done(&mut self, server: u32) {
        let srv = &mut self.servers[server as usize];
        let Some(copy) = srv.busy.take() else {
            unreachable!("a completion on an idle server");
        };
        self.busy_ns += u128::from(self.now - srv.busy_since);
        let (sub, k) = copy_parts(copy);
        let s = &mut self.subs[sub];
        s.state[k] = CopyState::Finished;
        if !s.done {
            s.done = true;
            let (user, dispatched) = (s.user, s.dispatched[k]);
            if let Some(h) = &self.histogram {
                let now = Duration::from_nanos(self.now);
                h.record(now, Duration::from_nanos(self.now - dispatched));
            }
            if let Some((budget, clock)) = &self.budget {
                clock.set(Duration::from_nanos(self.now));
                budget.on_success();
                // The sub-request got its answer: its hedges succeeded.
                for permit in self.permits.remove(&sub).unwrap_or_default() {
                    permit.succeeded();
                }
            }
            let u = &mut self.users[user];
            u.remaining -= 1;
            if u.remaining == 0 {
                if u.measured {
                    self.latencies.push(self.now - u.arrival);
                }
                self.users.remove(user);
            }
            if self.policy.cancel_losers {
                self.cancel_losers(sub, k);
            }
        }
        self.release(sub);
        self.start_next(server);
    }

    /// The winner answered: queued copies leave when they reach the head of their queue,
    /// and copies in service stop now, freeing their servers.
    fn cancel_losers(&mut self, sub: u32, winner: usize) {
        for j in 0..usize::from(self.subs[sub].sent) {
            if j == winner {
                continue;
            }
            let s = &mut self.subs[sub];
            match s.state[j] {
                CopyState::Queued => {
                    s.state[j] = CopyState::Cancelled;
                    self.cancelled += 1;
                }
                CopyState::Serving => {
                    s.state[j] = CopyState::Cancelled;
                    let server = s.server[j];
                    self.cancelled += 1;
                    let srv = &mut self.servers[server as usize];
                    self.busy_ns += u128::from(self.now - srv.busy_since);
                    srv.busy = None;
                    let stopped = key_time(self.completions.get(server));
                    self.stopped_until = self.stopped_until.max(stopped);
                    self.release(sub);
                    self.start_next(server);
                }
                CopyState::Cancelled | CopyState::Finished => {}
            }
        }
    }

    fn on_hedge_timer(&mut self, sub: u32) {
        let s = &mut self.subs[sub];
        s.timers -= 1;
        if !s.done && u32::from(s.sent) < self.policy.max_copies {
            let measured = s.measured;
            let allowed = match &self.budget {
                Some((budget, clock)) => {
                    clock.set(Duration::from_nanos(self.now));
                    match budget.try_retry_permit() {
                        Some(permit) if !permit.is_empty() => {
                            self.permits.entry(sub).or_default().push(permit);
                            true
                        }
                        Some(_) => true,
                        None => false,
                    }
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
            } else if measured {
                self.hedges_refused += 1;
            }
        }
        self.free_if_idle(sub);
    }
}

/// Events between two looks at the cancel flag: a few microseconds of work.
const CANCEL_CHECK_EVERY: u64 = 4096;

/// Runs one policy of a checked scenario, followed by `watch`: every
/// [`CANCEL_CHECK_EVERY`] events it is told the share of user requests arrived so far (warm-up
/// included) and its flag is read.
pub(crate) fn run(
    plan: &LatencyPlan,
    policy: &Policy,
    watch: &mut Watch<'_>,
) -> Result<(LatencyResult, Vec<u64>), ScenarioError> {
    watch.check()?;
    let all_arrivals = (plan.requests + plan.warmup).max(1) as f64;
    let mut envoy = None;
    let budget = match (policy.budget_percent, &plan.throttle) {
        (Some(percent), _) => {
            // The scenario's check kept `percent` in [0, 1000], which the budget accepts.
            let (budget, clock) = crate::budget::on_fake_clock(percent)
                .unwrap_or_else(|e| unreachable!("checked budget refused: {e}"));
            Some((Arc::new(budget) as Arc<dyn Budget>, clock))
        }
        // `[retry.throttle]` bounds the hedges of a policy without its own budget; policies
        // that send none leave it untouched.
        (None, Some(spec)) if matches!(policy.kind, PolicyKind::Delay | PolicyKind::Percentile) => {
            let clock = FakeClock::new();
            let (budget, limit) = spec.budget(&clock);
            envoy = limit;
            Some((budget, clock))
        }
        (None, _) => None,
    };
    let histogram = (policy.kind == PolicyKind::Percentile)
        .then(|| LatencyHistogram::new(policy.quantile, LEARNING_WINDOW, LEARNING_MIN_SAMPLES));
    let mut world = World {
        plan,
        policy,
        tied: policy.kind == PolicyKind::Tied,
        now: 0,
        seq: 0,
        completions: Completions::new(plan.servers),
        stopped_until: 0,
        timers: Timers::new(),
        servers: (0..plan.servers).map(|i| Server::new(plan, i)).collect(),
        subs: Slab::new(),
        users: Slab::new(),
        routing: stream(plan.seed, ROUTING),
        service: stream(plan.seed, SERVICE),
        budget,
        envoy,
        active: Vec::new(),
        permits: HashMap::new(),
        histogram,
        learned: None,
        learned_until: 0,
        latencies: Vec::with_capacity(plan.requests as usize),
        measured_subs: 0,
        measured_copies: 0,
        hedges_refused: 0,
        cancelled: 0,
        busy_ns: 0,
    };
    // Only `delay` and `percentile` set timers.
    let timed =
        policy.max_copies > 1 && matches!(policy.kind, PolicyKind::Delay | PolicyKind::Percentile);
    let mut arrivals = arrivals_of(plan);
    let mut arrived = 0u64;
    let mut next_arrival = arrivals.next();
    let mut events = 0u64;
    loop {
        events += 1;
        if events.is_multiple_of(CANCEL_CHECK_EVERY) {
            watch.check()?;
            watch.report(arrived as f64 / all_arrivals);
        }
        let done = world.completions.first();
        let (timer, run) = if timed {
            world.timers.first()
        } else {
            (NEVER, 0)
        };
        let next = done.min(timer);
        if let Some(at) = next_arrival.filter(|&at| next == NEVER || at <= key_time(next)) {
            world.now = at;
            world.arrive(arrived >= plan.warmup);
            arrived += 1;
            next_arrival = arrivals.next();
        } else if next == NEVER {
            break;
        } else if timer < done {
            world.now = key_time(timer);
            let sub = world.timers.pop(run);
            world.on_hedge_timer(sub);
        } else {
            world.now = key_time(done);
            world.on_server_event(key_server(done));
        }
    }
    let elapsed = world.now.max(world.stopped_until).max(1);
    let result = LatencyResult::new(
        policy.name.clone(),
        &mut world.latencies,
        world.measured_subs,
        world.measured_copies,
        world.hedges_refused,
        world.cancelled,
        world.busy_ns as f64 / (f64::from(plan.servers) * elapsed as f64),
    );
    watch.report(1.0);
    Ok((result, world.latencies))
}
