//! What a careless user or an attacker may give the command: every command stays bounded
//! and says what is wrong in one line, instead of running for ever, eating the machine, or
//! answering something silently wrong. Each test names what happened before.
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support;

use support::{fails_with_input_error, herd, scratch_file, stderr, temp, usage_error};

/// Runs `herd ARGS…` and fails the test (killing it) if it takes longer than `limit`; its
/// exit code and stderr.
fn within(args: &[&str], limit: Duration) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("herd runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status.code(), err)
}

/// One line of bad input (exit 2) naming `needle`, within a few seconds.
fn refused_in_time(args: &[&str], needle: &str) {
    let (code, err) = within(args, Duration::from_secs(20));
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

/// Before: each of these ran for ever (rates that spread the arrivals over 10^300 s, and
/// up-times of 1 ns between pauses, drawn one at a time).
#[test]
fn latency_runs_that_would_never_end_are_refused_naming_the_field() {
    let rate = scratch_file(
        "rate.toml",
        "model = \"latency\"\n[traffic]\nrate_per_s = 1e-300\n",
    );
    refused_in_time(&["hedge", &rate], "traffic.rate_per_s: the run would cover");
    refused_in_time(
        &["sweep", &rate, "--set", "traffic.fan_out=1,2"],
        "traffic.rate_per_s",
    );
    let hiccups = scratch_file(
        "hiccups.toml",
        "model = \"latency\"\n[hiccups]\nevery_s = 1e-9\n",
    );
    refused_in_time(&["hedge", &hiccups], "hiccups.every_s");
    refused_in_time(
        &["hedge", "--utilisation", "1e-300"],
        "--utilisation 1e-300 sets traffic.rate_per_s",
    );
}

/// Before: `herd storm /dev/zero` read 4 GB, and a 43 MB graph took 3.4 GB before its error.
#[test]
fn input_files_are_refused_when_not_regular_or_too_large() {
    for command in [
        &["storm", "/dev/zero"][..],
        &["hedge", "/dev/zero"],
        &["sweep", "/dev/zero", "--set", "clients.count=100,200"],
        &["amplify", "/dev/zero"],
        &["lab", "storm", "/dev/zero"],
        &["lab", "chain", "/dev/zero"],
    ] {
        refused_in_time(command, "/dev/zero: not a regular file");
    }
    let big = temp("big.toml");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(5 << 20))
        .expect("a sparse 5 MiB file");
    let big = big.to_str().expect("UTF-8 path");
    for command in [&["storm", big][..], &["amplify", big]] {
        refused_in_time(command, "more than the 4194304 an input file may have");
    }
}

/// Before: a closed pipe ended with "error: Broken pipe (os error 32)" and exit 1. Each
/// command writes more than a pipe holds (64 KiB), through each way the output is written:
/// the storm's JSON, a model's own report, and CSV lines.
#[test]
fn a_closed_pipe_ends_quietly_with_success() {
    for command in [
        &["storm", "--format", "json", "--rule", "all", "--runs", "3"][..],
        &[
            "storm",
            "scenarios/metastable-retry.toml",
            "--runs",
            "5",
            "--format",
            "json",
        ],
        &[
            "hedge",
            "--requests",
            "50",
            "--policy",
            "none",
            "--runs",
            "1000",
            "--format",
            "csv",
        ],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
            .args(command)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("herd runs");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut first = [0u8; 10];
        stdout.read_exact(&mut first).expect("ten bytes");
        drop(stdout);
        let out = child.wait_with_output().expect("wait");
        assert_eq!(out.status.code(), Some(0), "{command:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{command:?}");
    }
}

