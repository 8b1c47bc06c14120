//! `herd storm` end to end: the built binary, its output formats, charts and errors.
use crate::support;

use herd_sim::figure::{Kind, number, with_unit};
use support::{fails_with_input_error, ok, temp};

#[test]
fn no_arguments_prints_the_six_rule_table() {
    let text = ok(&["storm"]);
    let rows: Vec<&str> = text.lines().collect();
    for rule in herd::RuleName::CLASSIC.map(herd::RuleName::as_str) {
        assert!(
            rows.iter().any(|l| l.starts_with(rule)),
            "no row for {rule}:\n{text}"
        );
    }
    // Every cell is the JSON's figure by the one precision policy (herd_sim::figure):
    // 12.0 s prints as "12 s", 785.5 s as "786 s", 120.5 requests as "120" (a tie, to even).
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["storm", "--format", "json"])).unwrap();
    let seconds = |v: &serde_json::Value| with_unit(v.as_f64().unwrap(), Kind::Seconds);
    for r in json["results"].as_array().unwrap() {
        let rule = r["rule"].as_str().unwrap();
        let row = rows.iter().find(|l| l.starts_with(rule)).unwrap();
        let cells: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let want = [
            r["served"].to_string(),
            r["gave_up"].to_string(),
            r["waiting"].to_string(),
            seconds(&r["half_served_s"]),
            seconds(&r["all_served_s"]),
            number(r["requests_per_client"].as_f64().unwrap()),
            r["peak_after_outage"].to_string(),
        ];
        assert_eq!(cells[1..8], want, "{rule}: {row}");
    }
    let immediate = rows.iter().find(|l| l.starts_with("immediate")).unwrap();
    for figure in ["12 s", "13.9 s", " 120 ", "2000"] {
        assert!(immediate.contains(figure), "{immediate}");
    }
    let exponential = rows.iter().find(|l| l.starts_with("exponential")).unwrap();
    assert!(exponential.contains("406 s") && exponential.contains("786 s"));
    assert!(text.contains('█'), "no sparkline:\n{text}");
}

