//! The agent engine: every client exact, time jumping to the next occupied step.
//!
//! A waiting client is a small [record](crate::storm::record) in the [`Calendar`] bucket of the step
//! at which it next knocks: its failure count, the rule's memory word only when the rule keeps
//! one (in 16 or 32 bits when it fits, and not at all when the word follows from the count, as
//! `grpc`'s does: [`Layout`]), its first step only under a deadline. The world owns one [`SplitMix64`] seeded by the
//! run's seed; it draws, in this order at each step, the served arrivals (a partial
//! Fisher–Yates shuffle choosing `s` of `A`) and then, client by client, the refused ones'
//! pauses through [`Rule::pause_nanos`](herd::Rule::pause_nanos), the library's own rule code (built in
//! whole steps or in nanoseconds, as the scenario's `pauses` says: [`PlannedRule`]), each
//! followed by its `Retry-After` jitter when the server gave one, then by its latency when it
//! is random.
//!
//! One step, with its due clients in order (those the calendar holds for this step, in the
//! order they were scheduled, then new burst clients, then new open-loop clients, by id):
//!
//! 1. the server gives its [verdict](crate::storm::server) on the `A` arrivals;
//! 2. `s` of them, chosen at random, are served;
//! 3. every other one takes the failure step shared with the cohort engine
//!    ([`failure`](crate::storm::failure)): it gives up after `max_attempts` attempts; otherwise
//!    it draws a pause, in whole steps or rounded up to them, and at least one step; when the server
//!    refused it while up with a `Retry-After`, the library's `herd::server_delay::decide`
//!    makes the wait `max(pause, Retry-After)` plus a jitter of up to 10 % drawn right after
//!    the pause (or a give-up when the delay is longer than `max_server_delay_s` or ends past
//!    its deadline); with `[clients.latency]` its retry's delay is drawn next; it comes back
//!    at `step + timeout + wait + delay`, unless that is past its deadline (it gives up), the retry
//!    budget denies the retry (it gives up) or it is past the horizon (it is still waiting at
//!    the end).
//!
//! The retry budget is in [`budget`](crate::budget). The retries that ask it at a step are
//! held until every failed client of the step has drawn; when the budget allows only `m` of
//! the `n`, a uniformly random `m` of them go on (a partial Fisher–Yates shuffle, the step's
//! last draws), the rest give up.
use herd::RuleName;
use herd::rng::SplitMix64;

use crate::budget::{SimBudget, choose_admitted};
use crate::error::ScenarioError;
use crate::limits;
use crate::storm::Scenario;
use crate::storm::calendar::Calendar;
use crate::storm::failure::{AfterFailure, Fate, PauseSteps};
use crate::storm::metrics::{Meter, RunResult};
use crate::storm::pause_table::{GrpcSteps, InSteps, Pauser, WithPauser};
use crate::storm::plan::{Plan, PlannedRule};
use crate::storm::record::{
    Deadlined, Identified, InRecord, Kept, Memory, Narrow, Plain, Record, Remembering, Replayed,
    Short, With,
};
use crate::storm::server::{ServerState, Verdict};
use crate::storm::trace::{GiveUp, Observer, Outcome};
use crate::throttle::{FirstAttempt, SimThrottle};
use herd::rng::Rng;

/// Attempts between two progress reports and looks at a cancel flag (a few milliseconds
/// of work).
const PROGRESS_EVERY: u64 = 1 << 16;

/// Where a run keeps its clients' rule memory, chosen once per run from the rule.
enum Layout {
    /// No memory word: the failure count alone.
    None,
    /// Count and word in 16 bits each ([`Short`]).
    Short,
    /// A word below 2^32 in the record ([`Narrow`]).
    Narrow,
    /// A word replayed from the failure count ([`Replayed`]).
    Replayed(Replayed),
    /// A whole word in the record ([`Remembering`]).
    Word,
}

