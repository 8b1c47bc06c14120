//! The event loop: open-loop requests through every hop's own retry loop, down to the
//! backend, in integer nanoseconds.
//!
//! A request enters at the first hop (the caller). Each hop runs a *call*: attempts, each
//! of which is a call of the hop below (or, at the last hop, an attempt at the backend). An
//! attempt ends with the answer from below, at the hop's per-try timeout (the call below is
//! cancelled: Envoy resets the upstream stream), or when the whole call's timeout fires. A
//! failed attempt is retried while the call has attempts left, the hop retries that answer
//! (its retry conditions) and its throttle (the library's type, [`Gate`]) allows, after the
//! library's rule's pause. A call that gives up passes the last answer up unchanged (Envoy
//! returns the upstream's last response), or a 500 nobody retries when the options say so.
//!
//! The backend answers attempts first in, first out at its capacity (a service time of
//! `1 / capacity`), each after `latency` at an idle backend; it holds at most `queue_limit`
//! attempts waiting and refuses the rest at once, each refusal costing `refusal_cost` of an
//! answer's work. Work queued for a client that has timed out is still done (the backend
//! cannot know): that wasted work, and the retries that caused it, are what keep an
//! overloaded backend overloaded. The faults: in a brownout each attempt the backend starts
//! fails with probability `brownout`; in an overload the service time is that of the lower
//! capacity; in an outage every attempt is refused at once, and answers that fall in it fail.
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use herd::RuleState;
use herd::budget::RetryPermit;
use herd::clock::FakeClock;
use herd::rng::{Rng, SplitMix64};
use herd::throttle::EnvoyActiveRequest;

use super::answer::{Answer, FailureStatus};
use super::faults::Fault;
use super::hop::{Hop, nanos};
use super::slots::{Id, Slots};
use crate::error::ScenarioError;
use crate::partial::gate::{First, Gate, Retry};
use crate::watch::{LOOK_EVERY, Watch};

/// The streams of a run's seed (`SplitMix64::derive(seed, ·)`, docs/rng.md).
const ARRIVALS: u64 = 1;
const OUTCOMES: u64 = 2;
const PAUSES: u64 = 3;
const GATES: u64 = 4;

/// Width of a bin of the load series.
pub(crate) const BIN_NS: u64 = 100_000_000;

/// One run's plan, checked.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) fault: Fault,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// New requests arrive before this.
    pub(crate) horizon_ns: u64,
    pub(crate) gap_mean_ns: f64,
    pub(crate) service_ns: f64,
    pub(crate) overload_service_ns: f64,
    pub(crate) brownout: f64,
    pub(crate) latency_ns: u64,
    /// A refusal's round trip.
    pub(crate) refuse_ns: u64,
    pub(crate) refusal_cost: f64,
    pub(crate) queue_limit: usize,
    pub(crate) failure: FailureStatus,
    pub(crate) gives_up_as_500: bool,
    pub(crate) max_run_attempts: u64,
}

impl Plan {
    fn in_fault(&self, t: u64) -> bool {
        (self.start_ns..self.end_ns).contains(&t)
    }
}

/// One request's fate.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Request {
    pub(crate) arrival_ns: u64,
    pub(crate) done_ns: u64,
    pub(crate) ok: bool,
    /// Attempts it sent to the backend.
    pub(crate) attempts: u32,
}

/// What one run leaves: every request, the backend's attempts per [`BIN_NS`], and the most
/// call and attempt slots the run held at once.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trace {
    pub(crate) requests: Vec<Request>,
    pub(crate) series: Vec<u64>,
    /// Calls and attempts in flight at once, at most: slots are recycled once settled, so
    /// this follows the load, not the run's length.
    pub(crate) slots: usize,
}

struct Call {
    hop: usize,
    request: u32,
    /// The attempt of the hop above this call serves, if any.
    parent: Option<u32>,
    attempts: u32,
    state: RuleState,
    done: bool,
    current: Option<u32>,
    /// The permit of the retry about to be sent.
    permit: Option<RetryPermit>,
}

struct Attempt {
    call: u32,
    inner: Option<u32>,
    settled: bool,
    retry: bool,
    permit: Option<RetryPermit>,
    active: Option<EnvoyActiveRequest>,
}

