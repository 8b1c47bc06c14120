//! `herd check` end to end: JSON for the shipped configurations, the storm beside the fix,
//! exit codes 0 / 1 / 2, and one-line errors naming the file, line and field.
use serde_json::Value;

use crate::support;

use support::{herd, scratch_file, stderr, stdout};

fn config(name: &str) -> String {
    format!("scenarios/configs/{name}")
}

/// `herd check ARGS --format json`, whatever its exit status (findings may exit 1): the JSON.
fn check_json(args: &[&str]) -> (Value, i32) {
    let out = herd(&[&["check"], args, &["--format", "json"]].concat());
    let code = out.status.code().expect("exit code");
    assert!(code == 0 || code == 1, "exit {code}: {}", stderr(&out));
    (serde_json::from_str(&stdout(&out)).expect("JSON"), code)
}

#[test]
fn json_has_the_documented_fields() {
    let (v, code) = check_json(&[
        &config("grpc-service-config.json"),
        "--scenario",
        "scenarios/default.toml",
    ]);
    assert_eq!(code, 0, "warnings only, --deny error by default");
    let c = &v["configs"][1];
    for key in [
        "file",
        "system",
        "name",
        "max_attempts",
        "per_try_timeout_ms",
        "timeout_ms",
        "backoff",
        "throttle",
        "defaults",
    ] {
        assert!(c.get(key).is_some(), "configs[].{key}: {c}");
    }
    assert_eq!(c["system"], "grpc");
    assert_eq!(c["name"], "orders.v1.Orders/*");
    assert_eq!(c["max_attempts"], 5);
    assert_eq!(c["timeout_ms"], 1000.0);
    assert_eq!(c["per_try_timeout_ms"], Value::Null);
    assert_eq!(c["backoff"]["rule"], "grpc-retry");
    assert_eq!(c["backoff"]["base_ms"], 50.0);
    assert_eq!(c["backoff"]["cap_ms"], 2000.0);
    assert_eq!(c["backoff"]["multiplier"], 1.5);
    assert_eq!(c["throttle"]["kind"], "grpc");
    assert_eq!(c["throttle"]["max_tokens"], 10.0);
    let f = &v["findings"][0];
    for key in ["severity", "code", "file", "line", "message", "fix"] {
        assert!(f.get(key).is_some(), "findings[].{key}: {f}");
    }
    assert_eq!(f["code"], "clamped");
    assert_eq!(f["line"], 20);
    let run = &v["storm"]["runs"][0];
    for side in ["config", "fix"] {
        for key in [
            "served",
            "all_served_s",
            "requests_per_client",
            "peak_after_outage",
        ] {
            assert!(
                run[side].get(key).is_some(),
                "storm.runs[].{side}.{key}: {run}"
            );
        }
    }
    // gRPC's retryThrottling runs in the storm (the library's GrpcThrottle): no note says
    // it was left out.
    let notes = run["notes"].as_array().expect("notes");
    assert!(
        !notes
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("throttle not simulated")),
        "{notes:?}"
    );
}

#[test]
fn every_shipped_config_checks_with_a_storm() {
    let names = [
        "grpc-service-config.json",
        "grpc-hedging.json",
        "envoy-route.yaml",
        "envoy-bootstrap.yaml",
        "istio-dump.yaml",
        "linkerd-serviceprofile.yaml",
        "linkerd-annotations.yaml",
        "aws-config",
        "resilience4j-application.yml",
        "resilience4j-edi.yml",
    ];
    for name in names {
        let (v, _) = check_json(&[&config(name), "--scenario", "scenarios/default.toml"]);
        let configs = v["configs"].as_array().expect("configs");
        assert!(!configs.is_empty(), "{name}");
        let retrying = configs
            .iter()
            .filter(|c| c["max_attempts"].as_u64().is_none_or(|a| a > 1))
            .count();
        let runs = v["storm"]["runs"].as_array().expect("runs").len();
        assert!(
            runs >= retrying,
            "{name}: {runs} runs for {retrying} policies"
        );
    }
}

