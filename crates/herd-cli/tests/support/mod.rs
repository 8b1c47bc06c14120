//! What the tests of the `herd` binary share: running it from the repository's root, reading
//! what it printed, and the paths of shipped scenarios and scratch files.
#![allow(dead_code)] // each test binary uses its own share of these

pub mod ports;

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built `herd` with `args`, from the repository's root (so that `scenarios/…`
/// resolves as in the docs).
pub fn herd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_herd"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("the herd binary runs")
}

/// What it printed on stdout, whatever its exit status.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What it printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The absolute path of a shipped scenario, `scenarios/NAME`.
pub fn scenario(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "scenarios", name]
        .iter()
        .collect();
    path.display().to_string()
}

/// A scratch file named `name` in a folder of this test process and of the calling test
/// file: the areas of the one test binary run at the same time, and two of them may both
/// write a `bad.toml`.
#[track_caller]
pub fn temp(name: &str) -> PathBuf {
    let caller = std::path::Path::new(std::panic::Location::caller().file());
    let area = caller.file_stem().expect("a source file").to_string_lossy();
    let dir = std::env::temp_dir()
        .join(format!("herd-cli-test-{}", std::process::id()))
        .join(&*area);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

/// A scratch file `name` (see [`temp`]) that holds `text`; its path, to pass to `herd`.
#[track_caller]
pub fn scratch_file(name: &str, text: &str) -> String {
    let path = temp(name);
    std::fs::write(&path, text).expect("write scratch file");
    path.to_str().expect("UTF-8 path").to_owned()
}

/// Runs `herd` with `args`, which must succeed; what it printed on stdout.
pub fn ok(args: &[&str]) -> String {
    let out = herd(args);
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 on stdout")
}

/// Runs `herd` with `args`, which must succeed and print JSON; that JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(args)).expect("valid JSON")
}

/// Runs `herd` with `args` and `--format json`, which must succeed; the list `key` of its JSON,
/// which must hold `len` items.
pub fn json_list(args: &[&str], key: &str, len: usize) -> Vec<serde_json::Value> {
    let mut v = json(&[args, &["--format", "json"]].concat());
    let list = v[key].take();
    let list = list.as_array().unwrap_or_else(|| panic!("{key}: {list}"));
    assert_eq!(list.len(), len, "{key}");
    list.clone()
}

/// Runs `herd` with `args`, which must fail as bad input: exit 2 and exactly one line on
/// stderr. Returns that line.
pub fn usage_error(args: &[&str]) -> String {
    let out = herd(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(out.stderr).expect("UTF-8 on stderr");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, got {err:?}");
    err.trim_end().to_owned()
}

/// Runs `herd` with `args`, which must fail as bad input (see [`usage_error`]) with an error
/// line that mentions `needle`.
pub fn fails_with_input_error(args: &[&str], needle: &str) {
    let err = usage_error(args);
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

/// Asserts that `line` (a row of a CSV, say) starts with `prefix`; the line when not.
pub fn assert_starts(line: &str, prefix: &str) {
    assert!(line.starts_with(prefix), "{line}");
}
