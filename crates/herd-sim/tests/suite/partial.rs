//! The partial-failure model (docs/model.md, "Partial failure"): exact accounting for every
//! strategy, the laws that hold without a gate, and Brooker's 2022 figure reproduced within
//! standard errors against his own simulator's numbers.
use crate::support;

use herd_sim::Limits;
use herd_sim::Watch;
use herd_sim::model::Variant;
use herd_sim::partial::{PartialFailure, PartialRun, PartialScenario};
use herd_sim::registry;
use support::chance;

fn shipped(name: &str) -> PartialScenario {
    let path = format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str(&text).unwrap()
}

fn model(scenario: &PartialScenario) -> PartialFailure {
    PartialFailure::new(scenario, &Limits::default()).unwrap()
}

/// Mean and standard error of the mean.
fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

fn runs(model: &PartialFailure, name: &str, seeds: u64) -> Vec<PartialRun> {
    (1..=seeds)
        .map(|s| model.run(name, chance::seed(s), Watch::none()).unwrap())
        .collect()
}

/// Every strategy of the shipped scenarios, at failure rates 0, 0.3 and 1: calls that
/// succeeded, were refused, were denied a retry or ran out of attempts add up to the calls;
/// attempts are within what `max_attempts` allows.
#[test]
fn accounting_is_exact_for_every_strategy() {
    for file in ["brooker-2022.toml", "throttles/partial-failure.toml"] {
        let base = shipped(file);
        for p in [0.0, 0.3, 1.0] {
            let scenario = PartialScenario {
                failure_rate: p,
                horizon_s: 2.0,
                ..base.clone()
            };
            let m = model(&scenario);
            for (s, strategy) in m.strategies().into_iter().zip(&scenario.strategies) {
                let r = m.run(s, chance::seed(7), Watch::none()).unwrap();
                let sent = r.calls - r.refused;
                assert_eq!(
                    r.successes + r.refused + r.denied + r.exhausted,
                    r.calls,
                    "{file} {s} {p}: {r:?}"
                );
                assert_eq!(r.attempts, sent + r.retries, "{file} {s} {p}: {r:?}");
                if strategy.max_attempts > 0 {
                    assert!(
                        r.attempts <= sent * u64::from(strategy.max_attempts),
                        "{file} {s} {p}: {r:?}"
                    );
                }
                if p == 0.0 {
                    // Nothing fails: every call sent succeeds at its first attempt.
                    assert_eq!(
                        (r.successes, r.attempts, r.denied),
                        (sent, sent, 0),
                        "{file} {s}"
                    );
                }
                if p == 1.0 {
                    assert_eq!(r.successes, 0, "{file} {s}");
                }
                if strategy.token_bucket.is_none()
                    && strategy.breaker.is_none()
                    && strategy.throttle.is_none()
                {
                    assert_eq!((r.denied, r.refused), (0, 0), "{file} {s}");
                    if p == 1.0 {
                        assert_eq!(r.attempts, r.calls * u64::from(strategy.max_attempts));
                    }
                }
            }
        }
    }
}

#[test]
fn a_run_is_reproducible_from_its_seed_and_strategies_meet_the_same_calls() {
    let m = model(&shipped("brooker-2022.toml"));
    for s in m.strategies() {
        assert_eq!(
            m.run(s, 3, Watch::none()).unwrap(),
            m.run(s, 3, Watch::none()).unwrap(),
            "{s}"
        );
    }
    let calls: Vec<u64> = m
        .strategies()
        .into_iter()
        .map(|s| m.run(s, 3, Watch::none()).unwrap().calls)
        .collect();
    assert!(calls.iter().all(|c| *c == calls[0]), "{calls:?}");
    assert_ne!(
        m.run("three_retries", 3, Watch::none()).unwrap(),
        m.run("three_retries", 4, Watch::none()).unwrap()
    );
}