/// An event, naming the call or attempt it is for; one whose slot has been recycled since
/// is stale, and dropped (it would have found its call done, or its attempt settled).
#[derive(Clone, Copy, Debug)]
enum Event {
    Arrive,
    Send(Id),
    /// The backend's answer to an attempt: `None` served.
    Backend(Id, Option<Answer>),
    PerTry(Id),
    Deadline(Id),
}

struct Due {
    t: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.t, self.seq) == (other.t, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    /// Earliest first out of the max-heap; same time, first scheduled first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.t, other.seq).cmp(&(self.t, self.seq))
    }
}

/// An exponential draw of mean `mean_ns`: `−mean · ln(1 − u)`, rounded to the nanosecond.
fn exponential(rng: &mut SplitMix64, mean_ns: f64) -> u64 {
    let u = rng.next_f64();
    (-mean_ns * (-u).ln_1p()).round().min(1e18) as u64
}

struct World<'a> {
    plan: &'a Plan,
    hops: &'a [Hop],
    clock: FakeClock,
    gates: Vec<Gate>,
    calls: Slots<Call>,
    attempts: Slots<Attempt>,
    /// Attempts made so far, against `plan.max_run_attempts`.
    made: u64,
    heap: BinaryHeap<Due>,
    seq: u64,
    arrivals: SplitMix64,
    outcomes: SplitMix64,
    pauses: SplitMix64,
    draws: SplitMix64,
    busy_until: f64,
    /// Start times of the attempts waiting at the backend.
    queue: VecDeque<u64>,
    trace: Trace,
}

