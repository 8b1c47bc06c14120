//! The agent engine: every client exact, time jumping to the next occupied step.
//!
//! Each client is a few bytes in parallel vectors (structure of arrays): its failure count,
//! the rule's memory word only when the rule keeps one, its first step only under a deadline,
//! and its link in the [`Calendar`]. The world owns one [`SplitMix64`] seeded by the run's
//! seed; it draws, in this order at each step, the served arrivals (a partial Fisher–Yates
//! shuffle choosing `s` of `A`) and then, client by client, the refused ones' pauses through
//! [`Rule::pause`], the library's own rule code.
//!
//! One step, with its due clients in order (new burst clients, then new open-loop clients,
//! then those the calendar holds for this step):
//!
//! 1. the server gives its [verdict](crate::server) on the `A` arrivals;
//! 2. `s` of them, chosen at random, are served;
//! 3. every other one records a failure: it gives up after `max_attempts` attempts; otherwise
//!    it draws a pause, rounded up to whole steps and at least one step, raised to the
//!    `Retry-After` when the server refused it while up, and comes back at
//!    `step + timeout + pause`, unless that is past its deadline (it gives up) or past the
//!    horizon (it is still waiting at the end).
use herd::rng::SplitMix64;
use herd::{Rule, RuleName, RuleState};

use crate::calendar::{Calendar, NONE};
use crate::error::ScenarioError;
use crate::metrics::{Meter, RunResult};
use crate::plan::Plan;
use crate::server::{Server, Verdict};
use crate::trace::{GiveUp, Observer, Outcome};
use herd::rng::Rng;

/// Per-client state, one entry per client in each vector in use.
struct Clients {
    links: Vec<u32>,
    failures: Vec<u32>,
    /// The rule's memory word; empty unless the rule uses it.
    memory: Vec<u64>,
    /// The step of the first attempt; empty unless there is a deadline.
    first: Vec<u32>,
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a / b + u64::from(a % b != 0)
}

/// Runs `rule` over `plan` with the world's generator seeded by `seed`.
pub(crate) fn simulate<O: Observer>(
    plan: &Plan,
    name: RuleName,
    rule: &Rule,
    seed: u64,
    observer: &mut O,
) -> Result<RunResult, ScenarioError> {
    let total = plan.total_clients() as usize;
    let uses_memory = rule.uses_memory();
    let mut clients = Clients {
        links: vec![NONE; total],
        failures: vec![0; total],
        memory: if uses_memory {
            vec![0; total]
        } else {
            Vec::new()
        },
        first: if plan.deadline_steps.is_some() {
            vec![0; total]
        } else {
            Vec::new()
        },
    };
    let step_ns = plan.step_ns;
    let max_pause_steps = ceil_div(rule.max_pause().as_nanos() as u64, step_ns).max(1);
    let max_wait = plan
        .timeout_steps
        .saturating_add(max_pause_steps.max(plan.retry_after_steps))
        .min(plan.steps);
    let mut calendar = Calendar::new(max_wait);
    let mut rng = SplitMix64::new(seed);
    let mut server = Server::new(plan);
    let mut meter = Meter::new(plan);
    let mut due: Vec<u32> = Vec::new();
    let mut gave_up = 0u64;
    let denied_by_budget = 0u64;
    let mut beyond_horizon = 0u64;
    let mut next_id = 0u64;
    let open_loop = plan.open_loop_total > 0;

    let mut step = plan.start_step;
    loop {
        due.clear();
        if step == plan.start_step {
            due.extend(0..plan.burst as u32);
            next_id = plan.burst;
        }
        if open_loop {
            let new = plan.open_loop_at(step);
            due.extend(next_id as u32..(next_id + new) as u32);
            next_id += new;
        }
        if !clients.first.is_empty() {
            for &id in &due {
                clients.first[id as usize] = step as u32;
            }
        }
        calendar.take(step, &mut due, &clients.links);

        let arrivals = due.len() as u64;
        if arrivals > 0 {
            let (served, refusal) = match server.arrive(step, arrivals) {
                Verdict::Down => (0, Outcome::Down),
                Verdict::Collapsed => (0, Outcome::Collapsed),
                Verdict::Serve(s) => (s, Outcome::Refused),
            };
            meter.record(step, arrivals, served);
            if meter.requests > plan.max_attempts_total {
                return Err(ScenarioError::field(
                    "clients.count",
                    format!(
                        "the run needs more than {} attempts, the most allowed here",
                        plan.max_attempts_total
                    ),
                ));
            }
            let served = served as usize;
            if served > 0 && served < due.len() {
                // Partial Fisher–Yates: the first `served` places get a uniform random choice.
                for i in 0..served {
                    let j = i + rng.below((due.len() - i) as u64) as usize;
                    due.swap(i, j);
                }
            }
            if O::ACTIVE {
                for &id in &due[..served] {
                    observer.attempt(id, step, Outcome::Served, None);
                }
            }
            let honour_retry_after = refusal != Outcome::Down;
            for &id in &due[served..] {
                let i = id as usize;
                let failures = clients.failures[i];
                if plan.max_attempts > 0 && failures.saturating_add(1) >= plan.max_attempts {
                    gave_up += 1;
                    observer.attempt(id, step, refusal, Some(GiveUp::MaxAttempts));
                    continue;
                }
                let memory = if uses_memory { clients.memory[i] } else { 0 };
                let mut state = RuleState::from_parts(failures, memory);
                let pause = rule.pause(&mut state, &mut rng);
                clients.failures[i] = state.failures();
                if uses_memory {
                    clients.memory[i] = state.memory();
                }
                let mut wait = ceil_div(pause.as_nanos() as u64, step_ns).max(1);
                if honour_retry_after {
                    wait = wait.max(plan.retry_after_steps);
                }
                let next = step + plan.timeout_steps + wait;
                let past_deadline = plan
                    .deadline_steps
                    .is_some_and(|d| next - u64::from(clients.first[i]) >= d);
                if past_deadline {
                    gave_up += 1;
                    observer.attempt(id, step, refusal, Some(GiveUp::Deadline));
                    continue;
                }
                observer.attempt(id, step, refusal, None);
                if next >= plan.steps {
                    beyond_horizon += 1;
                } else {
                    calendar.push(next, id, &mut clients.links);
                }
            }
        }

        let from_calendar = calendar.next_due();
        let from_arrivals = (open_loop && step + 1 < plan.steps).then_some(step + 1);
        let next = match (from_calendar, from_arrivals) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(n) => n,
                None => break,
            },
        };
        if next >= plan.steps {
            break;
        }
        step = next;
    }

    let waiting = calendar.len() + beyond_horizon;
    debug_assert_eq!(meter.served + gave_up + waiting, plan.total_clients());
    Ok(meter.finish(name, seed, gave_up, denied_by_budget, waiting))
}
