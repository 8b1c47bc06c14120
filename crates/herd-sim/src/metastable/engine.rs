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
use crate::throttle::{FirstAttempt, SimThrottle};
use crate::watch::{LOOK_EVERY, Watch};

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
    watch: &mut Watch<'_>,
) -> Result<MetastableReport, ScenarioError> {
    watch.check()?;
    let mut look_at = LOOK_EVERY;
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

    // `[retry.throttle]` (exclusive with the budget): see crate::throttle.
    let mut throttle = plan
        .throttle
        .as_ref()
        .map(|spec| SimThrottle::new(spec, plan.step_ns));
    // Attempts in flight (sent, not yet answered, failed or timed out): Envoy's active requests.
    let mut in_flight = 0u64;
    // Requests whose retry asks the throttle at this step.
    let mut wanting: Vec<u32> = Vec::new();

    let mut requests: Vec<Request> = Vec::new();
    let mut queue: VecDeque<Attempt> = VecDeque::new();
    // Every attempt sent, in send order: with one timeout for all, they also expire in order.
    let mut waiting: VecDeque<Attempt> = VecDeque::new();
    let mut retries_due: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    // Attempts refused at the door this step: they fail at once.
    let mut refused: Vec<Attempt> = Vec::new();
    let mut credit = 0u128;
    let mut attempts_total = 0u64;
    let mut retries_after_horizon = 0u64;
    let windows_len = plan.steps.div_ceil(plan.steps_per_window);
    let mut windows: Vec<Window> = Vec::with_capacity(windows_len as usize);
    let mut window = Window::default();
    let mut outage = plan.outages.iter().peekable();

    for t in 0..plan.steps {
        if attempts_total >= look_at || t.is_multiple_of(LOOK_EVERY) {
            look_at = attempts_total + LOOK_EVERY;
            watch.check()?;
            watch.report(t as f64 / plan.steps as f64);
        }
        if budget.is_some() {
            clock.set(Duration::from_nanos(t.saturating_mul(plan.step_ns)));
        }
        if let Some(th) = &mut throttle {
            th.at(t);
        }
        while outage.peek().is_some_and(|&&(_, end)| end <= t) {
            outage.next();
        }
        let down = outage.peek().is_some_and(|&&(start, _)| start <= t);
        let sent = t as u32; // the plan caps steps far below u32::MAX

        // Sends request `id`'s next attempt at the start of this step.
        let mut send_now = |id, window: &mut Window| {
            let attempt = Attempt { request: id, sent };
            send(
                plan,
                attempt,
                down,
                &mut queue,
                &mut waiting,
                &mut refused,
                window,
            );
        };

        // 1. New requests (open loop): each sends its first attempt (a throttle may refuse it,
        //    and the request fails, or delay it).
        let arrivals = poisson.sample(&mut rng);
        let mut sent_now = 0u64;
        for _ in 0..arrivals {
            let id = u32::try_from(requests.len()).map_err(|_| too_many())?;
            let gate = match &throttle {
                Some(th) if th.gates_first_attempts() => th.first_attempt(&mut rng),
                _ => FirstAttempt::Send,
            };
            requests.push(Request {
                attempts: u32::from(gate == FirstAttempt::Send),
                ..Request::default()
            });
            match gate {
                FirstAttempt::Send => {}
                FirstAttempt::Refuse => {
                    window.denied_by_budget += 1;
                    continue;
                }
                // Sent later, with the retries due then (as its first attempt).
                FirstAttempt::Delay(d) => {
                    let at = t.saturating_add(d);
                    if at < plan.steps {
                        retries_due.entry(at).or_default().push(id);
                    } else {
                        retries_after_horizon += 1;
                    }
                    continue;
                }
            }
            if let Some(b) = &budget {
                b.deposit();
            }
            window.first_attempts += 1;
            sent_now += 1;
            send_now(id, &mut window);
        }
        // 2. Retries due now.
        let due = retries_due.remove(&t).unwrap_or_default();
        attempts_total += sent_now + due.len() as u64;
        in_flight += sent_now + due.len() as u64;
        for id in due {
            let request = &mut requests[id as usize];
            request.attempts += 1;
            if request.attempts == 1 {
                window.first_attempts += 1;
            } else {
                window.retries += 1;
            }
            send_now(id, &mut window);
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
            credit = 0;
        } else {
            credit += plan.work.per_step;
            loop {
                // Server-side deadlines: work whose client has left is dropped unworked. The
                // queue stays in send order (LIFO only takes from the back), so the expired
                // attempts are at its front.
                if plan.drop_expired {
                    let expired = |a: &Attempt| u64::from(a.sent) + plan.timeout_steps <= t;
                    while queue.front().is_some_and(expired) {
                        queue.pop_front();
                        window.dropped += 1;
                    }
                }
                let Some(&front) = queue.front() else { break };
                let lifo = queue.len() as u64 > plan.lifo_above;
                let next = if lifo {
                    *queue.back().expect("not empty")
                } else {
                    front
                };
                let cost = if queue.len() as u64 > plan.knee_queue {
                    plan.work.slow
                } else {
                    plan.work.healthy
                };
                if credit < cost {
                    break;
                }
                credit -= cost;
                if lifo {
                    queue.pop_back();
                } else {
                    queue.pop_front();
                }
                window.throughput += 1;
                let request = &mut requests[next.request as usize];
                if !request.answered && t < u64::from(next.sent) + plan.timeout_steps {
                    request.answered = true;
                    window.goodput += 1;
                    in_flight -= 1;
                    if let Some(th) = &mut throttle {
                        th.answered(true, request.attempts > 1);
                    }
                    // Sent at the start of step `sent`, answered by the end of step `t`.
                    window.wait_steps += t + 1 - u64::from(next.sent);
                }
            }
            if queue.is_empty() {
                credit = 0; // an idle server cannot bank its time
            }
        }

        // 4. Failures: attempts refused at the door this step, and attempts sent
        //    `timeout_steps` ago that were not answered.
        let mut failed: Vec<u32> = refused.drain(..).map(|a| a.request).collect();
        while let Some(&front) = waiting.front() {
            if u64::from(front.sent) + plan.timeout_steps > t {
                break;
            }
            waiting.pop_front();
            if requests[front.request as usize].answered {
                continue;
            }
            window.timeouts += 1;
            failed.push(front.request);
        }
        in_flight -= failed.len() as u64;
        for id in failed {
            let request = &mut requests[id as usize];
            if let Some(th) = &mut throttle {
                th.answered(false, request.attempts > 1);
            }
            if plan.max_attempts > 0 && request.attempts >= plan.max_attempts {
                window.gave_up += 1;
                continue;
            }
            if throttle.is_some() {
                // The throttle admits the step's retries together, below.
                wanting.push(id);
                continue;
            }
            if let Some(b) = &budget
                && !b.withdraw()
            {
                window.denied_by_budget += 1;
                continue;
            }
            let at = retry_at(plan, t, rule, &mut request.state, 0, &mut rng);
            file_retry(at, id, plan, &mut retries_due, &mut retries_after_horizon);
        }
        if let Some(th) = &mut throttle {
            // Envoy's active requests: the attempts still in flight.
            th.arriving(in_flight);
            let admitted = th.admit(&mut wanting, &mut rng);
            window.denied_by_budget += (wanting.len() - admitted) as u64;
            for &id in &wanting[..admitted] {
                let delay = th.retry_delay();
                let state = &mut requests[id as usize].state;
                let at = retry_at(plan, t, rule, state, delay, &mut rng);
                file_retry(at, id, plan, &mut retries_due, &mut retries_after_horizon);
            }
            wanting.clear();
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
    Ok(report::build(
        plan,
        name,
        seed,
        windows,
        requests.len() as u64,
        pending,
    ))
}

/// Where a sent attempt goes: lost (the server is down; the client learns it at its
/// timeout), refused at the door (a full queue or admission control; the client learns it at
/// once), or queued.
fn send(
    plan: &MetastablePlan,
    attempt: Attempt,
    down: bool,
    queue: &mut VecDeque<Attempt>,
    waiting: &mut VecDeque<Attempt>,
    refused: &mut Vec<Attempt>,
    window: &mut Window,
) {
    if down {
        window.lost += 1; // the server is unreachable: the attempt never arrives
        waiting.push_back(attempt);
        return;
    }
    let full = queue.len() as u64 >= plan.max_queue;
    let slow = plan.shed_wait_steps.is_some_and(|limit| {
        queue
            .front()
            .is_some_and(|oldest| u64::from(attempt.sent - oldest.sent) > limit)
    });
    if full || slow {
        window.refused += 1;
        refused.push(attempt);
    } else {
        queue.push_back(attempt);
        waiting.push_back(attempt);
    }
}

/// The step a failed request's retry is due at: after the rule's pause, rounded up to whole
/// steps and at least one, and `delay` more steps (a rate limiter's wait).
fn retry_at(
    plan: &MetastablePlan,
    t: u64,
    rule: &Rule,
    state: &mut RuleState,
    delay: u64,
    rng: &mut SplitMix64,
) -> u64 {
    let pause_ns = rule.pause_nanos(state, rng);
    let steps = pause_ns.div_ceil(plan.step_ns).max(1);
    t.saturating_add(steps).saturating_add(delay)
}

/// Files request `id`'s retry at step `at`, or counts it past the horizon.
fn file_retry(
    at: u64,
    id: u32,
    plan: &MetastablePlan,
    retries_due: &mut BTreeMap<u64, Vec<u32>>,
    after_horizon: &mut u64,
) {
    if at < plan.steps {
        retries_due.entry(at).or_default().push(id);
    } else {
        *after_horizon += 1;
    }
}

fn too_many() -> ScenarioError {
    ScenarioError::field("clients.offered_qps", "more than 2^32 requests in one run")
}
