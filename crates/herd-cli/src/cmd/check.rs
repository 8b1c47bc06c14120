//! `herd check`: real retry configurations, what they mean, what is wrong with them, and what
//! they do in a storm beside the fix.
use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::{Args, ValueEnum};
use herd_sim::check::mesh::{Mesh, MeshReport};
use herd_sim::check::storm::{self as check_storm, StormComparison, StormOutcome};
use herd_sim::check::{self, CheckOptions, Input, Report, Severity, System, Translation};
use herd_sim::{Limits, Scenario};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::args::{Format, csv_field};
use super::storm::chart::{self, ChartFile};
use crate::error::{CliError, CliResult};

/// Read retry configurations, say what they mean, what is wrong, and run them in a storm
///
/// FILES are gRPC service configs (JSON), Envoy route configs or bootstraps (YAML or
/// JSON), Istio VirtualServices and DestinationRules (YAML, several documents or a
/// `kubectl get -o yaml` List), Linkerd ServiceProfiles or retry annotations, AWS shared
/// config files, or Spring Boot application.yml files configuring Resilience4j. The system
/// is detected from each file's text (or named with --format-in).
///
/// For every retry policy found it prints the translation into herd's terms (attempts
/// after the system's own clamps, the rule and its parameters, timeouts, the budget or
/// throttle; values that came from the system's defaults are marked), the findings (each
/// with file, line and fix), and the default storm (or --scenario) run with the policy's
/// semantics beside the suggested fix. With --call-path the files are the hops of one call
/// path, caller first: retries at several of them are a finding and run together too.
/// See docs/check.md.
///
/// Exit status: 0 when no finding is at or above --deny, 1 when one is, 2 for bad input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct CheckArgs {
    /// Configuration files.
    #[arg(value_name = "FILES", required_unless_present = "mesh")]
    files: Vec<PathBuf>,
    /// A mesh (TOML): services, who calls whom, the configuration file of each call, and the
    /// failing service; prints the requests each service receives, the amplification and
    /// the layer advice, and runs the path to the failure as a storm.
    #[arg(long, value_name = "FILE")]
    mesh: Option<PathBuf>,
    /// The files (and the VirtualServices or ServiceProfiles within a file) are the hops of
    /// one call path, caller first: retries at several of them are a finding, and the storm
    /// also runs them together.
    #[arg(long)]
    call_path: bool,
    /// The system of every file, instead of detecting it.
    #[arg(long, value_enum, value_name = "SYSTEM")]
    format_in: Option<SystemArg>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, value_enum, default_value_t = DenyArg::Error, value_name = "LEVEL")]
    deny: DenyArg,
    /// A storm scenario (TOML, the storm model) instead of the default one.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Clients in the storm's burst.
    #[arg(long, value_name = "N")]
    clients: Option<u64>,
    /// The server's capacity in answers per second (a whole number per window).
    #[arg(long, value_name = "R")]
    capacity_rps: Option<f64>,
    /// One outage from t = 0 lasting S seconds, instead of the scenario's outages.
    #[arg(long, value_name = "S")]
    outage_s: Option<f64>,
    /// Seed of the storm runs; defaults to the scenario's.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Translate and judge only; run no storm.
    #[arg(long)]
    no_storm: bool,
    /// Also draw the storms (as configured above, the fix below, per policy) to FILE.svg or
    /// FILE.png.
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SystemArg {
    Grpc,
    Envoy,
    Istio,
    Linkerd,
    Aws,
    Resilience4j,
}

