//! `herd lab hedge` end to end: a small run on loopback whose copies the servers and the
//! clients must account for exactly, and its flags' errors. A hung first copy answered by its
//! hedge against a real server is `crates/herd/tests/suite/hedge.rs`
//! (`the_hedge_answers_and_the_server_sees_exactly_the_copies_allowed`).
use crate::support;

use support::{fails_with_input_error, herd, scratch_file, stdout, usage_error};

/// 150 user requests (and a warm-up of 15) at 200 a second per policy, at time scale 1: about
/// a second per policy of real time. The 10 servers pause 100 ms about every 2 s, so some
/// requests meet a pause and are hedged.
#[test]
fn a_small_run_accounts_for_every_copy_and_gets_a_verdict() {
    let out = herd(&[
        "lab",
        "hedge",
        "--requests",
        "150",
        "--time-scale",
        "1",
        "--policy",
        "none",
        "--policy",
        "hedge-40ms",
        "--sim-runs",
        "20",
        "--format",
        "json",
    ]);
    let text = stdout(&out);
    let json: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", support::stderr(&out)));
    let results = json["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    let mut all_agree = true;
    for r in results {
        let a = &r["accounting"];
        let n = |k: &str| a[k].as_u64().unwrap_or_else(|| panic!("{k} in {a}"));
        // Every user request answered, every copy either received or cancelled before it
        // arrived, none received twice or from nowhere.
        assert_eq!(n("user_requests"), 165, "{a}");
        assert_eq!(n("gave_up"), 0, "{a}");
        assert_eq!(n("failed"), 0, "{a}");
        assert_eq!(n("duplicates"), 0, "{a}");
        assert_eq!(n("unexplained"), 0, "{a}");
        assert_eq!(
            n("sent"),
            n("received") + n("cancelled_before_arrival"),
            "{a}"
        );
        assert_eq!(n("answered"), n("sub_requests"), "{a}");
        let verdict = r["verdict"]["verdict"].as_str().expect("verdict");
        assert!(
            verdict == "agrees" || verdict == "differs",
            "a complete run is comparable: {}",
            r["verdict"]
        );
        all_agree &= verdict == "agrees";
        let extra = r["measured"]["extra_load_percent"].as_f64().expect("extra");
        match r["policy"].as_str() {
            Some("none") => {
                // One copy per request, counted by the servers themselves.
                assert_eq!(n("sent"), 165, "{a}");
                assert_eq!(n("received"), 165, "{a}");
                assert_eq!(extra, 0.0);
                assert_eq!(r["simulated"]["extra_load_percent"].as_f64(), Some(0.0));
            }
            Some("hedge-40ms") => {
                assert!(n("sent") >= 165, "{a}");
                assert!((0.0..=100.0).contains(&extra), "{extra}");
            }
            other => panic!("unexpected policy {other:?}"),
        }
        let spread = &r["spread"];
        assert_eq!(spread["runs"].as_u64(), Some(20));
    }
    // Exit 0 when every policy agrees, 1 when one differs, as lab storm.
    assert_eq!(
        out.status.code(),
        Some(if all_agree { 0 } else { 1 }),
        "{}",
        support::stderr(&out)
    );
}

#[test]
fn bad_flags_name_the_flag() {
    for (flag, value, want) in [
        (
            "--time-scale",
            "-1",
            "time_scale must be in (0, 10], got -1 (--time-scale)",
        ),
        (
            "--time-scale",
            "NaN",
            "time_scale must be in (0, 10], got NaN (--time-scale)",
        ),
        (
            "--time-scale",
            "11",
            "time_scale must be in (0, 10], got 11 (--time-scale)",
        ),
        (
            "--requests",
            "-5",
            "requests must be in [1, 20000], got -5 (--requests)",
        ),
        (
            "--requests",
            "0",
            "requests must be in [1, 20000], got 0 (--requests)",
        ),
        (
            "--requests",
            "20001",
            "requests must be in [1, 20000], got 20001 (--requests)",
        ),
        (
            "--sim-runs",
            "1",
            "sim_runs must be in [2, 200], got 1 (--sim-runs)",
        ),
        (
            "--sim-runs",
            "-3",
            "sim_runs must be in [2, 200], got -3 (--sim-runs)",
        ),
        ("--seed", "-1", "(--seed)"),
        ("--policy", "nope", "policy \"nope\" is not in the scenario"),
    ] {
        let err = usage_error(&["lab", "hedge", flag, value]);
        assert!(err.contains(want), "{flag} {value}: {err}");
    }
}

#[test]
fn a_service_shorter_than_a_timer_tick_is_refused() {
    fails_with_input_error(
        &["lab", "hedge", "--time-scale", "0.1"],
        "a 10 ms service time would last 1 ms of real time",
    );
}

#[test]
fn what_the_lab_does_not_model_is_refused_naming_the_field() {
    let path = scratch_file(
        "lab-hedge-tied.toml",
        "model = \"latency\"\n[[policies]]\nname = \"t\"\nkind = \"tied\"\n",
    );
    fails_with_input_error(
        &["lab", "hedge", &path],
        "policies[0].kind: lab hedge does not model tied requests",
    );
    let path = scratch_file(
        "lab-hedge-big.toml",
        "model = \"latency\"\nrequests = 100000\n[[policies]]\nname = \"n\"\n",
    );
    fails_with_input_error(&["lab", "hedge", &path], "at most 20000 user requests");
}