/// Before: every run kept its series (hundreds of kB), so `--runs 100000` took 6 GB.
#[test]
fn several_runs_keep_the_series_of_the_first_run_only() {
    let out = herd(&["storm", "--runs", "3", "--rule", "full", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let series = |i: usize| {
        v["results"][i]["series"]["arrivals"]
            .as_array()
            .map(Vec::len)
    };
    assert!(series(0).is_some_and(|n| n > 0), "{:?}", series(0));
    // A run whose series was not kept says so: `null`, never empty lists.
    assert_eq!((series(1), series(2)), (None, None));
    assert!(v["results"][1]["series"].is_null() && v["results"][2]["series"].is_null());
    assert_eq!(v["summary"][0]["runs"], 3);
}

/// Before: `[0, 10, 20]` was read as `[0, 10]`, and a window of 10^12 ms over an hour
/// reported a peak of 0 on an axis of 0 to 10^9 s.
#[test]
fn silently_wrong_scenarios_are_errors() {
    let outage = scratch_file("outage3.toml", "[server]\noutages = [[0, 10, 20]]\n");
    fails_with_input_error(
        &["storm", &outage],
        "server.outages (line 2): an outage is two numbers, [start_s, end_s]; got 3 number(s)",
    );
    let window = scratch_file("window.toml", "window_ms = 1e12\n");
    fails_with_input_error(
        &["storm", &window],
        "window_ms (line 1): a window of 1000000000000 ms is longer than the horizon (3600 s)",
    );
}

/// Before: `--simulate 0` ran one request and "agreed within 4 standard errors", every
/// standard error 0.
#[test]
fn flags_that_cannot_mean_anything_are_refused() {
    for n in ["0", "1", "49"] {
        fails_with_input_error(
            &["amplify", "scenarios/graphs/chain.toml", "--simulate", n],
            &format!(
                "--simulate must be at least 50 (the standard errors come from 50 batches of requests), got {n}"
            ),
        );
    }
}

/// Before: under `ulimit -n 20` the chain ran and blamed the measurement ("measured counts
/// differ from the prediction").
#[test]
fn lab_chain_refuses_too_few_descriptors_up_front() {
    let out = Command::new("sh")
        .args(["-c", "ulimit -n 20 && exec \"$0\" lab chain --views 10"])
        .arg(env!("CARGO_BIN_EXE_herd"))
        .output()
        .expect("sh runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: 4 services need about 84 file descriptors, and the limit is 20"),
        "{err}"
    );
}

/// Before: a 100 KB name was echoed whole, and 1e308 as 309 digits.
#[test]
fn error_lines_shorten_the_values_they_quote() {
    let long = "x".repeat(100_000);
    let err = usage_error(&["storm", "--rule", &long]);
    assert!(err.len() < 600, "{} bytes", err.len());
    assert!(err.contains("(100000 characters)"), "{err}");
    let huge = format!("{}", 1e308);
    let err = usage_error(&["hedge", "--utilisation", &huge]);
    assert!(err.contains("got 1e308"), "{err}");
}

/// Starts `herd ARGS…` with stdout and stderr piped, from the repository's root.
fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_herd"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("herd runs")
}

fn ctrl_c(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -INT");
}

/// A folder of its own for one test's charts.
fn chart_dir(name: &str) -> std::path::PathBuf {
    let dir = temp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("chart dir");
    dir
}

/// Before: Ctrl-C printed only the table's header and exit 130.
#[test]
fn ctrl_c_on_storm_prints_the_runs_that_finished_marked_interrupted() {
    let child = spawn(&["storm", "--runs", "2000", "--rule", "all"]);
    // Let some runs finish (each takes a fraction of a second).
    std::thread::sleep(Duration::from_millis(1500));
    ctrl_c(&child);
    let out = child.wait_with_output().expect("wait");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: interrupted after ")
            && last.ends_with(&format!(" of {} runs", 2000 * herd::RuleName::ALL.len())),
        "{err}"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("herd storm: default scenario"), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("immediate ")),
        "{table}"
    );
}