impl Layout {
    fn of(plan: &Plan, rule: &PlannedRule) -> Self {
        let rule = &rule.rule;
        if !rule.uses_memory() {
            return Self::None;
        }
        if let Some(table) = Replayed::of(rule) {
            return Self::Replayed(table);
        }
        // These two rules' words are at most their longest pause: `decorrelated`'s is its
        // last pause before any spread below the cap, `grpc`'s its capped backoff.
        let bounded = matches!(rule.name(), RuleName::Decorrelated | RuleName::Grpc);
        let most = rule.max_pause_nanos();
        if bounded && most <= Short::MOST && u64::from(plan.max_attempts) <= Short::MOST {
            Self::Short
        } else if bounded && most <= u64::from(u32::MAX) {
            Self::Narrow
        } else {
            Self::Word
        }
    }
}

/// Runs `rule` over `plan` with the world's generator seeded by `seed`, with the smallest
/// record that holds what the rule and the scenario need.
pub(crate) fn simulate<O: Observer>(
    plan: &Plan,
    name: RuleName,
    rule: &PlannedRule,
    seed: u64,
    observer: &mut O,
) -> Result<RunResult, ScenarioError> {
    let in_steps = InSteps {
        rule: &rule.rule,
        to_steps: PauseSteps::new(rule.per_step, rule.rule.max_pause_nanos()),
    };
    // `grpc` (its words replayed from the count) draws its steps from a table instead.
    let p = in_steps;
    match Layout::of(plan, rule) {
        Layout::None => {
            with_extras::<Plain, _, _, O>(plan, name, rule, InRecord, p, seed, observer)
        }
        Layout::Short => {
            with_extras::<Short, _, _, O>(plan, name, rule, InRecord, p, seed, observer)
        }
        Layout::Narrow => {
            with_extras::<Narrow, _, _, O>(plan, name, rule, InRecord, p, seed, observer)
        }
        Layout::Replayed(table) => match GrpcSteps::of(&rule.rule, in_steps.to_steps, &table) {
            Some(g) => with_extras::<Plain, _, _, O>(plan, name, rule, &table, &g, seed, observer),
            None => with_extras::<Plain, _, _, O>(plan, name, rule, &table, p, seed, observer),
        },
        Layout::Word => {
            with_extras::<Remembering, _, _, O>(plan, name, rule, InRecord, p, seed, observer)
        }
    }
}

/// [`run`] with `R` plus what the scenario and the observer need: the first step under a
/// deadline, the id when tracing.
fn with_extras<R: Filing, M: Memory, P: Pauser, O: Observer>(
    plan: &Plan,
    name: RuleName,
    rule: &PlannedRule,
    memory: M,
    pauser: P,
    seed: u64,
    observer: &mut O,
) -> Result<RunResult, ScenarioError> {
    match (plan.deadline_steps.is_some(), O::ACTIVE) {
        (false, false) => run::<R, M, P, O>(plan, name, rule, memory, pauser, seed, observer),
        (true, false) => {
            run::<Deadlined<R>, M, P, O>(plan, name, rule, memory, pauser, seed, observer)
        }
        (false, true) => {
            run::<Identified<R>, M, P, O>(plan, name, rule, memory, pauser, seed, observer)
        }
        (true, true) => run::<Identified<Deadlined<R>>, M, P, O>(
            plan, name, rule, memory, pauser, seed, observer,
        ),
    }
}

