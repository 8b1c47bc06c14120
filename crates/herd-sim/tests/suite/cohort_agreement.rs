//! The cohort engine against the agent engine: the same model, so the same distributions.
//!
//! For every rule, both engines run the same scenario over many seeds
//! (disjoint seed ranges, so the two samples are independent), and each figure's means must
//! agree:
//!
//! ```text
//! |mean_agent − mean_cohort| ≤ Z · √(se_agent² + se_cohort²) + 10⁻⁹
//! ```
//!
//! with `se` the observed standard error of each mean. Under the hypothesis that the two
//! engines draw from the same distribution the difference is approximately Student's t (at
//! least `SEEDS − 1` degrees of freedom), and `Z` is chosen so that the ~1600 comparisons
//! below fail by chance together with probability at most 5·10⁻⁷ (Bonferroni), the
//! Kolmogorov–Smirnov tests another 5·10⁻⁷: at most 10⁻⁶ per run. (At 4.5 standard errors
//! and level 10⁻⁴, about 3 % of seed choices failed.) The seeds are fixed (moved by
//! `HERD_TEST_SEED`), so the test is deterministic. At 200 seeds the
//! tolerance is about 0.06–0.65 % of requests per client and 0.1–1.1 s of all-served time
//! (`--nocapture` prints them; 0.03–0.35 % and 0.05–0.6 s at the former 4.5 standard
//! errors), so a bias of that size is caught.
//!
//! The whole distributions of the per-run figures (not only arrivals per second) are also
//! compared by a two-sample Kolmogorov–Smirnov test at level 5·10⁻⁷ / 1600 each:
//! `D ≤ 3.36 · √((n + m) / (n m))`, `3.36 = √(−ln(α/2)/2)` (conservative for these discrete
//! figures).
//!
//! Figures: half-served time, all-served time, requests per client, served and gave-up counts,
//! and arrivals per block of 10 windows over the first 60 blocks. Scenarios: the default
//! storm (pauses in whole steps, and again continuous), one using every feature of the model,
//! and the sixty-console scene (1 ms steps under a 30 s cap, continuous pauses). Rules
//! without jitter must agree exactly, run for run, in the lone bursts.
//! 200 seeds per engine in release builds, 40 in debug builds (CI), so the suite stays well
//! under a minute there.
use herd::RuleName;
use herd_sim::{Clients, Engine, Pauses, RunResult, Scenario, Server};

use crate::support;

use support::{mean_se, runs};

const SEEDS: u64 = if cfg!(debug_assertions) { 40 } else { 200 };
/// Standard errors between two means: `z_limit(5·10⁻⁷, 1600, Some(39))` ≈ 8.35, rounded up.
const Z: f64 = 8.4;
/// Arrivals are compared per block of this many windows, over this many blocks.
const BLOCK: usize = 10;
const BLOCKS: usize = 60;

/// The rules the cohort engine runs: all of them.
fn rules() -> Vec<RuleName> {
    RuleName::ALL.to_vec()
}

