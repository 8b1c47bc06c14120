//! `herd lab storm`: a scenario played on real sockets and timers, beside the simulator.
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use herd_lab::storm::descriptors::{self, Descriptors};
use herd_lab::storm::{DEFAULT_SCENARIO, LabReport, LabStorm, MAX_CLIENTS};
use herd_sim::Scenario;
use serde::Serialize;

use super::shared::{
    exit_on_verdicts, interrupted, print_results, read_scenario, storm_error, until_ctrl_c,
};
use crate::cmd::args::{Format, check_closed};
use crate::cmd::interrupt::Interrupt;
use crate::cmd::progress;
use crate::error::CliResult;

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
/// Every run ends with a verdict line: measured against simulated, with the tolerance.
/// The command exits 1 when a run differs, or when attempts were lost on the wire (transport
/// errors: the run is not comparable). Before starting it makes sure the process may open
/// two file descriptors per client, raising the soft limit when the hard limit allows.
///
/// Without a scenario file it plays a small storm: 200 clients, capacity 5 per 100 ms
/// window, an outage over the first 5 s, rules constant and full.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct LabStormArgs {
    /// The scenario file (TOML, as for herd storm); a small built-in storm when omitted.
    scenario: Option<PathBuf>,
    /// Real seconds per scenario second, in (0, 10] (0.25: a 100 ms step lasts 25 ms). 0.1
    /// keeps up on an idle machine; a busy one makes attempts miss their step (the report
    /// counts them).
    #[arg(long, default_value_t = 0.25, value_name = "F")]
    time_scale: f64,
    #[command(flatten)]
    rules: crate::cmd::args::RuleArgs,
    /// Seed of the simulation and of the clients' generators; the scenario's by default.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Play each rule K times, with seeds S..S+K-1.
    #[arg(long, value_name = "K", default_value_t = 1)]
    runs: u64,
    /// Override the number of clients (at most 5000).
    #[arg(long, value_name = "N")]
    clients: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Serialize)]
struct LabStormJson<'a> {
    scenario: &'a Scenario,
    results: &'a [LabReport],
}

pub(crate) fn run(args: &LabStormArgs) -> CliResult {
    let (mut scenario, name) = read_scenario(
        args.scenario.as_deref(),
        (DEFAULT_SCENARIO, "built-in lab storm"),
        |text| Scenario::from_toml_str(text, &herd_sim::Limits::default(), |_| {}),
    )?;
    if let Some(n) = args.clients {
        scenario.clients.count = check_closed("clients", n, 1, MAX_CLIENTS)?;
    }
    let runs = check_closed("runs", args.runs, 1, 100)?;
    let seed = args.seed.unwrap_or(scenario.seed);
    let rules = args.rules.rules_or(&scenario.retry.rules);
    // Check every rule before playing any: a bad setting fails at once, not minutes later.
    let labs = rules
        .iter()
        .flat_map(|&rule| (0..runs).map(move |i| (rule, seed.wrapping_add(i))))
        .map(|(rule, seed)| LabStorm::new(scenario.clone(), rule, seed, args.time_scale))
        .collect::<Result<Vec<_>, _>>()
        .map_err(storm_error)?;
    // Too few descriptors lose attempts on the wire: raise the limit or refuse before starting.
    let needed = descriptors::needed(scenario.clients.count);
    if let Descriptors::Raised { from, to } =
        descriptors::ensure(needed, scenario.clients.count).map_err(storm_error)?
    {
        eprintln!("note: raised the open-file limit from {from} to {to} ({needed} needed)");
    }
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
            "time scale {}: a {} ms step lasts {} ms; a real server on 127.0.0.1, clients \
             retrying through herd's async loop",
            args.time_scale,
            scenario.step_ms,
            herd_sim::figure::number(scenario.step_ms * args.time_scale)
        )?;
    }
    let mut reports = Vec::new();
    let mut stopped = false;
    let interrupt = Interrupt::watch();
    for (i, lab) in labs.iter().enumerate() {
        let spinner = progress::spinner(format!(
            "lab storm: run {} of {}, rule {}, seed {}",
            i + 1,
            labs.len(),
            lab.rule(),
            lab.seed()
        ));
        let report = until_ctrl_c(&runtime, &interrupt, lab.run());
        spinner.finish_and_clear();
        let Some(report) = report else {
            stopped = true;
            break;
        };
        let report = report.map_err(storm_error)?;
        if table {
            writeln!(stdout, "\n== {}", report.rule)?;
            write!(stdout, "{}", report.render())?;
            stdout.flush()?;
        }
        reports.push(report);
    }
    let json = LabStormJson {
        scenario: &scenario,
        results: &reports,
    };
    print_results(&mut stdout, args.format, &json, |out| {
        write_csv(out, &reports)
    })?;
    if stopped {
        return Err(interrupted(reports.len(), labs.len(), "runs"));
    }
    exit_on_verdicts(
        reports
            .iter()
            .filter_map(|r| r.verdict.as_ref().map(|v| v.verdict)),
        reports.len(),
        "runs",
        "lost attempts on the wire",
        "the tolerance",
    )
}

/// One line per run: measured and simulated figures side by side, and the verdict.
fn write_csv(out: &mut impl Write, reports: &[LabReport]) -> io::Result<()> {
    writeln!(
        out,
        "rule,seed,clients,time_scale,verdict,transport_errors,late_attempts,\
         measured_requests_per_client,simulated_requests_per_client,\
         measured_peak_after_outage,simulated_peak_after_outage,\
         measured_half_served_s,simulated_half_served_s,\
         measured_all_served_s,simulated_all_served_s"
    )?;
    let opt = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    for r in reports {
        let verdict = r.verdict.as_ref().map_or("", |j| j.verdict.name());
        writeln!(
            out,
            "{},{},{},{},{verdict},{},{},{},{},{},{},{},{},{},{}",
            r.rule,
            r.seed,
            r.clients,
            r.time_scale,
            r.transport_errors,
            r.late_attempts,
            r.measured.requests_per_client,
            r.simulated.requests_per_client,
            r.measured.peak_after_outage,
            r.simulated.peak_after_outage,
            opt(r.measured.half_served_s),
            opt(r.simulated.half_served_s),
            opt(r.measured.all_served_s),
            opt(r.simulated.all_served_s),
        )?;
    }
    Ok(())
}
