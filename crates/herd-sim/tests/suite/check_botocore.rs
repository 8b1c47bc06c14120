//! `herd check`'s reading of an AWS shared config file beside botocore's, the AWS SDK for
//! Python (`tools/botocore_check.py`): each profile's `retry_mode` and `max_attempts` as
//! botocore resolves them from the file, and the constants botocore's retry handlers apply,
//! value by value against herd's translation.
//!
//! One difference is pinned: a profile that sets no `retry_mode` is `legacy` to botocore
//! (its default) and `standard` to herd, which follows the newer SDKs' default (smithy-rs
//! `RetryConfig::default()`), marked as a default. Without python3 and botocore the test is
//! skipped, except under CI, where it fails.
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use herd::RuleName;
use herd_sim::check::{self, Input};
use serde_json::Value;

const CONFIG: &str = include_str!("../../../../scenarios/configs/aws-config");
const CONFIG_PATH: &str = "scenarios/configs/aws-config";

fn botocore(profiles: &[&str]) -> Option<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let have = Command::new("python3")
        .args(["-c", "import botocore"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("CI").is_err(),
            "python3 with botocore is required under CI"
        );
        eprintln!("skipped: no python3 with botocore on this machine");
        return None;
    }
    let out = Command::new("python3")
        .arg("tools/botocore_check.py")
        .args(profiles)
        .current_dir(&root)
        .env("AWS_CONFIG_FILE", root.join(CONFIG_PATH))
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_RETRY_MODE")
        .env_remove("AWS_MAX_ATTEMPTS")
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "botocore_check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("one JSON object"))
}

#[test]
fn herd_reads_aws_profiles_as_botocore_does() {
    let report = check::check(&[Input::new("aws-config", CONFIG)]).expect("reads");
    let names: Vec<&str> = report.configs.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["default", "prod", "batch", "old-cli"]);
    let Some(b) = botocore(&names) else { return };
    let standard = &b["standard"];
    assert_eq!(standard["new_retries"], false, "{b}");
    for t in &report.configs {
        let theirs = &b["profiles"][t.name.as_str()];
        let mode = theirs["retry_mode"]
            .as_str()
            .expect("botocore resolves a mode");
        let set_mode = !t.defaults.contains(&"retry_mode");
        let ours = match t.throttle.as_ref().map(|th| th.kind) {
            Some("aws-standard") => "standard",
            Some("aws-adaptive") => "adaptive",
            None => "legacy",
            Some(other) => panic!("{other}"),
        };
        if set_mode {
            assert_eq!(ours, mode, "{}", t.name);
        } else {
            // The pinned difference: botocore's default mode is legacy, herd's standard.
            assert_eq!((ours, mode), ("standard", "legacy"), "{}", t.name);
        }
        // Attempts: the profile's own, else the mode's default, as botocore applies them.
        let attempts = theirs["max_attempts"].as_u64().unwrap_or_else(|| {
            if ours == "legacy" {
                b["legacy"]["max_attempts"]
                    .as_u64()
                    .expect("legacy attempts")
            } else {
                standard["max_attempts"]
                    .as_u64()
                    .expect("standard attempts")
            }
        });
        assert_eq!(t.max_attempts.map(u64::from), Some(attempts), "{}", t.name);
        // The backoff: rand · 2^(n−1) s (legacy: base "rand", growth 2), capped at 20 s in
        // standard and adaptive modes.
        assert_eq!(t.backoff.rule, RuleName::Full, "{}", t.name);
        assert_eq!(t.backoff.base, Duration::from_secs(1), "{}", t.name);
        assert_eq!(standard["base"], 2);
        if ours == "legacy" {
            assert_eq!(b["legacy"]["delay"]["base"], "rand");
            assert_eq!(b["legacy"]["delay"]["growth_factor"], 2);
            assert_eq!(t.throttle, None, "botocore's legacy mode has no quota");
        } else {
            let cap = standard["max_backoff_s"].as_u64().expect("max backoff");
            assert_eq!(t.backoff.cap, Duration::from_secs(cap), "{}", t.name);
            let th = t.throttle.as_ref().expect("a quota");
            for key in [
                "initial_tokens",
                "retry_cost",
                "timeout_retry_cost",
                "success_reward",
            ] {
                assert_eq!(th.param(key), standard[key].as_f64(), "{} {key}", t.name);
            }
        }
    }
}