fn run<R: Filing, M: Memory, P: Pauser, O: Observer>(
    plan: &Plan,
    name: RuleName,
    planned: &PlannedRule,
    memory: M,
    pauser: P,
    seed: u64,
    observer: &mut O,
) -> Result<RunResult, ScenarioError> {
    let mut calendar = Calendar::<R>::new(AfterFailure::max_wait(plan, planned));
    let mut rng = SplitMix64::new(seed);
    let mut server = ServerState::new(plan);
    let mut meter = Meter::new(plan);
    let mut ends = Ends::default();
    let budget = SimBudget::new(plan.budget_percent)?;
    // `[retry.throttle]` (exclusive with the budget): see crate::throttle.
    let mut throttle = plan
        .throttle
        .as_ref()
        .map(|spec| SimThrottle::new(spec, plan.step_ns));
    // Refused clients whose retry asks the budget at this step, with where they go if allowed.
    let mut asking: Vec<(R, Fate)> = Vec::new();
    let mut next_id = 0u64;
    let open_loop = plan.open_loop_total > 0;
    // Report progress about every million attempts.
    let mut report_at = PROGRESS_EVERY;

    let mut step = plan.start_step;
    // The clients due at a step; its vector goes back to the calendar at the next one.
    let mut due: Vec<R> = Vec::new();
    loop {
        calendar.take_recycling(step, &mut due);
        let returning = due.len();
        if step == plan.start_step {
            due.reserve_exact(plan.burst as usize);
            due.extend((0..plan.burst as u32).map(|id| R::new(id, step as u32)));
            next_id = plan.burst;
        }
        if open_loop {
            let new = plan.open_loop_at(step);
            due.extend((next_id as u32..(next_id + new) as u32).map(|id| R::new(id, step as u32)));
            next_id += new;
        }

        if let Some(t) = &mut throttle {
            t.at(step);
            if t.gates_first_attempts() {
                // New clients' first attempts, in order: sent, refused locally (a give-up the
                // throttle caused) or delayed by the rate limiter.
                let mut kept = returning;
                for i in returning..due.len() {
                    let client = due[i];
                    match t.first_attempt(&mut rng) {
                        FirstAttempt::Send => {
                            due[kept] = client;
                            kept += 1;
                        }
                        // It never reaches the server: no attempt, no trace event.
                        FirstAttempt::Refuse => {
                            ends.gave_up += 1;
                            ends.denied_by_budget += 1;
                        }
                        FirstAttempt::Delay(d) => {
                            let next = step.saturating_add(d);
                            if next < plan.steps {
                                calendar.push(next, client);
                            } else {
                                ends.beyond_horizon += 1;
                            }
                        }
                    }
                }
                due.truncate(kept);
            }
        }

        if let Some(b) = &budget {
            b.at(step, plan.step_ns);
            for _ in returning..due.len() {
                b.deposit();
            }
        }

        let arrivals = due.len() as u64;
        if arrivals > 0 {
            let verdict = server.arrive(step, arrivals);
            let (served, refusal) = match verdict {
                Verdict::Down => (0, Outcome::Down),
                Verdict::Collapsed => (0, Outcome::Collapsed),
                Verdict::Serve(s) => (s, Outcome::Refused),
            };
            meter.record(step, arrivals, served);
            if let Some(t) = &mut throttle {
                t.arriving(arrivals);
            }
            if meter.requests >= report_at {
                report_at = meter.requests + PROGRESS_EVERY;
                observer.progress(step as f64 / plan.steps as f64);
                if observer.stop() {
                    return Err(ScenarioError::cancelled());
                }
            }
            limits::within(
                meter.requests,
                plan.max_run_attempts,
                "attempts",
                Scenario::CLIENTS_COUNT.path(),
                "fewer clients or a shorter horizon_s",
            )?;
            let served = served as usize;
            if served > 0 && served < due.len() {
                // Partial Fisher–Yates: the first `served` places get a uniform random choice.
                for i in 0..served {
                    let j = i + rng.below((due.len() - i) as u64) as usize;
                    due.swap(i, j);
                }
            }
            if O::ACTIVE {
                for client in &due[..served] {
                    observer.attempt(client.id(), step, Outcome::Served, None);
                }
            }
            if let Some(t) = &mut throttle {
                for (i, client) in due.iter().enumerate() {
                    t.answered(i < served, client.state().failures() > 0);
                }
            }
            let after = AfterFailure::new(plan, step, verdict);
            // The common case, nothing but the rule between a refusal and the next attempt:
            // no trace, budget, throttle, latency, server delay or deadline. The same draws
            // and the same outcomes as the general loop below, in a loop with nothing else
            // to test per client.
            let plain = !O::ACTIVE
                && budget.is_none()
                && throttle.is_none()
                && plan.latency.is_none()
                && !after.has_server_delay()
                && plan.deadline_steps.is_none();
            if plain {
                R::file_plain(
                    &pauser,
                    PlainRefusals {
                        refused: &due[served..],
                        memory: &memory,
                        after: &after,
                        base: step + plan.timeout_steps,
                        steps: plan.steps,
                        rng: &mut rng,
                        ends: &mut ends,
                        calendar: &mut calendar,
                    },
                );
            } else {
                // Each record is copied out and the copy updated and filed: writing the new state
                // back into `due` and reading it again for the calendar stalled on store
                // forwarding (a 12-byte packed record written as 4 + 8 bytes, read as 8 + 4).
                for &queued in &due[served..] {
                    let mut client = queued;
                    let id = client.id();
                    let mut state = memory.state(&client);
                    if after.out_of_attempts(state.failures()) {
                        ends.gave_up += 1;
                        observer.attempt(id, step, refusal, Some(GiveUp::MaxAttempts));
                        continue;
                    }
                    let pause = pauser.steps(&mut state, &mut rng);
                    client.set_state(state);
                    // The server's delay draws its jitter right after the rule's pause.
                    let wait = match after.wait(pause, client.first(), &mut rng) {
                        Ok(wait) => wait,
                        Err(why) => {
                            ends.gave_up += 1;
                            observer.attempt(id, step, refusal, Some(why));
                            continue;
                        }
                    };
                    // The retry's latency is drawn right after the wait (and its jitter).
                    let mut wait = wait.saturating_add(after.latency(&mut rng));
                    if let Some(t) = &throttle {
                        wait = wait.saturating_add(t.retry_delay());
                    }
                    // With a budget, the retries that ask are admitted together below.
                    let mut asks = false;
                    let fate = after.fate(wait, client.first(), || {
                        asks = true;
                        true
                    });
                    if asks && (budget.is_some() || throttle.is_some()) {
                        asking.push((client, fate));
                        continue;
                    }
                    ends.settle(fate, client, step, refusal, observer, &mut calendar);
                }
            }
            if budget.is_some() || throttle.is_some() {
                // The budget allows `admitted` of the retries that ask (one withdrawal each,
                // in a row, until one fails), chosen uniformly among them: after every pause
                // of the step is drawn, one partial Fisher–Yates shuffle. A throttle chooses
                // its own way (crate::throttle::SimThrottle::admit).
                let admitted = match (&budget, &mut throttle) {
                    (Some(b), _) => {
                        let mut admitted = 0;
                        while admitted < asking.len() && b.withdraw() {
                            admitted += 1;
                        }
                        choose_admitted(&mut asking, admitted, &mut rng);
                        admitted
                    }
                    (None, Some(t)) => t.admit(&mut asking, &mut rng),
                    (None, None) => unreachable!("checked above"),
                };
                for (i, &(client, fate)) in asking.iter().enumerate() {
                    let fate = match fate {
                        _ if i >= admitted => {
                            ends.denied_by_budget += 1;
                            Fate::GiveUp(GiveUp::Budget)
                        }
                        Fate::GiveUp(why) => unreachable!("asked the budget after {why:?}"),
                        going_on => going_on,
                    };
                    ends.settle(fate, client, step, refusal, observer, &mut calendar);
                }
                asking.clear();
            }
        }

        match plan.next_step(step, calendar.next_due()) {
            Some(next) => step = next,
            None => break,
        }
    }

    observer.progress(1.0);
    let waiting = calendar.len() + ends.beyond_horizon;
    debug_assert_eq!(meter.served + ends.gave_up + waiting, plan.total_clients());
    Ok(meter.finish(name, seed, ends.gave_up, ends.denied_by_budget, waiting))
}

