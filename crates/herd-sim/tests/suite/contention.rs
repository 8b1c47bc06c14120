//! Brooker's contention experiment: exact small cases, and the ordering of
//! the rules that the article's figures show.
use herd::RuleName;
use herd_sim::Limits;
use herd_sim::Watch;
use herd_sim::contention::{Contention, ContentionPoint, ContentionScenario, Convention};
use rayon::prelude::*;

use crate::support;

fn model(edit: impl FnOnce(&mut ContentionScenario)) -> Contention {
    let mut s = ContentionScenario::default();
    edit(&mut s);
    Contention::new(&s, &Limits::default()).expect("valid")
}

#[test]
fn the_shipped_file_is_the_default() {
    let mut s =
        ContentionScenario::from_toml_str(include_str!("../../../../scenarios/contention.toml"))
            .expect("parses");
    assert_eq!(s.model.as_deref(), Some("contention"));
    s.model = None;
    assert_eq!(s, ContentionScenario::default());
}

/// With a fixed 10 ms delay the protocol is plain arithmetic: both clients read version 0 at
/// 10 ms, both writes arrive at 30 ms, the first commits; the second learns of its rejection
/// at 40 ms, pauses, and needs four more hops.
#[test]
fn two_clients_without_jitter_in_the_network() {
    let fixed = model(|s| s.network.delay_sd_ms = 0.0);
    let none = fixed.run(RuleName::Immediate, 1, 2, Watch::none()).unwrap();
    assert_eq!((none.calls, none.completion_ms), (3, 80.0));
    let exponential = fixed
        .run(RuleName::Exponential, 1, 2, Watch::none())
        .unwrap();
    // The first pause is base = 5 ms.
    assert_eq!((exponential.calls, exponential.completion_ms), (3, 85.0));
    let alone = fixed.run(RuleName::Full, 1, 1, Watch::none()).unwrap();
    assert_eq!((alone.calls, alone.completion_ms), (1, 40.0));
}

/// The article's convention (`retry.convention = "brooker-2015"`): `Backoff.expo(n)` is
/// `min(cap, 2^n · base)`, so exponential's first pause is 2 · base = 10 ms and the rejected
/// client finishes at 90 ms; the decorrelated rule starts from `base` as before.
#[test]
fn the_articles_convention_doubles_the_exponential_familys_first_pause() {
    let fixed = model(|s| {
        s.network.delay_sd_ms = 0.0;
        s.retry.convention = Convention::Brooker2015;
    });
    let exponential = fixed
        .run(RuleName::Exponential, 1, 2, Watch::none())
        .unwrap();
    assert_eq!((exponential.calls, exponential.completion_ms), (3, 90.0));
    // Full and equal jitter draw within [0, 10 ms] and [5 ms, 10 ms]: past 80 ms, by 90 ms.
    for (rule, lo) in [(RuleName::Full, 80.0), (RuleName::Equal, 85.0)] {
        for seed in 1..50 {
            let r = fixed.run(rule, seed, 2, Watch::none()).unwrap();
            assert!(
                (lo..=90.0).contains(&r.completion_ms),
                "{rule} seed {seed}: {}",
                r.completion_ms
            );
        }
    }
    // Herd's convention never exceeds 85 ms for full jitter; the article's does, for some seed.
    let herd = model(|s| s.network.delay_sd_ms = 0.0);
    assert!((1..50).all(|seed| {
        herd.run(RuleName::Full, seed, 2, Watch::none())
            .unwrap()
            .completion_ms
            <= 85.0
    }));
    assert!((1..50).any(|seed| {
        fixed
            .run(RuleName::Full, seed, 2, Watch::none())
            .unwrap()
            .completion_ms
            > 85.0
    }));
    // decorrelated: uniform in [base, 3 · base] = [5, 15] ms either way.
    let decorrelated = fixed
        .run(RuleName::Decorrelated, 3, 2, Watch::none())
        .unwrap();
    assert!((85.0..=95.0).contains(&decorrelated.completion_ms));
    // A cap below 2 · base caps the first pause.
    let capped = model(|s| {
        s.network.delay_sd_ms = 0.0;
        s.retry.convention = Convention::Brooker2015;
        s.retry.cap_ms = 7.0;
    });
    let r = capped
        .run(RuleName::Exponential, 1, 2, Watch::none())
        .unwrap();
    assert_eq!(r.completion_ms, 87.0);
}

