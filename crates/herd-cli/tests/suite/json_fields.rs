//! Every JSON field the commands print is in docs/cli.md, and every field docs/cli.md lists
//! is printed by some command: the commands run with `--format json` on the shipped scenarios
//! and their keys are compared with the page's "JSON fields" section.
//!
//! A key is documented when it appears in backticks in that section (in the field column or,
//! for a field inside an object, in the object's meaning). Two kinds of object are data, not
//! fields, and are checked elsewhere: `metrics` (keyed by the model's metric names,
//! docs/model.md) and `values` (keyed by the swept paths); `scenario` and `base` echo the
//! scenario as run, named as in a scenario file (docs/model.md). Fields only the page's HTTP
//! API returns (its rows name no command) are left to the lab's API tests.
use crate::support;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use support::{herd, stderr, stdout};

/// The commands, each printing one JSON object.
const COMMANDS: &[&[&str]] = &[
    &["storm", "--format", "json"],
    &["storm", "--runs", "2", "--format", "json"],
    &["storm", "--engine", "cohort", "--format", "json"],
    &["storm", "--throttle", "grpc", "--format", "json"],
    &[
        "storm",
        "scenarios/metastable-retry.toml",
        "--format",
        "json",
    ],
    &[
        "storm",
        "scenarios/contention.toml",
        "--runs",
        "2",
        "--clients",
        "10",
        "--format",
        "json",
    ],
    &[
        "storm",
        "scenarios/brooker-2022.toml",
        "--runs",
        "1",
        "--format",
        "json",
    ],
    &[
        "sweep",
        "--set",
        "clients.count=100,200",
        "--runs",
        "2",
        "--format",
        "json",
    ],
    &["amplify", "scenarios/graphs/chain.toml", "--format", "json"],
    &[
        "amplify",
        "scenarios/graphs/partial-failure.toml",
        "--simulate",
        "50",
        "--format",
        "json",
    ],
    &["hedge", "--format", "json"],
    &[
        "hedge",
        "--runs",
        "2",
        "--requests",
        "2000",
        "--format",
        "json",
    ],
    &["hedge", "--utilisation", "0.3,0.6", "--format", "json"],
    &[
        "check",
        "scenarios/configs/grpc-service-config.json",
        "--format",
        "json",
    ],
    &[
        "check",
        "--mesh",
        "scenarios/check/mesh.toml",
        "--format",
        "json",
    ],
    &["lab", "chain", "--format", "json"],
    &[
        "lab",
        "hedge",
        "--requests",
        "150",
        "--time-scale",
        "1",
        "--policy",
        "none",
        "--sim-runs",
        "2",
        "--format",
        "json",
    ],
    &["lab", "storm", "--clients", "20", "--format", "json"],
];

/// Objects whose keys are data, not field names.
const DATA: &[&str] = &["metrics", "values", "scenario", "base"];

fn walk(value: &Value, command: &str, keys: &mut BTreeMap<String, BTreeSet<String>>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                keys.entry(k.clone())
                    .or_default()
                    .insert(command.to_owned());
                if !DATA.contains(&k.as_str()) {
                    walk(v, command, keys);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, command, keys);
            }
        }
        _ => {}
    }
}

/// The "JSON fields" section of docs/cli.md: its field column's names, and every word in
/// backticks anywhere in it.
fn documented() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md"))
        .expect("docs/cli.md");
    let section = text
        .split("\n## JSON fields")
        .nth(1)
        .expect("docs/cli.md has a JSON fields section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let words = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .flat_map(|code| {
                code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let mut columns = BTreeSet::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        // A field only the page's HTTP API answers with is checked by the lab's tests.
        let commands = line.trim_end_matches('|').rsplit('|').next().unwrap_or("");
        if !commands.contains('`')
            && !commands.contains("metastable")
            && !commands.contains("contention")
        {
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("");
        // `storm.runs` documents `runs` inside `storm`: the last name is the field.
        for code in first.split('`').skip(1).step_by(2) {
            if let Some(last) = code.rsplit('.').next() {
                columns.insert(last.to_owned());
            }
        }
    }
    (columns, words(section).into_iter().collect())
}