/// Before: the chart was created empty before the run, so an interrupted run left 0 bytes
/// where the old chart was (from the start of the run); and `hedge --chart /proc/h.svg` failed only after simulating.
#[test]
fn charts_are_replaced_whole_or_not_at_all_and_checked_before_the_run() {
    let dir = chart_dir("atomic");
    let chart = dir.join("storm.svg");
    std::fs::write(&chart, "old").expect("old chart");
    let path = chart.to_str().expect("UTF-8 path");
    let mut child = spawn(&["storm", "--runs", "2000", "--rule", "all", "--chart", path]);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        std::fs::read_to_string(&chart).expect("chart"),
        "old",
        "the old chart stays while the runs go on"
    );
    // Killed outright (a crash, a second Ctrl-C): the old chart is still whole.
    child.kill().expect("kill");
    let _ = child.wait();
    assert_eq!(std::fs::read_to_string(&chart).expect("chart"), "old");
    let names: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 1, "no partial file is left: {names:?}");
    // A finished run replaces it.
    let out = herd(&["storm", "--chart", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&chart)
            .expect("chart")
            .starts_with("<svg")
    );
    for command in [
        &["hedge", "--chart", "/proc/h.svg"][..],
        &["storm", "--chart", "/proc/h.svg"],
        &[
            "sweep",
            "--set",
            "clients.count=100,200",
            "--chart",
            "/proc/h.svg",
        ],
    ] {
        let (code, err) = within(command, Duration::from_secs(5));
        assert_eq!(code, Some(2), "{command:?}: {err}");
        assert!(
            err.starts_with("error: --chart: cannot write /proc/h.svg"),
            "{err}"
        );
    }
}

/// Runs a lab whose table prints each run as it finishes, presses Ctrl-C once `first`
/// appears, and returns stdout, stderr and the exit code.
fn lab_interrupted_after(args: &[&str], first: &str) -> (String, String, Option<i32>) {
    use std::io::BufRead;
    let mut child = spawn(args);
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut printed = String::new();
    for line in lines.by_ref() {
        let line = line.expect("a line");
        printed.push_str(&line);
        printed.push('\n');
        if line == first {
            break;
        }
    }
    ctrl_c(&child);
    for line in lines {
        printed.push_str(&line.expect("a line"));
        printed.push('\n');
    }
    let out = child.wait_with_output().expect("wait");
    (printed, stderr(&out), out.status.code())
}