/// How a run's clients ended other than served: the counts [`run`] reports.
#[derive(Default)]
struct Ends {
    gave_up: u64,
    /// Of `gave_up`, those the retry budget or the throttle refused.
    denied_by_budget: u64,
    /// Still waiting at the end, their next attempt at or past the horizon.
    beyond_horizon: u64,
}

impl Ends {
    /// Carries out the `fate` of a client refused (as `refusal` says) at `step`: it gives up, waits past
    /// the horizon or is filed at the step it knocks again, counted and told to the observer.
    /// Inlined into the engine's loops, the step's refusals and the budget's answers alike.
    #[inline(always)]
    fn settle<R: Record, O: Observer>(
        &mut self,
        fate: Fate,
        client: R,
        step: u64,
        refusal: Outcome,
        observer: &mut O,
        calendar: &mut Calendar<R>,
    ) {
        let id = client.id();
        match fate {
            Fate::GiveUp(why) => {
                self.gave_up += 1;
                observer.attempt(id, step, refusal, Some(why));
            }
            Fate::BeyondHorizon => {
                observer.attempt(id, step, refusal, None);
                self.beyond_horizon += 1;
            }
            Fate::Due(next) => {
                observer.attempt(id, step, refusal, None);
                calendar.push(next, client);
            }
        }
    }
}

