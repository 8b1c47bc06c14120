//! The cohort engine: the agent engine's model, exact in distribution, without per-client state.
//!
//! # Why
//!
//! The agent engine keeps a few bytes per client, so a billion clients need gigabytes and
//! billions of pause draws. But clients in the same state — due at the same step, with the same
//! failure count, memory word and (under a deadline) first step — are interchangeable: the
//! model treats them alike, so only *how many* of them do each thing matters. The cohort
//! engine keeps those counts. Its cost depends on the number of distinct states, which is
//! bounded by the rule (pause range / step, failure counts until the pause saturates), not on
//! the number of clients: 10^9 clients cost what 10^6 do.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::{Engine, Limits, Scenario, Simulation, Watch};
//!
//! // The default storm scenario with a billion clients, capacity scaled alike (50 per 2000).
//! let mut scenario = Scenario::default();
//! scenario.clients.count = 1_000_000_000;
//! scenario.server.capacity = 25_000_000;
//! let sim = Simulation::with_engine(&scenario, &Limits::default(), Engine::Cohort)?;
//! let r = sim.run(RuleName::Immediate, 1, Watch::none())?;
//! assert_eq!(r.clients, 1_000_000_000);
//! assert_eq!((r.half_served_s, r.all_served_s), (Some(12.0), Some(13.9)));
//! assert_eq!(r.requests_per_client, 120.5);
//! let full = sim.run(RuleName::Full, 1, Watch::none())?;
//! assert_eq!(full.served, 1_000_000_000);
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
//!
//! # One step
//!
//! The same events as the agent engine (see [`Simulation::run`](crate::Simulation::run)), with
//! counts:
//!
//! 1. the due cohorts (burst, open-loop, calendar) are merged by state and sorted (so the
//!    draws below happen in a fixed order and a run is reproducible from its seed);
//! 2. the server (`server.rs`) gives the same verdict on the `A` arrivals, and the same
//!    meter (`metrics.rs`) records them;
//! 3. the agent serves a uniformly random `s`-subset of the arrivals; here, how many of each
//!    cohort are served is one multivariate hypergeometric draw (exact: the counts of a
//!    uniform subset are multivariate hypergeometric);
//! 4. every refused client of a cohort fails: the whole cohort gives up at `max_attempts`;
//!    otherwise each client's wait is an independent draw of the rule, so the cohort's counts
//!    per outcome are one multinomial draw from the law of the wait (exact; see `law.rs`), and
//!    under a `Retry-After`, each outcome's count splits again over the waits the library's
//!    `herd::server_delay::decide` gives its pause, one cell per value of its uniform jitter
//!    (a multinomial with equal cells, as a chain of binomials; see
//!    `AfterFailure::split_wait`); with `[clients.latency]` each count splits once more over
//!    the law of the delay in steps (a multinomial draw; see `attempt_latency.rs`), and each
//!    count gives up at its deadline, passes the horizon, or is filed in the calendar at
//!    `step + timeout + wait + delay`;
//! 5. with a retry budget, the counts whose retry asks it (those the deadline let through)
//!    are held until the whole step is drawn. The budget is one shared balance, kept exactly
//!    in the library's integer units (`BudgetLedger`): the step's new clients deposit
//!    together, and of the `n` retries that ask, `m = min(n, ⌊balance / retry⌋)` are
//!    allowed, the same `m` as `n` withdrawals in a row. Which `m` is the agent engine's
//!    law: a uniformly random subset of the `n`, so how many of each count are allowed is
//!    one multivariate hypergeometric draw; the rest give up (`denied_by_budget`).
//! 6. with a `[retry.throttle]` whose state the whole population shares, the throttle is fed
//!    counts (`throttle/cohort.rs`): the new clients' first attempts (those it gates), the
//!    step's arrivals and its answers split into first attempts and retries (a retry is
//!    filed with at least one failure, so the two never merge), and of the `n` retries that
//!    ask it admits `m`, split over the counts as the budget's are. `aws-adaptive`, whose
//!    rate limiter gives each request its own wait, needs the agent engine.
//!
//! Samplers: `sample.rs` (binomial, hypergeometric), drawing only from the world's SplitMix64.
//!
//! # Exactness
//!
//! Exact in distribution (not draw for draw: the agent and the cohort engines consume the
//! generator differently) for `immediate`, `constant`, `exponential`, `full`, `equal` and
//! `grpc`, with every server and client feature of the model: refusal cost, collapse,
//! warm-up, `Retry-After`, timeouts, attempt limits, deadlines, retry budgets, open-loop
//! arrivals, latency (whose law in steps is computed from the distribution function through
//! libm's `erfc`, exact to a few ulps).
//! Deterministic rules in a lone burst give the agent engine's results exactly, run for run.
//! `decorrelated` and `decorrelated-v2` keep a continuous memory, which the cohort engine
//! quantizes (see `cohort/law.rs`): the one approximation, measured by
//! `tests/cohort_agreement.rs`; `tests/cohort_power.rs` compares the features one by one
//! with the power to see a 2 % bias. Traces are refused: there are no clients to follow.
//!
//! A run is reproducible from its seed, bit for bit, on a given platform. The samplers'
//! acceptance tests call `ln`, `exp` and `ln_1p`, whose last bit may differ between libm
//! implementations, so on another platform a rare draw may differ.
//!
//! # Cost
//!
//! Per step, O(cohorts due × outcomes of their laws), plus O(cells + cohorts) for
//! `decorrelated`, whose nested laws are split all at once; the number of cohorts is bounded
//! by the states (failure counts until the pause reaches the cap, memory cells) times the
//! pause range in steps, not by the clients. Fine steps under a long cap are the expensive
//! case (1 ms steps with a 30 s cap: 30 000 outcomes a law). The time goes to random draws
//! (every sampler costs a few operations per word), so `Limits::max_run_attempts` caps the
//! words a run draws (`Counted`), and `max_cohorts` the cohorts waiting at once. Benchmarks:
//! `docs/BENCHMARKS.md`, "Cohort engine".
use herd::RuleName;
use herd::rng::{Rng, SplitMix64};

