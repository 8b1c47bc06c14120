//! One run: every client's calls, event by event, in integer nanoseconds
//! (`docs/model.md`, "Partial failure").
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use herd::budget::RetryPermit;
use herd::clock::FakeClock;
use herd::rng::{Rng, SplitMix64};
use herd::throttle::EnvoyActiveRequest;

use super::gate::{First, Gate, Retry};
use super::{Checked, PartialFailure, PartialRun};
use crate::error::ScenarioError;
use crate::limits;
use crate::watch::{LOOK_EVERY, Watch};

/// The streams of a run's seed (`SplitMix64::derive(seed, ·)`, docs/rng.md).
pub(crate) const ARRIVALS: u64 = 1;
pub(crate) const NETWORK: u64 = 2;
pub(crate) const OUTCOMES: u64 = 3;
pub(crate) const GATES: u64 = 4;

/// A call under way.
struct Call {
    client: u32,
    attempts: u32,
    /// The pause before the call's next retry, in nanoseconds.
    backoff_ns: u64,
    /// Whether the attempt under way is a retry.
    retry: bool,
    /// The retry's permit, until its attempt is answered.
    permit: Option<RetryPermit>,
    /// Envoy's active request, while the attempt is under way.
    active: Option<EnvoyActiveRequest>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Client `c` starts a call.
    Start(u32),
    /// Call `i` sends an attempt.
    Send(usize),
    /// Call `i`'s attempt is answered.
    Answer(usize, bool),
}

/// An exponential draw of mean `mean_ns`, rounded to the nanosecond: `−mean · ln(1 − u)`.
fn exponential(rng: &mut SplitMix64, mean_ns: f64) -> u64 {
    if mean_ns == 0.0 {
        return 0;
    }
    let u = rng.next_f64();
    let x = -mean_ns * (-u).ln_1p();
    // Far beyond any horizon a scenario may have; a draw this long never matters.
    x.round().min(1e18) as u64
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

struct World<'a> {
    model: &'a PartialFailure,
    strategy: &'a Checked,
    clock: FakeClock,
    gates: Vec<Gate>,
    calls: Vec<Call>,
    /// Slots of `calls` whose calls ended, for the next calls to take.
    free: Vec<usize>,
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    network: SplitMix64,
    outcomes: SplitMix64,
    draws: SplitMix64,
    run: PartialRun,
}

/// The gate of `client`: its own, or the one all clients share.
fn gate(gates: &mut [Gate], client: u32) -> &mut Gate {
    let i = if gates.len() == 1 { 0 } else { client as usize };
    &mut gates[i]
}

