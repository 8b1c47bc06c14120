//! Sweeps: grid parsing, override errors, determinism, counts and intervals.
use herd::RuleName;
use std::sync::atomic::{AtomicUsize, Ordering};

use herd_sim::Watch;
use herd_sim::model::Metrics;
use herd_sim::registry;
use herd_sim::sweep::{Axis, Row, Sweep, show};
use herd_sim::{Cancel, Limits};
use toml::Value;

/// A small, quick scenario: 200 clients, 2 minutes.
const SMALL: &str = "horizon_s = 120\n[clients]\ncount = 200\n[server]\ncapacity = 10\n";

fn base() -> Value {
    toml::from_str(SMALL).unwrap()
}

fn axes(args: &[&str]) -> Vec<Axis> {
    args.iter().map(|a| a.parse().unwrap()).collect()
}

fn sweep(args: &[&str], rules: &[RuleName], seeds: u64) -> Result<Sweep, String> {
    Sweep::new(
        &base(),
        axes(args),
        Some(rules),
        None,
        seeds,
        &Limits::default(),
    )
    .map_err(|e| e.to_string())
}

fn run(s: &Sweep) -> Vec<Row> {
    s.run(&|| {}, &Cancel::new()).unwrap()
}

#[test]
fn grid_is_the_product_first_axis_slowest() {
    let s = sweep(
        &["clients.count=1e2,2e2", "server.refusal_cost=0..0.2:0.1"],
        &[RuleName::Full, RuleName::Equal],
        2,
    )
    .unwrap();
    assert_eq!(s.cells().len(), 6);
    let shown: Vec<String> = s
        .cells()
        .iter()
        .map(|c| c.values().iter().map(show).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        shown,
        ["100 0", "100 0.1", "100 0.2", "200 0", "200 0.1", "200 0.2"]
    );
    assert_eq!(s.picks(4), [1, 1]);
    // `1e2` is held as the integer the field is.
    assert_eq!(s.axes()[0].values()[0], Value::Integer(100));
    assert_eq!(s.runs(), 6 * 2 * 2);
    let rows = run(&s);
    assert_eq!(rows.len(), 12);
    assert_eq!(
        (rows[3].cell, rows[3].rule.clone(), rows[3].runs),
        (1, RuleName::Equal.into(), 2)
    );
}

#[test]
fn override_errors_name_the_flag_and_field() {
    let err = sweep(&["server.capacityy=1,2"], &[RuleName::Full], 1).unwrap_err();
    assert!(
        err.starts_with("--set server.capacityy=1: unknown field `server.capacityy`"),
        "{err}"
    );
    let err = sweep(&["server.refusal_cost=0,1.5"], &[RuleName::Full], 1).unwrap_err();
    assert_eq!(
        err,
        "--set server.refusal_cost=1.5: server.refusal_cost: must be at least 0 and below 1, got 1.5"
    );
    let err = sweep(&["server.capacity=ten"], &[RuleName::Full], 1).unwrap_err();
    assert!(
        err.starts_with("--set server.capacity=ten: server.capacity"),
        "{err}"
    );
    let err = sweep(&["clients.count=1.5e2"], &[RuleName::Full], 1);
    assert!(err.is_ok(), "150 is whole: {err:?}");
    let err = sweep(&["seed=1,2"], &[RuleName::Full], 1).unwrap_err();
    assert!(err.contains("--runs"), "{err}");
    let err = sweep(
        &["retry.cap_ms=1000", "retry.cap_ms=2000"],
        &[RuleName::Full],
        1,
    )
    .unwrap_err();
    assert!(err.contains("already swept"), "{err}");
}

