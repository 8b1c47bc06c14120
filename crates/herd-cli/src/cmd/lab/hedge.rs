//! `herd lab hedge`: a latency scenario played on real sockets through herd's hedging layer,
//! beside the simulator.
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::Context as _;
use clap::Args;
use herd_lab::hedge::{
    DEFAULT_SCENARIO, DEFAULT_SIM_RUNS, LabHedge, LabHedgeError, MAX_REQUESTS, MAX_SIM_RUNS,
    PolicyReport,
};
use herd_lab::storm::descriptors::{self, Descriptors};
use herd_sim::latency::LatencyScenario;
use serde::Serialize;

use super::shared::{
    exit_on_verdicts, interrupted, print_results, read_scenario, storm_error, until_ctrl_c,
};
use crate::cmd::args::{Format, check_closed, check_seed, csv_field};
use crate::cmd::interrupt::Interrupt;
use crate::cmd::progress;
use crate::error::{CliError, CliResult};

/// Play a latency scenario on real sockets, hedged by herd's layer, beside the simulator
///
/// A pool of real HTTP servers on 127.0.0.1 (one ephemeral port each) serves copies one at
/// a time from FIFO queues, with the scenario's service times and pauses. Open-loop clients
/// (Poisson arrivals, seeded) send every sub-request through herd::hedge::HedgeLayer over a
/// real hyper client, once per policy (none, delay, percentile, with or without a budget),
/// each on a fresh pool that meets the same arrivals and pauses (the simulator's own for the
/// seed). Time is scaled: at --time-scale 0.5 a 10 ms service time lasts 5 ms.
///
/// For each policy it prints p50, p99, p99.9, the mean and the extra load, measured beside
/// herd hedge's prediction for the same scenario and seed and the spread of that prediction
/// over --sim-runs seeds; the copies the clients sent and the servers received, reconciled copy
/// by copy; and a verdict line. A figure agrees when it lies within 4 standard errors (the
/// simulated seeds' spread) of their mean; latencies may be higher by the real overhead the
/// lab measures (the wire and the servers' timers). The command exits 1 when a policy
/// differs, or when a copy or a request was lost (not comparable). Tied requests and
/// cancel_losers are not modelled. See docs/page-and-lab.md.
///
/// Without a scenario file it plays a small pool: 200 requests/s on 10 servers (20 %
/// utilisation), service times exponential with mean 10 ms, each server pausing 100 ms
/// about every 2 s; policies none, hedge-40ms, hedge-p95, hedge-40ms-budget-5%.
///
/// Examples:
///   herd lab hedge
///   herd lab hedge --requests 500 --policy none --policy hedge-40ms
///   herd lab hedge scenarios/lab-hedge.toml --time-scale 1 --format json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct LabHedgeArgs {
    /// A latency scenario (TOML, as for herd hedge); a small built-in pool when omitted.
    scenario: Option<PathBuf>,
    /// Real seconds per scenario second, in (0, 10]; a mean service time must last at least
    /// 2 ms of real time. On a busy machine, or in a debug build, 1 keeps the real overhead
    /// small beside the service times.
    #[arg(long, default_value_t = 0.5, value_name = "F")]
    time_scale: f64,
    /// User requests to measure per policy (overrides the scenario's `requests`); with the
    /// warm-up at most 20000.
    #[arg(long, value_name = "N")]
    requests: Option<i128>,
    /// Seed of the lab's draws and of the simulation (overrides the scenario's).
    #[arg(long, value_name = "S")]
    seed: Option<i128>,
    /// Only the policies with these names (repeat the flag); every policy by default.
    #[arg(long = "policy", value_name = "NAME")]
    policies: Vec<String>,
    /// Simulated runs (seeds S..S+K−1) whose spread is the sampling error of one run, in
    /// [2, 200].
    #[arg(long, value_name = "K", default_value_t = i128::from(DEFAULT_SIM_RUNS))]
    sim_runs: i128,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

fn lab_error(e: LabHedgeError) -> CliError {
    match e {
        LabHedgeError::Input(msg) => CliError::input(msg),
        LabHedgeError::Run(msg) => CliError::Run(anyhow::anyhow!(msg)),
    }
}

#[derive(Serialize)]
struct LabHedgeJson<'a> {
    scenario: &'a LatencyScenario,
    time_scale: f64,
    results: &'a [PolicyReport],
}

fn load(args: &LabHedgeArgs) -> CliResult<(LatencyScenario, String)> {
    let (mut scenario, name) = read_scenario(
        args.scenario.as_deref(),
        (DEFAULT_SCENARIO, "built-in lab pool"),
        LatencyScenario::from_toml_str,
    )?;
    if let Some(seed) = args.seed {
        scenario.seed = check_seed(seed)?;
    }
    if let Some(requests) = args.requests {
        // In range, so the conversion is exact.
        scenario.requests = check_closed("requests", requests, 1, i128::from(MAX_REQUESTS))? as u64;
        // A warm-up of a tenth, at most the scenario's: short runs stay short.
        scenario.warmup_requests = scenario.warmup_requests.min(scenario.requests / 10);
    }
    if !args.policies.is_empty() {
        let known: Vec<String> = scenario.policies.iter().map(|p| p.name.clone()).collect();
        if let Some(unknown) = args.policies.iter().find(|p| !known.contains(p)) {
            return Err(CliError::input(format!(
                "policy \"{unknown}\" is not in the scenario: {} (--policy)",
                known.join(", ")
            )));
        }
        scenario
            .policies
            .retain(|p| args.policies.contains(&p.name));
    }
    Ok((scenario, name))
}