/// The largest gap between the two samples' empirical distribution functions.
fn ks_distance(a: &[f64], b: &[f64]) -> f64 {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

/// The figures of one run, by name; `None` times count as a separate "never" figure.
fn figures(r: &RunResult) -> Vec<(String, f64)> {
    let mut out = vec![
        ("requests_per_client".to_owned(), r.requests_per_client),
        ("served".to_owned(), r.served as f64),
        ("gave_up".to_owned(), r.gave_up as f64),
        (
            "half_served_never".to_owned(),
            f64::from(u8::from(r.half_served_s.is_none())),
        ),
        (
            "all_served_never".to_owned(),
            f64::from(u8::from(r.all_served_s.is_none())),
        ),
    ];
    out.push((
        "half_served_s".to_owned(),
        r.half_served_s.unwrap_or(f64::NAN),
    ));
    out.push((
        "all_served_s".to_owned(),
        r.all_served_s.unwrap_or(f64::NAN),
    ));
    for b in 0..BLOCKS {
        let sum: u64 = (b * BLOCK..(b + 1) * BLOCK)
            .map(|w| r.series.arrivals.get(w).copied().unwrap_or(0))
            .sum();
        out.push((format!("arrivals in second {b}"), sum as f64));
    }
    out
}

/// Compares every figure's mean; returns the worst |difference| / tolerance, for the record.
fn agree(scenario: &Scenario, rule: RuleName, burst_only: bool) -> f64 {
    let agent = runs(scenario, Engine::Agent, rule, SEEDS);
    let cohort = runs(scenario, Engine::Cohort, rule, SEEDS);
    if burst_only && !rule.is_jittered() {
        // Deterministic rules: the served are a random subset, but in a lone burst every due
        // client has the same state, so every figure is the same, run for run.
        for (a, c) in agent.iter().zip(&cohort) {
            let strip = |r: &RunResult| RunResult {
                seed: 0,
                ..r.clone()
            };
            assert_eq!(strip(a), strip(c), "{rule}: deterministic runs differ");
        }
        return 0.0;
    }
    let fa: Vec<Vec<(String, f64)>> = agent.iter().map(figures).collect();
    let fc: Vec<Vec<(String, f64)>> = cohort.iter().map(figures).collect();
    let mut worst: f64 = 0.0;
    for i in 0..fa[0].len() {
        let name = &fa[0][i].0;
        let xa: Vec<f64> = fa.iter().map(|f| f[i].1).filter(|x| !x.is_nan()).collect();
        let xc: Vec<f64> = fc.iter().map(|f| f[i].1).filter(|x| !x.is_nan()).collect();
        if xa.len() < 10 || xc.len() < 10 {
            continue; // the "never" figure covers it
        }
        if !name.starts_with("arrivals") {
            let d = ks_distance(&xa, &xc);
            let (n, m) = (xa.len() as f64, xc.len() as f64);
            let critical = 3.36 * ((n + m) / (n * m)).sqrt();
            assert!(
                d <= critical,
                "{rule} {name}: Kolmogorov–Smirnov D {d:.3} > {critical:.3}"
            );
        }
        let (ma, sa) = mean_se(&xa);
        let (mc, sc) = mean_se(&xc);
        let tolerance = Z * (sa * sa + sc * sc).sqrt() + 1e-9;
        let diff = (ma - mc).abs();
        if ["requests_per_client", "half_served_s", "all_served_s"].contains(&name.as_str()) {
            eprintln!("  {rule} {name}: agent {ma:.3}, cohort {mc:.3}, tolerance ±{tolerance:.3}");
        }
        worst = worst.max(diff / tolerance);
        assert!(
            diff <= tolerance,
            "{rule} {name}: agent {ma:.4} ± {sa:.4}, cohort {mc:.4} ± {sc:.4}, |diff| {diff:.4} > {tolerance:.4}"
        );
    }
    worst
}

/// [`agree`] for every rule, each rule's worst |difference| / tolerance printed under
/// `label`.
fn every_rule_agrees(label: &str, scenario: &Scenario, burst_only: bool) {
    for rule in rules() {
        let worst = agree(scenario, rule, burst_only);
        eprintln!("{label} {rule}: worst |diff| / tolerance = {worst:.2}");
    }
}

#[test]
fn default_scenario_every_rule_agrees() {
    let scenario = Scenario::default();
    every_rule_agrees("default", &scenario, true);
}

/// Every feature of the model at once: refusal cost, collapse, warm-up, Retry-After, a
/// timeout, an attempt limit, a deadline, a retry budget and an open-loop stream on top of
/// the burst.
fn everything() -> Scenario {
    let d = Scenario::default();
    Scenario {
        horizon_s: 300.0,
        clients: Clients {
            count: 1500,
            arrivals_per_s: 40.0,
            max_attempts: 12,
            deadline_s: 60.0,
            ..d.clients
        },
        server: Server {
            capacity: 60,
            refusal_cost: 0.05,
            collapse_above: 900,
            outages: vec![[0.0, 10.0], [40.0, 45.0]],
            warmup_s: 3.0,
            retry_after_s: 0.25,
            timeout_s: 0.2,
        },
        retry: herd_sim::Retry {
            budget_percent: 50.0,
            ..d.retry
        },
        ..d
    }
}

#[test]
fn every_feature_every_rule_agrees() {
    let scenario = everything();
    every_rule_agrees("features", &scenario, false);
}

/// Fine steps under a long cap (1 ms steps, 30 s cap: laws of 30 000 waits), few clients.
#[test]
fn sixty_console_scene_every_rule_agrees() {
    let scenario = Scenario::from_toml_str(
        include_str!("../../../../scenarios/sixty-consoles.toml"),
        &herd_sim::Limits::default(),
        |_| {},
    )
    .expect("shipped scenario parses");
    every_rule_agrees("sixty", &scenario, true);
}

/// A long `Retry-After` (2 s: 20 steps, so the library's jitter spreads a herd over 21–22
/// steps and more as it grows) under a deadline that cuts some waits and stops clients told
/// to wait past it: the cohort engine's multinomial split of each count over the jitter's
/// values must give the agent engine's law, one `herd::server_delay::decide` per client.
fn long_retry_after() -> Scenario {
    let d = Scenario::default();
    Scenario {
        horizon_s: 120.0,
        clients: Clients {
            count: 3000,
            deadline_s: 30.0,
            ..d.clients
        },
        server: Server {
            retry_after_s: 2.0,
            ..d.server
        },
        ..d
    }
}

#[test]
fn long_retry_after_every_rule_agrees() {
    let scenario = long_retry_after();
    // The jitter makes every rule random, so no run-for-run comparison.
    every_rule_agrees("retry-after", &scenario, false);
}

/// The default storm with continuous pauses (`pauses = "continuous"`): the tests above run
/// whole steps, the default, where `decorrelated`'s memory is a whole number of steps and the
/// cohort engine keeps it exactly; here it is nanoseconds, quantized in cells (`cohort/law.rs`).
#[test]
fn continuous_pauses_every_rule_agrees() {
    let scenario = Scenario {
        pauses: Pauses::Continuous,
        ..Scenario::default()
    };
    every_rule_agrees("continuous", &scenario, true);
}
