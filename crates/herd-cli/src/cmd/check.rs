//! `herd check`: real retry configurations, what they mean, what is wrong with them, and what
//! they do in a storm beside the fix.
use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use herd_sim::check::mesh::Mesh;
use herd_sim::check::storm::{self as check_storm, StormComparison};
use herd_sim::check::{
    self, AwsRetries, CheckOptions, GrpcRetries, Input, Report, Severity, System, Translation,
};
use herd_sim::{Limits, Scenario};
use serde_json::Value;

use super::storm::chart::{self, ChartFile};
use crate::error::{CliError, CliResult};

mod inputs;
mod output;
mod sarif;
mod suppress;
mod whatif;
mod whatif_chart;

/// The largest `--max-file-mib`: 1 GiB.
const MAX_FILE_MIB: u64 = 1024;

use output::{csv, json_report, mesh_json, mesh_table, table};

/// Read retry configurations, say what they mean, what is wrong, and run them in a storm
///
/// FILES are gRPC service configs (JSON), Envoy route configs or bootstraps (YAML or
/// JSON), Istio VirtualServices and DestinationRules (YAML, several documents or a
/// `kubectl get -o yaml` List), Linkerd ServiceProfiles or retry annotations, AWS shared
/// config files, or Spring Boot application.yml files configuring Resilience4j. The system
/// is detected from each file's text (or named with --format-in). `-` reads standard input;
/// a folder is walked as a repository (`herd check .`), honouring .gitignore. Every file is
/// read through a cap (--max-file-mib).
///
/// For every retry policy found it prints the translation into herd's terms (attempts
/// after the system's own clamps, the rule and its parameters, timeouts, the budget or
/// throttle; values that came from the system's defaults are marked), the findings (each
/// with file, line and fix), and what happens when the backend fails: a brownout, an
/// overload and an outage on steady traffic, each policy as set beside the fix its findings
/// derive (in the system's own terms). With --call-path the files are the hops of one call
/// path, caller first: retries at several of them are a finding, and the hops' retry loops
/// also run together. --scenario FILE runs a storm scenario instead. See docs/check.md.
///
/// Findings are raised once per cause by a list of analyzers (--list prints them and every
/// code); `--format sarif` writes SARIF 2.1.0 for code scanning; `# herd:ignore CODE`, the
/// annotation `herd.dev/ignore: CODE` and --ignore suppress a code.
///
/// Exit status: 0 when no finding is at or above --deny, 1 when one is, 2 for bad input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct CheckArgs {
    /// Configuration files; `-` reads standard input; a folder is walked (honouring
    /// .gitignore) for the files that configure retries.
    #[arg(value_name = "FILES", required_unless_present_any = ["mesh", "list"])]
    files: Vec<PathBuf>,
    /// The largest file read, in MiB (a folder's larger files are skipped and named).
    #[arg(long, value_name = "MIB", default_value_t = 16)]
    max_file_mib: u64,
    /// List the files a folder's walk skipped, and why, on stderr.
    #[arg(long)]
    verbose: bool,
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
    /// Output format: `sarif` is SARIF 2.1.0 for code scanning (one rule per finding code).
    #[arg(long, value_enum, default_value_t = CheckFormat::Table)]
    format: CheckFormat,
    /// Drop findings of CODE (repeatable, or a comma list); `--list` prints the codes. A file
    /// can also say `# herd:ignore CODE` on or above the line, or carry the Kubernetes
    /// annotation `herd.dev/ignore: CODE[,CODE]`.
    #[arg(long, value_name = "CODE", value_delimiter = ',')]
    ignore: Vec<String>,
    /// Print the analyzers (what each reads and the codes it raises) and every finding code
    /// with its level and help, then exit.
    #[arg(long)]
    list: bool,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, value_enum, default_value_t = DenyArg::Error, value_name = "LEVEL")]
    deny: DenyArg,
    /// Run this storm scenario (TOML, the storm model: a burst of clients through an
    /// outage) instead of the what-if's three faults.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// --clients, --capacity-rps, --outage-s, --refusal-cost, --latency-ms: the storm's
    /// fields, as `herd storm` takes them; the what-if takes all but --clients (its outage
    /// then lasts S seconds, its answers take MEAN ms at an idle backend).
    #[command(flatten)]
    flags: super::storm_flags::StormFlags,
    /// --rps, --brownout, --failure-status, --gives-up-as-500: the what-if's.
    #[command(flatten)]
    whatif: whatif::WhatIfFlags,
    /// Seed of the storm runs; defaults to the scenario's.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Translate and judge only; run no what-if and no storm.
    #[arg(long)]
    no_storm: bool,
    /// Also draw the load at the backend over time (the what-if: as set against the fix, per
    /// policy and fault; the storm: as configured above, the fix below) to FILE.svg or
    /// FILE.png.
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
}