/// The refused clients `refused` of a step when nothing but the rule stands between a
/// refusal and the next attempt (see [`run`]): each gives up at its limit of attempts, or
/// draws its pause and knocks again `pause` steps after `base` (the step and the timeout),
/// or waits past the horizon `steps`.
pub(crate) struct PlainRefusals<'a, 'p, R, M> {
    refused: &'a [R],
    memory: &'a M,
    after: &'a AfterFailure<'p>,
    base: u64,
    steps: u64,
    rng: &'a mut SplitMix64,
    ends: &'a mut Ends,
    calendar: &'a mut Calendar<R>,
}

/// How a record type takes the plain refusal loop.
///
/// Only bare records do at run time: a record that keeps the first step (a deadline) or the
/// id (a trace) never takes it. So only bare records get a loop compiled for each rule
/// ([`Pauser::specialised`]); the others keep one general loop, which would give the same
/// draws. (Every record compiled for every rule doubled the time to build the simulator's
/// tests, which build it optimised.)
pub(crate) trait Filing: Record {
    fn file_plain<M: Memory, P: Pauser>(pauser: &P, job: PlainRefusals<'_, '_, Self, M>);
}

macro_rules! bare_filing {
    ($($record:ty),*) => {$(
        impl Filing for $record {
            #[inline(always)]
            fn file_plain<M: Memory, P: Pauser>(pauser: &P, job: PlainRefusals<'_, '_, Self, M>) {
                pauser.specialised(job);
            }
        }
    )*};
}

bare_filing!(Plain, Short, Narrow, Remembering);

impl<R: Record, K: Kept> Filing for With<R, K> {
    #[inline(always)]
    fn file_plain<M: Memory, P: Pauser>(pauser: &P, job: PlainRefusals<'_, '_, Self, M>) {
        refuse_plain(job, pauser);
    }
}

impl<R: Record, M: Memory> WithPauser for PlainRefusals<'_, '_, R, M> {
    #[inline(always)]
    fn run<P: Pauser>(self, pauser: &P) {
        refuse_plain(self, pauser);
    }
}

/// Carries out `job` with `pauser` (see [`PlainRefusals`]), the same draws in the same
/// order as the general loop in [`run`].
#[inline(never)]
fn refuse_plain<R: Record, M: Memory, P: Pauser>(job: PlainRefusals<'_, '_, R, M>, pauser: &P) {
    let PlainRefusals {
        refused,
        memory,
        after,
        base,
        steps,
        rng,
        ends,
        calendar,
    } = job;
    let mut local = rng.clone();
    for &queued in refused {
        let mut client = queued;
        let mut state = memory.state(&client);
        if after.out_of_attempts(state.failures()) {
            ends.gave_up += 1;
            continue;
        }
        let pause = pauser.steps(&mut state, &mut local);
        client.set_state(state);
        let next = base + pause;
        if next < steps {
            calendar.push(next, client);
        } else {
            ends.beyond_horizon += 1;
        }
    }
    *rng = local;
}