/// Without a gate the model has a closed form: a call makes `min(G, k)` attempts, G
/// geometric with failure probability p, so `(1 − p^k)/(1 − p)` attempts per call and a
/// share `1 − p^k` succeed. Checked at p = 0.5 (Brooker's largest) over 20 seeds (about
/// 200 000 independent calls), each mean within 5.5 standard errors computed from the law's
/// own variance: P(|Z| > 5.5) = 4·10⁻⁸ per comparison, four comparisons, under 10⁻⁶.
#[test]
fn attempts_caps_follow_their_closed_form() {
    let p: f64 = 0.5;
    let m = model(&PartialScenario {
        failure_rate: p,
        ..shipped("brooker-2022.toml")
    });
    for (name, k) in [("three_retries", 4), ("no_retries", 1)] {
        let rs = runs(&m, name, 20);
        let calls: f64 = rs.iter().map(|r| r.calls as f64).sum();
        let attempts: f64 = rs.iter().map(|r| r.attempts as f64).sum();
        let successes: f64 = rs.iter().map(|r| r.successes as f64).sum();
        // Attempts per call: P(X = j) = p^(j−1)(1 − p) for j < k, P(X = k) = p^(k−1).
        let law: Vec<(f64, f64)> = (1..=k)
            .map(|j| {
                let pr = if j < k {
                    p.powi(j - 1) * (1.0 - p)
                } else {
                    p.powi(k - 1)
                };
                (f64::from(j), pr)
            })
            .collect();
        let mean: f64 = law.iter().map(|(x, pr)| x * pr).sum();
        let var: f64 = law.iter().map(|(x, pr)| (x - mean).powi(2) * pr).sum();
        assert!((mean - (1.0 - p.powi(k)) / (1.0 - p)).abs() < 1e-12);
        let z = (attempts / calls - mean) / (var / calls).sqrt().max(1e-12);
        assert!(z.abs() < 5.5 || var == 0.0, "{name}: amplification z = {z}");
        let q = 1.0 - p.powi(k);
        let z = (successes / calls - q) / (q * (1.0 - q) / calls).sqrt();
        assert!(z.abs() < 5.5, "{name}: success z = {z}");
    }
}

/// Brooker's figure (work amplification and success rate against the failure rate, his
/// `run_sims`), point by point against his own simulator: `python3 tools/brooker_2022.py
/// --repo DIR --experiment failure --seeds 20` (mean and standard error over Python seeds
/// 1..20). herd runs 40 seeds; a point agrees when the means are within 6.5 standard errors of
/// their difference. With Welch's degrees of freedom (about 50) the chance that a correct
/// model fails one comparison is P(|t₅₀| > 6.5) < 5·10⁻⁸, and 16 comparisons keep the test
/// below 10⁻⁶.
#[test]
fn brookers_figure_is_reproduced_within_standard_errors() {
    // (failure rate, strategy, amplification mean, se, success mean, se): his simulator.
    let base = shipped("brooker-2022.toml");
    for &(p, name, amp, amp_se, ok, ok_se) in &REFERENCE {
        let m = model(&PartialScenario {
            failure_rate: p,
            ..base.clone()
        });
        let rs = runs(&m, name, 40);
        let (a, a_se) = mean_se(
            &rs.iter()
                .map(PartialRun::work_amplification)
                .collect::<Vec<_>>(),
        );
        let (s, s_se) = mean_se(
            &rs.iter()
                .map(|r| r.successes as f64 / r.calls as f64)
                .collect::<Vec<_>>(),
        );
        let za = (a - amp) / (a_se * a_se + amp_se * amp_se).sqrt();
        let zs = (s - ok) / (s_se * s_se + ok_se * ok_se).sqrt();
        assert!(
            za.abs() < 6.5 && zs.abs() < 6.5,
            "{name} at {p}: herd {a:.5} ± {a_se:.5}, {s:.5} ± {s_se:.5}; Brooker {amp:.5} ± {amp_se:.5}, {ok:.5} ± {ok_se:.5} (z {za:.2}, {zs:.2})"
        );
    }
}

