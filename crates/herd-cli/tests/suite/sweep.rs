//! `herd sweep` through the binary: output shapes, heat-map files and errors.
use std::process::Output;

use crate::support;

use support::temp;

/// A quick grid: 2 × 2 cells of a 100-client, one-minute storm.
const GRID: [&str; 6] = [
    "--set",
    "clients.count=50,1e2",
    "--set",
    "server.capacity=5,10",
    "--set",
    "horizon_s=60",
];

/// `herd sweep ARGS…`.
fn herd(args: &[&str]) -> Output {
    support::herd(&[&["sweep"], args].concat())
}

/// `herd sweep ARGS…`, which must succeed; its stdout.
fn ok(args: &[&str]) -> String {
    support::ok(&[&["sweep"], args].concat())
}

fn fails(args: &[&str]) -> String {
    let out = herd(args);
    assert_eq!(
        out.status.code(),
        Some(2),
        "herd sweep {args:?} should fail"
    );
    let err = String::from_utf8(out.stderr).expect("UTF-8");
    // One line; clap adds its "For more information, try '--help'" to flag syntax errors.
    let first = err.lines().next().unwrap_or("").to_owned();
    assert!(first.starts_with("error: "), "{err}");
    assert!(err.lines().count() == 1 || err.contains("--help"), "{err}");
    first
}

/// `herd sweep ARGS…`, which must fail as [`fails`] does, with an error that mentions `needle`.
fn fails_with(args: &[&str], needle: &str) {
    let err = fails(args);
    assert!(err.contains(needle), "{args:?}: {err}");
}

/// `herd sweep ARGS… --format csv`, which must succeed and print a header and `rows` rows:
/// its lines.
fn csv(args: &[&str], rows: usize) -> Vec<String> {
    let out = ok(&[args, &["--format", "csv"]].concat());
    assert_eq!(out.lines().count(), 1 + rows, "{out}");
    out.lines().map(str::to_owned).collect()
}

fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    GRID.iter().chain(extra).copied().collect()
}

#[test]
fn csv_has_one_row_per_cell_and_rule() {
    let lines = csv(&with(&["--rules", "full,equal", "--runs", "3"]), 4 * 2);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        &header[..6],
        [
            "clients.count",
            "server.capacity",
            "horizon_s",
            "rule",
            "runs",
            "recovered_s_mean"
        ]
    );
    assert!(header.contains(&"all_served_s_hi"), "{}", lines[0]);
    for line in &lines[1..] {
        assert_eq!(line.split(',').count(), header.len(), "{line}");
    }
    support::assert_starts(&lines[1], "50,5,60,full,3,");
    support::assert_starts(&lines[8], "100,10,60,equal,3,");
}