use crate::budget::BudgetLedger;
use crate::error::ScenarioError;
use crate::limits::{self, Limits};
use crate::sample;
use crate::storm::failure::{AfterFailure, Fate};
use crate::storm::metrics::{Meter, RunResult};
use crate::storm::plan::{Plan, PlannedRule};
use crate::storm::server::{ServerState, Verdict};
use crate::throttle::CohortThrottle;

mod calendar;
pub(crate) mod law;

use calendar::{CohortCalendar, State, merge_sorted};
use law::{Law, Laws};

/// The most clients (burst plus open-loop) the cohort engine accepts: counts are `u64` and the
/// server's accounting is `f64`, exact far beyond this.
pub const MAX_CLIENTS: u64 = 1_000_000_000_000;
/// The most cohorts that may wait at once; a run that needs more stops with an error.
pub const MAX_COHORTS: u64 = 20_000_000;
/// Bytes a waiting cohort takes in the calendar, about: its state and count (32 bytes), and as
/// much again in entries not yet merged and vector slack.
const BYTES_PER_COHORT: u64 = 64;

/// The most cohorts that may wait at once under `limits`: [`MAX_COHORTS`], or fewer if
/// `limits.max_bytes` cannot hold them.
pub(crate) fn max_cohorts(limits: &Limits) -> u64 {
    MAX_COHORTS.min(limits.max_bytes / BYTES_PER_COHORT)
}

/// The limits the cohort engine builds its [`Plan`] under: the caller's, except that clients
/// cost no memory and may number up to [`MAX_CLIENTS`].
pub(crate) fn plan_limits(limits: &Limits) -> Limits {
    Limits {
        max_clients: MAX_CLIENTS,
        max_bytes: u64::MAX,
        ..*limits
    }
}

/// What every cohort run of a simulation shares, built once when it is checked.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    /// The most cohorts that may wait at once.
    max_cohorts: u64,
    /// The law of a retry's latency in steps (`None` without one): up to 65 536 cells, each
    /// from `erfc`, so not rebuilt for every seed.
    latency: Option<Law>,
}

/// Checks what the cohort engine cannot run, after the plan is built, and prepares what its
/// runs share.
pub(crate) fn check(plan: &Plan, limits: &Limits) -> Result<Prepared, ScenarioError> {
    if let Some(spec) = &plan.throttle {
        crate::throttle::cohort_check(spec)?;
    }
    for (name, rule) in &plan.rules {
        Laws::of(*name, rule)?;
    }
    let latency = latency_law(plan)?;
    // The per-window series are the only memory that grows with the run (16 bytes a window).
    let series = u128::from(plan.windows) * 16;
    if series > u128::from(limits.max_bytes) {
        return Err(ScenarioError::field(
            "horizon_s",
            format!(
                "{} windows need {} MiB for the series; only {} MiB available (use a longer window_ms or a shorter horizon)",
                plan.windows,
                series >> 20,
                limits.max_bytes >> 20
            ),
        ));
    }
    Ok(Prepared {
        max_cohorts: max_cohorts(limits),
        latency,
    })
}

