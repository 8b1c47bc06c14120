//! Fuzzing every model through its scenario tree: each shipped scenario (and the default of
//! each model) mutated at random, a few fields at a time, into the values a careless user
//! or an attacker would write (zero, negatives, 1e-300, 1e308, huge integers, strings,
//! lists of the wrong length, missing and unknown keys). Every mutant must be refused with
//! an error naming a field, or run.
//!
//! Bounds, asserted for every case: no panic; checking and running one variant with the
//! scenario's seed takes under [`CASE_SECONDS`] (the check's work estimate is what keeps a
//! run short: the limits below allow ten million units of work); and the whole
//! process peaks under [`PEAK_BYTES`] of resident memory (`VmHWM`, Linux). The cases come
//! from a fixed seed, so a failure reproduces, and no regression file is written.
use std::cell::Cell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use herd_sim::Limits;
use herd_sim::model::Variant;
use herd_sim::registry;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use toml::Value;

/// The longest one case may take (check and one run), in a debug build.
const CASE_SECONDS: u64 = 10;
/// The most resident memory the fuzzing process may reach.
const PEAK_BYTES: u64 = 2 << 30;
/// Mutants tried, over all scenarios.
const CASES: u32 = 400;

/// Limits that keep a run to a second or so: what a server would allow.
fn limits() -> Limits {
    Limits {
        max_clients: 100_000,
        max_steps: 1_000_000,
        max_bytes: 64 << 20,
        max_run_attempts: 10_000_000,
    }
}

/// The shipped scenarios and each model's empty tree (its defaults).
fn seeds() -> Vec<(String, Value)> {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "scenarios"]
        .iter()
        .collect();
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "toml").then_some(path)
        })
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a shipped scenario");
            let tree: toml::Table = text.parse().expect("shipped scenarios are TOML");
            (path.display().to_string(), Value::Table(tree))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    for name in [
        "storm",
        "metastable",
        "contention",
        "latency",
        "partial-failure",
    ] {
        let mut table = toml::Table::new();
        table.insert("model".to_owned(), Value::String(name.to_owned()));
        out.push((format!("default {name}"), Value::Table(table)));
    }
    out
}

/// What a mutation writes in place of `old`: one of the hostile values, the old number ten
/// times larger or smaller (a plausible mistake that may still run), or nothing.
fn hostile(pick: u64, old: Option<&Value>) -> Option<Value> {
    match (pick % 4, old) {
        (0, Some(Value::Integer(n))) => return Some(Value::Integer(n.saturating_mul(10))),
        (0, Some(Value::Float(x))) => return Some(Value::Float(x * 10.0)),
        (1, Some(Value::Integer(n))) => return Some(Value::Integer(n / 10)),
        (1, Some(Value::Float(x))) => return Some(Value::Float(x / 10.0)),
        _ => {}
    }
    let pick = pick / 4;
    let values = [
        Value::Integer(0),
        Value::Integer(-1),
        Value::Integer(i64::MAX),
        Value::Integer(1 << 40),
        Value::Float(1e-300),
        Value::Float(1e308),
        Value::Float(-1e-9),
        Value::Float(f64::NAN),
        Value::Float(f64::INFINITY),
        Value::Float(0.5),
        Value::String("x".repeat(10_000)),
        Value::String(String::new()),
        Value::Boolean(true),
        Value::Array(vec![
            Value::Integer(0),
            Value::Integer(10),
            Value::Integer(20),
        ]),
        Value::Array(vec![Value::Array(vec![
            Value::Integer(0),
            Value::Float(1e12),
        ])]),
        Value::Array(Vec::new()),
        Value::Table(toml::Table::new()),
    ];
    // One pick in nine removes the value (the default applies, or a field goes missing).
    let n = values.len() as u64 + 2;
    values.get((pick % n) as usize).cloned()
}

