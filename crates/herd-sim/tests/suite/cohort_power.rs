//! The cohort engine against the agent engine, feature by feature, with the power to see a
//! 2 % bias.
//!
//! `cohort_agreement.rs` compares every rule on three scenes; this file takes the features
//! whose failure step differs most between a count and a client — retry budgets, deadlines,
//! attempt limits, `Retry-After`, and waits longer than the agent calendar's ring of 2^20
//! steps — on small scenes over many seeds (disjoint ranges, so the samples are
//! independent), and compares the means of the figures each feature moves:
//!
//! ```text
//! |mean_agent − mean_cohort| ≤ K · √(se_agent² + se_cohort²)        (agreement)
//! K · √(se_agent² + se_cohort²) ≤ 2 % · |mean_agent|                  (power)
//! ```
//!
//! with `se` each mean's standard error, observed from the runs. The second line is asserted
//! too: a sample too small to see a 2 % bias fails loudly instead of passing quietly. `K`
//! keeps the chance that any of the file's comparisons (under 40) fails when the engines
//! agree below 10⁻⁶ (Bonferroni, normal tails: the means are over 300 runs or more); a bias
//! of 2 % of the mean is at least `K` standard errors, and is caught. It was checked:
//! the cohort engine made to drop 2 % of its retries (give up instead) fails here.
use herd::RuleName;
use herd_sim::{Clients, Engine, Retry, RunResult, Scenario, Server};

use crate::support;

use support::{mean_se, runs};

/// Standard errors allowed between the two means.
/// `z_limit(1e-6, 40, None)` ≈ 5.73, rounded up.
const K: f64 = 5.8;
/// The bias the comparison must be able to see, as a share of the mean.
const BIAS: f64 = 0.02;

