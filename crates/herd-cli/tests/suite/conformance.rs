//! The conformance harness: real clients against loopback servers that fail, compared with
//! `herd check --format json`'s translation of the same file (tools/conformance/README.md).
//!
//! `tools/conformance/drive.py` runs each client at the version `.ci/run` pins (botocore
//! 1.43.127 and 1.44.8, grpcio 1.85.3, each in its own folder under `.ci/py`) against a
//! server on 127.0.0.1 that fails as the case needs, and prints every call's attempts (the
//! server's count), botocore's requested pauses and grpcio's measured ones (the server's
//! arrival times). This test then holds herd to them:
//! - attempts per call exactly;
//! - pauses per retry number by a one-sided Kolmogorov–Smirnov test each way against 20 000
//!   pauses drawn by herd's own rule (the translation's rule, base, cap, multiplier and jitter,
//!   through `herd::Rule`), Bonferroni-corrected so that the whole test fails by chance less
//!   than once in a million runs; grpcio's pauses, measured at the server, may be up to
//!   `GRPC_SLACK` longer than the client's timer (the round trip and the server's own work);
//! - quotas and throttles by replaying the measured sequence of calls through the library's
//!   type (`herd::throttle::AwsRetryQuota` with the translation's costs,
//!   `herd::budget::GrpcThrottle` with its tokens): attempts per call, call by call.
//!
//! The same measurements are then compared with deliberately wrong fixtures (a 50 % longer
//! gRPC base, the classic 5-token retry cost for botocore 1.44, A6's original uniform pauses):
//! each must disagree, which shows that the comparison catches a drift.
//!
//! docs/check.md's "Measured against the real clients" table is this test's: it fails when
//! the table differs, and `HERD_CONFORMANCE_BLESS=1` rewrites it. Without the pinned clients
//! the test is skipped, except under CI.
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use herd::Rule;
use herd::budget::{GrpcThrottle, GrpcThrottleConfig};
use herd::rng::SplitMix64;
use herd::throttle::{AwsBackoff, AwsErrorKind, AwsRetryQuota, AwsRetryQuotaConfig};
use serde_json::Value;

/// The pauses of every comparison in this file, each tested one-sided both ways.
const COMPARISONS: f64 = 40.0;
/// The whole test's false-failure rate.
const FALSE_FAILURE: f64 = 1e-6;
/// Draws of herd's rule per reference distribution.
const REFERENCE: usize = 20_000;
/// How much longer than the client's timer grpcio's pauses may look from the server.
const GRPC_SLACK: f64 = 0.006;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The folder a pinned client was installed into, if it was.
fn pinned(name: &str) -> Option<PathBuf> {
    let dir = root().join(".ci/py").join(name);
    if dir.join(".done").exists() || dir.is_dir() {
        Some(dir)
    } else {
        assert!(
            std::env::var("CI").is_err(),
            "{name} is required under CI (.ci/run installs it into .ci/py)"
        );
        eprintln!("skipped: no .ci/py/{name} (run .ci/run's install step)");
        None
    }
}