/// Runs `rule` over `plan` with the world's generator seeded by `seed`, in cohorts.
///
/// `plan.max_run_attempts` bounds the random words drawn, the cohort engine's unit of work
/// (see [`Counted`]), and `prepared.max_cohorts` the cohorts waiting at once.
pub(crate) fn simulate(
    plan: &Plan,
    name: RuleName,
    rule: &PlannedRule,
    seed: u64,
    prepared: &Prepared,
) -> Result<RunResult, ScenarioError> {
    let mut laws = Laws::of(name, rule)?;
    let (latency, max_cohorts) = (&prepared.latency, prepared.max_cohorts);
    let mut rng = Counted::new(seed);
    let mut server = ServerState::new(plan);
    let mut meter = Meter::new(plan);
    let mut calendar = CohortCalendar::new(AfterFailure::max_wait(plan, rule));
    let mut due: Vec<(State, u64)> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    let mut served_of: Vec<u64> = Vec::new();
    let mut nested: Vec<Nested> = Vec::new();
    let mut delayed_of: Vec<Delayed> = Vec::new();
    let mut waits_of: Vec<Delayed> = Vec::new();
    let mut gave_up = 0u64;
    let mut denied_by_budget = 0u64;
    let mut budget = BudgetLedger::new(plan.budget_percent)?;
    // `[retry.throttle]` (exclusive with the budget), on counts: see crate::throttle::cohort.
    let mut throttle = plan
        .throttle
        .as_ref()
        .map(|spec| CohortThrottle::new(spec, plan.step_ns));
    // Refused counts whose retries ask the budget at this step, where they go if allowed.
    let mut asking: Vec<(u64, Fate, State)> = Vec::new();
    let mut admitted_of: Vec<u64> = Vec::new();
    let mut beyond_horizon = 0u64;
    let open_loop = plan.open_loop_total > 0;
    let first_of = |step: u64| {
        if plan.deadline_steps.is_some() {
            step as u32
        } else {
            0
        }
    };
    let new_clients = |step: u64| State {
        failures: 0,
        memory: 0,
        first: first_of(step),
    };

    let mut step = plan.start_step;
    loop {
        due.clear();
        calendar.take(step, &mut due);
        let mut new_at_step = 0;
        if step == plan.start_step {
            new_at_step += plan.burst;
        }
        if open_loop {
            new_at_step += plan.open_loop_at(step);
        }
        if let Some(t) = &mut throttle {
            t.at(step);
            if t.gates_first_attempts() && new_at_step > 0 {
                // New clients' first attempts: sent, or refused locally (a give-up the
                // throttle caused).
                let sent = t.first_attempts(new_at_step, &mut rng);
                gave_up += new_at_step - sent;
                denied_by_budget += new_at_step - sent;
                new_at_step = sent;
            }
        }
        if new_at_step > 0 {
            due.push((new_clients(step), new_at_step));
        }
        merge_sorted(&mut due);
        if let Some(b) = &mut budget {
            b.at(step, plan.step_ns);
            b.deposit(new_at_step);
        }

        let arrivals: u64 = due.iter().map(|(_, n)| n).sum();
        if arrivals > 0 {
            let verdict = server.arrive(step, arrivals);
            let served = match verdict {
                Verdict::Down | Verdict::Collapsed => 0,
                Verdict::Serve(s) => s,
            };
            meter.record(step, arrivals, served);
            sizes.clear();
            sizes.extend(due.iter().map(|(_, n)| *n));
            sample::multivariate_hypergeometric(&mut rng, &sizes, served, &mut served_of);
            if let Some(t) = &mut throttle {
                // Retries are the cohorts with a failure (filed with at least one below).
                let (mut ok, mut failed) = ((0, 0), (0, 0));
                for (&(state, count), &taken) in due.iter().zip(&served_of) {
                    let (o, f) = if state.failures == 0 {
                        (&mut ok.0, &mut failed.0)
                    } else {
                        (&mut ok.1, &mut failed.1)
                    };
                    *o += taken;
                    *f += count - taken;
                }
                t.arriving(arrivals);
                t.answered(ok, failed);
            }

            // Files `n` refused clients of a cohort: given up (`None`: out of attempts, or the
            // server's delay ends past the deadline), or due again after waiting
            // `Some((wait, memory))`, by the engines' shared step.
            let after = AfterFailure::new(plan, step, verdict);
            let delayed = after.has_server_delay() || latency.is_some();
            let with_budget = budget.is_some() || throttle.is_some();
            delayed_of.clear();
            waits_of.clear();
            asking.clear();
            let mut file = |n: u64, drawn: Option<(u64, u64)>, failures: u32, first: u32| {
                let Some((wait, memory)) = drawn else {
                    gave_up += n;
                    return;
                };
                let state = State {
                    failures,
                    memory,
                    first,
                };
                // With a budget, the retries that ask are admitted together below.
                let mut asks = false;
                let fate = after.fate(wait, first, || {
                    asks = true;
                    true
                });
                if asks && with_budget {
                    asking.push((n, fate, state));
                    return;
                }
                place(
                    n,
                    fate,
                    state,
                    &mut calendar,
                    &mut gave_up,
                    &mut beyond_horizon,
                );
            };
            // Refused clients that drew `Some((pause, memory))`: filed now, or with a
            // Retry-After or a latency, set aside until their jitter and delay are drawn below.
            let mut refuse =
                |n: u64, drawn: Option<(u64, u64)>, failures: u32, first: u32| match drawn {
                    Some((pause, memory)) if delayed => {
                        delayed_of.push((n, pause, memory, failures, first));
                    }
                    _ => file(n, drawn, failures, first),
                };
            nested.clear();
            for (&(state, count), &taken) in due.iter().zip(&served_of) {
                let refused = count - taken;
                if refused == 0 {
                    continue;
                }
                if after.out_of_attempts(state.failures) {
                    refuse(refused, None, state.failures, state.first);
                    continue;
                }
                let mut failures =
                    laws.file_failures(state.failures.saturating_add(1), plan.max_attempts);
                if throttle.is_some() {
                    // A throttle tells retries from first attempts.
                    failures = failures.max(1);
                }
                if let Some(top) = laws.nested_top(state.failures, state.memory) {
                    nested.push((failures, state.first, top, refused));
                    continue;
                }
                let drop_memory = laws.file_memory(failures);
                if refused <= law::DRAW_EACH_UP_TO && laws.draws_each(state.failures, state.memory)
                {
                    // A few clients of a rule whose law is costly to build: draw each one.
                    for _ in 0..refused {
                        let (wait, memory) = laws.draw_one(state.failures, state.memory, &mut rng);
                        let memory = drop_memory.unwrap_or(memory);
                        refuse(1, Some((wait, memory)), failures, state.first);
                    }
                    continue;
                }
                let law = laws.get(state.failures, state.memory);
                sample::multinomial(
                    &mut rng,
                    refused,
                    &law.probs,
                    &law.tail,
                    &law.cdf,
                    |i, n| {
                        let (wait, memory) = law.outcomes[i];
                        let memory = drop_memory.unwrap_or(memory);
                        refuse(n, Some((wait, memory)), failures, state.first);
                    },
                );
            }
            split_nested(&mut rng, &laws, &mut nested, |n, drawn, failures, first| {
                refuse(n, Some(drawn), failures, first);
            });
            // The server's delay: each part splits over the waits `decide` gives its pause,
            // the same law as the agent's one draw per client (`AfterFailure::split_wait`).
            for &(n, pause, memory, failures, first) in &delayed_of {
                after.split_wait(n, pause, first, &mut rng, |k, wait| match wait {
                    Ok(w) if latency.is_some() => waits_of.push((k, w, memory, failures, first)),
                    wait => file(k, wait.ok().map(|w| (w, memory)), failures, first),
                });
            }
            // The latency: each part splits over the law of the delay in steps, the law of
            // the agent's one draw per client (`attempt_latency`).
            if let Some(law) = &latency {
                for &(n, wait, memory, failures, first) in &waits_of {
                    sample::multinomial(&mut rng, n, &law.probs, &law.tail, &law.cdf, |i, k| {
                        let delay = law.outcomes[i].0;
                        file(
                            k,
                            Some((wait.saturating_add(delay), memory)),
                            failures,
                            first,
                        );
                    });
                }
            }
            if with_budget {
                // The budget allows `admitted` of the retries that ask (one withdrawal each,
                // in a row), a uniformly random subset of them as in the agent engine: how
                // many of each count is one multivariate hypergeometric draw. A throttle
                // admits its own way (crate::throttle::cohort).
                let wanting: u64 = asking.iter().map(|(n, _, _)| n).sum();
                let admitted = match (&mut budget, &mut throttle) {
                    (Some(b), _) => b.admit(wanting),
                    (None, Some(t)) => t.admit(wanting, &mut rng),
                    (None, None) => unreachable!("with_budget"),
                };
                sizes.clear();
                sizes.extend(asking.iter().map(|(n, _, _)| *n));
                sample::multivariate_hypergeometric(&mut rng, &sizes, admitted, &mut admitted_of);
                for (&(n, fate, state), &allowed) in asking.iter().zip(&admitted_of) {
                    gave_up += n - allowed;
                    denied_by_budget += n - allowed;
                    place(
                        allowed,
                        fate,
                        state,
                        &mut calendar,
                        &mut gave_up,
                        &mut beyond_horizon,
                    );
                }
            }
            limits::within(
                calendar.cohorts_past(max_cohorts),
                max_cohorts,
                "cohorts waiting at once",
                "step_ms",
                "use a longer step_ms",
            )?;
        }

        limits::within(
            rng.words,
            plan.max_run_attempts,
            "random draws",
            "step_ms",
            "the cohort engine's work is its draws: more distinct states or wider laws need more; use a longer step_ms, a shorter horizon_s or the agent engine",
        )?;

        match plan.next_step(step, calendar.next_due()) {
            Some(next) => step = next,
            None => break,
        }
    }

    let waiting = calendar.clients() + beyond_horizon;
    debug_assert_eq!(meter.served + gave_up + waiting, plan.total_clients());
    Ok(meter.finish(name, seed, gave_up, denied_by_budget, waiting))
}