type Figure = (&'static str, fn(&RunResult) -> f64);

const REQUESTS: Figure = ("requests", |r| r.requests as f64);
const SERVED: Figure = ("served", |r| r.served as f64);
const GAVE_UP: Figure = ("gave_up", |r| r.gave_up as f64);
const DENIED: Figure = ("denied_by_budget", |r| r.denied_by_budget as f64);
/// When half the clients were served (the horizon if never).
const HALF_SERVED: Figure = ("half_served_s", |r| {
    r.half_served_s.unwrap_or(f64::INFINITY)
});
/// The last attempt's time: when the storm, retries included, was over.
const LAST_ATTEMPT: Figure = ("last_attempt_s", |r| r.last_attempt_s.unwrap_or(0.0));
/// What clients that stop early (a deadline, an attempt limit) move.
const GIVE_UPS: [Figure; 4] = [REQUESTS, SERVED, GAVE_UP, HALF_SERVED];

/// Runs `rule` on both engines over `seeds` seeds each and compares `figures`; returns the
/// runs for further checks.
fn agree(
    what: &str,
    scenario: &Scenario,
    rule: RuleName,
    seeds: u64,
    figures: &[Figure],
) -> (Vec<RunResult>, Vec<RunResult>) {
    let agent = runs(scenario, Engine::Agent, rule, seeds);
    let cohort = runs(scenario, Engine::Cohort, rule, seeds);
    for (name, figure) in figures {
        let xa: Vec<f64> = agent.iter().map(figure).collect();
        let xc: Vec<f64> = cohort.iter().map(figure).collect();
        let (ma, sa) = mean_se(&xa);
        let (mc, sc) = mean_se(&xc);
        let tolerance = K * (sa * sa + sc * sc).sqrt();
        eprintln!(
            "{what} {rule} {name}: agent {ma:.3} ± {sa:.3}, cohort {mc:.3} ± {sc:.3}, \
             tolerance {:.2} % of the mean",
            100.0 * tolerance / ma.abs()
        );
        assert!(
            sa > 0.0 && sc > 0.0,
            "{what} {rule} {name} is the same in every run: it compares nothing here"
        );
        assert!(
            tolerance <= BIAS * ma.abs(),
            "{what} {rule} {name}: {seeds} seeds cannot see a {:.0} % bias: {K} standard errors \
             are {tolerance:.3}, the mean {ma:.3} (more seeds or a less noisy figure)",
            BIAS * 100.0
        );
        assert!(
            (ma - mc).abs() <= tolerance,
            "{what} {rule} {name}: agent {ma:.4} ± {sa:.4}, cohort {mc:.4} ± {sc:.4}, \
             |diff| {:.4} > {tolerance:.4}",
            (ma - mc).abs()
        );
    }
    (agent, cohort)
}

/// A small storm: `count` clients in a burst into a 5 s outage, then 10 answers per 100 ms
/// window, an open loop of `arrivals_per_s` on top, a minute of horizon.
fn small(count: u64, arrivals_per_s: f64) -> Scenario {
    let d = Scenario::default();
    Scenario {
        horizon_s: 60.0,
        clients: Clients {
            count,
            arrivals_per_s,
            ..d.clients
        },
        server: Server {
            capacity: 10,
            outages: vec![[0.0, 5.0]],
            ..d.server
        },
        retry: Retry {
            cap_ms: 5000.0,
            ..d.retry
        },
        ..d
    }
}

/// A retry budget that binds at most steps after the outage: an open loop keeps depositing,
/// the burst's retries keep asking, and of those that ask at a step only some are allowed.
/// Which ones is a uniformly random subset in both engines; the failure counts (and so the
/// pauses) of the admitted decide what follows.
#[test]
fn retry_budgets_agree() {
    let mut s = small(1000, 50.0);
    s.horizon_s = 40.0;
    s.retry.budget_percent = 100.0;
    for rule in [RuleName::Full, RuleName::Exponential] {
        let (agent, _) = agree(
            "budget",
            &s,
            rule,
            300,
            &[REQUESTS, SERVED, DENIED, HALF_SERVED],
        );
        // The budget both admits and denies: it has to choose.
        assert!(
            agent
                .iter()
                .all(|r| r.denied_by_budget > 0 && r.requests > r.clients)
        );
    }
}

/// Give-ups: an attempt limit and a deadline that both cut the storm short.
#[test]
fn deadlines_and_attempt_limits_agree() {
    let mut s = small(600, 20.0);
    s.clients.max_attempts = 5;
    s.clients.deadline_s = 7.0;
    s.server.timeout_s = 0.2;
    for rule in [RuleName::Full, RuleName::Equal] {
        agree("give-ups", &s, rule, 300, &GIVE_UPS);
    }
}

/// `Retry-After` of 1 s with its 10 % jitter, under a deadline that stops some clients at
/// once and cuts the waits of others, and a limit on the delays clients accept.
#[test]
fn retry_after_agrees() {
    let mut s = small(600, 20.0);
    s.server.retry_after_s = 1.0;
    s.clients.deadline_s = 12.0;
    for rule in [RuleName::Full, RuleName::Exponential] {
        // 360 seeds: at 300, 5.8 standard errors of gave_up were 2.1 % of its mean.
        agree("retry-after", &s, rule, 360, &GIVE_UPS);
    }
}

/// Waits past the agent calendar's ring of 2^20 steps: 1 ms steps and a `Retry-After` of
/// 1100 s (1.1 million steps, plus up to 10 %), so every client refused by a server that is
/// up comes back through the far part of the calendar.
#[test]
fn waits_beyond_the_calendar_ring_agree() {
    let d = Scenario::default();
    let s = Scenario {
        step_ms: 1.0,
        window_ms: 1000.0,
        horizon_s: 1300.0,
        clients: Clients {
            count: 300,
            ..d.clients
        },
        server: Server {
            capacity: 20,
            outages: vec![[0.0, 5.0]],
            retry_after_s: 1100.0,
            ..d.server
        },
        retry: Retry {
            base_ms: 100.0,
            cap_ms: 2000.0,
            ..d.retry
        },
        ..d
    };
    const RING: f64 = (1u64 << 20) as f64 / 1000.0;
    let (agent, cohort) = agree(
        "far",
        &s,
        RuleName::Full,
        50,
        &[REQUESTS, HALF_SERVED, LAST_ATTEMPT],
    );
    for r in agent.iter().chain(&cohort) {
        // Attempts after the ring's reach: the far part was used.
        let late: u64 = r.series.arrivals.iter().skip(RING as usize + 5).sum();
        assert!(late > 0, "{r:?}");
    }
}