#[test]
fn contradictory_cells_are_named() {
    // Each value is fine alone; together the window is not a multiple of the step. Steps of
    // 300 ms hold the rules' 100 ms base only with continuous pauses.
    let continuous: Value = toml::from_str(&format!("pauses = \"continuous\"\n{SMALL}")).unwrap();
    let err = Sweep::new(
        &continuous,
        axes(&["step_ms=100,300", "window_ms=600"]),
        Some(&[RuleName::Full]),
        None,
        1,
        &Limits::default(),
    )
    .map_err(|e| e.to_string());
    assert!(
        err.is_ok(),
        "300 alone contradicts the base's window, not the cell: {err:?}"
    );
    // In whole steps, the cell's step does not divide the rules' pauses: named too.
    let err = sweep(&["step_ms=100,300", "window_ms=600"], &[RuleName::Full], 1).unwrap_err();
    assert!(
        err.starts_with("cell step_ms=300, window_ms=600: retry.pause_ms: 1000 ms is not a whole number of steps"),
        "{err}"
    );
    let err = sweep(&["step_ms=100,400", "window_ms=1000"], &[RuleName::Full], 1).unwrap_err();
    assert!(
        err.starts_with("cell step_ms=400, window_ms=1000: window_ms: must be a positive multiple"),
        "{err}"
    );
}

#[test]
fn rules_that_cannot_be_built_are_named_at_run_time() {
    // The base lists only `full`, so the cell is valid until `constant` is built.
    let base: Value = toml::from_str("[retry]\nrules = [\"full\"]\n").unwrap();
    let s = Sweep::new(
        &base,
        axes(&["retry.pause_ms=0"]),
        Some(&[RuleName::Constant]),
        None,
        1,
        &Limits::default(),
    )
    .unwrap();
    let err = s.run(&|| {}, &Cancel::new()).unwrap_err().to_string();
    assert!(
        err.starts_with("cell retry.pause_ms=0, rule constant, seed 1: retry.pause_ms"),
        "{err}"
    );
}

#[test]
fn sweep_is_deterministic_whatever_the_threads() {
    let s = sweep(
        &["server.capacity=5,10,20", "server.refusal_cost=0,0.1"],
        &[RuleName::Full, RuleName::Decorrelated],
        4,
    )
    .unwrap();
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| run(&s))
    };
    let one = on(1);
    assert_eq!(one, on(3));
    assert_eq!(one, run(&s));
}

/// Ctrl-C: no run starts once the flag is set, and only whole rows come back, each the row
/// of the whole sweep.
#[test]
fn an_interrupted_sweep_returns_whole_rows_only() {
    let s = sweep(
        &["server.capacity=5,10,20", "server.refusal_cost=0,0.1"],
        &[RuleName::Full, RuleName::Decorrelated],
        4,
    )
    .unwrap();
    let whole = run(&s);
    assert_eq!(whole.len(), 12);

    let cancel = Cancel::new();
    cancel.cancel();
    assert!(
        s.run(&|| panic!("no run starts"), &cancel)
            .unwrap()
            .is_empty()
    );

    // On one thread the runs go in order: set the flag after the tenth.
    let cancel = Cancel::new();
    let ran = AtomicUsize::new(0);
    let stop_after_ten = || {
        if ran.fetch_add(1, Ordering::Relaxed) + 1 == 10 {
            cancel.cancel();
        }
    };
    let rows = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| s.run(&stop_after_ten, &cancel))
        .unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), 10);
    assert_eq!(
        rows.len(),
        2,
        "runs 0–7 make two rows of 4 seeds; 8 and 9 no third"
    );
    for row in &rows {
        let same = whole
            .iter()
            .find(|w| w.cell == row.cell && w.rule == row.rule)
            .unwrap();
        assert_eq!(row, same);
    }
}