impl World<'_> {
    fn at(&mut self, t: u64, event: Event) {
        self.queue.push(Reverse((t, self.seq, event)));
        self.seq += 1;
    }

    /// The call in slot `i` has ended: the slot is free for a later call.
    fn end(&mut self, i: usize) {
        self.free.push(i);
    }

    fn send(&mut self, t: u64, i: usize) -> Result<(), ScenarioError> {
        self.run.attempts += 1;
        limits::within(
            self.run.attempts,
            self.model.max_attempts_run,
            "attempts",
            "clients.calls_per_s",
            "fewer calls, a shorter horizon_s or fewer max_attempts",
        )?;
        let client = self.calls[i].client;
        let active = gate(&mut self.gates, client).sent();
        let call = &mut self.calls[i];
        call.attempts += 1;
        call.active = active;
        let out = exponential(&mut self.network, self.model.mean_ns);
        let back = exponential(&mut self.network, self.model.mean_ns);
        // `random.random() > failure_rate` succeeds: a failure has probability `failure_rate`.
        let success = self.outcomes.next_f64() >= self.model.failure_rate;
        self.at(
            t.saturating_add(out).saturating_add(back),
            Event::Answer(i, success),
        );
        Ok(())
    }

    fn start(
        &mut self,
        t: u64,
        client: u32,
        arrivals: &mut SplitMix64,
    ) -> Result<(), ScenarioError> {
        let next = t.saturating_add(exponential(arrivals, self.model.gap_mean_ns));
        if next <= self.model.horizon_ns {
            self.at(next, Event::Start(client));
        }
        self.run.calls += 1;
        let call = Call {
            client,
            attempts: 0,
            backoff_ns: self.strategy.backoff_ns,
            retry: false,
            permit: None,
            active: None,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.calls[i] = call;
                i
            }
            None => {
                self.calls.push(call);
                self.calls.len() - 1
            }
        };
        match gate(&mut self.gates, client).call_start(&mut self.draws) {
            First::Send => self.send(t, i),
            First::Refuse => {
                self.run.refused += 1;
                self.end(i);
                Ok(())
            }
            First::Delay(wait) => {
                self.at(t.saturating_add(nanos(wait)), Event::Send(i));
                Ok(())
            }
        }
    }

    fn answer(&mut self, t: u64, i: usize, success: bool) -> Result<(), ScenarioError> {
        let call = &mut self.calls[i];
        let (client, retry, permit) = (call.client, call.retry, call.permit.take());
        let attempts = call.attempts;
        let active = call.active.take();
        let gate = gate(&mut self.gates, client);
        gate.answered(success, retry, permit);
        let max = self.strategy.max_attempts;
        let decision = if success {
            self.run.successes += 1;
            None
        } else if max != 0 && attempts >= max {
            self.run.exhausted += 1;
            None
        } else {
            Some(gate.retry(&mut self.draws))
        };
        // The failed attempt counted as active while its retry was decided.
        drop(active);
        match decision {
            None => {
                self.end(i);
                Ok(())
            }
            Some(Retry::Deny) => {
                self.run.denied += 1;
                self.end(i);
                Ok(())
            }
            Some(Retry::Go { permit, delay }) => {
                self.run.retries += 1;
                let call = &mut self.calls[i];
                call.retry = true;
                call.permit = permit;
                let wait = call.backoff_ns.saturating_add(nanos(delay));
                call.backoff_ns = call.backoff_ns.saturating_mul(2);
                if wait == 0 {
                    self.send(t, i)
                } else {
                    self.at(t.saturating_add(wait), Event::Send(i));
                    Ok(())
                }
            }
        }
    }
}

/// Runs `strategy` with `seed`.
pub(crate) fn run(
    model: &PartialFailure,
    strategy: &Checked,
    seed: u64,
    watch: &mut Watch<'_>,
) -> Result<PartialRun, ScenarioError> {
    watch.check()?;
    let clock = FakeClock::new();
    let count = model.clients;
    let gates = (0..if strategy.shared { 1 } else { count })
        .map(|_| Gate::new(&strategy.gate, &clock))
        .collect();
    let mut arrivals = SplitMix64::derive(seed, ARRIVALS);
    let mut world = World {
        model,
        strategy,
        clock,
        gates,
        calls: Vec::new(),
        free: Vec::new(),
        queue: BinaryHeap::new(),
        seq: 0,
        network: SplitMix64::derive(seed, NETWORK),
        outcomes: SplitMix64::derive(seed, OUTCOMES),
        draws: SplitMix64::derive(seed, GATES),
        run: PartialRun::default(),
    };
    // Each client's first call comes one network delay after the start (Brooker's
    // `sim_loop` schedules each client's first `gen_load` at `net_rtt()`).
    for c in 0..count {
        let first = exponential(&mut arrivals, model.mean_ns);
        if first <= model.horizon_ns {
            world.at(first, Event::Start(c as u32));
        }
    }
    let mut events = 0u64;
    while let Some(Reverse((t, _, event))) = world.queue.pop() {
        events += 1;
        if events.is_multiple_of(LOOK_EVERY) {
            watch.check()?;
            watch.report(t as f64 / model.horizon_ns.max(1) as f64);
        }
        world.clock.set(Duration::from_nanos(t));
        match event {
            Event::Start(c) => world.start(t, c, &mut arrivals)?,
            Event::Send(i) => world.send(t, i)?,
            Event::Answer(i, success) => world.answer(t, i, success)?,
        }
    }
    watch.report(1.0);
    Ok(world.run)
}