#[test]
fn every_printed_field_is_documented_and_every_documented_field_printed() {
    let mut keys = BTreeMap::new();
    for args in COMMANDS {
        let o = herd(args);
        // 1: a lab's verdict or a finding; the JSON is printed all the same.
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            stderr(&o)
        );
        let v: Value = serde_json::from_str(&stdout(&o))
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON object: {e}"));
        walk(&v, &args[..2].join(" "), &mut keys);
    }
    let (columns, words) = documented();
    let undocumented: Vec<String> = keys
        .iter()
        .filter(|(k, _)| !words.contains(*k))
        .map(|(k, commands)| {
            format!(
                "{k} ({})",
                commands.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    let absent: Vec<&String> = columns.iter().filter(|c| !keys.contains_key(*c)).collect();
    assert!(
        undocumented.is_empty() && absent.is_empty(),
        "printed but not in docs/cli.md's JSON fields: {undocumented:#?}\n\
         in docs/cli.md's JSON fields but printed by no command: {absent:?}"
    );
}

/// The commands whose CSV is a table of the JSON's rows, with the key of those rows.
const CSV_COMMANDS: &[(&[&str], &str)] = &[
    (&["storm"], "results"),
    (&["storm", "--throttle", "grpc"], "results"),
    (&["hedge", "--requests", "500"], "results"),
    (&["storm", "scenarios/metastable-retry.toml"], "results"),
    (
        &["storm", "scenarios/contention.toml", "--clients", "10"],
        "points",
    ),
    (&["storm", "scenarios/brooker-2022.toml"], "results"),
    (
        &["sweep", "--set", "clients.count=100,200", "--runs", "2"],
        "cells",
    ),
];

/// The CSV columns a row's JSON field stands for: a scalar its own name; an object of data
/// (`metrics`, `values`) its keys, a statistic's parts as `key_part`; another object its
/// scalar fields as `name.field`; a list of rows (`windows`) each field as `window.field`.
/// The storm's `series` (a time series per window) is the JSON's alone.
fn csv_columns(row: &Value) -> BTreeSet<String> {
    let mut columns = BTreeSet::new();
    for (key, value) in row.as_object().expect("a row is an object") {
        match value {
            Value::Object(inner) if key == "metrics" || key == "values" => {
                for (k, v) in inner {
                    match v {
                        Value::Object(parts) => {
                            columns.extend(parts.keys().map(|p| format!("{k}_{p}")));
                        }
                        _ => {
                            columns.insert(k.clone());
                        }
                    }
                }
            }
            // The storm's per-window series is a time series, the JSON's alone (`null` in a
            // run that did not keep it).
            Value::Object(_) | Value::Null if key == "series" => {}
            Value::Object(inner) => columns.extend(
                inner
                    .iter()
                    .filter(|(_, v)| !v.is_object() && !v.is_array())
                    .map(|(k, _)| format!("{key}.{k}")),
            ),
            Value::Array(items) if key == "windows" => {
                for item in items.iter().take(1) {
                    let fields = item.as_object().expect("a window is an object");
                    columns.extend(fields.keys().map(|k| format!("window.{k}")));
                }
            }
            Value::Array(_) => {}
            _ => {
                columns.insert(key.clone());
            }
        }
    }
    columns
}

/// CSV carries every scalar field the JSON has, for each command whose CSV is a table of the
/// JSON's rows (aggregates such as `summary` and the echoed `scenario` stay in the JSON).
#[test]
fn csv_carries_every_field_of_the_json_rows() {
    for &(command, rows) in CSV_COMMANDS {
        let run = |format: &str| {
            let args: Vec<&str> = command
                .iter()
                .copied()
                .chain(["--format", format])
                .collect();
            let out = herd(&args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            stdout(&out)
        };
        let json: Value = serde_json::from_str(&run("json")).expect("JSON");
        let csv = run("csv");
        let header: BTreeSet<String> = csv
            .lines()
            .next()
            .expect("a header")
            .split(',')
            .map(str::to_owned)
            .collect();
        let wanted: BTreeSet<String> = json[rows]
            .as_array()
            .unwrap_or_else(|| panic!("{command:?}: no {rows}"))
            .iter()
            .flat_map(csv_columns)
            .collect();
        let missing: Vec<&String> = wanted.difference(&header).collect();
        assert!(missing.is_empty(), "{command:?}: the CSV lacks {missing:?}");
    }
}
