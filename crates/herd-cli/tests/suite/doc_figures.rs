//! Every figure the docs quote is reproduced by the command shown beside it.
//!
//! README.md, docs/*.md and crates/herd/docs/*.md carry, next to each figure, an HTML comment
//! (invisible when rendered) naming the `herd` command that prints it and what it prints:
//! `doc_figures/marker.rs` defines the two forms. This test finds every marker, runs the
//! built binary with the marker's arguments from the repository's root, and compares what it
//! printed with the figure as the docs print it (the same rounding); a figure must also appear
//! in the prose or table the marker annotates, so that a figure edited in the prose alone
//! fails as surely as one edited in the marker.
//!
//! Figures marked `slow` (a minute or more in a debug build) are listed but not run here;
//! `tools/doc-figures` runs them all in a release build (`--ignored` below).
use crate::support;

#[path = "doc_figures/commands.rs"]
mod commands;
#[path = "doc_figures/compare.rs"]
mod compare;
#[path = "doc_figures/json_path.rs"]
mod json_path;
#[path = "doc_figures/marker.rs"]
mod marker;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use marker::{Expect, Figure};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Markdown files that may carry figures, relative to the repository's root.
fn doc_files() -> Vec<String> {
    let mut files = vec!["README.md".to_owned()];
    for dir in ["docs", "crates/herd/docs"] {
        let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
            .expect("docs folder")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".md"))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        names.sort();
        files.extend(names);
    }
    files
}