#[test]
fn json_has_the_fields_of_the_contract() {
    let out = ok(&["storm", "--format", "json", "--rule", "exponential"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["scenario"]["clients"]["count"], 2000);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let r = &results[0];
    for field in [
        "rule",
        "seed",
        "clients",
        "served",
        "gave_up",
        "half_served_s",
        "all_served_s",
        "requests",
        "requests_per_client",
        "peak_after_outage",
        "series",
    ] {
        assert!(r.get(field).is_some(), "missing {field}");
    }
    assert_eq!(r["rule"], "exponential");
    assert_eq!(r["half_served_s"], 405.5);
    assert_eq!(r["all_served_s"], 785.5);
    assert_eq!(r["requests_per_client"], 27.5);
    assert_eq!(r["series"]["window_s"], 0.1);
    assert!(r["series"]["arrivals"].is_array() && r["series"]["served"].is_array());
}

#[test]
fn all_served_is_null_when_not_everyone_was_served() {
    let out = ok(&[
        "storm",
        "scenarios/six-clients.toml",
        "--rule",
        "immediate",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["results"][0];
    assert!(r["all_served_s"].is_null());
    assert_eq!(r["served"], 0);
    assert_eq!(r["gave_up"], 6);
    assert_eq!(r["requests"], 24);
}

#[test]
fn runs_report_every_seed_and_a_summary() {
    let out = ok(&[
        "storm", "--rule", "full", "--rule", "equal", "--runs", "4", "--seed", "7", "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 8);
    let seeds: Vec<u64> = results
        .iter()
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, [7, 8, 9, 10, 7, 8, 9, 10]);
    // Regression: the runs after the first carried empty `arrivals` and `served` lists, which
    // read as runs in which no window had an attempt. A series not kept says so.
    for r in results {
        let series = &r["series"];
        if r["seed"] == 7 {
            let arrivals = series["arrivals"].as_array().unwrap();
            assert!(arrivals.iter().any(|a| a.as_u64() > Some(0)), "{series}");
        } else {
            assert!(series.is_null(), "seed {}: {series}", r["seed"]);
        }
    }
    let summary = v["summary"].as_array().unwrap();
    assert_eq!(summary[0]["rule"], "full");
    let spread = &summary[0]["all_served_s"];
    assert!(spread["min"].as_f64() <= spread["mean"].as_f64());
    assert!(spread["mean"].as_f64() <= spread["max"].as_f64());

    let table = ok(&["storm", "--rule", "full", "--runs", "3"]);
    assert!(table.contains("3 runs, mean [min–max]"), "{table}");
}

#[test]
fn csv_has_a_header_and_a_line_per_run() {
    let out = ok(&["storm", "--format", "csv", "--runs", "2"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("rule,seed,clients,served,gave_up"));
    assert_eq!(lines.len(), 1 + 6 * 2);
    support::assert_starts(lines[1], "immediate,1,2000,2000,0,0,0,12,13.9,");
}

#[test]
fn overrides_apply() {
    let out = ok(&[
        "storm",
        "--rule",
        "immediate",
        "--clients",
        "100",
        "--refusal-cost",
        "0.1",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["results"][0]["clients"], 100);
    assert_eq!(v["scenario"]["server"]["refusal_cost"], 0.1);
}

#[test]
fn charts_are_written_as_svg_and_png() {
    let svg = temp("storm.svg");
    let png = temp("storm.png");
    ok(&["storm", "--chart", svg.to_str().unwrap()]);
    // Regression: only `herd hedge` said where its chart went.
    let said = support::stderr(&support::herd(&["storm", "--chart", png.to_str().unwrap()]));
    assert!(
        said.contains(&format!("chart written to {}", png.display())),
        "{said}"
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.trim_start().starts_with("<svg"),
        "{}",
        &svg[..80.min(svg.len())]
    );
    assert!(svg.contains("decorrelated") && svg.trim_end().ends_with("</svg>"));
    let png = std::fs::read(&png).unwrap();
    assert!(png.len() > 1000);
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn bad_input_gets_one_line_and_exit_two() {
    let bad = temp("bad.toml");
    let path = bad.to_str().unwrap();
    let cases = [
        ("seed = 1\nwindow_ms = 150\n", "window_ms (line 2)"),
        ("[server]\noutages = [[0, 10], [5, 12]]\n", "server.outages"),
        ("[retry]\ncap_ms = 50\n", "retry.cap_ms"),
        ("[server\ncapacity = 3\n", "line 1"),
        ("horizon_s = 1e9\nstep_ms = 1\n", "horizon_s"),
        ("[server]\nrefusal_cost = 1\n", "server.refusal_cost"),
    ];
    for (text, needle) in cases {
        std::fs::write(&bad, text).unwrap();
        fails_with_input_error(&["storm", path], needle);
    }
    fails_with_input_error(&["storm", "--refusal-cost", "1"], "--refusal-cost");
    fails_with_input_error(&["storm", "--runs", "0"], "--runs");
    fails_with_input_error(&["storm", "--chart", "out.gif"], "--chart");
    fails_with_input_error(
        &["storm", "--chart", "no/such/dir/x.png"],
        "--chart: cannot write",
    );
    fails_with_input_error(&["storm", "no/such/file.toml"], "cannot read scenario");
}

#[test]
fn shipped_scenarios_all_run() {
    for scene in [
        "scenarios/default.toml",
        "scenarios/refusal-cost.toml",
        "scenarios/six-clients.toml",
        "scenarios/sixty-consoles.toml",
        "scenarios/metastable.toml",
    ] {
        let text = ok(&["storm", scene]);
        assert!(text.contains("half served"), "{scene}: {text}");
    }
}

/// `--latency-ms MEAN[,SD]` sets `[clients.latency]`: 300 ms of noise breaks up exponential
/// backoff's herd (its peak after the outage is all 2000 clients without noise), and bad
/// values are one line naming the flag.
#[test]
fn latency_flag_adds_noise() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let args = [
            &["storm", "--rule", "exponential", "--format", "json"],
            extra,
        ]
        .concat();
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let quiet = run(&[]);
    assert_eq!(quiet["results"][0]["peak_after_outage"], 2000);
    let noisy = run(&["--latency-ms", "0,300"]);
    assert_eq!(noisy["scenario"]["clients"]["latency"]["sd_ms"], 300.0);
    let peak = noisy["results"][0]["peak_after_outage"].as_u64().unwrap();
    assert!(peak < 400, "{peak}");
    let constant = run(&["--latency-ms", "100"]);
    assert_eq!(constant["scenario"]["clients"]["latency"]["sd_ms"], 0.0);
    assert_eq!(constant["results"][0]["peak_after_outage"], 2000);
    fails_with_input_error(
        &["storm", "--latency-ms", "-5"],
        "latency_ms must be in [0, 1000000000000], got -5 (--latency-ms)",
    );
    fails_with_input_error(&["storm", "--latency-ms", "-5,10"], "(--latency-ms)");
    fails_with_input_error(&["storm", "--latency-ms", "1,2,3"], "MEAN or MEAN,SD");
    fails_with_input_error(&["storm", "--latency-ms", "fast"], "MEAN or MEAN,SD");
}

/// The default scenario draws whole steps (docs/model.md, "Pauses in whole steps or
/// continuous"); `--pauses continuous` draws nanoseconds. The deterministic rows are the
/// model's table either way; decorrelated's one-step retries make it send more requests in
/// whole steps.
#[test]
fn pauses_are_whole_steps_by_default_and_continuous_on_request() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "storm",
            "--format",
            "json",
            "--rule",
            "immediate,constant,exponential,decorrelated",
        ];
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let steps = run(&[]);
    let continuous = run(&["--pauses", "continuous"]);
    assert_eq!(steps["scenario"]["pauses"], "steps");
    assert_eq!(continuous["scenario"]["pauses"], "continuous");
    assert_eq!(run(&["--pauses", "steps"]), steps);
    let figures = |v: &serde_json::Value, i: usize| {
        let r = &v["results"][i];
        (
            r["half_served_s"].as_f64().unwrap(),
            r["all_served_s"].as_f64().unwrap(),
            r["requests_per_client"].as_f64().unwrap(),
        )
    };
    for (i, table) in [
        (12.0, 13.9, 120.5),
        (30.0, 49.0, 30.5),
        (405.5, 785.5, 27.5),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(figures(&steps, i), table);
        assert_eq!(figures(&continuous, i), table);
    }
    let (_, _, in_steps) = figures(&steps, 3);
    let (_, _, rounded_up) = figures(&continuous, 3);
    assert!(in_steps > rounded_up + 0.4, "{in_steps} vs {rounded_up}");
    fails_with_input_error(&["storm", "--pauses", "ticks"], "--pauses");
    let odd = temp("odd-base.toml");
    std::fs::write(&odd, "[retry]\nbase_ms = 150\n").unwrap();
    let path = odd.to_str().unwrap();
    fails_with_input_error(&["storm", path], "retry.base_ms (line 2)");
    assert!(ok(&["storm", path, "--pauses", "continuous"]).contains("half served"));
}