#[test]
fn three_hops_in_the_mesh_storm_collapse_and_the_fix_recovers() {
    let (v, code) = check_json(&[
        &config("mesh-frontend.yaml"),
        &config("mesh-checkout.yaml"),
        &config("mesh-payments.yaml"),
        "--call-path",
        "--scenario",
        "scenarios/check/mesh-storm.toml",
    ]);
    assert_eq!(code, 0);
    let runs = v["storm"]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 4, "three hops and all of them");
    let all = runs.last().expect("layers");
    assert_eq!(all["name"], "all 3 layers");
    // 27 attempts per call at the bottom drive it past its collapse threshold after the
    // outage and it never serves again; retrying at the bottom only, every steady caller
    // is served but those whose three attempts all fell in the outage.
    assert_eq!(all["config"]["served"], 0);
    let fixed = all["fix"]["served"].as_u64().expect("served");
    let arrivals = 400 * 300;
    assert!(fixed > arrivals * 98 / 100, "{fixed}");
    assert!(all["config"]["requests_per_client"].as_f64().unwrap() > 20.0);
    assert!(all["fix"]["requests_per_client"].as_f64().unwrap() < 1.1);
}

#[test]
fn every_shipped_config_at_once_checks_without_layers() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/configs");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("scenarios/configs")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
    args.extend(["--scenario", "scenarios/default.toml"]);
    let (v, code) = check_json(&args);
    assert_eq!(code, 1, "the examples hold retried POSTs");
    let findings = v["findings"].as_array().expect("findings");
    assert!(findings.iter().all(|f| f["code"] != "multiple-layers"));
    let runs = v["storm"]["runs"].as_array().expect("runs");
    assert!(
        runs.iter()
            .all(|r| !r["name"].as_str().unwrap().starts_with("all "))
    );
}

