//! `herd lab storm`: a scenario played on real sockets and timers, beside the simulator.
use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use herd::RuleName;
use herd_lab::storm::{DEFAULT_SCENARIO, LabReport, LabStorm, LabStormError};
use herd_sim::Scenario;
use serde::Serialize;

use crate::cmd::amplify::Format;
use crate::error::{CliError, CliResult};

/// Play a storm scenario on real sockets and timers and print it beside the simulator
///
/// A real HTTP server on 127.0.0.1 enforces the scenario's server: outages, a work budget
/// per window, refusals that cost a share of an answer's work, collapse. The scenario's
/// clients run as real async tasks, each retrying through herd's async retry loop with the
/// rule. Time is scaled: at --time-scale 0.25 a 100 ms step lasts 25 ms. The server records
/// arrivals and answers per window; the figures (half served, all served, requests per
/// client, peak after the outage) are printed beside herd storm's prediction for the same
/// scenario, rule and seed, with the difference.
///
/// Without a scenario file it plays a small storm: 200 clients, capacity 5 per 100 ms
/// window, an outage over the first 5 s, rules constant and full.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct LabStormArgs {
    /// The scenario file (TOML, as for herd storm); a small built-in storm when omitted.
    scenario: Option<PathBuf>,
    /// Real seconds per scenario second (0.25: a 100 ms step lasts 25 ms). 0.1 keeps up on
    /// an idle machine; a busy one makes attempts miss their step (the report counts them).
    #[arg(long, default_value_t = 0.25, value_name = "F")]
    time_scale: f64,
    /// Rule to play (repeatable); the scenario's rules by default.
    #[arg(long = "rule", value_name = "R", value_parser = parse_rule)]
    rules: Vec<RuleName>,
    /// Seed of the simulation and of the clients' generators; the scenario's by default.
    #[arg(long)]
    seed: Option<u64>,
    /// Override the number of clients (at most 5000).
    #[arg(long, value_name = "N")]
    clients: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

fn parse_rule(s: &str) -> Result<RuleName, String> {
    s.parse()
        .map_err(|e: herd::rule::UnknownRule| e.to_string())
}

fn lab_error(e: LabStormError) -> CliError {
    match e {
        LabStormError::Input(msg) => CliError::input(msg),
        LabStormError::Run(msg) => CliError::Run(anyhow::anyhow!(msg)),
    }
}

#[derive(Serialize)]
struct JsonOut<'a> {
    scenario: &'a Scenario,
    results: &'a [LabReport],
}

pub(crate) fn run(args: &LabStormArgs) -> CliResult {
    let (mut scenario, name) = match &args.scenario {
        None => (
            Scenario::from_toml_str(DEFAULT_SCENARIO)
                .map_err(|e| CliError::Run(anyhow::anyhow!("built-in scenario: {e}")))?,
            "built-in lab storm".to_owned(),
        ),
        Some(path) => {
            let text = fs::read_to_string(path).map_err(|e| {
                CliError::input(format!("cannot read scenario {}: {e}", path.display()))
            })?;
            let scenario = Scenario::from_toml_str(&text)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            (scenario, path.display().to_string())
        }
    };
    if let Some(n) = args.clients {
        scenario.clients.count = n;
    }
    let seed = args.seed.unwrap_or(scenario.seed);
    let rules = if args.rules.is_empty() {
        scenario.retry.rules.clone()
    } else {
        args.rules.clone()
    };
    // Check every rule before playing any: a bad setting fails at once, not minutes later.
    let labs = rules
        .iter()
        .map(|&rule| LabStorm::new(scenario.clone(), rule, seed, args.time_scale))
        .collect::<Result<Vec<_>, _>>()
        .map_err(lab_error)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut stdout = io::stdout().lock();
    let table = args.format == Format::Table;
    if table {
        let s = &scenario.server;
        let outages: Vec<String> = s
            .outages
            .iter()
            .map(|[a, b]| format!("[{a} s, {b} s)"))
            .collect();
        writeln!(
            stdout,
            "herd lab storm: {name}: {} clients, capacity {} per {} ms window, outage {}, \
             refusal cost {}, seed {seed}",
            scenario.clients.count,
            s.capacity,
            scenario.window_ms,
            if outages.is_empty() {
                "none".to_owned()
            } else {
                outages.join(", ")
            },
            s.refusal_cost,
        )?;
        writeln!(
            stdout,
            "time scale {}: a {} ms step lasts {:.1} ms; a real server on 127.0.0.1, clients \
             retrying through herd's async loop",
            args.time_scale,
            scenario.step_ms,
            scenario.step_ms * args.time_scale
        )?;
    }
    let mut reports = Vec::new();
    for lab in &labs {
        let report = runtime.block_on(lab.run()).map_err(lab_error)?;
        if table {
            writeln!(stdout, "\n== {}", report.rule)?;
            write!(stdout, "{}", report.render())?;
            stdout.flush()?;
        }
        reports.push(report);
    }
    if !table {
        let out = JsonOut {
            scenario: &scenario,
            results: &reports,
        };
        serde_json::to_writer_pretty(&mut stdout, &out).context("writing JSON")?;
        writeln!(stdout)?;
    }
    Ok(())
}
