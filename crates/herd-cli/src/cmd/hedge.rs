//! `herd hedge`: what hedged requests do to the tail latency, and what they cost.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::Context;
use clap::Args;
use herd_sim::Cancel;
use herd_sim::latency::{LatencyModel, LatencyResult, LatencyScenario};
use rayon::prelude::*;
use serde::Serialize;

use crate::cmd::args::{Format, check_seed, csv_field};
use crate::cmd::progress;
use crate::cmd::storm::chart::ChartFile;
use crate::error::{CliError, CliResult};

mod chart;

/// Compare hedging policies on a latency scenario: the tail each one cuts, the load it adds
///
/// User requests arrive at random (open loop) and fan out to sub-requests on a pool of
/// servers with FIFO queues; a user waits for the slowest sub-request. Servers pause now and
/// then (garbage collection, background work), which makes the tail. Each policy runs on
/// the same arrivals and pauses, and prints p50, p99, p99.9 and the extra copies it sent.
///
/// Without a file, the embedded default: 600 requests/s, fan-out 10, 20 servers at 30 %
/// utilisation, each pausing 100 ms about every 10 s. scenarios/hedge-overload.toml shows
/// the other side: near saturation, hedges make the tail worse unless a budget bounds them.
/// The model is defined in docs/model.md; docs/hedging.md discusses the figures.
///
/// Examples:
///   herd hedge
///   herd hedge --format json
///   herd hedge scenarios/hedge-overload.toml --chart tail.svg
///   herd hedge --utilisation 0.1,0.3,0.5,0.7,0.9 --chart crossover.png
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct HedgeArgs {
    /// A latency scenario (TOML, `model = "latency"`); the embedded default without one.
    scenario: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// The run's seed (overrides the scenario's).
    #[arg(long, allow_negative_numbers = true)]
    seed: Option<i128>,
    /// User requests to measure (overrides the scenario's `requests`).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    requests: Option<i128>,
    /// Run at each of these server utilisations (fractions, e.g. 0.3,0.6,0.9), setting the
    /// arrival rate to match, to find where hedging stops paying.
    #[arg(
        long,
        value_name = "U,U,…",
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    utilisation: Vec<f64>,
    /// Policies to run, by name (repeatable, or a comma list: --policy none,hedge-10ms);
    /// every policy of the scenario without it.
    #[arg(long = "policy", value_name = "NAME", value_delimiter = ',')]
    policies: Vec<String>,
    /// Draw a chart (SVG or PNG by the extension): the latency tail per policy, or p99.9
    /// against utilisation with --utilisation.
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
}

/// The largest utilisation `--utilisation` accepts: past 1 the queues grow without bound.
const MAX_UTILISATION: f64 = 2.0;

fn load(args: &HedgeArgs) -> CliResult<LatencyScenario> {
    let mut scenario = match &args.scenario {
        Some(path) => {
            let text = super::input_file::read_input(path, "scenario")?;
            LatencyScenario::from_toml(&text)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?
        }
        None => LatencyScenario::default(),
    };
    if let Some(seed) = args.seed {
        scenario.seed = check_seed(seed)?;
    }
    if !args.policies.is_empty() {
        let names: Vec<&str> = scenario.policies.iter().map(|p| p.name.as_str()).collect();
        if let Some(unknown) = args.policies.iter().find(|p| !names.contains(&p.trim())) {
            return Err(CliError::input(format!(
                "--policy {unknown}: the scenario has no such policy; its policies are {}",
                names.join(", ")
            )));
        }
        scenario
            .policies
            .retain(|p| args.policies.iter().any(|name| name.trim() == p.name));
    }
    if let Some(requests) = args.requests {
        scenario.requests = u64::try_from(requests)
            .ok()
            .filter(|&r| r >= 1)
            .ok_or_else(|| {
                CliError::input(format!("--requests must be at least 1, got {requests}"))
            })?;
    }
    Ok(scenario)
}

/// A model per point: the scenario itself, or one per utilisation.
fn points(
    args: &HedgeArgs,
    scenario: &LatencyScenario,
) -> CliResult<Vec<(Option<f64>, LatencyModel)>> {
    let check = |s: &LatencyScenario| {
        LatencyModel::new(s).map_err(|e| {
            let at = args.scenario.as_ref().map_or_else(
                || "the default scenario".to_owned(),
                |p| p.display().to_string(),
            );
            CliError::input(format!("{at}: {e}"))
        })
    };
    if args.utilisation.is_empty() {
        return Ok(vec![(None, check(scenario)?)]);
    }
    let mut out = Vec::with_capacity(args.utilisation.len());
    for &u in &args.utilisation {
        if !u.is_finite() || u <= 0.0 || u > MAX_UTILISATION {
            return Err(CliError::input(format!(
                "--utilisation must be fractions above 0 and at most {MAX_UTILISATION}, got {u}"
            )));
        }
        let mut s = scenario.clone();
        s.traffic.rate_per_s = s.rate_at_utilisation(u);
        // The rate is the flag's doing: name the flag (a tiny utilisation is a tiny rate).
        if let Err(e) = LatencyModel::new(&s)
            && e.is_at(LatencyScenario::RATE_PER_S)
        {
            return Err(CliError::input(format!(
                "--utilisation {u} sets traffic.rate_per_s to {:e}: {}",
                s.traffic.rate_per_s,
                e.message()
            )));
        }
        out.push((Some(u), check(&s)?));
    }
    Ok(out)
}

