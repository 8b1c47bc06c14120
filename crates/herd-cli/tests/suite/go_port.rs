//! The Go port in `tools/go` (a module of the standard library only) must reproduce
//! `herd rules` bit for bit, for every rule, several seeds and parameter sets, including
//! failure counts deep into the cap. Its own tests run with `go test ./...` in `tools/go`.
use crate::support;

use std::process::Command;

use support::ports;

#[test]
fn go_port_matches_herd_rules_bit_for_bit() {
    if !ports::available("go", "version") {
        return ports::require("go");
    }
    let binary = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("herd-rules-go");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg("./cmd/herd-rules")
        .current_dir(ports::repo_root().join("tools/go"))
        .output()
        .expect("go runs");
    assert!(
        built.status.success(),
        "go build failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    ports::matches_herd_rules(binary.to_str().expect("utf-8 path"), &[]);
}
