//! The step loop of the metastable model. See the module docs for the order of events.
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use herd::budget::RetryBudget;
use herd::clock::FakeClock;
use herd::rng::SplitMix64;
use herd::{Rule, RuleName, RuleState};

use super::MetastableReport;
use super::poisson::Poisson;
use super::report::{self, Window};
use super::scenario::MetastablePlan;
use crate::error::ScenarioError;

/// One logical request: its retry state and whether it has been answered in time.
#[derive(Clone, Copy, Default)]
struct Request {
    state: RuleState,
    attempts: u32,
    answered: bool,
}

/// An attempt in flight: which request, and the step it was sent at.
#[derive(Clone, Copy)]
struct Attempt {
    request: u32,
    sent: u32,
}

/// Runs `rule` with `seed`; see [`super::Metastable::run`].
pub(crate) fn simulate(
    plan: &MetastablePlan,
    name: RuleName,
    rule: &Rule,
    seed: u64,
) -> Result<MetastableReport, ScenarioError> {
    let mut rng = SplitMix64::new(seed);
    let poisson = Poisson::new(plan.arrivals_per_step);
    let clock = FakeClock::new();
    let budget = match plan.budget {
        Some(config) => Some(
            RetryBudget::new(config, clock.clone())
                .map_err(|e| ScenarioError::field("retry.budget_percent", e.to_string()))?,
        ),
        None => None,
    };

    let mut requests: Vec<Request> = Vec::new();
    let mut queue: VecDeque<Attempt> = VecDeque::new();
    // Every attempt sent, in send order: with one timeout for all, they also expire in order.
    let mut waiting: VecDeque<Attempt> = VecDeque::new();
    let mut retries_due: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    let mut credit = 0.0_f64;
    let mut attempts_total = 0u64;
    let mut retries_after_horizon = 0u64;
    let windows_len = plan.steps.div_ceil(plan.steps_per_window);
    let mut windows: Vec<Window> = Vec::with_capacity(windows_len as usize);
    let mut window = Window::default();
    let mut outage = plan.outages.iter().peekable();

    for t in 0..plan.steps {
        if budget.is_some() {
            clock.set(Duration::from_nanos(t.saturating_mul(plan.step_ns)));
        }
        while outage.peek().is_some_and(|&&(_, end)| end <= t) {
            outage.next();
        }
        let down = outage.peek().is_some_and(|&&(start, _)| start <= t);
        let sent = t as u32; // the plan caps steps far below u32::MAX

        // 1. New requests (open loop): each sends its first attempt.
        let arrivals = poisson.sample(&mut rng);
        for _ in 0..arrivals {
            let id = u32::try_from(requests.len()).map_err(|_| too_many())?;
            requests.push(Request {
                attempts: 1,
                ..Request::default()
            });
            if let Some(b) = &budget {
                b.deposit();
            }
            window.first_attempts += 1;
            send(
                Attempt { request: id, sent },
                down,
                &mut queue,
                &mut waiting,
                &mut window,
            );
        }
        // 2. Retries due now.
        let due = retries_due.remove(&t).unwrap_or_default();
        attempts_total += arrivals + due.len() as u64;
        for id in due {
            requests[id as usize].attempts += 1;
            window.retries += 1;
            send(
                Attempt { request: id, sent },
                down,
                &mut queue,
                &mut waiting,
                &mut window,
            );
        }
        if attempts_total > plan.max_run_attempts {
            return Err(ScenarioError::field(
                "clients.max_attempts",
                format!(
                    "the run exceeds {} attempts (retries without a limit pile up in the \
                     server's queue); set an attempt limit, a budget or a shorter horizon",
                    plan.max_run_attempts
                ),
            ));
        }

        // 3. The server works through its FIFO queue for one step.
        if down {
            credit = 0.0;
        } else {
            credit += plan.work_per_step;
            while let Some(&front) = queue.front() {
                let cost = if queue.len() as u64 > plan.knee_queue {
                    plan.slow_factor
                } else {
                    1.0
                };
                if credit < cost {
                    break;
                }
                credit -= cost;
                queue.pop_front();
                window.throughput += 1;
                let request = &mut requests[front.request as usize];
                if !request.answered && t < u64::from(front.sent) + plan.timeout_steps {
                    request.answered = true;
                    window.goodput += 1;
                }
            }
            if queue.is_empty() {
                credit = 0.0; // an idle server cannot bank its time
            }
        }

        // 4. Timeouts: attempts sent `timeout_steps` ago that were not answered have failed.
        while let Some(&front) = waiting.front() {
            if u64::from(front.sent) + plan.timeout_steps > t {
                break;
            }
            waiting.pop_front();
            let request = &mut requests[front.request as usize];
            if request.answered {
                continue;
            }
            window.timeouts += 1;
            if plan.max_attempts > 0 && request.attempts >= plan.max_attempts {
                window.gave_up += 1;
                continue;
            }
            if let Some(b) = &budget {
                if !b.withdraw() {
                    window.denied_by_budget += 1;
                    continue;
                }
            }
            let pause = rule.pause(&mut request.state, &mut rng);
            let pause_ns = u64::try_from(pause.as_nanos()).unwrap_or(u64::MAX);
            let steps = pause_ns.div_ceil(plan.step_ns).max(1);
            let at = t.saturating_add(steps);
            if at < plan.steps {
                retries_due.entry(at).or_default().push(front.request);
            } else {
                retries_after_horizon += 1;
            }
        }

        // 5. Close the window.
        if (t + 1) % plan.steps_per_window == 0 || t + 1 == plan.steps {
            window.start_s = plan.seconds(windows.len() as u64 * plan.steps_per_window);
            window.queue = queue.len() as u64;
            windows.push(std::mem::take(&mut window));
        }
    }

    let pending = waiting
        .iter()
        .filter(|a| !requests[a.request as usize].answered)
        .count() as u64
        + retries_due.values().map(|v| v.len() as u64).sum::<u64>()
        + retries_after_horizon;
    Ok(report::build(plan, name, seed, windows, pending))
}

fn send(
    attempt: Attempt,
    down: bool,
    queue: &mut VecDeque<Attempt>,
    waiting: &mut VecDeque<Attempt>,
    window: &mut Window,
) {
    if down {
        window.lost += 1; // the server is unreachable: the attempt never arrives
    } else {
        queue.push_back(attempt);
    }
    waiting.push_back(attempt);
}

fn too_many() -> ScenarioError {
    ScenarioError::field("clients.offered_qps", "more than 2^32 requests in one run")
}