fn drive(dir: &Path, args: &[&str]) -> Value {
    let python = std::env::var("HERD_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = Command::new(python)
        .arg("tools/conformance/drive.py")
        .args(args)
        .current_dir(root())
        .env("PYTHONPATH", dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "drive.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// `herd check --format json`'s first translation of `file`.
fn translate(file: &str, flags: &[&str]) -> Value {
    let mut args = vec!["check", "--format", "json", "--no-storm", file];
    args.extend_from_slice(flags);
    let out = support::herd(&args);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", support::stderr(&out)));
    v["configs"][0].clone()
}

fn secs(ms: &Value) -> Duration {
    Duration::from_secs_f64(ms.as_f64().expect("a number") / 1000.0)
}

/// herd's rule of a translation's `backoff`.
fn rule_of(backoff: &Value) -> Rule {
    let (base, cap) = (secs(&backoff["base_ms"]), secs(&backoff["cap_ms"]));
    let m = backoff["multiplier"].as_f64().unwrap();
    let j = backoff["jitter"].as_f64().unwrap();
    match backoff["rule"].as_str().unwrap() {
        "full" => Rule::full(base, cap),
        "grpc-retry" => Rule::grpc_retry(base, m, j, cap),
        other => panic!("no reference for {other}"),
    }
    .unwrap()
}

/// `REFERENCE` pauses before retry `n` (1-based), sorted, in seconds.
fn reference(rule: &Rule, n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = (0..REFERENCE as u64)
        .map(|seed| {
            (*rule)
                .schedule(SplitMix64::new(seed))
                .nth(n - 1)
                .unwrap()
                .as_secs_f64()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The share of `sorted` at or below `x`.
fn cdf(sorted: &[f64], x: f64) -> f64 {
    sorted.partition_point(|&v| v <= x) as f64 / sorted.len() as f64
}

/// Whether `sample` could come from `reference` (sorted) shifted by at most `slack` upwards:
/// each one-sided Kolmogorov–Smirnov distance below its critical value at
/// `FALSE_FAILURE / (2 · COMPARISONS)`. Returns the larger distance and the critical value.
fn same_distribution(sample: &[f64], reference: &[f64], slack: f64) -> (bool, f64, f64) {
    let mut s = sample.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let mut d = 0.0f64;
    for (i, &x) in s.iter().enumerate() {
        // Measured pauses no shorter than herd's: F_sample(x) ≤ F_herd(x).
        d = d.max((i + 1) as f64 / n - cdf(reference, x));
        // And no longer than herd's plus the slack: F_sample(x) ≥ F_herd(x − slack).
        d = d.max(cdf(reference, x - slack) - i as f64 / n);
    }
    let alpha = FALSE_FAILURE / (2.0 * COMPARISONS);
    let m = reference.len() as f64;
    let critical = ((1.0 / alpha).ln() / 2.0 * (1.0 / n + 1.0 / m)).sqrt();
    (d < critical, d, critical)
}

/// One line of the table in docs/check.md.
struct Row {
    client: String,
    measured: String,
    herd: String,
    agrees: bool,
    detail: String,
}

fn version(v: &Value) -> String {
    format!(
        "{} {}",
        v["client"].as_str().unwrap(),
        v["version"].as_str().unwrap()
    )
}

fn attempts(v: &Value) -> Vec<u64> {
    v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["attempts"].as_u64().unwrap())
        .collect()
}

/// The pauses before retry `n` (1-based) of every call that made it, from `key`.
fn pauses(v: &Value, key: &str, n: usize) -> Vec<f64> {
    v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c[key].get(n - 1).and_then(Value::as_f64))
        .collect()
}

fn pause_rows(
    rows: &mut Vec<Row>,
    measured: &Value,
    key: &str,
    what: &str,
    rule: &Rule,
    retries: usize,
    slack: f64,
) -> bool {
    let mut all = true;
    for n in 1..=retries {
        let sample = pauses(measured, key, n);
        let reference = reference(rule, n);
        let (ok, d, critical) = same_distribution(&sample, &reference, slack);
        let top = reference[reference.len() - 1] * 1000.0;
        all &= ok;
        rows.push(Row {
            client: version(measured),
            measured: format!("{what}: pause before retry {n} ({} calls)", sample.len()),
            herd: format!(
                "`{}`: {:.0}–{:.0} ms",
                rule.name(),
                (reference[0] * 1000.0).floor(),
                top.ceil()
            ),
            agrees: ok,
            detail: format!("KS distance {d:.3} < {critical:.3}"),
        });
    }
    all
}

/// botocore's retry quota, replayed: every call fails with `kind` until its attempts or the
/// quota run out; the attempts of each call.
fn replay_aws(quota: AwsRetryQuotaConfig, kind: AwsErrorKind, max: u64, calls: usize) -> Vec<u64> {
    let q = AwsRetryQuota::new(quota).unwrap();
    (0..calls)
        .map(|_| {
            let mut n = 1;
            while n < max {
                match q.acquire(kind) {
                    Some(permit) => drop(permit), // the retry failed too: its cost stays spent
                    None => break,
                }
                n += 1;
            }
            n
        })
        .collect()
}

/// The translation's quota as the library's type.
fn quota_of(t: &Value) -> AwsRetryQuotaConfig {
    let th = &t["throttle"];
    let mut c = match th["kind"].as_str().unwrap() {
        "aws-standard-2026" => AwsRetryQuotaConfig::standard_2026(),
        "aws-standard" => AwsRetryQuotaConfig::standard(),
        other => panic!("{other}"),
    };
    let whole = |k: &str| th[k].as_f64().map(|v| v as u32);
    c.capacity = whole("initial_tokens").unwrap();
    c.retry_cost = whole("retry_cost").unwrap();
    c.throttling_retry_cost = whole("throttling_retry_cost").unwrap();
    if let Some(t) = whole("timeout_retry_cost") {
        c.timeout_retry_cost = t;
    }
    c.no_retry_increment = whole("success_reward").unwrap();
    c
}

/// A6's retry throttling, replayed: each call's first `fail` attempts fail (all when `None`).
fn replay_grpc(t: &Value, fail: Option<u64>, calls: usize) -> Vec<u64> {
    let th = &t["throttle"];
    let config = GrpcThrottleConfig::default()
        .max_tokens(th["max_tokens"].as_f64().unwrap())
        .token_ratio(th["token_ratio"].as_f64().unwrap());
    let g = GrpcThrottle::new(config).unwrap();
    let max = t["max_attempts"].as_u64().unwrap();
    (0..calls)
        .map(|_| {
            let mut n = 1;
            loop {
                if fail.is_some_and(|k| n > k) {
                    g.record_success();
                    break n;
                }
                g.record_failure();
                if n >= max || !g.allows_retry() {
                    break n;
                }
                n += 1;
            }
        })
        .collect()
}

fn exact_row(rows: &mut Vec<Row>, measured: &Value, what: &str, herd: &str, ours: &[u64]) -> bool {
    let theirs = attempts(measured);
    let ok = theirs == ours;
    let first_diff = theirs.iter().zip(ours).position(|(a, b)| a != b);
    rows.push(Row {
        client: version(measured),
        measured: what.to_owned(),
        herd: herd.to_owned(),
        agrees: ok,
        detail: match first_diff {
            None if ok => format!("{} calls alike", theirs.len()),
            None => format!("{} vs {} calls", theirs.len(), ours.len()),
            Some(i) => format!("call {i}: {} vs herd's {}", theirs[i], ours[i]),
        },
    });
    ok
}

fn summary(seq: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < seq.len() {
        let j = (i..seq.len())
            .find(|&j| seq[j] != seq[i])
            .unwrap_or(seq.len());
        out.push(format!("{}×{}", seq[i], j - i));
        i = j;
    }
    out.join(", ")
}

#[test]
fn herd_check_s_translations_agree_with_the_real_clients() {
    let (Some(boto_new), Some(boto_old), Some(grpcio)) = (
        pinned("botocore-1.44.8"),
        pinned("botocore-1.43.127"),
        pinned("grpcio-1.85.3"),
    ) else {
        return;
    };
    let mut rows = Vec::new();
    let mut drift = Vec::new(); // (what, agrees) with a deliberately wrong fixture
    let aws_default = "tools/conformance/cases/aws-default";
    let aws_standard = "tools/conformance/cases/aws-standard";

    // botocore 1.44 (today's default): a profile with no retry_mode; every attempt a 503.
    let t = translate(aws_default, &[]);
    assert_eq!(t["generation"]["name"], "aws-2026", "{t}");
    let max = t["max_attempts"].as_u64().unwrap();
    let m = drive(
        &boto_new,
        &[
            "botocore",
            "--config",
            aws_default,
            "--calls",
            "300",
            "--calls-per-client",
            "10",
        ],
    );
    exact_row(
        &mut rows,
        &m,
        "attempts per call, every attempt a 503 (300 calls)",
        &format!("{max}"),
        &vec![max; 300],
    );
    let rule = rule_of(&t["backoff"]);
    pause_rows(&mut rows, &m, "sleeps", "503", &rule, 2, 0.0);
    let mut wrong = t["backoff"].clone();
    wrong["base_ms"] = serde_json::json!(1000.0); // the classic 1 s base
    drift.push((
        "botocore 1.44 pauses against a 1 s base",
        pause_rows(
            &mut Vec::new(),
            &m,
            "sleeps",
            "503",
            &rule_of(&wrong),
            2,
            0.0,
        ),
    ));
    // Its retry quota: one client, 60 calls, every attempt a 503.
    let m = drive(
        &boto_new,
        &[
            "botocore",
            "--config",
            aws_default,
            "--calls",
            "60",
            "--calls-per-client",
            "60",
        ],
    );
    let quota = quota_of(&t);
    let ours = replay_aws(quota, AwsErrorKind::Transient, max, 60);
    exact_row(
        &mut rows,
        &m,
        "retry quota: attempts of 60 calls on one client, every attempt a 503",
        &format!("`aws-standard-2026` replayed: {}", summary(&ours)),
        &ours,
    );
    let mut five = quota;
    five.retry_cost = 5;
    drift.push((
        "botocore 1.44 quota against a 5-token retry",
        attempts(&m) == replay_aws(five, AwsErrorKind::Transient, max, 60),
    ));
    // Throttling errors: a 1 s base and 5 tokens a retry (the library's 2026 backoff).
    let m = drive(
        &boto_new,
        &[
            "botocore",
            "--config",
            aws_default,
            "--calls",
            "120",
            "--calls-per-client",
            "120",
            "--fail",
            "throttle",
        ],
    );
    let ours = replay_aws(quota, AwsErrorKind::Throttling, max, 120);
    exact_row(
        &mut rows,
        &m,
        "retry quota: 120 calls on one client, every attempt throttled",
        &format!("`aws-standard-2026` replayed: {}", summary(&ours)),
        &ours,
    );
    let backoff = AwsBackoff::standard_2026();
    let throttled = Rule::full(
        backoff.pause(1, AwsErrorKind::Throttling, 1.0, None),
        backoff.max_backoff,
    )
    .unwrap();
    pause_rows(&mut rows, &m, "sleeps", "throttled", &throttled, 2, 0.0);

    // botocore 1.43 (`--aws-retries classic`): no retry_mode is legacy; then standard.
    let t = translate(aws_default, &["--aws-retries", "classic"]);
    assert_eq!(t["generation"]["name"], "aws-classic", "{t}");
    let max = t["max_attempts"].as_u64().unwrap();
    let m = drive(
        &boto_old,
        &["botocore", "--config", aws_default, "--calls", "200"],
    );
    exact_row(
        &mut rows,
        &m,
        "legacy (no retry_mode): attempts per call, every attempt a 503 (200 calls)",
        &format!("{max}"),
        &vec![max; 200],
    );
    pause_rows(
        &mut rows,
        &m,
        "sleeps",
        "legacy",
        &rule_of(&t["backoff"]),
        4,
        0.0,
    );
    let t = translate(aws_standard, &["--aws-retries", "classic"]);
    let max = t["max_attempts"].as_u64().unwrap();
    let m = drive(
        &boto_old,
        &[
            "botocore",
            "--config",
            aws_standard,
            "--calls",
            "120",
            "--calls-per-client",
            "120",
        ],
    );
    let ours = replay_aws(quota_of(&t), AwsErrorKind::Transient, max, 120);
    exact_row(
        &mut rows,
        &m,
        "standard retry quota: 120 calls on one client, every attempt a 503",
        &format!("`aws-standard` replayed: {}", summary(&ours)),
        &ours,
    );
    pause_rows(
        &mut rows,
        &m,
        "sleeps",
        "standard",
        &rule_of(&t["backoff"]),
        2,
        0.0,
    );

    // grpcio 1.85.3 (gRPC core): maxAttempts 7 (clamped to 5), 50 ms ×2 up to 150 ms.
    let file = "tools/conformance/cases/grpc-retry.json";
    let t = translate(file, &[]);
    assert_eq!(t["generation"]["name"], "grpc-jitter-20", "{t}");
    let max = t["max_attempts"].as_u64().unwrap();
    let m = drive(
        &grpcio,
        &[
            "grpcio",
            "--config",
            file,
            "--calls",
            "200",
            "--concurrency",
            "8",
            "--fail",
            "unavailable",
        ],
    );
    exact_row(
        &mut rows,
        &m,
        "attempts per call, maxAttempts 7, every attempt UNAVAILABLE (200 calls)",
        &format!("{max} (clamped)"),
        &vec![max; 200],
    );
    let rule = rule_of(&t["backoff"]);
    pause_rows(&mut rows, &m, "gaps", "UNAVAILABLE", &rule, 4, GRPC_SLACK);
    let mut wrong = t["backoff"].clone();
    wrong["base_ms"] = serde_json::json!(75.0);
    drift.push((
        "grpcio pauses against a 75 ms base",
        pause_rows(
            &mut Vec::new(),
            &m,
            "gaps",
            "",
            &rule_of(&wrong),
            4,
            GRPC_SLACK,
        ),
    ));
    let uniform = translate(file, &["--grpc-retries", "uniform"]);
    drift.push((
        "grpcio pauses against --grpc-retries uniform",
        pause_rows(
            &mut Vec::new(),
            &m,
            "gaps",
            "",
            &rule_of(&uniform["backoff"]),
            4,
            GRPC_SLACK,
        ),
    ));
    let m = drive(
        &grpcio,
        &["grpcio", "--config", file, "--calls", "50", "--fail", "2"],
    );
    exact_row(
        &mut rows,
        &m,
        "attempts per call, two UNAVAILABLE then OK (50 calls)",
        "3",
        &[3; 50],
    );
    // retryThrottling (maxTokens 10, tokenRatio 0.1), call by call.
    let file = "tools/conformance/cases/grpc-throttled.json";
    let t = translate(file, &[]);
    for (fail, what) in [
        (None, "every attempt UNAVAILABLE"),
        (Some(1), "one UNAVAILABLE then OK"),
    ] {
        let k = fail.map_or("unavailable".to_owned(), |k: u64| k.to_string());
        let m = drive(
            &grpcio,
            &["grpcio", "--config", file, "--calls", "30", "--fail", &k],
        );
        let ours = replay_grpc(&t, fail, 30);
        exact_row(
            &mut rows,
            &m,
            &format!("retryThrottling: attempts of 30 calls, {what}"),
            &format!("`grpc` throttle replayed: {}", summary(&ours)),
            &ours,
        );
    }

    // docs/check.md's table: every figure but the KS distances, which vary by run.
    // hedgingPolicy: herd translates 3 copies 50 ms apart; gRPC core has no hedging (its
    // retry filter reads the policy and sends one copy), so grpcio makes one attempt. The
    // difference is pinned: a grpcio that hedges fails here, and the translation must then
    // say which clients hedge.
    let file = "tools/conformance/cases/grpc-hedging.json";
    let t = translate(file, &[]);
    let copies = t["hedging"]["max_attempts"].as_u64().unwrap();
    let m = drive(
        &grpcio,
        &[
            "grpcio",
            "--config",
            file,
            "--calls",
            "20",
            "--concurrency",
            "4",
            "--fail",
            "unavailable",
            "--hold-ms",
            "200",
        ],
    );
    let theirs = attempts(&m);
    assert!(
        theirs.iter().all(|&a| a == 1),
        "grpcio hedged ({theirs:?}): herd's table pins that it does not"
    );
    let hedging_row = format!(
        "| {} | hedgingPolicy maxAttempts {copies}, 50 ms apart, each copy held 200 ms (20 calls) | {copies} copies | differs, pinned (gRPC core does not hedge: 1 attempt per call) |\n",
        version(&m)
    );

    let mut table =
        String::from("| client | measured | herd's figure | agreement |\n|---|---|---|---|\n");
    for r in &rows {
        let how = if r.detail.starts_with("KS") {
            "KS, 10⁻⁶".to_owned()
        } else {
            r.detail.clone()
        };
        table.push_str(&format!(
            "| {} | {} | {} | {} ({how}) |\n",
            r.client,
            r.measured,
            r.herd,
            if r.agrees { "agrees" } else { "DIFFERS" },
        ));
    }
    table.push_str(&hedging_row);
    for r in &rows {
        println!("{} | {} | {}", r.client, r.measured, r.detail);
    }
    let docs = root().join("docs/check.md");
    let text = std::fs::read_to_string(&docs).unwrap();
    let (begin, end) = ("<!-- conformance:begin -->\n", "<!-- conformance:end -->");
    let (Some(b), Some(e)) = (text.find(begin), text.find(end)) else {
        panic!("docs/check.md has no {begin:?} … {end:?}");
    };
    let shown = text[b + begin.len()..e].to_owned();
    if std::env::var("HERD_CONFORMANCE_BLESS").is_ok() {
        let fresh = format!("{}{begin}{table}{}", &text[..b], &text[e..]);
        let tmp = docs.with_extension("md.tmp");
        std::fs::write(&tmp, fresh).unwrap();
        std::fs::rename(&tmp, &docs).unwrap();
    }
    let bad: Vec<&Row> = rows.iter().filter(|r| !r.agrees).collect();
    assert!(
        bad.is_empty(),
        "herd's translation differs from the client:\n{table}"
    );
    // The deliberately wrong fixtures: each must be caught.
    for (what, agreed) in drift {
        assert!(!agreed, "a wrong fixture passed: {what}");
    }
    assert!(
        std::env::var("HERD_CONFORMANCE_BLESS").is_ok() || shown == table,
        "docs/check.md's table is out of date; rerun with HERD_CONFORMANCE_BLESS=1:\n{table}"
    );
}