/// Every path to a value in `tree` (tables by key, arrays by index), the tree's own
/// included.
fn paths(tree: &Value, here: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(here.clone());
    match tree {
        Value::Table(t) => {
            for (k, v) in t {
                here.push(k.clone());
                paths(v, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                here.push(i.to_string());
                paths(v, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

/// The value at `path`, if there is one.
fn get<'t>(tree: &'t Value, path: &[String]) -> Option<&'t Value> {
    path.iter().try_fold(tree, |node, key| match node {
        Value::Table(t) => t.get(key),
        Value::Array(a) => a.get(key.parse::<usize>().ok()?),
        _ => None,
    })
}

/// Sets (or, with `None`, removes) the value at `path`; a path whose last key is new adds it.
fn set(tree: &mut Value, path: &[String], value: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = tree;
    for key in parents {
        node = match node {
            Value::Table(t) => match t.get_mut(key) {
                Some(v) => v,
                None => return,
            },
            Value::Array(a) => match key.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    match (node, value) {
        (Value::Table(t), Some(v)) => {
            t.insert(last.clone(), v);
        }
        (Value::Table(t), None) => {
            t.remove(last);
        }
        (Value::Array(a), Some(v)) => {
            if let Some(slot) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *slot = v;
            }
        }
        (Value::Array(a), None) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|&i| i < a.len()) {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// Applies `mutations` (a path pick and a value pick each) to `tree`; an unknown key now and
/// then.
fn mutate(tree: &Value, mutations: &[(u64, u64)]) -> Value {
    let mut tree = tree.clone();
    for &(at, pick) in mutations {
        let mut all = Vec::new();
        paths(&tree, &mut Vec::new(), &mut all);
        all.retain(|p| !p.is_empty() && p[0] != "model");
        if all.is_empty() || at % 13 == 0 {
            set(
                &mut tree,
                &["no_such_field".to_owned()],
                hostile(pick, None),
            );
            continue;
        }
        let path = all[(at % all.len() as u64) as usize].clone();
        let value = hostile(pick, get(&tree, &path));
        set(&mut tree, &path, value);
    }
    tree
}

/// Peak resident memory of this process, in bytes (Linux; `None` elsewhere).
fn peak_resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Checks the mutant and, when it is accepted, runs its first variant with its seed.
fn check_and_run(tree: &Value) -> Result<(), String> {
    let checked = registry::check(tree, &limits()).map_err(|e| e.to_string())?;
    let variant = checked
        .variants()
        .into_iter()
        .next()
        .unwrap_or(Variant::Rule(herd::RuleName::Full));
    checked
        .run(&variant, checked.seed(), herd_sim::Watch::none())
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn mutated_scenarios_of_every_model_are_refused_or_run_within_bounds() {
    let seeds = seeds();
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[23; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (
        0..seeds.len(),
        prop::collection::vec((any::<u64>(), any::<u64>()), 1..4),
    );
    let (refused, ran) = (Cell::new(0u32), Cell::new(0u32));
    let slowest = Cell::new(Duration::ZERO);
    let outcome = runner.run(&strategy, |(which, mutations)| {
        let (name, tree) = &seeds[which];
        let mutant = mutate(tree, &mutations);
        // On a thread of its own, so that a run that never ends fails the test instead of
        // hanging it (the thread is left behind; the process ends with the test).
        let (done, finished) = std::sync::mpsc::channel();
        let started = Instant::now();
        let case = mutant.clone();
        std::thread::spawn(move || {
            let _ = done.send(check_and_run(&case));
        });
        let result = finished.recv_timeout(Duration::from_secs(CASE_SECONDS));
        let took = started.elapsed();
        slowest.set(slowest.get().max(took));
        let Ok(result) = result else {
            return Err(TestCaseError::fail(format!(
                "{name} {mutations:?}: no answer (or a panic) within {took:?}: {mutant}"
            )));
        };
        match result {
            Ok(()) => ran.set(ran.get() + 1),
            Err(message) => {
                prop_assert!(!message.contains('\n'), "{name}: two lines: {message}");
                prop_assert!(
                    message.chars().count() < 600,
                    "{name}: {} characters: {message}",
                    message.chars().count()
                );
                refused.set(refused.get() + 1);
            }
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    let (refused, ran) = (refused.get(), ran.get());
    eprintln!(
        "{CASES} mutants: refused {refused}, ran {ran}, slowest {:?}",
        slowest.get()
    );
    assert!(refused > 0 && ran > 0, "refused {refused}, ran {ran}");
    if let Some(peak) = peak_resident() {
        assert!(peak < PEAK_BYTES, "peak resident memory {peak} bytes");
    }
}
