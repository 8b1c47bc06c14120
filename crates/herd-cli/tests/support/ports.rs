//! The ports of `herd rules` to other languages (`tools/herd_rules.py`, `tools/go`) must print
//! what it prints, byte for byte: for every rule, several seeds and parameter sets, including
//! failure counts deep into the cap.
use std::path::PathBuf;
use std::process::Command;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `program --version` (or `program version`) runs.
pub fn available(program: &str, version_arg: &str) -> bool {
    Command::new(program)
        .arg(version_arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Skips a port's test on a machine without its tool, except under CI, where it fails.
pub fn require(tool: &str) {
    assert!(
        std::env::var("CI").is_err(),
        "{tool} is required under CI to check the port"
    );
    eprintln!("skipped: no {tool} on this machine");
}

/// Runs `program pre… args…` and returns what it printed, failing on a non-zero exit.
pub fn run(program: &str, pre: &[&str], args: &[&str]) -> String {
    let out = Command::new(program)
        .args(pre)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Compares `program pre…` with `herd rules` on every rule × 3 seeds × 3 parameter sets, 40
/// clients of 70 failures each.
pub fn matches_herd_rules(program: &str, pre: &[&str]) {
    let parameter_sets: [&[&str]; 3] = [
        &["--base-ms", "100", "--cap-ms", "20000"],
        &[
            "--base-ms",
            "2.5",
            "--cap-ms",
            "7777.123456",
            "--pause-ms",
            "0.3",
            "--multiplier",
            "2.3",
            "--jitter",
            "0.75",
        ],
        &["--base-ms", "1", "--cap-ms", "1e9"],
    ];
    let mut compared = 0;
    for rule in herd::RuleName::ALL {
        for seed in ["0", "7", "18446744073709551615"] {
            for params in parameter_sets {
                let mut args = vec![
                    "--rule",
                    rule.as_str(),
                    "--failures",
                    "70",
                    "--samples",
                    "40",
                    "--seed",
                    seed,
                ];
                args.extend_from_slice(params);
                let ours = run(env!("CARGO_BIN_EXE_herd"), &["rules"], &args);
                let theirs = run(program, pre, &args);
                assert_eq!(ours.lines().count(), 40);
                assert_eq!(
                    ours, theirs,
                    "{program}: rule {rule}, seed {seed}, {params:?}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, herd::RuleName::ALL.len() * 3 * 3);
}