#[test]
fn same_seeds_and_the_model_dispatch_agree() {
    // A cell whose value is the base's own runs exactly what the model runs directly.
    let s = sweep(&["server.capacity=10,20"], &[RuleName::Full], 3).unwrap();
    assert_eq!(s.seeds(), [1, 2, 3]);
    let rows = run(&s);
    let direct: Vec<Metrics> = (1..=3)
        .map(|seed| {
            registry::check(&base(), &Limits::default())
                .unwrap()
                .run(&RuleName::Full.into(), seed, Watch::none())
                .unwrap()
        })
        .collect();
    let mean = direct
        .iter()
        .map(|m| m.get("half_served_s").unwrap().unwrap())
        .sum::<f64>()
        / 3.0;
    assert_eq!(rows[0].metric("half_served_s").unwrap().mean, Some(mean));
}

/// Regression: `recovered` got a t-interval, a point `[1, 1]` when every run recovered.
#[test]
fn recovered_is_a_proportion_with_a_wilson_interval() {
    let s = sweep(&["server.capacity=50"], &[RuleName::Full], 4).unwrap();
    let rows = run(&s);
    let rec = rows[0].metric("recovered").unwrap();
    assert_eq!(rec.interval, herd_sim::sweep::Interval::Wilson);
    assert_eq!((rec.mean, rec.hi), (Some(1.0), Some(1.0)));
    // Wilson, 4 of 4: lower end n / (n + z²) = 4 / 7.8415.
    assert!((rec.lo.unwrap() - 4.0 / (4.0 + 1.959_964_f64.powi(2))).abs() < 1e-6);
    assert_eq!(
        rows[0].metric("requests_per_client").unwrap().interval,
        herd_sim::sweep::Interval::T
    );
}

#[test]
fn never_recovered_is_counted_not_averaged() {
    // Exponential needs far longer than 2 minutes with capacity 10: nobody recovers.
    let s = sweep(&["server.capacity=10"], &[RuleName::Exponential], 2).unwrap();
    let rows = run(&s);
    let rec = rows[0].metric("recovered_s").unwrap();
    assert_eq!((rec.defined, rec.mean), (0, None));
    assert_eq!(rows[0].metric("served").unwrap().defined, 2);
}

#[test]
fn outage_shorthand_sets_one_outage() {
    let s = sweep(&["outage_s=0,5,20"], &[RuleName::Full], 2).unwrap();
    let rows = run(&s);
    let half = |i: usize| rows[i].metric("half_served_s").unwrap().mean.unwrap();
    assert!(half(0) < half(1) && half(1) < half(2), "{rows:?}");
}

#[test]
fn the_model_is_a_field_like_any_other() {
    let s = sweep(&["model=storm"], &[RuleName::Full], 1).unwrap();
    assert_eq!(run(&s).len(), 1);
    let err = sweep(&["model=storm,nope"], &[RuleName::Full], 1).unwrap_err();
    assert!(
        err.starts_with("--set model=nope: model: must be one of storm"),
        "{err}"
    );
}