fn all_figures() -> Vec<Figure> {
    let mut figures = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(root().join(&file)).expect("readable doc");
        figures.extend(marker::markers(&file, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    figures
}

/// Runs each distinct command once and checks every figure; the failures, one per line.
fn check_all(figures: &[Figure]) -> Vec<String> {
    let mut outputs: HashMap<Vec<String>, Result<String, String>> = HashMap::new();
    let mut failures = Vec::new();
    for figure in figures {
        let output = outputs.entry(figure.args.clone()).or_insert_with(|| {
            let args: Vec<&str> = figure.args.iter().map(String::as_str).collect();
            let started = Instant::now();
            let out = support::herd(&args);
            eprintln!(
                "{:>6.2} s  herd {}",
                started.elapsed().as_secs_f64(),
                args.join(" ")
            );
            let stdout = support::stdout(&out);
            if stdout.is_empty() && !out.status.success() {
                Err(format!("failed: {}", support::stderr(&out).trim_end()))
            } else {
                Ok(stdout)
            }
        });
        let result = output
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|stdout| check(figure, stdout));
        if let Err(e) = result {
            failures.push(format!(
                "{} (herd {}): {e}",
                figure.place,
                figure.args.join(" ")
            ));
        }
    }
    failures
}

/// Whether `stdout`, printed by the figure's command, shows what the figure says.
fn check(figure: &Figure, stdout: &str) -> Result<(), String> {
    match &figure.expect {
        Expect::Values(checks) => {
            let json: serde_json::Value =
                serde_json::from_str(stdout).map_err(|e| format!("not JSON: {e}"))?;
            let mut wrong = Vec::new();
            for c in checks {
                let outcome = json_path::read(&json, &c.path)
                    .and_then(|v| compare::prints_as(&v, c.scale, &c.value))
                    .and_then(|()| {
                        if !c.quoted || compare::quoted_in(&figure.scope, &c.value) {
                            Ok(())
                        } else {
                            Err(format!("{} is not in the text beside the marker", c.value))
                        }
                    });
                if let Err(e) = outcome {
                    wrong.push(format!("{}: {e}", c.path));
                }
            }
            if wrong.is_empty() {
                Ok(())
            } else {
                Err(wrong.join("; "))
            }
        }
        Expect::Lines(lines) => {
            // Runs of spaces are one: a column's padding follows rows the excerpt left out.
            let spaced = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
            let mut printed = stdout.lines().map(spaced);
            // A block may open with the command as typed, `$ herd ARGS`: the marker's own.
            let command = format!("$ herd {}", figure.args.join(" "));
            let lines = match lines.first() {
                Some(first) if first.starts_with("$ ") => {
                    if *first != command {
                        return Err(format!(
                            "the block shows {first:?}, the marker runs {command:?}"
                        ));
                    }
                    &lines[1..]
                }
                _ => &lines[..],
            };
            // Indentation is not compared, and `…` stands for lines left out.
            for line in lines.iter().map(|l| spaced(l)).filter(|l| l != "…") {
                if !printed.any(|p| p == line) {
                    return Err(format!(
                        "this line is not printed (in this order): {line:?}"
                    ));
                }
            }
            Ok(())
        }
    }
}

#[test]
fn every_cheap_doc_figure_holds() {
    let figures = all_figures();
    let (slow, cheap): (Vec<Figure>, Vec<Figure>) = figures.into_iter().partition(|f| f.slow);
    assert!(
        cheap.len() >= 30,
        "only {} cheap figures found",
        cheap.len()
    );
    for f in &slow {
        eprintln!("slow, not run here: {} herd {}", f.place, f.args.join(" "));
    }
    assert_all_hold(&cheap);
}

/// The dear figures; `tools/doc-figures` runs them in a release build.
#[test]
#[ignore = "minutes in a debug build: run by tools/doc-figures"]
fn every_slow_doc_figure_holds() {
    let slow: Vec<Figure> = all_figures().into_iter().filter(|f| f.slow).collect();
    assert_all_hold(&slow);
}

/// Fails naming every figure in `figures` that differs from its command.
fn assert_all_hold(figures: &[Figure]) {
    let failures = check_all(figures);
    assert!(
        failures.is_empty(),
        "{} doc figures differ from their commands:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The checker itself: a figure changed in the prose, or in the marker, or a pasted line that
/// the command does not print, fails; the true figures pass.
#[test]
fn a_wrong_figure_fails() {
    let doc = |prose: &str, marker: &str| {
        let text = format!("Intro.\n\n{prose}\n<!-- figure: {marker} -->\n\nAfter.\n");
        let figures = marker::markers("t.md", &text).expect("well formed");
        check_all(&figures)
    };
    let run = "herd storm --rule full --format json";
    let path = ".results[rule=full].all_served_s";
    assert!(
        doc(
            "All served after 29.7 s.",
            &format!("{run} => {path} = 29.7")
        )
        .is_empty()
    );
    let prose = doc(
        "All served after 29.8 s.",
        &format!("{run} => {path} = 29.7"),
    );
    assert!(prose[0].contains("not in the text"), "{prose:?}");
    let marker = doc(
        "All served after 29.8 s.",
        &format!("{run} => {path} = 29.8"),
    );
    assert!(marker[0].contains("prints 29.7"), "{marker:?}");
    let digits = doc(
        "All served after 29.70 s.",
        &format!("{run} => {path} = 29.70"),
    );
    assert!(digits.is_empty(), "{digits:?}");
    let part = doc("Served after 129.7 s.", &format!("{run} => {path} = 29.7"));
    assert_eq!(part.len(), 1, "129.7 does not quote 29.7");

    let block = |line: &str| {
        let text = format!("<!-- figure: herd storm -->\n```text\n{line}\n```\n");
        check_all(&marker::markers("t.md", &text).expect("well formed"))
    };
    assert!(block("herd storm: default scenario, seed 1").is_empty());
    assert!(block("$ herd storm\nherd storm: default scenario, seed 1").is_empty());
    assert_eq!(
        block("$ herd storm --seed 2\nherd storm: default scenario, seed 1").len(),
        1
    );
    assert_eq!(
        block("…\n  full  2000").len(),
        1,
        "a partial line is not a line"
    );
    let rows = "herd storm: default scenario, seed 1\n…\n";
    assert!(
        block(rows).is_empty(),
        "indentation and elisions are not compared"
    );
    let padded = "herd storm:  default scenario,   seed 1";
    assert!(block(padded).is_empty(), "padding is not compared");
    assert_eq!(block("herd storm: default scenario, seed 2").len(), 1);
}

#[test]
fn malformed_markers_are_refused() {
    for bad in [
        "<!-- figure: storm --format json => .a = 1 -->",
        "<!-- figure: herd storm --format json => .a 1 -->",
        "<!-- figure: herd storm -->\n\nno block",
        "<!-- figure herd storm -->",
        "<!-- figure: herd storm => .a*x = 1 -->",
    ] {
        assert!(marker::markers("t.md", bad).is_err(), "{bad}");
    }
}

#[test]
fn paths_read_fields_items_selections_and_intervals() {
    let v: serde_json::Value = serde_json::from_str(
        r#"{"cells":[{"rule":"full","m":{"lo":1.0,"hi":4.0}},{"rule":"equal","n":[1,2,3]}]}"#,
    )
    .unwrap();
    assert_eq!(json_path::read(&v, ".cells[0].rule").unwrap(), "full");
    assert_eq!(
        json_path::read(&v, ".cells[rule=full].m.half").unwrap(),
        1.5
    );
    assert_eq!(json_path::read(&v, ".cells[rule=equal].n.len").unwrap(), 3);
    assert_eq!(
        json_path::read(&v, ".cells[rule=full&m.lo=1].m.hi").unwrap(),
        4.0
    );
    assert!(json_path::read(&v, ".cells[rule=full&m.lo=2]").is_err());
    assert!(json_path::read(&v, ".cells[rule=none]").is_err());
    assert!(json_path::read(&v, ".cells[2]").is_err());
    let clipped: serde_json::Value =
        serde_json::from_str(r#"{"lo":0.0,"hi":63.0,"mean":29.0,"interval":"t_clipped"}"#).unwrap();
    assert_eq!(json_path::read(&clipped, ".half").unwrap(), 34.0);
}

/// Every `herd` command in the shell blocks of README.md and docs/*.md runs and exits 0: in a
/// folder of its own (where the scenarios are reachable as `scenarios/…` and a chart is
/// written under `docs/`), with its work-setting flags cut to small values
/// (`commands::SMALLER`), each bounded in time; those `commands::SKIPPED` lists say why not.
#[test]
fn every_documented_command_runs() {
    let dir = std::env::temp_dir().join(format!("herd-doc-commands-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("docs")).expect("scratch folder");
    let scenarios = dir.join("scenarios");
    if !scenarios.exists() {
        std::os::unix::fs::symlink(root().join("scenarios"), &scenarios).expect("link");
    }
    let mut failures = Vec::new();
    let mut ran = 0;
    for file in doc_files()
        .into_iter()
        .filter(|f| !f.starts_with("crates/"))
    {
        let text = std::fs::read_to_string(root().join(&file)).expect("readable doc");
        for command in commands::commands(&file, &text) {
            let line = command.args.join(" ");
            if let Some((_, why)) = commands::SKIPPED.iter().find(|(p, _)| line.starts_with(p)) {
                eprintln!("skipped  herd {line}: {why}");
                continue;
            }
            let args = commands::smaller(&command.args);
            let started = Instant::now();
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_herd"))
                .args(&args)
                .current_dir(&dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("herd runs");
            // Bounded: a command that has not finished in a minute (a debug build) fails.
            let status = loop {
                if let Some(status) = child.try_wait().expect("wait") {
                    break Some(status);
                }
                if started.elapsed().as_secs() > 60 {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            ran += 1;
            eprintln!(
                "{:>6.2} s  herd {}",
                started.elapsed().as_secs_f64(),
                args.join(" ")
            );
            match status {
                Some(s) if s.success() => {}
                // `herd check` exits 1 when it finds what the docs show it finding.
                Some(s) if args[0] == "check" && s.code() == Some(1) => {}
                Some(s) => {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    failures.push(format!(
                        "{} herd {line}: {s}: {}",
                        command.place,
                        err.trim()
                    ));
                }
                None => failures.push(format!("{} herd {line}: over a minute", command.place)),
            }
        }
    }
    assert!(ran > 20, "only {ran} commands found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