#[test]
fn json_has_the_grid_and_the_cells() {
    let out = ok(&with(&[
        "--rules",
        "full",
        "--runs",
        "2",
        "--format",
        "json",
        "--metric",
        "all_served_s,requests_per_client",
    ]));
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(v["base"]["server"]["capacity"], 50, "the base before --set");
    assert_eq!(v["base"]["model"], "storm");
    let fields = v["grid"]["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 3);
    assert_eq!(fields[0]["field"], "clients.count");
    assert_eq!(fields[0]["values"], serde_json::json!([50, 100]));
    assert_eq!(v["grid"]["rules"], serde_json::json!(["full"]));
    assert_eq!(v["grid"]["seeds"]["count"], 2);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    let c = &cells[3];
    assert_eq!(c["values"]["server.capacity"], 10);
    assert_eq!(c["rule"], "full");
    let m = &c["metrics"]["requests_per_client"];
    assert!(m["lo"].as_f64().unwrap() <= m["mean"].as_f64().unwrap());
    assert!(m["mean"].as_f64().unwrap() <= m["hi"].as_f64().unwrap());
    assert_eq!(m["defined"], 2);
    assert!(c["metrics"].get("peak_after_outage").is_none());
}

#[test]
fn same_seeds_same_output() {
    let args = with(&[
        "--rules",
        "full,decorrelated",
        "--runs",
        "3",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(&args), ok(&args));
}

#[test]
fn table_is_the_default() {
    let out = ok(&with(&["--rules", "full", "--runs", "2"]));
    assert!(
        out.starts_with("default scenario: 4 cells × 1 rule × 2 seeds"),
        "{out}"
    );
    assert!(out.contains("recovered_s"), "{out}");
    assert_eq!(out.lines().count(), 2 + 4, "{out}");
}

/// The heading describes the Wilson interval of a share only when a share is shown.
#[test]
fn the_heading_names_the_intervals_it_shows() {
    let wilson = "(recovered: share (ends of the 95 % Wilson interval))";
    let first = |extra: &[&str]| ok(&with(extra)).lines().next().unwrap_or("").to_owned();
    let plain = first(&["--rules", "full", "--runs", "2"]);
    assert!(plain.ends_with("95 % t-interval"), "{plain}");
    let share = first(&[
        "--rules",
        "full",
        "--runs",
        "2",
        "--metric",
        "recovered,all_served_s",
    ]);
    assert!(share.ends_with(wilson), "{share}");
}

#[test]
fn heat_maps_are_written() {
    let svg = temp("map.svg");
    let png = temp("map.png");
    for (path, check) in [
        (&svg, b"<svg".as_slice()),
        (&png, b"\x89PNG\r\n\x1a\n".as_slice()),
    ] {
        let path_s = path.to_str().unwrap();
        ok(&with(&[
            "--rules",
            "full,exponential",
            "--runs",
            "2",
            "--heatmap",
            path_s,
            "--x",
            "server.capacity",
            "--y",
            "clients.count",
        ]));
        let bytes = std::fs::read(path).expect("heat map written");
        assert!(bytes.starts_with(check), "{}", path.display());
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("server.capacity"), "x label");
    // `exponential` serves few of a hundred clients within a minute: never recovered.
    assert!(
        text.contains("never, in all 2 runs"),
        "legend of undefined cells"
    );
    assert!(text.trim_end().ends_with("</svg>"));
}

#[test]
fn bad_input_is_one_line_naming_the_flag() {
    fails_with(
        &["--set", "server.capacityy=1,2"],
        "--set server.capacityy=1: unknown field",
    );
    fails_with(
        &["--set", "server.refusal_cost=0,1.5"],
        "server.refusal_cost: must be at least 0",
    );
    fails_with(&["--set", "clients.count"], "PATH=");
    fails_with(
        &with(&["--metric", "speed"]),
        "--metric speed: unknown metric",
    );
    fails_with(
        &with(&["--rules", "fancy"]),
        "'--rule <R>': unknown rule `fancy`",
    );
    fails_with(&with(&["--heatmap", "map.gif"]), ".svg or .png");
    fails_with(
        &["--set", "server.capacity=5,10", "--heatmap", "x.svg"],
        "two swept fields",
    );
    fails_with(
        &with(&["--heatmap", "x.svg", "--x", "seed"]),
        "--x seed: not a swept field",
    );
    fails_with(
        &with(&[
            "--heatmap",
            "x.svg",
            "--rules",
            "all",
            "--set",
            "retry.base_ms=100..1000:100",
        ]),
        &format!("--heatmap: {} panels", 10 * herd::RuleName::ALL.len()),
    );
    fails_with(&with(&["--max-work", "1000"]), "--max-work");
    fails_with(
        &with(&["--heatmap", "/no/such/dir/map.svg"]),
        "--heatmap: cannot write",
    );
    let bad = temp("bad.toml");
    std::fs::write(&bad, "horizon_s = 60\n[server]\nrefusal_cost = 1.5\n").unwrap();
    let err = fails(&[bad.to_str().unwrap(), "--set", "server.capacity=5"]);
    assert!(
        err.ends_with("server.refusal_cost (line 3): must be at least 0 and below 1, got 1.5"),
        "{err}"
    );
    fails_with(
        &["no-such-file.toml", "--set", "server.capacity=5"],
        "cannot read scenario",
    );
}

#[test]
fn a_scenario_file_is_the_base() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/six-clients.toml"
    );
    let args = [
        file,
        "--set",
        "server.capacity=2,6",
        "--set",
        "clients.max_attempts=4,8",
        "--runs",
        "5",
        "--metric",
        "served,gave_up",
    ];
    // 4 cells × the file's three rules.
    let lines = csv(&args, 4 * 3);
    // `immediate` serves none of the six with capacity 2 and four attempts.
    support::assert_starts(&lines[1], "2,4,immediate,5,0,0,0,5,t,6,6,6,5,t");
    // More capacity does not help: six together are above `collapse_above = 4`.
    support::assert_starts(&lines[7], "6,4,immediate,5,0,0,0,5,t,6,6,6,5,t");
}

/// `--chart`: the metrics against one swept field (here the latency's noise, a field inside
/// `[clients.latency]`), an SVG naming the field, its values, the metrics and the rules.
#[test]
fn charts_draw_metrics_against_one_field() {
    let svg = temp("noise.svg");
    let png = temp("noise.png");
    for path in [&svg, &png] {
        ok(&[
            "--set",
            "clients.latency.sd_ms=0,300",
            "--set",
            "clients.count=200",
            "--set",
            "server.capacity=5",
            "--set",
            "horizon_s=120",
            "--rule",
            "exponential,full",
            "--runs",
            "2",
            "--metric",
            "peak_after_outage,requests_per_client",
            "--chart",
            path.to_str().unwrap(),
        ]);
    }
    assert!(
        std::fs::read(&png)
            .unwrap()
            .starts_with(b"\x89PNG\r\n\x1a\n")
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    // Each label is a line of its own in the SVG's text elements.
    for want in [
        "clients.latency.sd_ms",
        "0",
        "300",
        // Its peaks run from 6 to 200: over a factor of ten, so on a log scale.
        "peak_after_outage (log scale)",
        "requests_per_client",
        "exponential",
        "full",
    ] {
        assert!(
            text.lines().any(|l| l.trim() == want),
            "{want} missing from the chart"
        );
    }
    fails_with(
        &with(&["--chart", "x.svg"]),
        "--chart draws metrics against one swept field",
    );
    fails_with(
        &["--set", "clients.latency.sd_ms=0,1", "--chart", "x.gif"],
        "--chart: x.gif must end in .svg or .png",
    );
    fails_with(
        &["--set", "clients.latency.sd_ms=0,-1"],
        "clients.latency.sd_ms: must be a finite number of milliseconds",
    );
}

#[test]
fn throttle_flag_compares_kinds_in_one_table() {
    let lines = csv(
        &with(&[
            "--throttle",
            "none,grpc",
            "--throttle",
            "envoy-budget",
            "--rule",
            "full",
            "--runs",
            "2",
        ]),
        3 * 2 * 2,
    );
    let kinds: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    // The kinds are the first axis, varying slowest, in the order given.
    let mut want = vec!["none"; 4];
    want.extend(["grpc"; 4]);
    want.extend(["envoy-budget"; 4]);
    assert_eq!(kinds, want);
    assert!(lines[0].starts_with("retry.throttle.kind,"), "{}", lines[0]);
    fails_with(
        &with(&["--throttle", "nope"]),
        "--throttle nope: expected none or one of",
    );
    fails_with(
        &with(&["--throttle", "grpc", "--set", "retry.throttle.kind=ratio"]),
        "already swept",
    );
}