#[test]
fn default_rules_and_seed_come_from_the_scenario() {
    let base: Value = toml::from_str(
        "seed = 7\nhorizon_s = 60\n[clients]\ncount = 50\n[retry]\nrules = [\"full\", \"equal\"]\n",
    )
    .unwrap();
    let s = Sweep::new(
        &base,
        axes(&["server.capacity=5"]),
        None,
        None,
        2,
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(s.rules(), [RuleName::Full, RuleName::Equal]);
    assert_eq!(s.seeds(), [7, 8]);
}

#[test]
fn the_engine_is_a_field_and_deterministic_rules_agree_exactly() {
    let s = sweep(&["engine=agent,cohort"], &[RuleName::Exponential], 2).unwrap();
    let rows = run(&s);
    assert_eq!(rows.len(), 2);
    for name in [
        "half_served_s",
        "all_served_s",
        "requests_per_client",
        "peak_after_outage",
    ] {
        let agent = rows[0].metric(name).unwrap();
        let cohort = rows[1].metric(name).unwrap();
        assert_eq!(agent.mean, cohort.mean, "{name}");
    }
    // The key really picks the engine: jittered runs are different samples.
    let rows = run(&sweep(&["engine=agent,cohort"], &[RuleName::Full], 2).unwrap());
    let per_client = |r: &Row| r.metric("requests_per_client").unwrap().mean;
    assert_ne!(per_client(&rows[0]), per_client(&rows[1]));
    let err = sweep(&["engine=warp"], &[RuleName::Full], 1).unwrap_err();
    assert!(err.contains("engine") && err.contains("warp"), "{err}");
}

/// The small scenario with 20 new clients a second, so that a throttle sees answers.
const OPEN: &str =
    "horizon_s = 120\n[clients]\ncount = 200\narrivals_per_s = 20\n[server]\ncapacity = 10\n";

fn open_sweep(args: &[&str]) -> Result<Sweep, String> {
    let base: Value = toml::from_str(OPEN).unwrap();
    let rules = [RuleName::Full];
    Sweep::new(&base, axes(args), Some(&rules), None, 2, &Limits::default())
        .map_err(|e| e.to_string())
}

/// The metrics of `rule` with `seed` on [`OPEN`] with `extra` TOML appended.
fn direct(extra: &str, rule: RuleName, seed: u64) -> Metrics {
    let tree: Value = toml::from_str(&format!("{OPEN}{extra}")).unwrap();
    registry::check(&tree, &Limits::default())
        .unwrap()
        .run(&rule.into(), seed, Watch::none())
        .unwrap()
}

#[test]
fn throttle_kinds_and_their_settings_sweep_as_axes() {
    // Regression: sweeping `retry.throttle.kind` used to fail (the path did not exist
    // without a throttle, and a kind's settings were errors under another kind).
    let err = open_sweep(&[
        "retry.throttle.kind=none,grpc-adaptive,sre-adaptive",
        "retry.throttle.k=1.5,3",
    ])
    .unwrap_err();
    // `none` has no `k`: the cell that combines them is named.
    assert!(
        err.starts_with("cell retry.throttle.kind=none, retry.throttle.k=1.5:"),
        "{err}"
    );
    let s = open_sweep(&[
        "retry.throttle.kind=grpc-adaptive,sre-adaptive",
        "retry.throttle.k=1.5,3",
    ])
    .unwrap();
    let rows = run(&s);
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let label = s.label(row.cell);
        let values = s.cells()[row.cell].values();
        let kind = show(&values[0]);
        let k = values[1]
            .as_float()
            .or_else(|| values[1].as_integer().map(|i| i as f64))
            .unwrap();
        for &seed in s.seeds() {
            let want = direct(
                &format!("[retry.throttle]\nkind = \"{kind}\"\nk = {k:?}\n"),
                RuleName::Full,
                seed,
            );
            let got = s.cells()[row.cell]
                .model()
                .run(&RuleName::Full.into(), seed, Watch::none())
                .unwrap();
            assert_eq!(got, want, "{label}, seed {seed}");
        }
    }
    // A larger K throttles less: more clients served.
    let served = |cell: usize| rows[cell].metric("served").unwrap().mean.unwrap();
    assert!(served(1) > served(0), "{rows:?}");

    let none = open_sweep(&["retry.throttle.kind=none,envoy-max-retries"]).unwrap();
    let got = none.cells()[0]
        .model()
        .run(&RuleName::Full.into(), 1, Watch::none())
        .unwrap();
    assert_eq!(got, direct("", RuleName::Full, 1));
    let err = open_sweep(&["retry.throttle.k=2"]).unwrap_err();
    assert!(err.contains("has no [retry.throttle]"), "{err}");
    let err =
        open_sweep(&["retry.throttle.kind=sre-adaptive", "retry.throttle.k=0.5"]).unwrap_err();
    assert!(
        err.starts_with("--set retry.throttle.k=0.5: retry.throttle.k"),
        "{err}"
    );
    let err = open_sweep(&["retry.throttle.kind=nope"]).unwrap_err();
    assert!(
        err.starts_with("--set retry.throttle.kind=nope: expected none or one of"),
        "{err}"
    );
}