impl World<'_> {
    fn at(&mut self, t: u64, event: Event) {
        self.heap.push(Due {
            t,
            seq: self.seq,
            event,
        });
        self.seq += 1;
    }

    fn arrive(&mut self, t: u64) -> Result<(), ScenarioError> {
        let next = t.saturating_add(exponential(&mut self.arrivals, self.plan.gap_mean_ns));
        if next < self.plan.horizon_ns {
            self.at(next, Event::Arrive);
        }
        let request = u32::try_from(self.trace.requests.len())
            .map_err(|_| ScenarioError::field("rps", "more than 2^32 requests in one run"))?;
        self.trace.requests.push(Request {
            arrival_ns: t,
            done_ns: t,
            ..Request::default()
        });
        let c = self.new_call(0, request, None)?;
        self.start_call(t, c)
    }

    fn new_call(
        &mut self,
        hop: usize,
        request: u32,
        parent: Option<u32>,
    ) -> Result<Id, ScenarioError> {
        self.calls
            .take(Call {
                hop,
                request,
                parent,
                attempts: 0,
                state: RuleState::default(),
                done: false,
                current: None,
                permit: None,
            })
            .ok_or_else(|| ScenarioError::field("rps", "more than 2^32 calls at once"))
    }

    fn start_call(&mut self, t: u64, id: Id) -> Result<(), ScenarioError> {
        let c = id.slot;
        let hop = self.calls[c].hop;
        if let Some(timeout) = self.hops[hop].timeout_ns {
            self.at(t.saturating_add(timeout), Event::Deadline(id));
        }
        match self.gates[hop].call_start(&mut self.draws) {
            First::Send => self.send(t, id),
            First::Refuse => {
                // Refused by the caller's own throttle: a local "unavailable".
                self.finish(t, c, Some(Answer::Failure(self.plan.failure)));
                Ok(())
            }
            First::Delay(wait) => {
                self.at(t.saturating_add(nanos(wait)), Event::Send(id));
                Ok(())
            }
        }
    }

    fn send(&mut self, t: u64, id: Id) -> Result<(), ScenarioError> {
        let c = id.slot;
        let call = &mut self.calls[c];
        if call.done {
            call.permit = None;
            return Ok(());
        }
        let hop = call.hop;
        let retry = call.attempts > 0;
        call.attempts += 1;
        let permit = call.permit.take();
        let request = call.request;
        let active = self.gates[hop].sent();
        if self.made >= self.plan.max_run_attempts {
            return Err(ScenarioError::field(
                "rps",
                format!(
                    "the run exceeds {} attempts; fewer requests a second or a shorter fault",
                    self.plan.max_run_attempts
                ),
            ));
        }
        self.made += 1;
        let id = self
            .attempts
            .take(Attempt {
                call: c,
                inner: None,
                settled: false,
                retry,
                permit,
                active,
            })
            .ok_or_else(|| ScenarioError::field("rps", "more than 2^32 attempts at once"))?;
        let a = id.slot;
        self.calls[c].current = Some(a);
        if let Some(p) = self.hops[hop].per_try_ns {
            self.at(t.saturating_add(p), Event::PerTry(id));
        }
        if hop + 1 < self.hops.len() {
            let inner = self.new_call(hop + 1, request, Some(a))?;
            self.attempts[a].inner = Some(inner.slot);
            self.start_call(t, inner)
        } else {
            self.backend(t, id, request);
            Ok(())
        }
    }

    /// An attempt reaches the backend.
    fn backend(&mut self, t: u64, a: Id, request: u32) {
        let plan = self.plan;
        self.trace.requests[request as usize].attempts += 1;
        let bin = (t / BIN_NS) as usize;
        if self.trace.series.len() <= bin {
            self.trace.series.resize(bin + 1, 0);
        }
        self.trace.series[bin] += 1;
        let failure = Some(Answer::Failure(plan.failure));
        let outage = |t: u64| plan.fault == Fault::Outage && plan.in_fault(t);
        if outage(t) {
            self.at(t.saturating_add(plan.refuse_ns), Event::Backend(a, failure));
            return;
        }
        while self.queue.front().is_some_and(|&s| s <= t) {
            self.queue.pop_front();
        }
        let service = if plan.fault == Fault::Overload && plan.in_fault(t) {
            plan.overload_service_ns
        } else {
            plan.service_ns
        };
        let now = t as f64;
        if self.queue.len() >= plan.queue_limit {
            // Refused at once; the refusal costs the backend a share of an answer's work.
            self.busy_until = self.busy_until.max(now) + plan.refusal_cost * service;
            self.at(t.saturating_add(plan.refuse_ns), Event::Backend(a, failure));
            return;
        }
        let start = self.busy_until.max(now);
        self.busy_until = start + service;
        let start_ns = start.ceil() as u64;
        if start_ns > t {
            self.queue.push_back(start_ns);
        }
        let answer_ns = start_ns.saturating_add(plan.latency_ns);
        let browned = plan.fault == Fault::Brownout
            && plan.in_fault(start_ns)
            && self.outcomes.next_f64() < plan.brownout;
        let answer = (browned || outage(answer_ns)).then_some(Answer::Failure(plan.failure));
        self.at(answer_ns, Event::Backend(a, answer));
    }

    /// Attempt `a` is answered (`None`: served) from below.
    fn answered(&mut self, t: u64, a: u32, answer: Option<Answer>) {
        if self.attempts[a].settled {
            return;
        }
        self.settle(a, answer.is_none());
        let c = self.attempts[a].call;
        let call = &mut self.calls[c];
        call.current = None;
        if call.done {
            return;
        }
        match answer {
            None => self.finish(t, c, None),
            Some(answer) => self.failed(t, c, answer),
        }
    }

    fn settle(&mut self, a: u32, ok: bool) {
        self.attempts.release(a);
        let attempt = &mut self.attempts[a];
        attempt.settled = true;
        let permit = attempt.permit.take();
        let active = attempt.active.take();
        let retry = attempt.retry;
        let hop = self.calls[attempt.call].hop;
        self.gates[hop].answered(ok, retry, permit);
        // The failed attempt counted as active while its retry was decided.
        drop(active);
    }

    fn failed(&mut self, t: u64, c: u32, answer: Answer) {
        let hops = self.hops;
        let call = &self.calls[c];
        let hop = &hops[call.hop];
        if !hop.retries(answer) || call.attempts >= hop.max_attempts {
            self.finish(t, c, Some(answer));
            return;
        }
        match self.gates[call.hop].retry(&mut self.draws) {
            Retry::Deny => self.finish(t, c, Some(answer)),
            Retry::Go { permit, delay } => {
                let call = &mut self.calls[c];
                let pause = hop.rule.pause_nanos(&mut call.state, &mut self.pauses);
                call.permit = permit;
                let at = t.saturating_add(pause).saturating_add(nanos(delay));
                let id = self.calls.id(c);
                self.at(at, Event::Send(id));
            }
        }
    }

    /// Call `c` ends with `result` (`None`: served), which goes to the hop above, or to the
    /// user.
    fn finish(&mut self, t: u64, c: u32, result: Option<Answer>) {
        let call = &mut self.calls[c];
        call.done = true;
        call.permit = None;
        let (parent, request) = (call.parent, call.request);
        self.calls.release(c);
        match parent {
            Some(parent) => {
                let up = match result {
                    Some(_) if self.plan.gives_up_as_500 => Some(Answer::Internal),
                    other => other,
                };
                self.answered(t, parent, up);
            }
            None => {
                let r = &mut self.trace.requests[request as usize];
                r.done_ns = t;
                r.ok = result.is_none();
            }
        }
    }

    fn per_try(&mut self, t: u64, a: u32) {
        if self.attempts[a].settled {
            return;
        }
        if let Some(inner) = self.attempts[a].inner {
            self.cancel_call(inner);
        }
        self.answered(t, a, Some(Answer::Timeout));
    }

    fn deadline(&mut self, t: u64, c: u32) {
        let call = &self.calls[c];
        if call.done {
            return;
        }
        if let Some(a) = call.current {
            self.cancel_attempt(a);
        }
        self.finish(t, c, Some(Answer::Timeout));
    }

    fn cancel_attempt(&mut self, a: u32) {
        if self.attempts[a].settled {
            return;
        }
        self.settle(a, false);
        if let Some(inner) = self.attempts[a].inner {
            self.cancel_call(inner);
        }
    }

    fn cancel_call(&mut self, c: u32) {
        let call = &mut self.calls[c];
        if call.done {
            return;
        }
        call.done = true;
        call.permit = None;
        let current = call.current;
        self.calls.release(c);
        if let Some(a) = current {
            self.cancel_attempt(a);
        }
    }
}

