//! `herd check`'s reading of a gRPC service config beside grpc-go's own: the same files parsed
//! by grpc-go's `parseServiceConfig` (through `tools/grpc-go-check`, built against Debian's
//! golang-google-grpc-dev, grpc-go 1.33), field by field — attempts after the clamp to 5,
//! the backoffs, the multiplier, the retryable codes, the timeout and the throttle.
//!
//! Where herd and grpc-go 1.33 differ, the test pins the difference: grpc-go ignores an
//! invalid `retryPolicy` (with a warning) where herd refuses the file, as gRFC A6's
//! validation rules ask. Without go and the package the test is skipped, except under CI
//! (`.ci/run` installs both), where it fails.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use herd_config::GRPC_STATUS_CODES;
use herd_sim::check::{self, Input, Translation};
use serde_json::Value;

const GOPATH: &str = "/usr/share/gocode";

/// Service configs written as A6 and grpc-go's own tests write them.
const CONFIGS: [(&str, &str); 3] = [
    (
        "grpc-service-config.json",
        include_str!("../../../../scenarios/configs/grpc-service-config.json"),
    ),
    (
        "fractions.json",
        r#"{"methodConfig": [{"name": [{"service": "pay.v2.Ledger", "method": "Post"},
            {"service": "pay.v2.Ledger", "method": "Get"}],
          "timeout": "0.75s",
          "retryPolicy": {"maxAttempts": 9, "initialBackoff": "0.025s", "maxBackoff": "3.5s",
            "backoffMultiplier": 1.3, "retryableStatusCodes": [14, "RESOURCE_EXHAUSTED", "ABORTED"]}}],
          "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.5}}"#,
    ),
    (
        "service-wide.json",
        r#"{"methodConfig": [{"name": [{"service": "a.A"}],
          "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
            "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
    ),
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// grpc-go's reading of `files`: one object per method path.
fn grpc_go(files: &[PathBuf]) -> Option<Vec<Value>> {
    let have_go = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_go
        || !Path::new(GOPATH)
            .join("src/google.golang.org/grpc")
            .is_dir()
    {
        assert!(
            std::env::var("CI").is_err(),
            "go and golang-google-grpc-dev are required under CI"
        );
        eprintln!("skipped: no go, or no golang-google-grpc-dev, on this machine");
        return None;
    }
    let out = Command::new("go")
        .args(["run", "tools/grpc-go-check/main.go"])
        .args(files)
        .current_dir(repo_root())
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH)
        .env("GOFLAGS", "")
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "grpc-go-check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    Some(
        text.lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
            .collect(),
    )
}

/// herd's name for grpc-go's path: `/svc/method` is `svc/method`, `/svc/` is `svc/*`.
fn herd_name(path: &str) -> String {
    let path = path.trim_start_matches('/');
    match path.strip_suffix('/') {
        Some(service) => format!("{service}/*"),
        None => path.to_owned(),
    }
}

fn ns(v: &Value) -> Duration {
    Duration::from_nanos(v.as_u64().expect("nanoseconds"))
}

fn assert_same(t: &Translation, go: &Value) {
    let what = format!("{} {}", t.file, t.name);
    assert_eq!(
        Value::from(t.max_attempts.expect("a count")),
        go["max_attempts"],
        "{what}"
    );
    assert_eq!(t.backoff.base, ns(&go["initial_backoff_ns"]), "{what}");
    assert_eq!(t.backoff.cap, ns(&go["max_backoff_ns"]), "{what}");
    assert_eq!(
        Some(t.backoff.multiplier),
        go["multiplier"].as_f64(),
        "{what}"
    );
    let mut codes: Vec<String> = go["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| {
            GRPC_STATUS_CODES[usize::try_from(c.as_u64().expect("code")).expect("small")].to_owned()
        })
        .collect();
    codes.sort();
    let mut ours = t.retry_on.clone();
    ours.sort();
    assert_eq!(ours, codes, "{what}");
    assert_eq!(
        t.timeout,
        go["timeout_ns"].as_u64().map(Duration::from_nanos),
        "{what}"
    );
    let throttle = t.throttle.as_ref();
    assert_eq!(
        throttle.and_then(|th| th.param("max_tokens")),
        go["max_tokens"].as_f64(),
        "{what}"
    );
    assert_eq!(
        throttle.and_then(|th| th.param("token_ratio")),
        go["token_ratio"].as_f64(),
        "{what}"
    );
}

#[test]
fn herd_reads_grpc_service_configs_as_grpc_go_does() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("grpc-go-check");
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let files: Vec<PathBuf> = CONFIGS
        .iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write");
            path
        })
        .collect();
    let Some(go) = grpc_go(&files) else { return };
    let mut compared = 0;
    for ((name, text), path) in CONFIGS.iter().zip(&files) {
        let report = check::check(&[Input::new(*name, *text)]).expect(name);
        let theirs: Vec<&Value> = go
            .iter()
            .filter(|g| g["file"] == path.to_str().expect("utf-8"))
            .collect();
        // grpc-go files a methodConfig under each of its names; herd reads it once, named
        // by all of them (`a/M,a/N`).
        let names: usize = report
            .configs
            .iter()
            .map(|t| t.name.split(',').count())
            .sum();
        assert_eq!(names, theirs.len(), "{name}");
        for g in theirs {
            assert_eq!(g["retry_ignored"], false, "{name}: {g}");
            let path = g["path"].as_str().expect("path");
            let t = report
                .configs
                .iter()
                .find(|t| t.name.split(',').any(|n| n == herd_name(path)))
                .unwrap_or_else(|| panic!("{name}: herd has no policy for {path}"));
            assert_same(t, g);
            compared += 1;
        }
    }
    assert_eq!(compared, 5);

    // An invalid retryPolicy (A6: maxAttempts must be above 1): grpc-go 1.33 drops it with a
    // warning and keeps the rest of the config; herd reads the file and reports the entry as
    // an `invalid-entry` error naming the field and saying that grpc-go ignores the policy.
    let invalid = r#"{"methodConfig": [{"name": [{"service": "a.A"}],
      "retryPolicy": {"maxAttempts": 1, "initialBackoff": "1s", "maxBackoff": "1s",
        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let path = dir.join("invalid.json");
    std::fs::write(&path, invalid).expect("write");
    let go = grpc_go(std::slice::from_ref(&path)).expect("available above");
    assert_eq!(go[0]["retry_ignored"], true, "{}", go[0]);
    let report = check::check(&[Input::new("invalid.json", invalid)]).expect("read");
    assert!(report.configs.iter().all(|t| !t.retries()), "{report:?}");
    let bad: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.code == "invalid-entry")
        .collect();
    assert_eq!(bad.len(), 1, "{report:?}");
    assert!(bad[0].message.contains("maxAttempts"), "{bad:?}");
    assert!(
        bad[0].message.contains("grpc-go ignores this retryPolicy"),
        "{bad:?}"
    );
}