/// Files `n` refused clients in `state` by their fate (see `AfterFailure::fate`).
fn place(
    n: u64,
    fate: Fate,
    state: State,
    calendar: &mut CohortCalendar,
    gave_up: &mut u64,
    beyond_horizon: &mut u64,
) {
    match fate {
        Fate::GiveUp(_) => *gave_up += n,
        Fate::BeyondHorizon => *beyond_horizon += n,
        Fate::Due(next) => calendar.add(next, state, n),
    }
}

/// The world's generator, counting the words it hands out: the cohort engine's unit of work.
///
/// A run's time is its draws (every sampler costs a few operations per word) plus its cohorts,
/// which the calendar caps on its own; clients cost nothing. So [`Limits::max_run_attempts`],
/// what one run may do, bounds the words drawn here, checked after every step: a run stops
/// within one step's draws of the cap. The words are the same as `SplitMix64`'s, one for one,
/// so counting changes no draw.
struct Counted {
    rng: SplitMix64,
    words: u64,
}

impl Counted {
    fn new(seed: u64) -> Self {
        Self {
            rng: SplitMix64::new(seed),
            words: 0,
        }
    }
}

impl Rng for Counted {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.words += 1;
        self.rng.next_u64()
    }
}

/// Refused clients that drew the same pause under a `Retry-After`, before the server delay's
/// jitter, or the same wait, before their latency: `(count, pause or wait, memory, failures
/// as filed next, first step)`.
type Delayed = (u64, u64, u64, u32, u32);

