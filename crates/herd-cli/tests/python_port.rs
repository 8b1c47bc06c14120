//! The Python port in `tools/herd_rules.py` must reproduce `herd rules` bit for bit, for every
//! rule, several seeds and parameter sets, including failure counts deep into the cap.
use std::path::PathBuf;
use std::process::Command;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> Option<&'static str> {
    ["python3", "python"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn run(program: &str, pre: &[&str], args: &[&str]) -> String {
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

#[test]
fn python_port_matches_herd_rules_bit_for_bit() {
    let Some(py) = python() else {
        assert!(
            std::env::var("CI").is_err(),
            "python3 is required under CI to check the port"
        );
        eprintln!("skipped: no python3 on this machine");
        return;
    };
    let script = repo_root().join("tools/herd_rules.py");
    let script = script.to_str().expect("utf-8 path");
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
                let theirs = run(py, &[script], &args);
                assert_eq!(ours.lines().count(), 40);
                assert_eq!(ours, theirs, "rule {rule}, seed {seed}, {params:?}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 8 * 3 * 3);
}
