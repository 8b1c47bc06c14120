//! `herd check`'s reading of an AWS shared config file beside botocore's, the AWS SDK for
//! Python (`tools/botocore_check.py`), for both generations: each profile's `retry_mode` and
//! `max_attempts` as botocore resolves them from the file, and the constants botocore's retry
//! handlers apply, value by value against herd's translation of that generation (botocore
//! >= 1.44.0 against the default translation, botocore 1.43 against `--aws-retries classic`).
//!
//! Which botocore: every directory in `HERD_BOTOCORE_DIRS` (`:`-separated, each put on
//! `PYTHONPATH`), else every `.ci/py/botocore-*` that `.ci/run` installs (pinned versions),
//! else whatever botocore the interpreter has; the interpreter is `HERD_PYTHON`, else
//! `python3`. Without python3 and botocore the test is skipped, except under CI, where it
//! fails, as it does when CI lacks either generation.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use herd::RuleName;
use herd_sim::check::{self, AwsRetries, CheckOptions, Generation, Input};
use serde_json::Value;

const CONFIG: &str = include_str!("../../../../scenarios/configs/aws-config");
const CONFIG_PATH: &str = "scenarios/configs/aws-config";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> String {
    std::env::var("HERD_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// The `PYTHONPATH` of each botocore to compare with (`None`: the interpreter's own).
fn botocore_dirs() -> Vec<Option<PathBuf>> {
    if let Ok(dirs) = std::env::var("HERD_BOTOCORE_DIRS") {
        return dirs
            .split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Some(PathBuf::from(d)))
            .collect();
    }
    let mut pinned: Vec<PathBuf> = std::fs::read_dir(root().join(".ci/py"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("botocore-"))
        })
        .collect();
    pinned.sort();
    if pinned.is_empty() {
        vec![None]
    } else {
        pinned.into_iter().map(Some).collect()
    }
}

fn botocore(dir: Option<&Path>, profiles: &[&str]) -> Option<Value> {
    let mut cmd = Command::new(python());
    if let Some(d) = dir {
        cmd.env("PYTHONPATH", d);
    }
    let have = cmd
        .args(["-c", "import botocore"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("CI").is_err(),
            "python3 with botocore ({dir:?}) is required under CI"
        );
        eprintln!("skipped: no python3 with botocore ({dir:?}) on this machine");
        return None;
    }
    let mut cmd = Command::new(python());
    if let Some(d) = dir {
        cmd.env("PYTHONPATH", d);
    }
    let out = cmd
        .arg("tools/botocore_check.py")
        .args(profiles)
        .current_dir(root())
        .env("AWS_CONFIG_FILE", root().join(CONFIG_PATH))
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
fn herd_reads_aws_profiles_as_each_botocore_does() {
    let names = ["default", "prod", "batch", "old-cli"];
    let mut seen = Vec::new();
    for dir in botocore_dirs() {
        let Some(b) = botocore(dir.as_deref(), &names) else {
            continue;
        };
        let (retries, generation) = match b["generation"].as_str() {
            Some("2026") => (AwsRetries::V2026, Generation::Aws2026),
            Some("classic") => (AwsRetries::Classic, Generation::AwsClassic),
            other => panic!("{other:?}"),
        };
        seen.push(generation);
        let options = CheckOptions::default().with_aws_retries(retries);
        let report = check::check_with(&[Input::new("aws-config", CONFIG)], options).unwrap();
        let got: Vec<&str> = report.configs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(got, names);
        compare(&report.configs, &b, generation);
    }
    if std::env::var("CI").is_ok() {
        assert!(
            seen.contains(&Generation::Aws2026) && seen.contains(&Generation::AwsClassic),
            "CI installs botocore 1.43 and 1.44 (.ci/run): saw {seen:?}"
        );
    }
}

fn compare(configs: &[check::Translation], b: &Value, generation: Generation) {
    let version = &b["botocore"];
    let standard = &b["standard"];
    for t in configs {
        let who = format!("botocore {version}, profile {}", t.name);
        assert_eq!(t.generation, Some(generation), "{who}");
        let theirs = &b["profiles"][t.name.as_str()];
        // botocore resolves its own default mode when the profile sets none: herd must agree.
        let mode = theirs["retry_mode"].as_str().expect("a mode");
        let ours = match t.throttle.as_ref().map(|th| th.kind) {
            Some("aws-standard" | "aws-standard-2026") => "standard",
            Some("aws-adaptive") => "adaptive",
            None => "legacy",
            Some(other) => panic!("{other}"),
        };
        assert_eq!(ours, mode, "{who}");
        let attempts = theirs["max_attempts"].as_u64().unwrap_or_else(|| {
            if ours == "legacy" {
                b["legacy"]["max_attempts"].as_u64().expect("legacy")
            } else {
                standard["max_attempts"].as_u64().expect("standard")
            }
        });
        assert_eq!(t.max_attempts.map(u64::from), Some(attempts), "{who}");
        assert_eq!(t.backoff.rule, RuleName::Full, "{who}");
        assert_eq!(standard["base"], 2);
        if ours == "legacy" {
            // _retry.json: `"base": "rand"`, growth 2, no cap, no quota.
            assert_eq!(b["legacy"]["delay"]["base"], "rand");
            assert_eq!(b["legacy"]["delay"]["growth_factor"], 2);
            assert_eq!(t.backoff.base, Duration::from_secs(1), "{who}");
            assert_eq!(t.throttle, None, "{who}");
            continue;
        }
        let secs = |v: &Value| Duration::from_secs_f64(v.as_f64().expect("seconds"));
        assert_eq!(t.backoff.base, secs(&standard["transient_base_s"]), "{who}");
        assert_eq!(t.backoff.cap, secs(&standard["max_backoff_s"]), "{who}");
        let th = t.throttle.as_ref().expect("a quota");
        for key in [
            "initial_tokens",
            "retry_cost",
            "throttling_retry_cost",
            "timeout_retry_cost",
            "success_reward",
        ] {
            assert_eq!(th.param(key), standard[key].as_f64(), "{who}: {key}");
        }
    }
}