/// The law of a retry's latency in steps, as outcomes `(delay, 0)`, or `None` without one.
fn latency_law(plan: &Plan) -> Result<Option<Law>, ScenarioError> {
    let Some(latency) = &plan.latency else {
        return Ok(None);
    };
    let cells = latency.law()?;
    Ok(Some(Law::from_weights(
        cells.into_iter().map(|(k, p)| ((k, 0), p)).collect(),
    )))
}

/// A refused cohort of a rule with nested laws: `(failures as filed next, first step, top of
/// the uniform pause range, count)`.
type Nested = (u32, u32, u64, u64);

/// Splits every refused cohort of a nested-law rule at once (see `Laws::nested_top`), calling
/// `emit(count, (wait, memory), failures, first)`.
///
/// Within a group (same next failures and first step), with tops `t₁ > t₂ > …`: the pool of
/// clients whose pause is uniform on `base..=tᵢ` (cohort `i` plus everyone from higher cohorts
/// who fell below `tᵢ`) sends a binomial share `(tᵢ − tᵢ₊₁) / (tᵢ − base + 1)` into
/// `tᵢ₊₁ + 1..=tᵢ`, spread over its pieces multinomially by length; the rest are uniform on
/// `base..=tᵢ₊₁` and join cohort `i + 1`. Exact: the same joint law as splitting each cohort
/// on its own, for O(pieces + cohorts) draws.
fn split_nested<R: Rng + ?Sized>(
    rng: &mut R,
    laws: &Laws,
    nested: &mut [Nested],
    mut emit: impl FnMut(u64, (u64, u64), u32, u32),
) {
    nested.sort_unstable_by(|a, b| (a.0, a.1, b.2).cmp(&(b.0, b.1, a.2)));
    let bottom = laws.nested_bottom();
    let (mut pieces, mut law) = (Vec::new(), Law::default());
    let mut start = 0;
    while start < nested.len() {
        let (failures, first) = (nested[start].0, nested[start].1);
        let end = start + nested[start..].partition_point(|c| (c.0, c.1) == (failures, first));
        let group = &nested[start..end];
        let mut pool = 0u64;
        for (i, &(_, _, top, n)) in group.iter().enumerate() {
            pool += n;
            // The next lower top (tops may repeat: an empty interval then).
            let above = group.get(i + 1).map_or(bottom - 1, |c| c.2);
            if pool == 0 || above == top {
                continue;
            }
            let here = if i + 1 == group.len() {
                pool
            } else {
                let p = (top - above) as f64 / (top - bottom + 1) as f64;
                sample::binomial(rng, pool, p)
            };
            pool -= here;
            if here > 0 {
                laws.nested_pieces_into(above, top, &mut pieces);
                law.refill(&pieces);
                sample::multinomial(rng, here, &law.probs, &law.tail, &law.cdf, |k, c| {
                    emit(c, law.outcomes[k], failures, first);
                });
            }
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::RuleParams;
    use std::collections::HashMap;

    /// Splitting decorrelated's cohorts together gives each outcome the expected count of
    /// splitting them one by one: the sum over cohorts of count × the cohort's law.
    #[test]
    fn nested_split_has_the_per_cohort_means() {
        let params = RuleParams::default();
        let rule = RuleName::Decorrelated.build(&params).unwrap();
        let mut laws = Laws::new(RuleName::Decorrelated, rule, &params, 100_000_000).unwrap();
        // (failures, memory, count): a first failure, short and long memories, the cap.
        let cohorts = [
            (0u32, 0u64, 5_000u64),
            (1, 180_000_000, 300),
            (1, 1_212_000_000, 40_000),
            (1, 6_000_000_000, 7),
            (1, 20_000_000_000, 2_000),
        ];
        let mut expected: HashMap<(u64, u64), f64> = HashMap::new();
        for &(f, m, n) in &cohorts {
            let law = laws.get(f, m).clone();
            for (o, p) in law.outcomes.iter().zip(&law.probs) {
                *expected.entry(*o).or_default() += n as f64 * p;
            }
        }
        let reps = 400;
        let mut got: HashMap<(u64, u64), f64> = HashMap::new();
        let mut rng = SplitMix64::new(3);
        for _ in 0..reps {
            let mut nested: Vec<Nested> = cohorts
                .iter()
                .map(|&(f, m, n)| (1, 0, laws.nested_top(f, m).unwrap(), n))
                .collect();
            let mut total = 0;
            split_nested(&mut rng, &laws, &mut nested, |n, o, _, _| {
                *got.entry(o).or_default() += n as f64;
                total += n;
            });
            assert_eq!(total, cohorts.iter().map(|c| c.2).sum::<u64>());
        }
        for (o, want) in &expected {
            let mean = got.get(o).copied().unwrap_or(0.0) / f64::from(reps);
            // Poisson-like bound on the standard error of a count's mean.
            let se = (want / f64::from(reps)).sqrt();
            // False failure ≤ 10⁻⁶: Bonferroni over at most 1000 outcomes (6.1 standard
            // errors, normal tails).
            assert!(
                (mean - want).abs() <= 6.1 * se + 1e-9,
                "{o:?}: {mean} vs {want}"
            );
        }
        assert!(got.keys().all(|o| expected.contains_key(o)));
    }
}
