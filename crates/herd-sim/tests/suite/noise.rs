//! Per-retry latency (`[clients.latency]`, docs/model.md "Latency of an attempt"): the noise
//! that breaks up an unjittered herd, the same in both engines, and nothing at all when it
//! is zero.
//!
//! Agreement between the engines is measured as in `cohort_agreement.rs`: disjoint seed
//! ranges, and each figure's means within `Z · √(se_agent² + se_cohort²)`, `se` the observed
//! standard error of each mean, `Z` such that the file's comparisons fail by chance together
//! with probability at most 10⁻⁶ (Bonferroni over at most 100, Student's t with at least 59
//! degrees of freedom); the seeds are fixed (moved by `HERD_TEST_SEED`).
use herd::RuleName;
use herd_sim::registry;
use herd_sim::{Engine, Latency, LatencyDistribution, Limits, RunResult, Scenario, Simulation};

use crate::support::chance;

const SEEDS: u64 = if cfg!(debug_assertions) { 60 } else { 300 };
const COHORT_SEED_BASE: u64 = 1_000_000;
/// `z_limit(10⁻⁶, 100, Some(59))` ≈ 6.66, rounded up.
const Z: f64 = 6.7;

fn noisy(distribution: LatencyDistribution, mean_ms: f64, sd_ms: f64) -> Scenario {
    let mut s = Scenario::default();
    s.clients.latency = Latency {
        distribution,
        mean_ms,
        sd_ms,
    };
    s
}

fn run(s: &Scenario, engine: Engine, rule: RuleName, seed: u64) -> RunResult {
    Simulation::with_engine(s, &Limits::unlimited(), engine)
        .expect("valid")
        .run(rule, seed, herd_sim::Watch::none())
        .expect("runs")
}

/// No latency, or a zero one of either law, is the model without latency, bit for bit, in
/// both engines: the headline figures stay (exponential: all served by 785.5 s).
#[test]
fn zero_latency_is_the_old_model_bit_for_bit() {
    let old = Scenario::default();
    for engine in [Engine::Agent, Engine::Cohort] {
        let exp = run(&old, engine, RuleName::Exponential, 1);
        assert_eq!(
            (exp.half_served_s, exp.all_served_s, exp.requests_per_client),
            (Some(405.5), Some(785.5), 27.5)
        );
        assert_eq!(exp.peak_after_outage, 2000);
        for zero in [
            noisy(LatencyDistribution::Normal, 0.0, 0.0),
            noisy(LatencyDistribution::Lognormal, 0.0, 0.0),
            Scenario::from_toml_str(
                "[clients.latency]\nsd_ms = 0\n",
                &herd_sim::Limits::default(),
                |_| {},
            )
            .unwrap(),
        ] {
            for rule in RuleName::CLASSIC {
                for seed in 1..=3 {
                    assert_eq!(
                        run(&zero, engine, rule, seed),
                        run(&old, engine, rule, seed),
                        "{engine:?} {rule} seed {seed}"
                    );
                }
            }
        }
    }
}

/// A constant latency draws nothing and moves every retry alike: the herd stays together.
#[test]
fn a_constant_latency_keeps_the_herd_together() {
    let s = noisy(LatencyDistribution::Normal, 100.0, 0.0);
    for engine in [Engine::Agent, Engine::Cohort] {
        let r = run(&s, engine, RuleName::Exponential, 1);
        assert_eq!((r.peak_after_outage, r.requests_per_client), (2000, 27.5));
        // One step more per retry, 26.5 retries per client on average: later, not better.
        assert!(r.all_served_s.unwrap() > 785.5, "{:?}", r.all_served_s);
    }
}

/// The question docs/storm.md answers: enough noise breaks up exponential backoff without
/// jitter. At 300 ms (normal, mean 0) every seed's peak after the outage is under a fifth of
/// the herd (it is all 2000 clients without noise), and everyone is served five times sooner.
#[test]
fn enough_noise_breaks_up_an_unjittered_herd() {
    let quiet = noisy(LatencyDistribution::Normal, 0.0, 10.0);
    let loud = noisy(LatencyDistribution::Normal, 0.0, 300.0);
    for engine in [Engine::Agent, Engine::Cohort] {
        for seed in 1..=8 {
            // 10 ms is below half a step: a delay of a whole step has probability 3·10⁻⁷.
            let q = run(&quiet, engine, RuleName::Exponential, seed);
            assert_eq!(q.peak_after_outage, 2000, "{engine:?} seed {seed}");
            let r = run(&loud, engine, RuleName::Exponential, seed);
            assert!(
                r.peak_after_outage < 400,
                "{engine:?} seed {seed}: peak {}",
                r.peak_after_outage
            );
            assert!(
                r.all_served_s.unwrap() < 785.5 / 5.0,
                "{engine:?} seed {seed}: {:?}",
                r.all_served_s
            );
            assert_eq!(r.served, 2000);
        }
    }
}

fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// The figures compared: requests per client, half-served time, served, all-served time
/// (0 when not everyone was served, which a scenario with give-ups makes common).
fn figures(r: &RunResult) -> [(&'static str, f64); 5] {
    [
        ("requests_per_client", r.requests_per_client),
        ("half_served_s", r.half_served_s.unwrap_or(-1.0)),
        ("served", r.served as f64),
        ("gave_up", r.gave_up as f64),
        ("peak_after_outage", r.peak_after_outage as f64),
    ]
}

fn agree(s: &Scenario, rule: RuleName) {
    let sample = |engine: Engine, first: u64| -> Vec<[(&'static str, f64); 5]> {
        (first..first + SEEDS)
            .map(|seed| figures(&run(s, engine, rule, chance::seed(seed))))
            .collect()
    };
    let agent = sample(Engine::Agent, 1);
    let cohort = sample(Engine::Cohort, COHORT_SEED_BASE);
    for i in 0..5 {
        let name = agent[0][i].0;
        let a: Vec<f64> = agent.iter().map(|f| f[i].1).collect();
        let c: Vec<f64> = cohort.iter().map(|f| f[i].1).collect();
        let ((ma, sa), (mc, sc)) = (mean_se(&a), mean_se(&c));
        let tolerance = Z * (sa * sa + sc * sc).sqrt() + 1e-9;
        assert!(
            (ma - mc).abs() <= tolerance,
            "{rule} {name}: agent {ma} ± {sa}, cohort {mc} ± {sc}"
        );
    }
}

/// The cohort engine's split over the delay's law in steps has the law of the agent's draws.
#[test]
fn cohort_agrees_with_agent_under_noise() {
    let normal = noisy(LatencyDistribution::Normal, 20.0, 100.0);
    // Every feature the latency meets in the failure step: a Retry-After (whose jitter is
    // drawn before the delay), a timeout, a deadline (which the delay can pass), attempt
    // limits, open-loop arrivals; a heavy-tailed log-normal.
    let mut every = noisy(LatencyDistribution::Lognormal, 150.0, 400.0);
    every.horizon_s = 300.0;
    every.clients.count = 1000;
    every.clients.arrivals_per_s = 5.0;
    every.clients.max_attempts = 12;
    every.clients.deadline_s = 40.0;
    every.server.retry_after_s = 0.5;
    every.server.timeout_s = 0.3;
    every.server.refusal_cost = 0.05;
    for rule in [RuleName::Exponential, RuleName::Full, RuleName::Constant] {
        agree(&normal, rule);
        agree(&every, rule);
    }
}

/// Bad latencies get one line naming the field, as every other field does.
#[test]
fn bad_latencies_name_their_field() {
    let err = |text: &str| {
        Scenario::from_toml_str(text, &herd_sim::Limits::default(), |_| {})
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("[clients.latency]\nsd_ms = -1\n"),
        "clients.latency.sd_ms (line 2): must be a finite number of milliseconds between 0 and 10^12, got -1"
    );
    assert_eq!(
        err("[clients.latency]\nsd_ms = 5\nmean_ms = nan\n"),
        "clients.latency.mean_ms (line 3): must be a finite number of milliseconds between 0 and 10^12, got NaN"
    );
    assert_eq!(
        err("[clients.latency]\nsd_ms = inf\n"),
        "clients.latency.sd_ms (line 2): must be a finite number of milliseconds between 0 and 10^12, got inf"
    );
    assert_eq!(
        err("[clients.latency]\nmean_ms = -20\n"),
        "clients.latency.mean_ms (line 2): must be a finite number of milliseconds between 0 and 10^12, got -20"
    );
    assert_eq!(
        err("[clients.latency]\ndistribution = \"lognormal\"\nsd_ms = 30\n"),
        "clients.latency.mean_ms: must be above 0 for a lognormal latency with sd_ms 30, got 0"
    );
    let unknown = err("[clients.latency]\ndistribution = \"gaussian\"\n");
    assert!(
        unknown.starts_with("clients.latency.distribution (line 2): unknown variant `gaussian`"),
        "{unknown}"
    );
    assert!(!unknown.contains('\n'), "{unknown}");
    let field = err("[clients.latency]\nspread_ms = 3\n");
    assert!(field.contains("unknown field `spread_ms`"), "{field}");
    // An inline table names the field too.
    let inline = err("[clients]\nlatency = { sd_ms = -3 }\n");
    assert!(
        inline.starts_with("clients.latency.sd_ms: must be a finite number"),
        "{inline}"
    );
    // A law too wide for the cohort engine's split: the agent engine runs it.
    let wide = Scenario::from_toml_str("step_ms = 1\nwindow_ms = 1\nhorizon_s = 600\n[clients.latency]\ndistribution = \"lognormal\"\nmean_ms = 100\nsd_ms = 10000\n", &herd_sim::Limits::default(), |_| {})
    .unwrap();
    let e = Simulation::with_engine(&wide, &Limits::default(), Engine::Cohort).unwrap_err();
    assert_eq!(e.field_name(), Some("clients.latency.sd_ms"), "{e}");
    Simulation::with_engine(&wide, &Limits::default(), Engine::Agent).unwrap();
}

/// `herd sweep --set clients.latency.sd_ms=…` finds the fields in the model's tree.
#[test]
fn latency_fields_are_sweepable() {
    let tree: toml::Value = toml::from_str("").unwrap();
    let checked = registry::check(&tree, &Limits::default()).unwrap();
    let swept = checked.sweepable().unwrap();
    let latency = &swept["clients"]["latency"];
    assert_eq!(latency["distribution"].as_str(), Some("normal"));
    assert_eq!(latency["mean_ms"].as_float(), Some(0.0));
    assert_eq!(latency["sd_ms"].as_float(), Some(0.0));
}