/// Runs `hops` (caller first) through `plan` with `seed`.
pub(crate) fn run(
    plan: &Plan,
    hops: &[Hop],
    seed: u64,
    watch: &mut Watch<'_>,
) -> Result<Trace, ScenarioError> {
    watch.check()?;
    let clock = FakeClock::new();
    let gates = hops.iter().map(|h| Gate::new(&h.gate, &clock)).collect();
    let mut world = World {
        plan,
        hops,
        clock,
        gates,
        calls: Slots::new(),
        attempts: Slots::new(),
        made: 0,
        heap: BinaryHeap::new(),
        seq: 0,
        arrivals: SplitMix64::derive(seed, ARRIVALS),
        outcomes: SplitMix64::derive(seed, OUTCOMES),
        pauses: SplitMix64::derive(seed, PAUSES),
        draws: SplitMix64::derive(seed, GATES),
        busy_until: 0.0,
        queue: VecDeque::new(),
        trace: Trace::default(),
    };
    let first = exponential(&mut world.arrivals, plan.gap_mean_ns);
    if first < plan.horizon_ns {
        world.at(first, Event::Arrive);
    }
    let mut events = 0u64;
    while let Some(Due { t, event, .. }) = world.heap.pop() {
        events += 1;
        if events.is_multiple_of(LOOK_EVERY) {
            watch.check()?;
            watch.report(t as f64 / plan.horizon_ns.max(1) as f64);
        }
        world.clock.set(Duration::from_nanos(t));
        match event {
            Event::Arrive => world.arrive(t)?,
            Event::Send(c) if world.calls.holds(c) => world.send(t, c)?,
            Event::Backend(a, answer) if world.attempts.holds(a) => {
                world.answered(t, a.slot, answer);
            }
            Event::PerTry(a) if world.attempts.holds(a) => world.per_try(t, a.slot),
            Event::Deadline(c) if world.calls.holds(c) => world.deadline(t, c.slot),
            // Its call or attempt settled, and the slot went to another.
            Event::Send(_) | Event::Backend(..) | Event::PerTry(_) | Event::Deadline(_) => {}
        }
        world.calls.recycle();
        world.attempts.recycle();
    }
    watch.report(1.0);
    let mut trace = world.trace;
    trace.slots = world.calls.high_water() + world.attempts.high_water();
    Ok(trace)
}