#[derive(Serialize)]
struct Point {
    #[serde(skip_serializing_if = "Option::is_none")]
    utilisation: Option<f64>,
    rate_per_s: f64,
    results: Vec<LatencyResult>,
    #[serde(skip)]
    latencies: Vec<Vec<u64>>,
}

pub(crate) fn run(args: &HedgeArgs) -> CliResult {
    let chart = ChartFile::of("--chart", args.chart.as_deref())?;
    if let Some(file) = chart {
        file.check()?;
    }
    let scenario = load(args)?;
    let models = points(args, &scenario)?;
    let policies = models[0].1.policies().len();
    // Progress: the user requests each run has seen arrive, written by the engine every few
    // thousand events, so that one long run moves the bar too.
    let users = scenario.requests + scenario.warmup_requests;
    let arrived: Vec<AtomicU64> = (0..models.len() * policies)
        .map(|_| AtomicU64::new(0))
        .collect();
    let finished = AtomicBool::new(false);
    let seed = scenario.seed;
    let never = Cancel::new();
    let points: CliResult<Vec<Point>> = std::thread::scope(|scope| {
        let bar = scope.spawn(|| {
            progress::draw(
                users * arrived.len() as u64,
                "{spinner} {elapsed} [{bar:30}] {percent}% {msg}",
                &finished,
                || {
                    let sum = arrived.iter().map(|a| a.load(Ordering::Relaxed)).sum();
                    (sum, format!("{} runs", arrived.len()))
                },
            );
        });
        let points = models
            .iter()
            .enumerate()
            .map(|(m, (u, model))| {
                let runs = (0..policies)
                    .into_par_iter()
                    .map(|i| {
                        let shown = Some(&arrived[m * policies + i]);
                        match model.run_policy_until(i, seed, &never, shown) {
                            Ok(Some(run)) => {
                                arrived[m * policies + i].store(users, Ordering::Relaxed);
                                Ok(run)
                            }
                            Ok(None) | Err(_) => {
                                Err(CliError::Run(anyhow::anyhow!("policy {i} did not run")))
                            }
                        }
                    })
                    .collect::<CliResult<Vec<(LatencyResult, Vec<u64>)>>>()?;
                let (results, latencies) = runs.into_iter().unzip();
                Ok(Point {
                    utilisation: *u,
                    rate_per_s: model.scenario().traffic.rate_per_s,
                    results,
                    latencies,
                })
            })
            .collect();
        finished.store(true, Ordering::Release);
        bar.thread().unpark();
        let _ = bar.join();
        points
    });
    let points = points?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        Format::Table => table(&mut out, &points)?,
        Format::Csv => csv(&mut out, &points)?,
        Format::Json => {
            #[derive(Serialize)]
            struct Results<'a> {
                results: &'a [LatencyResult],
                seed: u64,
            }
            #[derive(Serialize)]
            struct Sweep<'a> {
                sweep: &'a [Point],
                seed: u64,
            }
            if args.utilisation.is_empty() {
                serde_json::to_writer_pretty(
                    &mut out,
                    &Results {
                        results: &points[0].results,
                        seed,
                    },
                )
            } else {
                serde_json::to_writer_pretty(
                    &mut out,
                    &Sweep {
                        sweep: &points,
                        seed,
                    },
                )
            }
            .context("writing JSON")?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    if let Some(file) = chart {
        if args.utilisation.is_empty() {
            chart::tails(file, &points[0].results, &points[0].latencies)?;
        } else {
            let sweep: Vec<(f64, &[LatencyResult])> = points
                .iter()
                .map(|p| (p.utilisation.unwrap_or(0.0), p.results.as_slice()))
                .collect();
            chart::crossover(file, &sweep)?;
        }
        eprintln!("chart written to {}", file.path.display());
    }
    Ok(())
}

fn table(out: &mut impl Write, points: &[Point]) -> io::Result<()> {
    let width = points[0]
        .results
        .iter()
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    for (i, p) in points.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        if let Some(u) = p.utilisation {
            writeln!(out, "utilisation {u} ({:.1} requests/s)", p.rate_per_s)?;
        }
        writeln!(
            out,
            "{:width$}  {:>9}  {:>9}  {:>9}  {:>9}  {:>11}  {:>11}",
            "policy", "p50 ms", "p99 ms", "p99.9 ms", "mean ms", "extra load", "utilisation"
        )?;
        for r in &p.results {
            writeln!(
                out,
                "{:width$}  {:>9.2}  {:>9.2}  {:>9.2}  {:>9.2}  {:>10.2}%  {:>10.1}%",
                r.policy,
                r.p50_ms,
                r.p99_ms,
                r.p999_ms,
                r.mean_ms,
                r.extra_load_percent,
                r.utilisation_percent
            )?;
        }
    }
    Ok(())
}

fn csv(out: &mut impl Write, points: &[Point]) -> io::Result<()> {
    writeln!(
        out,
        "utilisation,rate_per_s,policy,user_requests,p50_ms,p99_ms,p999_ms,mean_ms,extra_load_percent,hedges_refused,cancelled,utilisation_percent"
    )?;
    for p in points {
        for r in &p.results {
            let u = p.utilisation.map(|u| u.to_string()).unwrap_or_default();
            writeln!(
                out,
                "{u},{},{},{},{},{},{},{},{},{},{},{}",
                p.rate_per_s,
                csv_field(&r.policy),
                r.user_requests,
                r.p50_ms,
                r.p99_ms,
                r.p999_ms,
                r.mean_ms,
                r.extra_load_percent,
                r.hedges_refused,
                r.cancelled,
                r.utilisation_percent
            )?;
        }
    }
    Ok(())
}