impl From<SystemArg> for System {
    fn from(s: SystemArg) -> Self {
        match s {
            SystemArg::Grpc => System::Grpc,
            SystemArg::Envoy => System::Envoy,
            SystemArg::Istio => System::Istio,
            SystemArg::Linkerd => System::Linkerd,
            SystemArg::Aws => System::Aws,
            SystemArg::Resilience4j => System::Resilience4j,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DenyArg {
    Info,
    Warning,
    Error,
}

impl From<DenyArg> for Severity {
    fn from(d: DenyArg) -> Self {
        match d {
            DenyArg::Info => Severity::Info,
            DenyArg::Warning => Severity::Warning,
            DenyArg::Error => Severity::Error,
        }
    }
}

pub(crate) fn run(args: &CheckArgs) -> CliResult {
    let mut inputs = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let text = fs::read_to_string(path)
            .map_err(|e| CliError::input(format!("{}: cannot read: {e}", path.display())))?;
        let mut input = Input::new(path.display().to_string(), text);
        input.system = args.format_in.map(System::from);
        inputs.push(input);
    }
    let mesh = match &args.mesh {
        Some(path) => Some(mesh_inputs(path, &mut inputs)?),
        None => None,
    };
    let options = CheckOptions::default().with_call_path(args.call_path);
    let mut report = check::check_with(&inputs, options).map_err(CliError::input)?;
    let mesh_report = match &mesh {
        Some((mesh, files)) => {
            let by_config: Vec<(&str, Vec<Translation>)> = files
                .iter()
                .map(|(config, file)| {
                    let ts = report
                        .configs
                        .iter()
                        .filter(|t| &t.file == file)
                        .cloned()
                        .collect();
                    (config.as_str(), ts)
                })
                .collect();
            let m = mesh
                .amplify(|config| {
                    by_config
                        .iter()
                        .find(|(c, _)| *c == config)
                        .map_or(&[][..], |(_, ts)| ts.as_slice())
                })
                .map_err(CliError::input)?;
            report.findings.extend(m.findings.iter().cloned());
            let order = |file: &str| inputs.iter().position(|i| i.file == file);
            report.findings.sort_by(|a, b| {
                (order(&a.file), a.line, a.code).cmp(&(order(&b.file), b.line, b.code))
            });
            Some(m)
        }
        None => None,
    };
    let chart_file = ChartFile::of("--chart", args.chart.as_deref())?;
    let (storms, scenario_name, scenario) = if args.no_storm {
        (Vec::new(), String::new(), Scenario::default())
    } else {
        let (scenario, name) = scenario(args)?;
        let mut runs = storms(&report, &scenario, args.call_path)?;
        if let Some(m) = &mesh_report
            && let Some(c) =
                check_storm::compare_layers(&m.path, &scenario, &Limits::default(), scenario.seed)
                    .map_err(|e| CliError::input(format!("the mesh's storm: {e}")))?
        {
            runs.push(c);
        }
        (runs, name, scenario)
    };
    if let Some(file) = chart_file {
        if storms.is_empty() {
            return Err(CliError::input(
                "--chart: nothing to draw: no policy retries (or --no-storm)",
            ));
        }
        file.create()?;
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        Format::Json => {
            let mut v = json_report(&report, &storms, &scenario_name, &scenario, args.no_storm);
            v["mesh"] = mesh_report.as_ref().map_or(Value::Null, mesh_json);
            serde_json::to_writer_pretty(&mut out, &v).map_err(|e| CliError::Run(e.into()))?;
            writeln!(out)?;
        }
        Format::Csv => write!(out, "{}", csv(&report, &storms))?,
        Format::Table => {
            write!(
                out,
                "{}",
                table(&report, &storms, &scenario_name, &scenario)
            )?;
            if let Some(m) = &mesh_report {
                write!(out, "{}", mesh_table(m))?;
            }
        }
    }
    out.flush()?;
    if let Some(file) = chart_file {
        let runs: Vec<_> = storms.iter().flat_map(|c| c.runs.iter()).collect();
        chart::draw(file, &storms[0].scenario, &runs)?;
    }
    let deny = Severity::from(args.deny);
    let denied = report
        .findings
        .iter()
        .filter(|f| f.severity >= deny)
        .count();
    if denied > 0 {
        return Err(CliError::Run(anyhow!(
            "{denied} finding(s) at or above {deny} (--deny {deny})"
        )));
    }
    Ok(())
}

/// Reads a mesh file and appends the configuration files it names (relative to it) to
/// `inputs`; the mesh and, per configuration as the mesh writes it, the file name used.
fn mesh_inputs(path: &Path, inputs: &mut Vec<Input>) -> CliResult<(Mesh, Vec<(String, String)>)> {
    let text = fs::read_to_string(path)
        .map_err(|e| CliError::input(format!("{}: cannot read: {e}", path.display())))?;
    let mesh = Mesh::from_toml(&path.display().to_string(), &text).map_err(CliError::input)?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut files = Vec::new();
    for config in mesh.configs() {
        let file = dir.join(config);
        let name = file.display().to_string();
        if !inputs.iter().any(|i| i.file == name) {
            let text = fs::read_to_string(&file).map_err(|e| {
                CliError::input(format!("{}: {config}: cannot read: {e}", path.display()))
            })?;
            inputs.push(Input::new(name.clone(), text));
        }
        files.push((config.to_owned(), name));
    }
    Ok((mesh, files))
}

fn mesh_json(m: &MeshReport) -> Value {
    let services = m.graph.services();
    let receives = |p: &herd_sim::graph::Prediction| {
        services
            .iter()
            .zip(&p.receives)
            .map(|(s, r)| json!({"name": s.name, "receives": r}))
            .collect::<Vec<_>>()
    };
    json!({
        "edges": m.edges.iter().map(|e| json!({
            "from": e.from,
            "to": e.to,
            "file": e.policy.as_ref().map(|t| t.file.clone()),
            "policy": e.policy.as_ref().map(|t| t.name.clone()),
            "attempts": e.attempts,
            "budget_percent": e.budget_percent,
        })).collect::<Vec<_>>(),
        "services": receives(&m.prediction),
        "amplification": m.amplification.iter().map(|a| json!({
            "service": services[a.service].name,
            "receives": a.receives,
            "without_retries": a.without_retries,
            "factor": a.factor(),
        })).collect::<Vec<_>>(),
        "advice": {
            "retry_only": m.advice.retry_on.iter().map(|(f, t)| json!({
                "from": services[*f].name, "to": services[*t].name,
            })).collect::<Vec<_>>(),
            "attempts": m.advice.attempts,
            "services": receives(&m.advice.prediction),
        },
    })
}

fn mesh_table(m: &MeshReport) -> String {
    let services = m.graph.services();
    let counts = |p: &herd_sim::graph::Prediction| {
        services
            .iter()
            .zip(&p.receives)
            .map(|(s, r)| format!("{} {}", s.name, round(*r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = String::from("\nMesh: requests per entry request\n");
    let _ = writeln!(s, "  as configured   {}", counts(&m.prediction));
    for a in &m.amplification {
        let _ = writeln!(
            s,
            "  {} fails: it receives {} requests per entry request ({}× what it would without retries)",
            services[a.service].name,
            round(a.receives),
            a.factor().map_or("—".to_owned(), round)
        );
    }
    let only: Vec<String> = m
        .advice
        .retry_on
        .iter()
        .map(|(f, t)| format!("{} → {}", services[*f].name, services[*t].name))
        .collect();
    let _ = writeln!(
        s,
        "  advice          retry only on {} ({} attempts): {}",
        if only.is_empty() {
            "no call".to_owned()
        } else {
            only.join(", ")
        },
        m.advice.attempts,
        counts(&m.advice.prediction)
    );
    s
}

/// A count for people: whole when it is, else four significant decimals.
fn round(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x}")
    } else {
        format!("{x:.4}")
    }
}

/// The storm scenario with the flags applied; every problem is bad input naming the flag.
fn scenario(args: &CheckArgs) -> CliResult<(Scenario, String)> {
    let (mut s, name) = match &args.scenario {
        None => (Scenario::default(), "default scenario".to_owned()),
        Some(path) => {
            let text = fs::read_to_string(path).map_err(|e| {
                CliError::input(format!("cannot read scenario {}: {e}", path.display()))
            })?;
            let s = Scenario::from_toml_str(&text)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            (s, path.display().to_string())
        }
    };
    if let Some(n) = args.clients {
        s.clients.count = super::args::check_closed("clients", n, 1, 10_000_000)?;
    }
    if let Some(rps) = args.capacity_rps {
        let per_window = rps * s.window_ms / 1000.0;
        if !per_window.is_finite() || per_window < 1.0 || per_window.fract() != 0.0 {
            return Err(CliError::input(format!(
                "capacity_rps must give a whole number of at least 1 answer per {} ms window, got {rps} (--capacity-rps)",
                s.window_ms
            )));
        }
        s.server.capacity = per_window as u64;
    }
    if let Some(outage) = args.outage_s {
        let outage = super::args::check_closed("outage_s", outage, 0.0, s.horizon_s)?;
        s.server.outages = if outage > 0.0 {
            vec![[0.0, outage]]
        } else {
            Vec::new()
        };
    }
    if let Some(seed) = args.seed {
        s.seed = seed;
    }
    // Checked as a whole, so a flag that breaks the scenario is named by its field.
    herd_sim::Simulation::new(&s, &Limits::default())
        .map_err(|e| CliError::input(format!("{name}: {e}")))?;
    Ok((s, name))
}

/// Each retrying policy's storm beside its fix, then every layer together.
fn storms(
    report: &Report,
    scenario: &Scenario,
    call_path: bool,
) -> CliResult<Vec<StormComparison>> {
    let limits = Limits::default();
    let mut out = Vec::new();
    for t in report.configs.iter().filter(|t| t.retries()) {
        let c = check_storm::compare(t, scenario, &limits, scenario.seed).map_err(|e| {
            CliError::input(format!(
                "{}:{}: {} (the storm): {e}",
                t.file, t.line, t.name
            ))
        })?;
        out.push(c);
    }
    if call_path
        && let Some(c) =
            check_storm::compare_layers(&report.configs, scenario, &limits, scenario.seed)
                .map_err(|e| CliError::input(format!("the layers' storm: {e}")))?
    {
        out.push(c);
    }
    Ok(out)
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn translation_json(t: &Translation) -> Value {
    let throttle = t.throttle.as_ref().map(|th| {
        let mut m = Map::new();
        m.insert("kind".into(), th.kind.into());
        for (k, v) in &th.params {
            m.insert((*k).into(), json!(v));
        }
        Value::Object(m)
    });
    json!({
        "file": t.file,
        "line": t.line,
        "system": t.system.as_str(),
        "name": t.name,
        "max_attempts": t.max_attempts,
        "per_try_timeout_ms": t.per_try_timeout.map(ms),
        "timeout_ms": t.timeout.map(ms),
        "backoff": {
            "rule": t.backoff.rule.as_str(),
            "base_ms": ms(t.backoff.base),
            "cap_ms": ms(t.backoff.cap),
            "multiplier": t.backoff.multiplier,
            "jitter": t.backoff.jitter,
        },
        "retry_on": t.retry_on,
        "methods": t.methods,
        "throttle": throttle,
        "hedging": t.hedging.map(|h| json!({"max_attempts": h.max_attempts, "delay_ms": ms(h.delay)})),
        "defaults": t.defaults,
    })
}

#[derive(Serialize)]
struct OutcomeRow {
    served: u64,
    gave_up: u64,
    all_served_s: Option<f64>,
    requests_per_client: f64,
    peak_after_outage: u64,
}

impl From<&StormOutcome> for OutcomeRow {
    fn from(o: &StormOutcome) -> Self {
        Self {
            served: o.served,
            gave_up: o.gave_up,
            all_served_s: o.all_served_s,
            requests_per_client: o.requests_per_client,
            peak_after_outage: o.peak_after_outage,
        }
    }
}

fn json_report(
    report: &Report,
    storms: &[StormComparison],
    scenario_name: &str,
    scenario: &Scenario,
    no_storm: bool,
) -> Value {
    let storm = (!no_storm).then(|| {
        json!({
            "scenario": scenario_name,
            "clients": scenario.clients.count,
            "seed": scenario.seed,
            "runs": storms.iter().map(|c| json!({
                "file": c.file,
                "name": c.name,
                "config": OutcomeRow::from(&c.config),
                "fix": OutcomeRow::from(&c.fix),
                "fix_summary": c.fix_summary,
                "notes": c.notes,
            })).collect::<Vec<_>>(),
        })
    });
    json!({
        "configs": report.configs.iter().map(translation_json).collect::<Vec<_>>(),
        "findings": report.findings.iter().map(|f| json!({
            "severity": f.severity.as_str(),
            "code": f.code,
            "file": f.file,
            "line": f.line,
            "message": f.message,
            "fix": f.fix,
        })).collect::<Vec<_>>(),
        "ignored": report.ignored.iter().map(|i| json!({
            "file": i.file, "line": i.line, "field": i.field,
        })).collect::<Vec<_>>(),
        "storm": storm,
    })
}

fn secs(s: Option<f64>) -> String {
    s.map_or("never".to_owned(), |s| format!("{s:.1}"))
}

fn backoff_text(t: &Translation) -> String {
    let b = &t.backoff;
    match b.rule.as_str() {
        "immediate" => "immediate".to_owned(),
        "constant" => format!("constant {} ms", herd::rule::format_ms(b.base)),
        "grpc" => format!(
            "±{:.0} % ×{} from {} ms, cap {} ms",
            b.jitter * 100.0,
            b.multiplier,
            herd::rule::format_ms(b.base),
            herd::rule::format_ms(b.cap)
        ),
        rule => format!(
            "{rule} ×{} from {} ms, cap {} ms",
            b.multiplier,
            herd::rule::format_ms(b.base),
            herd::rule::format_ms(b.cap)
        ),
    }
}

fn throttle_text(t: &Translation) -> String {
    t.throttle.as_ref().map_or("none".to_owned(), |th| {
        let params: Vec<String> = th.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
        format!("{} ({})", th.kind, params.join(", "))
    })
}

fn opt_ms(d: Option<std::time::Duration>) -> String {
    d.map_or("none".to_owned(), |d| {
        format!("{} ms", herd::rule::format_ms(d))
    })
}

fn table(
    report: &Report,
    storms: &[StormComparison],
    scenario_name: &str,
    scenario: &Scenario,
) -> String {
    let mut s = String::new();
    let count = |sev: Severity| report.findings.iter().filter(|f| f.severity == sev).count();
    let _ = writeln!(
        s,
        "{} retry policies; findings: {} error, {} warning, {} info; {} keys ignored",
        report.configs.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
        report.ignored.len()
    );
    for t in &report.configs {
        let _ = writeln!(s, "\n{}:{}  {} {}", t.file, t.line, t.system, t.name);
        let attempts = t
            .max_attempts
            .map_or("no count (budget-bound)".to_owned(), |a| a.to_string());
        let rows = [
            ("attempts", attempts),
            ("backoff", backoff_text(t)),
            ("per-try timeout", opt_ms(t.per_try_timeout)),
            ("timeout", opt_ms(t.timeout)),
            (
                "retry on",
                if t.retry_on.is_empty() {
                    "-".to_owned()
                } else {
                    t.retry_on.join(", ")
                },
            ),
            ("throttle", throttle_text(t)),
            (
                "defaults",
                if t.defaults.is_empty() {
                    "-".to_owned()
                } else {
                    t.defaults.join(", ")
                },
            ),
        ];
        for (k, v) in rows {
            let _ = writeln!(s, "  {k:<16} {v}");
        }
        if let Some(h) = t.hedging {
            let _ = writeln!(
                s,
                "  {:<16} {} copies, {} ms apart",
                "hedging",
                h.max_attempts,
                herd::rule::format_ms(h.delay)
            );
        }
    }
    if !report.findings.is_empty() {
        let _ = writeln!(s, "\nFindings");
        for f in &report.findings {
            let _ = writeln!(
                s,
                "  {:<7} {}:{} [{}] {}",
                f.severity, f.file, f.line, f.code, f.message
            );
            let _ = writeln!(s, "          fix: {}", f.fix);
        }
    }
    if !report.ignored.is_empty() {
        let _ = writeln!(s, "\nIgnored (not retry settings herd reads)");
        for i in &report.ignored {
            let _ = writeln!(s, "  {}:{} {}", i.file, i.line, i.field);
        }
    }
    if !storms.is_empty() {
        let outages: Vec<String> = scenario
            .server
            .outages
            .iter()
            .map(|[a, b]| format!("{a}–{b} s"))
            .collect();
        let mut load = format!("{} clients at once", scenario.clients.count);
        if scenario.clients.arrivals_per_s > 0.0 {
            let _ = write!(load, " and {}/s arriving", scenario.clients.arrivals_per_s);
        }
        let outage = if outages.is_empty() {
            "none".to_owned()
        } else {
            outages.join(", ")
        };
        let _ = writeln!(
            s,
            "\nStorm ({scenario_name}): {load}, capacity {} per {} ms, outage {outage}, seed {}",
            scenario.server.capacity, scenario.window_ms, scenario.seed
        );
        let _ = writeln!(
            s,
            "  {:<32} {:>8} {:>8} {:>12} {:>12} {:>6}",
            "policy", "", "served", "all served s", "req/client", "peak"
        );
        for c in storms {
            for (label, o) in [("as set", &c.config), ("fix", &c.fix)] {
                let name = if label == "as set" {
                    c.name.as_str()
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "  {:<32} {:>8} {:>8} {:>12} {:>12.2} {:>6}",
                    truncate(name, 32),
                    label,
                    o.served,
                    secs(o.all_served_s),
                    o.requests_per_client,
                    o.peak_after_outage
                );
            }
            let _ = writeln!(s, "  {:<32} fix: {}", "", c.fix_summary);
            for n in &c.notes {
                let _ = writeln!(s, "  {:<32} note: {n}", "");
            }
        }
    }
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// One row per policy: its translation, then its storm and the fix's.
fn csv(report: &Report, storms: &[StormComparison]) -> String {
    let mut s = String::from(
        "file,line,system,name,max_attempts,per_try_timeout_ms,timeout_ms,rule,base_ms,cap_ms,multiplier,throttle,defaults,served,all_served_s,requests_per_client,peak_after_outage,fix_served,fix_all_served_s,fix_requests_per_client,fix_peak_after_outage\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for t in &report.configs {
        let storm = storms.iter().find(|c| c.file == t.file && c.name == t.name);
        let side = |o: Option<&StormOutcome>| match o {
            Some(o) => format!(
                "{},{},{},{}",
                o.served,
                opt(o.all_served_s),
                o.requests_per_client,
                o.peak_after_outage
            ),
            None => ",,,".to_owned(),
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&t.file),
            t.line,
            t.system,
            csv_field(&t.name),
            t.max_attempts.map_or(String::new(), |a| a.to_string()),
            opt(t.per_try_timeout.map(ms)),
            opt(t.timeout.map(ms)),
            t.backoff.rule,
            ms(t.backoff.base),
            ms(t.backoff.cap),
            t.backoff.multiplier,
            csv_field(&throttle_text(t)),
            csv_field(&t.defaults.join(" ")),
            side(storm.map(|c| &c.config)),
            side(storm.map(|c| &c.fix)),
        );
    }
    s
}