/// `herd check`'s formats: the three every command has, and SARIF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CheckFormat {
    /// Aligned columns for people.
    Table,
    /// One JSON object for scripts.
    Json,
    /// Comma-separated values with a header line, one row per policy.
    Csv,
    /// SARIF 2.1.0 for code scanning.
    Sarif,
}

/// `--format-in`: a system, spelt as [`System::as_str`] spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SystemArg(System);

impl ValueEnum for SystemArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [SystemArg; System::ALL.len()] = {
            let mut all = [SystemArg(System::Grpc); System::ALL.len()];
            let mut i = 0;
            while i < all.len() {
                all[i] = SystemArg(System::ALL[i]);
                i += 1;
            }
            all
        };
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()))
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
    if args.list {
        print!("{}", output::list());
        return Ok(());
    }
    for code in &args.ignore {
        if check::messages::message(code).is_none() {
            return Err(CliError::input(format!(
                "--ignore {code}: no such finding code (herd check --list prints them)"
            )));
        }
    }
    if args.max_file_mib == 0 || args.max_file_mib > MAX_FILE_MIB {
        return Err(CliError::input(format!(
            "--max-file-mib {}: must be in [1, {MAX_FILE_MIB}]",
            args.max_file_mib
        )));
    }
    let max = args.max_file_mib << 20;
    let gathered = inputs::gather(&args.files, args.format_in.map(|s| s.0), max)?;
    report_skipped(&gathered.skipped, args.verbose);
    let mut inputs = gathered.inputs;
    if inputs.is_empty() && args.mesh.is_none() {
        return Err(CliError::input(format!(
            "no retry configuration among {} ({} file(s) skipped; --verbose lists them)",
            args.files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            gathered.skipped.len()
        )));
    }
    let mesh = match &args.mesh {
        Some(path) => Some(mesh_inputs(path, max, &mut inputs)?),
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
    let text_of = |file: &str| {
        inputs
            .iter()
            .find(|i| i.file == file)
            .map(|i| i.text.as_str())
    };
    let (kept, suppressed) =
        suppress::apply(std::mem::take(&mut report.findings), text_of, &args.ignore);
    report.findings = kept;
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
    let what_if = args.scenario.is_none() && !args.no_storm;
    if !what_if && args.whatif.any() {
        return Err(CliError::input(
            "--rps, --brownout, --failure-status and --gives-up-as-500 set the what-if, which --scenario and --no-storm replace",
        ));
    }
    let (what_ifs, what_if_options) = if what_if {
        let o = whatif::options(&args.whatif, &args.flags, args.seed)?;
        let mut layered = Vec::new();
        if args.call_path {
            layered.extend(whatif::layered(&report.configs));
        }
        if let Some(m) = &mesh_report
            && m.path.len() > 1
        {
            layered.push((format!("mesh path, {} hops", m.path.len()), m.path.clone()));
        }
        (
            whatif::runs(&report, &layered, &o, args.chart.is_some())?,
            Some(o),
        )
    } else {
        (Vec::new(), None)
    };
    let mut simulated = 0;
    let (storms, scenario_name, scenario) = if args.no_storm || what_if {
        (Vec::new(), String::new(), Scenario::default())
    } else {
        let (scenario, name) = scenario(args)?;
        let (mut runs, count) = storms(&report, &scenario, args.call_path, args.chart.is_some())?;
        simulated = count;
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
            simulated += 1;
        }
        (runs, name, scenario)
    };
    if let Some(file) = chart_file {
        if storms.is_empty() && what_ifs.is_empty() {
            return Err(CliError::input(
                "--chart: nothing to draw: no policy retries (or --no-storm)",
            ));
        }
        file.check()?;
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        CheckFormat::Sarif => {
            serde_json::to_writer_pretty(&mut out, &sarif::sarif(&report))?;
            writeln!(out)?;
        }
        CheckFormat::Json => {
            let no_storm = args.no_storm || what_if;
            let mut v = json_report(&report, &storms, &scenario_name, &scenario, no_storm);
            v["suppressed"] = suppressed.into();
            if !no_storm {
                v["storm"]["simulated"] = simulated.into();
            }
            v["mesh"] = mesh_report.as_ref().map_or(Value::Null, mesh_json);
            if let Some(o) = &what_if_options {
                v["whatif"] = whatif::settings_json(o);
                v["runs"] = whatif::json(&what_ifs);
            }
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        CheckFormat::Csv if what_if => write!(out, "{}", whatif::csv(&what_ifs))?,
        CheckFormat::Csv => write!(out, "{}", csv(&report, &storms))?,
        CheckFormat::Table => {
            if suppressed > 0 {
                writeln!(
                    out,
                    "{suppressed} finding(s) suppressed (herd:ignore, --ignore)"
                )?;
            }
            write!(
                out,
                "{}",
                table(&report, &storms, &scenario_name, &scenario)
            )?;
            if let Some(m) = &mesh_report {
                write!(out, "{}", mesh_table(m))?;
            }
            if let Some(o) = &what_if_options {
                write!(out, "{}", whatif::table(&what_ifs, o))?;
            }
        }
    }
    out.flush()?;
    if let Some(file) = chart_file {
        if let Some(o) = &what_if_options {
            whatif_chart::draw(file, o.capacity_rps, &whatif::panels(&what_ifs))?;
        } else {
            let runs: Vec<_> = storms.iter().flat_map(|c| c.runs.iter()).collect();
            chart::draw(file, &storms[0].scenario, &runs)?;
        }
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

/// What a folder's walk skipped: every path with `--verbose`; else one line for the
/// configuration files that could not be read.
fn report_skipped(skipped: &[inputs::Skipped], verbose: bool) {
    if verbose {
        for s in skipped {
            eprintln!("skipped {}: {}", s.path, s.why);
        }
        return;
    }
    let unread: Vec<&str> = skipped
        .iter()
        .filter(|s| s.unread)
        .map(|s| s.path.as_str())
        .collect();
    if !unread.is_empty() {
        eprintln!(
            "note: {} file(s) not read (over the cap or not UTF-8; --verbose says why): {}",
            unread.len(),
            unread.join(", ")
        );
    }
}

/// Reads a mesh file and appends the configuration files it names (relative to it) to
/// `inputs`; the mesh and, per configuration as the mesh writes it, the file name used.
fn mesh_inputs(
    path: &Path,
    max: u64,
    inputs: &mut Vec<Input>,
) -> CliResult<(Mesh, Vec<(String, String)>)> {
    let text = super::input_file::read_input(path, "mesh")?;
    let mesh = Mesh::from_toml(&path.display().to_string(), &text).map_err(CliError::input)?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut files = Vec::new();
    for config in mesh.configs() {
        let file = dir.join(config);
        let name = file.display().to_string();
        if !inputs.iter().any(|i| i.file == name) {
            let text =
                super::input_file::read_capped(&file, "configuration", max, "--max-file-mib")
                    .map_err(|e| CliError::input(format!("{}: {config}: {e}", path.display())))?;
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
            let set = check_storm::policy_fields_set(&s);
            if !set.is_empty() {
                return Err(CliError::input(format!(
                    "--scenario {}: sets {}, which the policy under check sets (herd check runs each file's own policy), so the storm would not be the file's; remove {} from the scenario, or run it as it is with `herd storm`",
                    path.display(),
                    set.join(", "),
                    if set.len() == 1 { "it" } else { "them" }
                )));
            }
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

/// Each retrying policy's storm beside its fix, then every layer together; and how many
/// policies were simulated. Policies whose semantics are the same ([`check_storm::storm_key`])
/// share one simulation, and a run's series (its windows, kept for charts) is dropped unless
/// `keep_series`: memory does not grow with the number of identical policies.
fn storms(
    report: &Report,
    scenario: &Scenario,
    call_path: bool,
    keep_series: bool,
) -> CliResult<(Vec<StormComparison>, usize)> {
    let limits = Limits::default();
    let mut out = Vec::new();
    let mut simulated: HashMap<String, StormComparison> = HashMap::new();
    for t in report.configs.iter().filter(|t| t.retries()) {
        let key = check_storm::storm_key(t);
        let mut c = match simulated.get(&key) {
            Some(c) => c.clone(),
            None => {
                let mut c = check_storm::compare(
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
                if !keep_series {
                    for run in &mut c.runs {
                        run.series.arrivals = Vec::new();
                        run.series.served = Vec::new();
                    }
                }
                simulated.insert(key, c.clone());
                c
            }
        };
        c.file.clone_from(&t.file);
        c.name.clone_from(&t.name);
        out.push(c);
    }
    let mut count = simulated.len();
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
        count += 1;
    }
    Ok((out, count))
}
