//! The what-if over every real configuration file in scenarios/configs/real (one `herd check
//! FILE` each, as a reader runs it): of the policies with a warning, at least 80 % get a fix
//! whose figures differ from the policy's as set in at least one fault; no proposed fix does
//! worse in every fault; and every fault where as set = fix says why.
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support;

use support::{herd, stderr, stdout};

/// The share of policies with a warning whose fix must differ from as set in some fault.
const LEAST_SHARE: f64 = 0.8;
/// What `no_fix` reads for a policy without a warning.
const NO_WARNING: &str = "no warning: nothing to fix";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under scenarios/configs/real but its README, relative to the repository.
fn corpus() -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join("scenarios/configs/real")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).expect("the corpus") {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.file_name().is_some_and(|n| n != "README.md") {
                let rel = p.strip_prefix(root()).expect("under the root");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

/// The what-if's runs of one file.
fn runs(file: &str) -> Vec<Value> {
    let out = herd(&["check", file, "--format", "json"]);
    let code = out.status.code().expect("exit code");
    assert!(
        code == 0 || code == 1,
        "{file}: exit {code}: {}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    v["runs"].as_array().cloned().unwrap_or_default()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is a number: {v}"))
}

/// How the fix compares with as set in one fault, beyond two standard errors of the
/// difference (or a tenth of the peak, or by recovery): (better somewhere, worse somewhere).
fn judged(set: &Value, fix: &Value) -> (bool, bool) {
    let se = |k: &str| 2.0 * (f(set, k).powi(2) + f(fix, k).powi(2)).sqrt();
    let g = f(fix, "goodput") - f(set, "goodput");
    let a = f(fix, "amplification") - f(set, "amplification");
    let recovery = |v: &Value| v["recovered_s"].as_f64().unwrap_or(f64::INFINITY);
    let (rs, rf) = (recovery(set), recovery(fix));
    let (ps, pf) = (f(set, "peak_load"), f(fix, "peak_load"));
    let better = g > se("goodput_se") || a < -se("amplification_se") || rf < rs || pf < 0.9 * ps;
    let worse = g < -se("goodput_se") || a > se("amplification_se") || rf > rs || pf > 1.1 * ps;
    (better, worse)
}

#[test]
fn on_real_files_with_a_warning_the_fix_differs_for_most_and_is_never_worse_everywhere() {
    let files = corpus();
    assert!(files.len() > 30, "{files:?}");
    // Three at a time: each is one process, mostly waiting on its simulation.
    let per_file: Vec<Vec<Value>> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(files.len().div_ceil(3))
            .map(|chunk| s.spawn(move || chunk.iter().map(|f| runs(f)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a runner"))
            .collect()
    });
    // One unit per policy (or path): its three faults, in a row (two routes of one name are
    // two units).
    let mut units: Vec<(String, String, Vec<&Value>)> = Vec::new();
    for runs in &per_file {
        assert_eq!(runs.len() % 3, 0, "{runs:?}");
        for three in runs.chunks_exact(3) {
            let scenarios: Vec<&str> = three
                .iter()
                .map(|r| r["scenario"].as_str().unwrap())
                .collect();
            assert_eq!(scenarios, ["brownout", "overload", "outage"], "{three:?}");
            assert!(
                three.iter().all(|r| r["policy"] == three[0]["policy"]),
                "{three:?}"
            );
            let name = |k: &str| three[0][k].as_str().unwrap_or_default().to_owned();
            units.push((name("file"), name("policy"), three.iter().collect()));
        }
    }
    let mut warned = 0;
    let mut differ = 0;
    let mut same = Vec::new();
    for (file, policy, faults) in &units {
        assert_eq!(faults.len(), 3, "{file} {policy}");
        for r in faults {
            // A fault where as set = fix says why; one where they differ does not.
            let why = r["same_because"].as_str();
            if r["as_set"] == r["fix"] {
                assert!(
                    why.is_some_and(|w| !w.is_empty()),
                    "{file} {policy} {}: as set = fix without a reason: {r}",
                    r["scenario"]
                );
            } else {
                assert!(
                    why.is_none(),
                    "{file} {policy}: a reason for a difference: {r}"
                );
            }
        }
        if faults[0]["no_fix"].as_str() == Some(NO_WARNING) {
            continue;
        }
        warned += 1;
        if faults.iter().any(|r| r["as_set"] != r["fix"]) {
            differ += 1;
        } else {
            same.push(format!(
                "{file} {policy}: {}",
                faults[0]["same_because"].as_str().unwrap_or("?")
            ));
        }
        let proposed = faults[0]["fix_changes"]
            .as_array()
            .is_some_and(|c| !c.is_empty());
        if proposed {
            let verdicts: Vec<(bool, bool)> = faults
                .iter()
                .map(|r| judged(&r["as_set"], &r["fix"]))
                .collect();
            assert!(
                !verdicts.iter().all(|&(better, worse)| worse && !better),
                "{file} {policy}: the proposed fix does worse in every fault: {faults:?}"
            );
        }
        // Linkerd's route annotations get the one cure Linkerd can express, their limit.
        if file.contains("linkerd-2.16") {
            assert!(
                faults[0]["fix_changes"][0]["snippet"]
                    .as_str()
                    .is_some_and(|s| s.contains("retry.linkerd.io/limit: \"1\"")),
                "{file} {policy}: {}",
                faults[0]
            );
        }
    }
    let share = f64::from(differ) / f64::from(warned.max(1));
    println!(
        "the what-if on scenarios/configs/real: {differ} of {warned} policies with a warning ({:.0} %) have a fix that differs from as set in at least one fault",
        100.0 * share
    );
    for s in &same {
        println!("  as set = fix: {s}");
    }
    assert!(warned >= 40, "{warned} policies with a warning");
    assert!(
        share >= LEAST_SHARE,
        "{differ}/{warned} = {share:.2} below {LEAST_SHARE}: {same:#?}"
    );
}
