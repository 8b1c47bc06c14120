//! One spelling per idea across subcommands (docs/cli.md): `--rule` repeatable or a comma
//! list, `--runs K`, `--format table|json|csv`, negative numbers read as values and refused
//! in one line naming the field, JSON fields that mean one thing everywhere, and no internal
//! wording in `--help`.
use serde_json::Value;

use crate::support;

use support::{fails_with_input_error, ok, usage_error};

#[test]
fn a_negative_number_is_a_value_and_its_range_names_the_field() {
    // Before: clap's "unexpected argument '-0' found".
    for args in [
        &["storm", "--refusal-cost", "-0.1"][..],
        &["storm", "--refusal-cost", "1"][..],
    ] {
        fails_with_input_error(args, "refusal_cost must be in [0, 1)");
    }
    let err = usage_error(&["rules", "--rule", "grpc", "--jitter", "-0.5"]);
    assert!(err.contains("jitter"), "{err}");
    assert!(!err.contains("unexpected argument"), "{err}");
    fails_with_input_error(
        &["lab", "storm", "--time-scale", "-1"],
        "time_scale must be in (0, 10]",
    );
}

#[test]
fn extreme_time_scale_is_refused_not_a_panic() {
    // Before: a panic in Duration::from_secs_f64.
    fails_with_input_error(&["lab", "storm", "--time-scale", "1e25"], "time_scale");
}

fn rules_of_csv(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_owned())
        .collect()
}

#[test]
fn rule_is_repeatable_and_takes_a_comma_list_in_storm_and_sweep() {
    let storm = ok(&[
        "storm",
        "--rule",
        "full,equal",
        "--rule",
        "exponential",
        "--format",
        "csv",
    ]);
    assert_eq!(rules_of_csv(&storm), ["full", "equal", "exponential"]);
    let sweep = ok(&[
        "sweep",
        "--set",
        "outage_s=5",
        "--rule",
        "full",
        "--rule",
        "equal",
        "--runs",
        "2",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&sweep).unwrap();
    assert_eq!(v["grid"]["seeds"]["count"], 2);
    let rules: Vec<&str> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["full", "equal"]);
    fails_with_input_error(&["storm", "--rule", "full,fulll"], "fulll");
}

#[test]
fn lab_chain_takes_several_rules_and_names_its_figures_apart_from_amplify() {
    let lab = ok(&[
        "lab",
        "chain",
        "--rule",
        "immediate,constant",
        "--pause-ms",
        "1",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&lab).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let row = &results[1]["services"][3];
    assert_eq!(results[1]["rule"], "constant");
    assert_eq!(row["measured"], 27.0);
    assert_eq!(row["predicted"], 27.0);
    assert!(row.get("receives").is_none(), "one name per meaning");
    assert_eq!(results[1]["verdict"]["verdict"], "agrees");

    let amp = ok(&["amplify", "scenarios/graphs/chain.toml", "--format", "json"]);
    let v: Value = serde_json::from_str(&amp).unwrap();
    assert_eq!(v["services"][3]["predicted"], 27.0);
    assert!(v["services"][3].get("receives").is_none());
}

#[test]
fn every_table_also_prints_as_csv() {
    let amp = ok(&["amplify", "scenarios/graphs/chain.toml", "--format", "csv"]);
    assert_eq!(
        amp.lines().next(),
        Some("service,predicted,fails,answer_failure_probability")
    );
    assert_eq!(amp.lines().nth(4), Some("stock-db,27,true,1"));
    let lab = ok(&["lab", "chain", "--format", "csv"]);
    assert!(
        lab.starts_with("rule,seed,service,address,views,received,measured"),
        "{lab}"
    );
    assert_eq!(lab.lines().count(), 5);
}

#[test]
fn a_random_graph_with_one_view_is_too_small_to_judge() {
    // Before: "measured is outside the sampling error of predicted" from a single view.
    let text = ok(&[
        "lab",
        "chain",
        "scenarios/graphs/partial-failure.toml",
        "--views",
        "1",
    ]);
    assert!(text.contains("too few views to judge"), "{text}");
    assert!(!text.contains("outside the sampling error"), "{text}");
}

/// The help of every command.
const HELP: [&[&str]; 10] = [
    &["rules", "--help"],
    &["storm", "--help"],
    &["sweep", "--help"],
    &["amplify", "--help"],
    &["hedge", "--help"],
    &["check", "--help"],
    &["serve", "--help"],
    &["lab", "chain", "--help"],
    &["lab", "storm", "--help"],
    &["lab", "hedge", "--help"],
];

/// Help points a reader only at documents the repository holds (every `*.md` or `docs/…`
/// path it names exists), and never at numbered sections of a document it does not hold.
#[test]
fn help_names_only_documents_the_repository_holds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for cmd in HELP {
        let help = ok(cmd);
        assert!(!help.contains('§'), "{cmd:?} cites a numbered section");
        for word in help.split(|c: char| c.is_whitespace() || "(),;`'\"".contains(c)) {
            let path = word.trim_end_matches(['.', ':']);
            if path.ends_with(".md") || path.starts_with("docs/") {
                assert!(
                    root.join(path).exists(),
                    "{cmd:?} names {path}, which the repository lacks"
                );
            }
        }
    }
}

#[test]
fn docs_cli_lists_every_flag_of_every_command() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md"))
        .expect("docs/cli.md");
    for cmd in HELP {
        for line in ok(cmd).lines() {
            let Some(flag) = line.trim_start().split([' ', ',']).next() else {
                continue;
            };
            if !flag.starts_with("--") || matches!(flag, "--help" | "--version") {
                continue;
            }
            assert!(
                doc.contains(&format!("`{flag}")),
                "docs/cli.md lacks {flag} of {cmd:?}"
            );
        }
    }
}

#[test]
fn lab_chain_runs_seeds_like_every_other_command() {
    let text = ok(&[
        "lab",
        "chain",
        "scenarios/graphs/partial-failure.toml",
        "--views",
        "30",
        "--runs",
        "2",
        "--seed",
        "7",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&text).unwrap();
    let seeds: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, [7, 8]);
    fails_with_input_error(
        &["lab", "chain", "--runs", "0"],
        "runs must be in [1, 100], got 0 (--runs)",
    );
}