/// The AWS translation is today's SDKs' by default (botocore >= 1.44.0) and botocore 1.43's
/// with `--aws-retries classic`; the JSON names the generation and its clients.
#[test]
fn aws_and_grpc_generations_are_flags_and_json_fields() {
    let file = config("aws-config");
    let json = |flags: &[&str]| -> serde_json::Value {
        let mut args = vec!["check", file.as_str(), "--no-storm", "--format", "json"];
        args.extend_from_slice(flags);
        serde_json::from_str(&stdout(&herd(&args))).expect("JSON")
    };
    let today = &json(&[])["configs"][0];
    assert_eq!(today["generation"]["name"], "aws-2026");
    assert!(
        today["generation"]["clients"]
            .as_str()
            .unwrap()
            .contains("botocore >= 1.44.0")
    );
    assert_eq!(today["backoff"]["base_ms"], 50.0);
    assert_eq!(today["throttle"]["kind"], "aws-standard-2026");
    let classic = &json(&["--aws-retries", "classic"])["configs"][0];
    assert_eq!(classic["generation"]["name"], "aws-classic");
    assert_eq!(
        classic["throttle"],
        serde_json::Value::Null,
        "legacy by default"
    );
    let grpc = config("grpc-service-config.json");
    let out = herd(&[
        "check",
        &grpc,
        "--no-storm",
        "--format",
        "json",
        "--grpc-retries",
        "uniform",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["configs"][0]["generation"]["name"], "grpc-uniform");
    let out = herd(&["check", &file, "--aws-retries", "2027"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn deny_levels_set_the_exit_code() {
    let file = config("aws-config");
    assert_eq!(herd(&["check", &file, "--no-storm"]).status.code(), Some(0));
    let out = herd(&["check", &file, "--no-storm", "--deny", "warning"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        "error: 1 finding(s) at or above warning (--deny warning)"
    );
    let out = herd(&["check", &config("istio-dump.yaml"), "--no-storm"]);
    assert_eq!(out.status.code(), Some(1), "retried POST is an error");
}

#[test]
fn bad_input_is_one_line_with_exit_2() {
    // One bad entry is an error finding (exit 1) naming the line and field, not a refusal.
    let entries = [
        (
            scratch_file(
                "bad-timeout.yaml",
                "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\nspec:\n  http:\n  - timeout: soon\n",
            ),
            ":6 [invalid-entry] spec.http[0].timeout: expected a duration",
        ),
        (
            scratch_file(
                "bad.json",
                "{\"methodConfig\": [\n  {\"retryPolicy\": {\"maxAttempts\": 0}}\n]}\n",
            ),
            ":2 [invalid-entry] methodConfig[0].retryPolicy.maxAttempts: must be a whole number in [2,",
        ),
    ];
    for (file, expected) in entries {
        let out = herd(&["check", &file, "--no-storm"]);
        assert_eq!(out.status.code(), Some(1), "{file}");
        assert!(stdout(&out).contains(expected), "{}", stdout(&out));
    }
    let cases = [
        (
            scratch_file("unknown.yaml", "hello: world\n"),
            "cannot tell which system",
        ),
        (
            "scenarios/configs/no-such-file.yaml".to_owned(),
            "cannot read configuration scenarios/configs/no-such-file.yaml: No such file",
        ),
    ];
    for (file, expected) in cases {
        let out = herd(&["check", &file]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{err}");
        assert!(stdout(&out).is_empty());
    }
    let out = herd(&[
        "check",
        &config("aws-config"),
        "--scenario",
        "scenarios/default.toml",
        "--capacity-rps",
        "55",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("(--capacity-rps)"),
        "{}",
        stderr(&out)
    );
}

/// A storm scenario that sets its own retry policy (a rule, its base, attempts, a budget)
/// asks for a policy the file does not have: `herd check` would replace it with the file's,
/// so it refuses the scenario, naming the flag, the file and the fields. The default storm
/// (every field spelt out at its default value) and the mesh's storm (no policy) still run.
#[test]
fn a_scenario_with_a_policy_of_its_own_is_refused() {
    let edi = config("resilience4j-edi.yml");
    for (scenario, fields) in [
        (
            "scenarios/check/edi-as2-exponential.toml".to_owned(),
            "retry.rules, retry.base_ms, retry.cap_ms",
        ),
        (
            scratch_file(
                "own-attempts.toml",
                "[clients]\nmax_attempts = 2\n[retry]\nbudget_percent = 10\n",
            ),
            "clients.max_attempts, retry.budget_percent",
        ),
    ] {
        let out = herd(&["check", &edi, "--scenario", &scenario]);
        assert_eq!(out.status.code(), Some(2), "{scenario}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("--scenario {scenario}: sets {fields}, which")),
            "{err}"
        );
        assert!(stdout(&out).is_empty());
    }
    for scenario in ["scenarios/default.toml", "scenarios/check/mesh-storm.toml"] {
        let (v, _) = check_json(&[&edi, "--scenario", scenario, "--outage-s", "1"]);
        assert!(!v["storm"]["runs"].as_array().expect("runs").is_empty());
    }
}

#[test]
fn csv_has_a_header_and_a_row_per_policy() {
    let out = herd(&[
        "check",
        &config("aws-config"),
        "--scenario",
        "scenarios/default.toml",
        "--format",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    assert!(lines[0].starts_with("file,line,system,name,max_attempts"));
    let columns = fields(lines[0]);
    assert!(lines[1].starts_with("scenarios/configs/aws-config,3,aws,default,3,"));
    for line in &lines[1..] {
        assert_eq!(fields(line), columns, "{line}");
    }
}

/// Fields of one CSV line, commas inside quotes included in their field (RFC 4180).
fn fields(line: &str) -> usize {
    let mut quoted = false;
    1 + line
        .chars()
        .filter(|&c| {
            if c == '"' {
                quoted = !quoted;
            }
            c == ',' && !quoted
        })
        .count()
}

#[test]
fn the_table_names_defaults_findings_and_ignored_keys() {
    let out = herd(&["check", &config("aws-config"), "--no-storm"]);
    let text = stdout(&out);
    assert!(
        text.contains("defaults         retry_mode, max_attempts"),
        "{text}"
    );
    assert!(text.contains("[no-budget]"), "{text}");
    assert!(
        text.contains("scenarios/configs/aws-config:4 [default].region"),
        "{text}"
    );
}

#[test]
fn chart_draws_each_policy_above_its_fix() {
    let path = support::temp("check-chart.svg");
    let out = herd(&[
        "check",
        &config("resilience4j-edi.yml"),
        "--chart",
        path.to_str().expect("UTF-8"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&path).expect("the chart");
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    let out = herd(&["check", &config("aws-config"), "--chart", "chart.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--chart"), "{}", stderr(&out));
}

#[test]
fn mesh_prints_amplification_advice_and_the_path_storm() {
    let (v, code) = check_json(&[
        "--mesh",
        "scenarios/check/mesh.toml",
        "--scenario",
        "scenarios/check/mesh-storm.toml",
    ]);
    assert_eq!(code, 0);
    let receives: Vec<f64> = v["mesh"]["services"]
        .as_array()
        .expect("services")
        .iter()
        .map(|s| s["receives"].as_f64().expect("receives"))
        .collect();
    assert_eq!(receives, [1.0, 3.0, 9.0, 27.0]);
    assert_eq!(v["mesh"]["amplification"][0]["service"], "ledger");
    assert_eq!(v["mesh"]["amplification"][0]["factor"], 27.0);
    assert_eq!(v["mesh"]["advice"]["retry_only"][0]["from"], "payments");
    let runs = v["storm"]["runs"].as_array().expect("runs");
    assert_eq!(runs.last().expect("path")["name"], "all 3 layers");
    let out = herd(&["check", "--mesh", "scenarios/check/no-such-mesh.toml"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The storm table prints each run's requests per client by the precision policy
/// (`herd_sim::figure`): three significant figures, so the mesh's 26.81… reads `26.8`.
#[test]
fn the_storm_table_prints_figures_by_the_precision_policy() {
    let args = [
        "--call-path",
        "scenarios/configs/mesh-frontend.yaml",
        "scenarios/configs/mesh-checkout.yaml",
        "scenarios/configs/mesh-payments.yaml",
        "--scenario",
        "scenarios/check/mesh-storm.toml",
    ];
    let (v, _) = check_json(&args);
    let table = stdout(&herd(&[&["check"][..], &args].concat()));
    for run in v["storm"]["runs"].as_array().expect("runs") {
        let name = run["name"].as_str().expect("name");
        let row = table
            .lines()
            .find(|l| l.trim_start().starts_with(name) && l.contains("as set"))
            .unwrap_or_else(|| panic!("no row for {name}:\n{table}"));
        let rpc = run["config"]["requests_per_client"].as_f64().expect("rpc");
        let cells: Vec<&str> = row.split_whitespace().collect();
        let shown = cells[cells.len() - 2];
        assert_eq!(shown, herd_sim::figure::number(rpc), "{name}: {row}");
    }
    assert!(table.contains(" 26.8 "), "{table}");
}

/// `herd check .` on this repository: the walk finds the shipped configurations (and
/// nothing under the .gitignored `target/`), and reads no file as bad input.
#[test]
fn check_dot_walks_this_repository() {
    let (v, _) = check_json(&[".", "--no-storm"]);
    let files: Vec<&str> = v["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .map(|c| c["file"].as_str().expect("file"))
        .collect();
    for shipped in ["grpc-service-config.json", "istio-dump.yaml", "aws-config"] {
        assert!(
            files.contains(&format!("scenarios/configs/{shipped}").as_str()),
            "{shipped}: {files:?}"
        );
    }
    assert!(files.iter().all(|f| !f.starts_with("target/")), "{files:?}");
}
