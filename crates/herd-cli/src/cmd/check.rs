//! `herd check`: real retry configurations, what they mean, what is wrong with them, and what
//! they do in a storm beside the fix.
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::{Args, ValueEnum};
use herd_sim::check::mesh::Mesh;
use herd_sim::check::storm::{self as check_storm, StormComparison};
use herd_sim::check::{
    self, AwsRetries, CheckOptions, GrpcRetries, Input, Report, Severity, System, Translation,
};
use herd_sim::{Limits, Scenario};
use serde_json::Value;

use super::args::Format;
use super::storm::chart::{self, ChartFile};
use crate::error::{CliError, CliResult};

mod output;

use output::{csv, json_report, mesh_json, mesh_table, table};

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
    /// Which AWS SDKs to read AWS config files for: `2026`, today's (botocore >= 1.44.0 and
    /// the SDKs with AWS_NEW_RETRIES_2026=true: 50 ms base, 14 tokens a retry, standard by
    /// default), or `classic`, the SDKs before the change (botocore < 1.44.0: 1 s base, 5
    /// tokens, legacy by default).
    #[arg(long, value_enum, default_value_t = AwsRetriesArg::V2026, value_name = "GEN")]
    aws_retries: AwsRetriesArg,
    /// Which gRPC implementations to read service configs for: `jitter-20`, pauses
    /// `min(b·m^(n−1), cap)·U[0.8, 1.2)` (gRPC core and grpcio, grpc-go >= 1.70.0, newer
    /// grpc-java), or `uniform`, `U[0, min(b·m^(n−1), cap))` (grpc-go < 1.70.0, grpc-js).
    #[arg(long, value_enum, default_value_t = GrpcRetriesArg::Jitter20, value_name = "GEN")]
    grpc_retries: GrpcRetriesArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, value_enum, default_value_t = DenyArg::Error, value_name = "LEVEL")]
    deny: DenyArg,
    /// A storm scenario (TOML, the storm model) instead of the default one.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// --clients, --capacity-rps, --outage-s, --refusal-cost, --latency-ms: the storm's
    /// fields, as `herd storm` takes them.
    #[command(flatten)]
    flags: super::storm_flags::StormFlags,
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
enum AwsRetriesArg {
    #[value(name = "2026")]
    V2026,
    Classic,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum GrpcRetriesArg {
    #[value(name = "jitter-20")]
    Jitter20,
    Uniform,
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
    let options = CheckOptions::default()
        .with_call_path(args.call_path)
        .with_aws_retries(match args.aws_retries {
            AwsRetriesArg::V2026 => AwsRetries::V2026,
            AwsRetriesArg::Classic => AwsRetries::Classic,
        })
        .with_grpc_retries(match args.grpc_retries {
            GrpcRetriesArg::Jitter20 => GrpcRetries::Jitter20,
            GrpcRetriesArg::Uniform => GrpcRetries::Uniform,
        });
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
            && let Some(c) = check_storm::compare_layers(
                &m.path,
                &scenario,
                &Limits::default(),
                scenario.seed,
                &herd_sim::Cancel::new(),
            )
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
        file.check()?;
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        Format::Json => {
            let mut v = json_report(&report, &storms, &scenario_name, &scenario, args.no_storm);
            v["mesh"] = mesh_report.as_ref().map_or(Value::Null, mesh_json);
            serde_json::to_writer_pretty(&mut out, &v)?;
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

/// The storm scenario with the flags applied; every problem is bad input naming the flag.
fn scenario(args: &CheckArgs) -> CliResult<(Scenario, String)> {
    let (mut s, name) = match &args.scenario {
        None => (Scenario::default(), "default scenario".to_owned()),
        Some(path) => {
            let text = super::input_file::read_input(path, "scenario")?;
            let s = Scenario::from_toml_str(&text, &Limits::default(), |_| {})
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            (s, path.display().to_string())
        }
    };
    args.flags.apply(&mut s)?;
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
        let c = check_storm::compare(
            t,
            scenario,
            &limits,
            scenario.seed,
            &herd_sim::Cancel::new(),
        )
        .map_err(|e| {
            CliError::input(format!(
                "{}:{}: {} (the storm): {e}",
                t.file, t.line, t.name
            ))
        })?;
        out.push(c);
    }
    if call_path
        && let Some(c) = check_storm::compare_layers(
            &report.configs,
            scenario,
            &limits,
            scenario.seed,
            &herd_sim::Cancel::new(),
        )
        .map_err(|e| CliError::input(format!("the layers' storm: {e}")))?
    {
        out.push(c);
    }
    Ok(out)
}
