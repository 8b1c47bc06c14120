//! Every figure of the storm model (docs/model.md), from the scenario files shipped in `scenarios/`.
use herd::RuleName;
use herd_sim::{GiveUp, Limits, Outcome, RunResult, Scenario, Simulation};

use crate::support;

use support::run;

fn scene(text: &str) -> Simulation {
    let scenario = Scenario::from_toml_str(text, &herd_sim::Limits::default(), |_| {})
        .expect("shipped scenario parses");
    Simulation::new(&scenario, &Limits::default()).expect("shipped scenario is valid")
}

fn default_scene() -> Simulation {
    scene(include_str!("../../../../scenarios/default.toml"))
}

#[test]
fn the_shipped_default_is_the_embedded_default() {
    let file = Scenario::from_toml_str(
        include_str!("../../../../scenarios/default.toml"),
        &herd_sim::Limits::default(),
        |_| {},
    )
    .unwrap();
    assert_eq!(file, Scenario::default());
}

#[test]
fn default_scenario_deterministic_rows() {
    let sim = default_scene();
    let rows = [
        (RuleName::Immediate, 12.0, 13.9, 120.5, 241_000),
        (RuleName::Constant, 30.0, 49.0, 30.5, 61_000),
        (RuleName::Exponential, 405.5, 785.5, 27.5, 55_000),
    ];
    for (rule, half, all, per_client, requests) in rows {
        let r = run(&sim, rule, 1);
        assert_eq!(r.served, 2000, "{rule}");
        assert_eq!(r.half_served_s, Some(half), "{rule}");
        assert_eq!(r.all_served_s, Some(all), "{rule}");
        assert_eq!(r.requests_per_client, per_client, "{rule}");
        assert_eq!(r.requests, requests, "{rule}");
    }
}

/// The README's table is one run of the default scenario, seed 1, as `herd storm` prints it:
/// every row is held here as a golden figure, the jittered rows (one draw of seed 1's
/// generator) as well as the three that draw nothing and are the same for every seed.
#[test]
fn the_readme_table_is_seed_one_of_the_default() {
    let readme = include_str!("../../../../README.md");
    let table = readme
        .split("```text\nrule ")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("README's storm table");
    let sim = default_scene();
    let mut rows = 0;
    for line in table.lines().skip(1) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let rule: RuleName = cells[0].parse().expect("a rule");
        let r = run(&sim, rule, 1);
        // As the table prints them: herd_sim::figure's one precision policy.
        let seconds = |t: Option<f64>| herd_sim::figure::number(t.expect("everyone served"));
        let printed = [
            r.served.to_string(),
            r.gave_up.to_string(),
            r.waiting.to_string(),
            seconds(r.half_served_s),
            "s".to_owned(),
            seconds(r.all_served_s),
            "s".to_owned(),
            herd_sim::figure::number(r.requests_per_client),
            r.peak_after_outage.to_string(),
        ];
        assert_eq!(
            cells[1..10],
            printed,
            "{rule}: the README's row is not seed 1's"
        );
        rows += 1;
    }
    assert_eq!(rows, 6);
}

#[test]
fn default_peak_after_outage_is_the_whole_herd_for_synchronised_rules() {
    let sim = default_scene();
    for rule in [RuleName::Immediate, RuleName::Constant] {
        assert_eq!(run(&sim, rule, 1).peak_after_outage, 2000, "{rule}");
    }
    // exponential's herd comes back at 12.7 s, after the outage too
    assert_eq!(run(&sim, RuleName::Exponential, 1).peak_after_outage, 2000);
    for rule in [RuleName::Full, RuleName::Equal, RuleName::Decorrelated] {
        let peak = run(&sim, rule, 1).peak_after_outage;
        assert!(peak < 2000, "{rule}: {peak}");
    }
}