/// Before: Ctrl-C on a lab printed only the table's header and the shell's exit 130.
#[test]
fn ctrl_c_on_the_labs_prints_what_finished_marked_interrupted() {
    let (table, err, code) = lab_interrupted_after(
        &["lab", "storm", "--clients", "20", "--rule", "full,equal"],
        "== full",
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(table.contains("== full"), "{table}");
    assert!(
        err.trim_end()
            .ends_with("error: interrupted after 1 of 2 runs"),
        "{err}"
    );
    let (table, err, code) = lab_interrupted_after(
        &[
            "lab",
            "hedge",
            "--requests",
            "500",
            "--policy",
            "none",
            "--policy",
            "hedge-40ms",
        ],
        "== none",
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(table.contains("== none"), "{table}");
    assert!(
        err.trim_end()
            .ends_with("error: interrupted after 1 of 2 policies"),
        "{err}"
    );
}

/// Runs `herd ARGS…` with `input` on its standard input: exit code, stdout, stderr.
fn with_stdin(args: &[&str], input: &[u8]) -> (Option<i32>, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("herd runs");
    let mut stdin = child.stdin.take().expect("stdin");
    // A refusal may close the pipe before everything is written.
    let _ = stdin.write_all(input);
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    )
}

/// Before: `herd check /dev/zero` read until memory ran out (7.7 GiB in 20 s), and `-` and
/// folders were refused as files that cannot be read.
#[test]
fn check_reads_through_the_capped_reader_stdin_and_folders_included() {
    refused_in_time(&["check", "/dev/zero"], "/dev/zero: not a regular file");
    let big = temp("big.json");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(17 << 20))
        .expect("a sparse 17 MiB file");
    refused_in_time(
        &["check", big.to_str().expect("UTF-8")],
        "more than the 16777216 an input file may have (raise the cap with --max-file-mib)",
    );
    // Standard input: read, capped, and named `<stdin>`.
    let aws = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/configs/aws-config"
    ))
    .expect("the shipped AWS config");
    let (code, out, err) = with_stdin(&["check", "--no-storm", "--format", "json", "-"], &aws);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["configs"][0]["file"], "<stdin>", "{v}");
    assert_eq!(v["configs"][0]["system"], "aws");
    let (code, _, err) = with_stdin(
        &["check", "--no-storm", "--max-file-mib", "1", "-"],
        &vec![b'#'; (1 << 20) + 10],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("from standard input: more than the 1048576 bytes"),
        "{err}"
    );
    // A folder: its configurations are read, the rest skipped and listed with --verbose.
    let dir = temp("repo");
    std::fs::create_dir_all(dir.join("deploy")).expect("dir");
    std::fs::write(
        dir.join("deploy/config"),
        "[profile p]\nretry_mode = standard\n",
    )
    .expect("w");
    std::fs::write(dir.join("notes.md"), "# not a configuration\n").expect("w");
    std::fs::write(dir.join("package.json"), "{\"name\": \"x\"}\n").expect("w");
    std::fs::write(dir.join(".gitignore"), "build/\n").expect("w");
    std::fs::create_dir_all(dir.join("build")).expect("dir");
    std::fs::write(
        dir.join("build/config"),
        "[profile q]\nretry_mode = legacy\n",
    )
    .expect("w");
    let dir = dir.to_str().expect("UTF-8");
    let out = support::herd(&["check", "--no-storm", "--format", "json", "--verbose", dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let configs = v["configs"].as_array().expect("configs");
    assert_eq!(configs.len(), 1, "build/ is .gitignored: {v}");
    assert!(
        configs[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("deploy/config")
    );
    let err = stderr(&out);
    assert!(
        err.contains("package.json: no retry configuration"),
        "{err}"
    );
    assert!(err.contains("notes.md: not a type of file"), "{err}");
}

/// Before: a 10,000-deep JSON array was read as an AWS INI file (exit 0), and a UTF-8
/// byte-order mark hid gRPC's, AWS's and Resilience4j's marks from detection.
#[test]
fn check_refuses_deep_nesting_and_reads_past_a_byte_order_mark() {
    let deep = scratch_file(
        "deep.json",
        &format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
    );
    refused_in_time(&["check", &deep], "cannot tell which system");
    refused_in_time(
        &["check", "--format-in", "grpc", &deep],
        "recursion limit exceeded",
    );
    let block = scratch_file(
        "deep.yaml",
        &format!(
            "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nspec:\n{}x: 1\n",
            "- ".repeat(10_000)
        ),
    );
    refused_in_time(&["check", &block], "deeper than herd reads");
    for (name, shipped, system) in [
        ("bom.json", "grpc-service-config.json", "grpc"),
        ("bom-config", "aws-config", "aws"),
        ("bom.yml", "resilience4j-application.yml", "resilience4j"),
    ] {
        let text = std::fs::read_to_string(format!(
            "{}/../../scenarios/configs/{shipped}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("shipped config");
        let file = scratch_file(name, &format!("\u{feff}{text}"));
        let out = support::herd(&["check", "--no-storm", "--format", "json", &file]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{name}: {}",
            stderr(&out)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["configs"][0]["system"], system, "{name}");
    }
}

/// Before: every policy ran its own storm and kept its series (about 0.5 MB each): 2,049
/// policies took 1.1 GB. Identical policies now share one simulation: ten thousand methods
/// with one retry policy are simulated once (counted, not measured in bytes).
#[test]
fn identical_policies_are_simulated_once() {
    let methods: Vec<String> = (0..10_000)
        .map(|i| {
            format!(
                r#"{{"name": [{{"service": "s{i}.S"}}], "retryPolicy": {{"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}}}"#
            )
        })
        .collect();
    let file = scratch_file(
        "many.json",
        &format!("{{\"methodConfig\": [{}]}}", methods.join(",\n")),
    );
    let out = support::herd(&[
        "check",
        "--format",
        "json",
        "--scenario",
        "scenarios/default.toml",
        &file,
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["storm"]["runs"].as_array().map(Vec::len), Some(10_000));
    assert_eq!(v["storm"]["simulated"], 1, "{}", v["storm"]["runs"][0]);
}
