//! `herd lab storm` under a low open-file limit: it raises the soft limit when the hard one
//! allows and then measures with no request lost, or refuses before starting, saying how many
//! descriptors it needs. Before, 200 clients under `ulimit -n 256` lost attempts on the wire
//! and the command printed wrong figures and exited 0.
//!
//! The limit is lowered for the child only, through `sh -c 'ulimit …; exec herd …'`.
#![cfg(unix)]
use std::process::{Command, Output};

use serde_json::Value;

/// 40 clients, an outage over the first second, 4 answers per 100 ms window: about 3 s.
/// The scenario of herd-lab's own lab test, run here by the binary.
const SMALL: &str = include_str!("../../../herd-lab/tests/data/small_storm.toml");

fn under_limit(ulimit: &str, args: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit {ulimit} && exec \"$HERD\" lab storm {args}"
        ))
        .env("HERD", env!("CARGO_BIN_EXE_herd"))
        .output()
        .expect("sh runs")
}

#[test]
fn too_few_descriptors_and_no_room_to_raise_is_refused_with_the_number() {
    // `ulimit -n` lowers the soft and the hard limit: nothing to raise.
    let out = under_limit("-n 256", "--clients 200");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("200 clients need about 464 file descriptors"),
        "{err}"
    );
    assert!(err.contains("ulimit -n 464"), "{err}");
}

#[test]
fn a_low_soft_limit_is_raised_and_nothing_is_lost() {
    let dir = std::env::temp_dir().join(format!("herd-lab-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("small.toml");
    std::fs::write(&path, SMALL).unwrap();
    // The soft limit alone is lowered below the 144 that 40 clients need.
    let out = under_limit(
        "-Sn 64",
        &format!("{} --time-scale 0.5 --format json", path.display()),
    );
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("raised the open-file limit from 64"),
        "stderr: {err}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let run = &v["results"][0];
    assert_eq!(run["transport_errors"], 0, "{err}");
    assert_eq!(run["client_attempts"], run["measured"]["requests"]);
    assert_ne!(run["verdict"]["verdict"], "not_comparable");
    // The exit code follows the verdict: 0 when it agrees, 1 when it differs.
    let agrees = run["verdict"]["verdict"] == "agrees";
    assert_eq!(out.status.code(), Some(if agrees { 0 } else { 1 }), "{err}");
}
