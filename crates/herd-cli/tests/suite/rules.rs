//! `herd rules` as users script it: output shape, determinism, and errors with exit code 2.
use crate::support;

use support::{herd, ok, stderr, stdout};

#[test]
fn prints_one_line_per_client_with_k_pauses() {
    let text = ok(&[
        "rules",
        "--rule",
        "full",
        "--base-ms",
        "100",
        "--cap-ms",
        "20000",
        "--failures",
        "10",
        "--samples",
        "1000",
        "--seed",
        "7",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1000);
    for line in lines {
        let pauses: Vec<f64> = line.split(' ').map(|p| p.parse().unwrap()).collect();
        assert_eq!(pauses.len(), 10);
        for (k, p) in pauses.iter().enumerate() {
            let g = (100.0 * 2f64.powi(k as i32)).min(20_000.0);
            assert!(
                (0.0..=g).contains(p),
                "pause {p} after failure {} > {g}",
                k + 1
            );
        }
    }
}

#[test]
fn exponential_is_the_documented_doubling() {
    let o = herd(&["rules", "--rule", "exponential", "--failures", "10"]);
    assert_eq!(
        stdout(&o),
        "100 200 400 800 1600 3200 6400 12800 20000 20000\n"
    );
}

#[test]
fn same_seed_same_output_other_seed_other_output() {
    let args = ["rules", "--rule", "decorrelated", "--samples", "20"];
    let a = herd(&[&args[..], &["--seed", "3"]].concat());
    let b = herd(&[&args[..], &["--seed", "3"]].concat());
    let c = herd(&[&args[..], &["--seed", "4"]].concat());
    assert_eq!(stdout(&a), stdout(&b));
    assert_ne!(stdout(&a), stdout(&c));
}

#[test]
fn bad_flags_give_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["rules", "--rule", "full", "--cap-ms", "50"],
            "cap (50 ms) must be at least base (100 ms)",
        ),
        (&["rules", "--rule", "full", "--base-ms", "-3"], "--base-ms"),
        (
            &["rules", "--rule", "full", "--base-ms", "NaN"],
            "--base-ms",
        ),
        (&["rules", "--rule", "grpc", "--jitter", "2"], "jitter"),
        (
            &["rules", "--rule", "full", "--failures", "0"],
            "--failures",
        ),
        (
            &[
                "rules",
                "--rule",
                "full",
                "--samples",
                "100000000000",
                "--failures",
                "100",
            ],
            "at most",
        ),
    ];
    for (args, needle) in cases {
        let o = herd(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
    let unknown = herd(&["rules", "--rule", "sometimes"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("unknown rule `sometimes`"));
}

#[test]
fn help_explains_every_rule_with_its_formula() {
    let o = herd(&["rules", "--help"]);
    let text = stdout(&o);
    for needle in [
        "immediate",
        "constant",
        "exponential",
        "full             uniform in [0, g(k)]",
        "equal            g(k)/2 + uniform[0, g(k)/2]",
        "decorrelated     min(cap, uniform[base, 3 · previous])",
        "grpc",
        "decorrelated-v2",
    ] {
        assert!(text.contains(needle), "help lacks {needle:?}:\n{text}");
    }
}

#[test]
fn usage_errors_are_one_line_too() {
    for args in [&["rules"][..], &["rules", "--rule", "full", "--frobnicate"]] {
        let o = herd(args);
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: "), "{err}");
    }
    assert!(stderr(&herd(&["rules"])).contains("--rule"));
}