#[test]
fn the_articles_preset_file_parses_with_its_convention() {
    let s = ContentionScenario::from_toml_str(include_str!(
        "../../../../scenarios/contention-brooker-2015.toml"
    ))
    .expect("parses");
    assert_eq!(s.retry.convention, Convention::Brooker2015);
    let err = ContentionScenario::from_toml_str("[retry]\nconvention = \"brooker\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("convention"), "{err}");
}

#[test]
fn every_client_writes_at_least_once() {
    let m = model(|s| s.runs = 3);
    for rule in m.rules() {
        for seed in 1..4 {
            let r = m.run(rule, seed, 30, Watch::none()).unwrap();
            assert!(r.calls >= 30, "{rule} seed {seed}: {} calls", r.calls);
            assert!(
                r.completion_ms >= 4.0 * 30.0 * 0.5,
                "{rule}: {}",
                r.completion_ms
            );
        }
    }
}

#[test]
fn runs_are_reproducible_from_the_seed() {
    let m = model(|_| {});
    assert_eq!(
        m.run(RuleName::Full, 9, 40, Watch::none()).unwrap(),
        m.run(RuleName::Full, 9, 40, Watch::none()).unwrap()
    );
    assert_ne!(
        m.run(RuleName::Full, 9, 40, Watch::none()).unwrap(),
        m.run(RuleName::Full, 10, 40, Watch::none()).unwrap()
    );
}

/// The article's ordering at 100 clients, averaged over 20 seeds: no backoff does the most
/// work, exponential without jitter the most of the backoff rules (and takes by far the
/// longest), and full jitter the least (equal jitter is within a few percent of it).
#[test]
fn the_rules_keep_the_articles_order_at_100_clients() {
    let m = model(|s| s.runs = 20);
    let calls = |r| average(&m, r, 100).calls;
    let time = |r| average(&m, r, 100).completion_ms;
    let (none, exponential) = (calls(RuleName::Immediate), calls(RuleName::Exponential));
    let (equal, full, decorrelated) = (
        calls(RuleName::Equal),
        calls(RuleName::Full),
        calls(RuleName::Decorrelated),
    );
    assert!(none > exponential, "{none} vs {exponential}");
    for jittered in [equal, full, decorrelated] {
        assert!(exponential > 1.5 * jittered, "{exponential} vs {jittered}");
    }
    assert!(
        full <= equal.min(decorrelated) * 1.05,
        "{full} {equal} {decorrelated}"
    );
    assert!(full < decorrelated, "{full} vs {decorrelated}");
    let exponential_time = time(RuleName::Exponential);
    for r in [
        RuleName::Immediate,
        RuleName::Equal,
        RuleName::Full,
        RuleName::Decorrelated,
    ] {
        assert!(exponential_time > 3.0 * time(r), "{r}");
    }
}

#[test]
fn work_grows_faster_than_the_clients_without_jitter() {
    let m = model(|s| s.runs = 10);
    let per_client = |r, n| average(&m, r, n).calls_per_client;
    // No backoff: calls per client grow about linearly in N (total work ~ N²).
    assert!(per_client(RuleName::Immediate, 80) > 1.7 * per_client(RuleName::Immediate, 40));
    // Full jitter: calls per client grow much more slowly.
    assert!(per_client(RuleName::Full, 80) < 1.5 * per_client(RuleName::Full, 40));
}

#[test]
fn bad_values_name_their_field() {
    let cases = [
        ("runs = 0\n", "runs", 1),
        ("[clients]\ncount = 0\n", "clients.count", 2),
        ("[network]\ndelay_sd_ms = -1\n", "network.delay_sd_ms", 2),
        ("[retry]\ncap_ms = 1\n", "retry.cap_ms", 2),
        ("[retry]\nrules = []\n", "retry.rules", 2),
        ("model = \"metastable\"\n", "model", 1),
    ];
    support::refusals_name_fields(&cases, ContentionScenario::from_toml_str);
    let err = ContentionScenario::from_toml_str("[retry]\nrules = [\"nope\"]\n").expect_err("rule");
    assert!(err.to_string().contains("unknown rule `nope`"), "{err}");
}

/// `rule` with `clients` clients over the scenario's seeds `seed .. seed + runs`, averaged.
fn average(m: &Contention, rule: RuleName, clients: u64) -> ContentionPoint {
    let seed = m.scenario().seed;
    let runs: Vec<_> = (0..u64::from(m.scenario().runs))
        .into_par_iter()
        .map(|k| {
            m.run(rule, seed.wrapping_add(k), clients, Watch::none())
                .unwrap()
        })
        .collect();
    ContentionPoint::mean(&runs).expect("at least one run")
}