#[test]
fn refusal_cost_starves_synchronised_rules_but_not_jittered_ones() {
    let sim = scene(include_str!("../../../../scenarios/refusal-cost.toml"));
    for rule in [
        RuleName::Immediate,
        RuleName::Constant,
        RuleName::Exponential,
    ] {
        let r = run(&sim, rule, 1);
        let first_minute: u64 = r.series.served.iter().take(600).sum();
        assert_eq!(first_minute, 0, "{rule} served someone in the first 60 s");
    }
    for rule in [RuleName::Full, RuleName::Equal, RuleName::Decorrelated] {
        for seed in 1..=5 {
            let r = run(&sim, rule, seed);
            let all = r.all_served_s.expect("everyone served");
            assert!(all <= 32.0, "{rule} seed {seed}: all served at {all} s");
        }
    }
}

#[test]
fn six_client_scene() {
    let sim = scene(include_str!("../../../../scenarios/six-clients.toml"));
    for (rule, last_call) in [(RuleName::Immediate, 4.0), (RuleName::Exponential, 15.0)] {
        let (r, trace) = sim.trace(rule, 1).unwrap();
        assert_eq!(r.served, 0, "{rule}");
        assert_eq!(r.gave_up, 6, "{rule}");
        assert_eq!(r.requests, 24, "{rule}");
        assert_eq!(r.last_attempt_s, Some(last_call), "{rule}");
        assert_eq!(trace.events.len(), 24);
        assert!(trace.events.iter().all(|e| e.outcome != Outcome::Served));
        let gave_up = trace
            .events
            .iter()
            .filter(|e| e.gave_up == Some(GiveUp::MaxAttempts));
        assert_eq!(gave_up.count(), 6);
        assert_eq!(trace.events[0].t_s, 1.0);
    }
    let mut all_six = 0;
    for seed in 1..=20 {
        let r = run(&sim, RuleName::Full, seed);
        if r.served == 6 {
            all_six += 1;
            assert!(r.all_served_s.unwrap() <= 20.0, "seed {seed}");
        }
        assert!(r.served >= 3, "seed {seed}: {}", r.served);
    }
    assert!(
        all_six >= 12,
        "full served all six in only {all_six} of 20 seeds"
    );
}

#[test]
fn sixty_console_scene() {
    let sim = scene(include_str!("../../../../scenarios/sixty-consoles.toml"));
    let r = run(&sim, RuleName::Exponential, 1);
    assert_eq!(r.series.window_s, 1.0);
    assert_eq!(
        r.series.arrivals[..16],
        [60, 60, 0, 60, 0, 0, 0, 60, 0, 0, 0, 0, 0, 0, 0, 45]
    );
    assert_eq!(r.all_served_s, Some(61.0));
    assert_eq!(r.requests, 330);
    assert_eq!(r.served, 60);
}

#[test]
fn metastable_scene_recovers_only_with_backoff_or_a_budget() {
    let text = include_str!("../../../../scenarios/metastable.toml");
    let mut scenario = Scenario::from_toml_str(text, &herd_sim::Limits::default(), |_| {}).unwrap();
    let after_outage = |r: &RunResult| -> u64 { r.series.served.iter().skip(200).sum() };
    let sim = Simulation::new(&scenario, &Limits::default()).unwrap();
    let immediate = run(&sim, RuleName::Immediate, 1);
    assert_eq!(immediate.clients, 120_000);
    assert!(
        after_outage(&immediate) < 1000,
        "{}",
        after_outage(&immediate)
    );
    let full = run(&sim, RuleName::Full, 1);
    assert!(after_outage(&full) > 100_000, "{}", after_outage(&full));

    scenario.retry.budget_percent = 10.0;
    let sim = Simulation::new(&scenario, &Limits::default()).unwrap();
    let budgeted = run(&sim, RuleName::Immediate, 1);
    assert!(
        after_outage(&budgeted) > 100_000,
        "{}",
        after_outage(&budgeted)
    );
    assert!(budgeted.denied_by_budget > 0);
}