/// His simulator's figures, `python3 tools/brooker_2022.py --repo DIR --experiment failure
/// --seeds 20` on `mbrooker/simulator_example` at commit bbfe3946f045: failure rate, strategy,
/// work amplification (mean, standard error), success rate (mean, standard error).
const REFERENCE: [(f64, &str, f64, f64, f64, f64); 8] = [
    (
        0.1,
        "adaptive_10pct",
        1.101803,
        0.000574,
        0.992010,
        0.000295,
    ),
    (
        0.2,
        "adaptive_10pct",
        1.134504,
        0.000197,
        0.907560,
        0.000889,
    ),
    (
        0.3,
        "adaptive_10pct",
        1.139089,
        0.000173,
        0.796698,
        0.001082,
    ),
    (
        0.4,
        "adaptive_10pct",
        1.140646,
        0.000101,
        0.681456,
        0.001144,
    ),
    (
        0.5,
        "adaptive_10pct",
        1.141615,
        0.000116,
        0.569931,
        0.000991,
    ),
    (
        0.05,
        "breaker_10pct",
        1.038113,
        0.000382,
        0.986928,
        0.000533,
    ),
    (0.1, "breaker_10pct", 1.031070, 0.000541, 0.927653, 0.001141),
    (0.2, "breaker_10pct", 1.003481, 0.000176, 0.802903, 0.001043),
];

#[test]
fn the_model_is_registered_and_its_strategies_are_its_variants() {
    let text = std::fs::read_to_string(format!(
        "{}/../../scenarios/brooker-2022.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let checked = registry::check_text(&text, &Limits::default()).unwrap();
    assert_eq!(checked.name(), "partial-failure");
    let variants = checked.variants();
    assert_eq!(variants.len(), 10);
    let m = checked
        .run(&Variant::Named("adaptive_10pct".into()), 1, Watch::none())
        .unwrap();
    assert!(m.get("work_amplification").unwrap().unwrap() > 1.0);
    let err = checked
        .run(&Variant::Named("nope".into()), 1, Watch::none())
        .unwrap_err();
    assert_eq!(err.field_name(), Some("strategies"));
}

#[test]
fn bad_input_names_the_field() {
    let err = |text: &str| {
        registry::check_text(
            &format!("model = \"partial-failure\"\n{text}"),
            &Limits::default(),
        )
        .unwrap_err()
        .to_string()
    };
    assert!(
        err("failure_rate = 1.5").starts_with("failure_rate (line 2)"),
        "{}",
        err("failure_rate = 1.5")
    );
    assert!(err("[clients]\ncount = 0").starts_with("clients.count"));
    assert!(err("[clients]\ncalls_per_s = -1").starts_with("clients.calls_per_s"));
    assert!(err("[clients]\ncalls_per_s = 1e12").starts_with("clients.calls_per_s"));
    assert!(err("horizon_s = 0").starts_with("horizon_s"));
    let e = err("[[strategies]]\nname = \"x\"\nmax_attempts = 0");
    assert!(
        e.starts_with("strategies[0].max_attempts") && e.contains("token_bucket"),
        "{e}"
    );
    let e = err("[[strategies]]\nname = \"x\"\nthrottle = { kind = \"nope\" }");
    assert!(e.starts_with("strategies[0].throttle.kind"), "{e}");
    let e = err("[[strategies]]\nname = \"x\"\nthrottle = { kind = \"grpc\", k = 2.0 }");
    assert!(e.starts_with("strategies[0].throttle.k"), "{e}");
    let e = err("[[strategies]]\nname = \"x\"\nbreaker = {}\ntoken_bucket = {}");
    assert!(
        e.starts_with("strategies[0].throttle") && e.contains("at most one"),
        "{e}"
    );
    let e = err("[[strategies]]\nname = \"x\"\n[[strategies]]\nname = \"x\"");
    assert!(e.starts_with("strategies[1].name"), "{e}");
    let e = err("[[strategies]]\nname = \"x\"\ntoken_bucket = { size = -1.0 }");
    assert!(e.starts_with("strategies[0].token_bucket.size"), "{e}");
    let e = err("[[strategies]]\nname = \"x\"\nbackoff_ms = -3");
    assert!(e.starts_with("strategies[0].backoff_ms"), "{e}");
    let e = err("strategies = []");
    assert!(e.starts_with("strategies"), "{e}");
    // A run too large for the limits is refused before it starts.
    let small = Limits {
        max_run_attempts: 1000,
        ..Limits::default()
    };
    let e = registry::check_text("model = \"partial-failure\"\n", &small)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("clients.calls_per_s"), "{e}");
}