pub(crate) fn run(args: &LabHedgeArgs) -> CliResult {
    let (scenario, name) = load(args)?;
    let sim_runs = check_closed("sim_runs", args.sim_runs, 2, i128::from(MAX_SIM_RUNS))? as u32;
    let lab = LabHedge::new(scenario, args.time_scale, sim_runs).map_err(lab_error)?;
    let needed = lab.descriptors_needed();
    let who = "the copies in flight";
    let fewer = "play a slower scenario (traffic.rate_per_s) or fewer copies";
    if let Descriptors::Raised { from, to } =
        descriptors::ensure_for(needed, who, fewer).map_err(storm_error)?
    {
        eprintln!("note: raised the open-file limit from {from} to {to} ({needed} needed)");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let s = lab.scenario();
    let mut stdout = io::stdout().lock();
    let table = args.format == Format::Table;
    if table {
        writeln!(
            stdout,
            "herd lab hedge: {name}: {} user requests (+{} warm-up) at {}/s, fan-out {}, {} \
             servers, {:?} service of mean {} ms, pauses of {} ms about every {} s, seed {}",
            s.requests,
            s.warmup_requests,
            s.traffic.rate_per_s,
            s.traffic.fan_out,
            s.servers.count,
            s.service.distribution,
            s.service.mean_ms,
            s.hiccups.pause_ms,
            s.hiccups.every_s,
            s.seed
        )?;
        writeln!(
            stdout,
            "time scale {}: real servers on 127.0.0.1, clients hedging through herd's \
             HedgeLayer; latencies in scenario ms",
            lab.time_scale()
        )?;
        stdout.flush()?;
    }
    let policies: Vec<String> = s.policies.iter().map(|p| p.name.clone()).collect();
    let total = lab.users() * policies.len() as u64;
    let done = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let mut reports = Vec::new();
    let interrupt = Interrupt::watch();
    let outcome = std::thread::scope(|scope| {
        scope.spawn(|| {
            progress::draw(
                total,
                "{bar:40} {pos}/{len} user requests {msg} ({elapsed})",
                &finished,
                || (done.load(Ordering::Relaxed), String::new()),
            );
        });
        let outcome = (|| -> CliResult<bool> {
            for (i, policy) in policies.iter().enumerate() {
                let Some(report) = until_ctrl_c(&runtime, &interrupt, lab.run_policy(i, &done))
                else {
                    return Ok(true);
                };
                let report = report.map_err(lab_error)?;
                if table {
                    writeln!(stdout, "\n== {policy}")?;
                    write!(stdout, "{}", report.render())?;
                    stdout.flush()?;
                }
                reports.push(report);
            }
            Ok(false)
        })();
        finished.store(true, Ordering::Release);
        outcome
    });
    let stopped = outcome?;
    let json = LabHedgeJson {
        scenario: lab.scenario(),
        time_scale: lab.time_scale(),
        results: &reports,
    };
    print_results(&mut stdout, args.format, &json, |out| {
        write_csv(out, &reports)
    })?;
    if stopped {
        return Err(interrupted(reports.len(), policies.len(), "policies"));
    }
    exit_on_verdicts(
        reports.iter().map(|r| r.verdict.verdict),
        reports.len(),
        "policies",
        "lost copies or requests",
        "the sampling error",
    )
}

/// One line per policy: measured, simulated (the same seed), one run's standard error (the
/// seeds' spread), the accounting, the verdict.
fn write_csv(out: &mut impl Write, reports: &[PolicyReport]) -> io::Result<()> {
    writeln!(
        out,
        "policy,seed,time_scale,verdict,measured_p50_ms,simulated_p50_ms,sd_p50_ms,\
         measured_p99_ms,simulated_p99_ms,sd_p99_ms,measured_p999_ms,simulated_p999_ms,\
         sd_p999_ms,measured_extra_load_percent,servers_extra_load_percent,\
         simulated_extra_load_percent,sd_extra_load_percent,allowance_ms,sent,received,\
         cancelled_before_arrival,gave_up"
    )?;
    for r in reports {
        let verdict = r.verdict.verdict.name();
        let (m, sim, sd) = (&r.measured, &r.simulated, &r.spread.sd);
        writeln!(
            out,
            "{},{},{},{verdict},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.policy),
            r.seed,
            r.time_scale,
            m.p50_ms,
            sim.p50_ms,
            sd.p50_ms,
            m.p99_ms,
            sim.p99_ms,
            sd.p99_ms,
            m.p999_ms,
            sim.p999_ms,
            sd.p999_ms,
            m.extra_load_percent,
            r.servers_extra_load_percent,
            sim.extra_load_percent,
            sd.extra_load_percent,
            r.allowance_ms,
            r.accounting.sent,
            r.accounting.received,
            r.accounting.cancelled_before_arrival,
            r.accounting.gave_up,
        )?;
    }
    Ok(())
}
