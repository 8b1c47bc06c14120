//! `herd hedge`: what hedged requests do to the tail latency, and what they cost.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use clap::Args;
use herd_sim::latency::{LatencyModel, LatencyResult, LatencyScenario};
use herd_sim::{Watch, figure};
use rayon::prelude::*;
use serde::Serialize;

use crate::cmd::args::{Format, check_closed, check_seed, csv_field};
use crate::cmd::interrupt::Interrupt;
use crate::cmd::progress;
use crate::cmd::storm::chart::ChartFile;
use crate::cmd::storm::output::Spread;
use crate::cmd::storm::table::cell as table_cell;
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
///   herd hedge --runs 10 --policy none,delay
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
    /// The first run's seed (overrides the scenario's).
    #[arg(long, allow_negative_numbers = true)]
    seed: Option<i128>,
    /// Run seeds S, S+1, …, S+K−1 (S: the seed) for each policy; the table shows each figure
    /// as `mean [min–max]` over them, the JSON adds a `summary`, the CSV has a line a run;
    /// a chart draws the first seed's runs.
    #[arg(
        long,
        value_name = "K",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    runs: i128,
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

/// The most seeds `--runs` takes per policy (each run is checked against the model's limits
/// on its own, so this bounds the whole command to this many times one run).
const MAX_RUNS: u32 = 1000;

fn load(args: &HedgeArgs) -> CliResult<LatencyScenario> {
    let mut scenario = match &args.scenario {
        Some(path) => {
            let text = super::input_file::read_input(path, "scenario")?;
            LatencyScenario::from_toml_str(&text)
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

/// One point (the scenario, or one utilisation): per policy, its runs in seed order, and the
/// first seed's latencies (what a chart draws; the others' are dropped as each run ends, so
/// memory does not grow with `--runs`).
struct Point {
    utilisation: Option<f64>,
    rate_per_s: f64,
    runs: Vec<Vec<LatencyResult>>,
    latencies: Vec<Vec<u64>>,
}

impl Point {
    /// The first seed's result of every policy.
    fn first(&self) -> Vec<LatencyResult> {
        self.runs
            .iter()
            .filter_map(|r| r.first().cloned())
            .collect()
    }
}

/// One policy's run: its result and its latencies (kept for the first seed only).
type PolicyRun = (LatencyResult, Vec<u64>);

/// A result as printed: with the seed it ran.
#[derive(Serialize)]
struct SeededResult<'a> {
    seed: u64,
    #[serde(flatten)]
    result: &'a LatencyResult,
}

/// One policy's figures over its runs, as `herd storm --runs` summarises a rule's.
#[derive(Serialize)]
struct PolicySummary<'a> {
    policy: &'a str,
    runs: usize,
    p50_ms: Option<Spread>,
    p99_ms: Option<Spread>,
    p999_ms: Option<Spread>,
    mean_ms: Option<Spread>,
    extra_load_percent: Option<Spread>,
    utilisation_percent: Option<Spread>,
}

fn summarise(runs: &[LatencyResult]) -> PolicySummary<'_> {
    let spread = |f: fn(&LatencyResult) -> f64| Spread::of(runs.iter().map(|r| Some(f(r))));
    PolicySummary {
        policy: runs.first().map_or("", |r| r.policy.as_str()),
        runs: runs.len(),
        p50_ms: spread(|r| r.p50_ms),
        p99_ms: spread(|r| r.p99_ms),
        p999_ms: spread(|r| r.p999_ms),
        mean_ms: spread(|r| r.mean_ms),
        extra_load_percent: spread(|r| r.extra_load_percent),
        utilisation_percent: spread(|r| r.utilisation_percent),
    }
}

/// A point as printed: every run, and with several a summary per policy.
#[derive(Serialize)]
struct PointOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    utilisation: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_per_s: Option<f64>,
    results: Vec<SeededResult<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<Vec<PolicySummary<'a>>>,
}

impl<'a> PointOut<'a> {
    fn of(point: &'a Point, seeds: &[u64], with_rate: bool) -> Self {
        let several = point.runs.iter().any(|r| r.len() > 1);
        Self {
            utilisation: point.utilisation,
            rate_per_s: with_rate.then_some(point.rate_per_s),
            results: point
                .runs
                .iter()
                .flat_map(|runs| {
                    runs.iter()
                        .zip(seeds)
                        .map(|(result, &seed)| SeededResult { seed, result })
                })
                .collect(),
            summary: several.then(|| point.runs.iter().map(|r| summarise(r)).collect()),
        }
    }
}

pub(crate) fn run(args: &HedgeArgs) -> CliResult {
    let chart = ChartFile::of("--chart", args.chart.as_deref())?;
    if let Some(file) = chart {
        file.check()?;
    }
    let runs = check_closed("runs", args.runs, 1, i128::from(MAX_RUNS))? as u64;
    let scenario = load(args)?;
    let models = points(args, &scenario)?;
    let policies = models[0].1.policies().len();
    let seeds: Vec<u64> = (0..runs).map(|k| scenario.seed.wrapping_add(k)).collect();
    let jobs: Vec<(usize, usize, u64)> = (0..models.len())
        .flat_map(|m| (0..policies).flat_map(move |i| (0..runs).map(move |k| (m, i, k))))
        .collect();
    // Progress: the user requests each run has seen arrive, written by the engine every few
    // thousand events, so that one long run moves the bar too.
    let users = scenario.requests + scenario.warmup_requests;
    let arrived: Vec<AtomicU64> = jobs.iter().map(|_| AtomicU64::new(0)).collect();
    let finished = AtomicBool::new(false);
    let interrupt = Interrupt::watch();
    let done: CliResult<Vec<Option<PolicyRun>>> = std::thread::scope(|scope| {
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
        let done = jobs
            .par_iter()
            .zip(&arrived)
            .map(|(&(m, i, k), shown)| {
                if interrupt.is_set() {
                    return Ok(None);
                }
                // The users arrived so far, from the share the run reports; runs under way
                // finish after Ctrl-C: they are printed.
                let mut note = |f: f64| shown.store((f * users as f64) as u64, Ordering::Relaxed);
                match models[m]
                    .1
                    .run(i, seeds[k as usize], Watch::none().progress(&mut note))
                {
                    Ok((result, latencies)) => {
                        shown.store(users, Ordering::Relaxed);
                        // Only the first seed's latencies are drawn.
                        let kept = if k == 0 { latencies } else { Vec::new() };
                        Ok(Some((result, kept)))
                    }
                    Err(e) => Err(CliError::Run(anyhow::anyhow!("policy {i}: {e}"))),
                }
            })
            .collect();
        finished.store(true, Ordering::Release);
        bar.thread().unpark();
        let _ = bar.join();
        done
    });
    let mut done = done?.into_iter();
    let total = jobs.len();
    let mut finished_runs = 0;
    let points: Vec<Point> = models
        .iter()
        .map(|(u, model)| {
            let mut point = Point {
                utilisation: *u,
                rate_per_s: model.scenario().traffic.rate_per_s,
                runs: Vec::with_capacity(policies),
                latencies: Vec::with_capacity(policies),
            };
            for _ in 0..policies {
                let mut results = Vec::with_capacity(seeds.len());
                let mut first = Vec::new();
                for k in 0..seeds.len() {
                    // After Ctrl-C, the runs not started are missing: a policy keeps the seeds
                    // that ran, from the first.
                    if let Some(Some((result, latencies))) = done.next() {
                        finished_runs += 1;
                        if k == 0 {
                            first = latencies;
                        }
                        results.push(result);
                    }
                }
                point.runs.push(results);
                point.latencies.push(first);
            }
            point
        })
        .collect();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let sweep = !args.utilisation.is_empty();
    match args.format {
        Format::Table => table(&mut out, &points, &seeds)?,
        Format::Csv => csv(&mut out, &points, &seeds)?,
        Format::Json => {
            #[derive(Serialize)]
            struct Sweep<'a> {
                sweep: Vec<PointOut<'a>>,
                seed: u64,
                runs: u64,
            }
            #[derive(Serialize)]
            struct Single<'a> {
                #[serde(flatten)]
                point: PointOut<'a>,
                seed: u64,
                runs: u64,
            }
            let seed = scenario.seed;
            if sweep {
                let sweep = points
                    .iter()
                    .map(|p| PointOut::of(p, &seeds, true))
                    .collect();
                serde_json::to_writer_pretty(&mut out, &Sweep { sweep, seed, runs })
            } else {
                let point = PointOut::of(&points[0], &seeds, false);
                serde_json::to_writer_pretty(&mut out, &Single { point, seed, runs })
            }?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    if let Some(file) = chart
        && finished_runs == total
    {
        if sweep {
            let firsts: Vec<(f64, Vec<LatencyResult>)> = points
                .iter()
                .map(|p| (p.utilisation.unwrap_or(0.0), p.first()))
                .collect();
            let sweep: Vec<(f64, &[LatencyResult])> =
                firsts.iter().map(|(u, r)| (*u, r.as_slice())).collect();
            chart::crossover(file, &sweep)?;
        } else {
            chart::tails(file, &points[0].first(), &points[0].latencies)?;
        }
    }
    if finished_runs < total {
        return Err(CliError::Run(anyhow::anyhow!(
            "interrupted after {finished_runs} of {total} runs"
        )));
    }
    Ok(())
}

fn table(out: &mut impl Write, points: &[Point], seeds: &[u64]) -> io::Result<()> {
    let width = points[0]
        .runs
        .iter()
        .filter_map(|r| r.first())
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    if seeds.len() > 1 {
        writeln!(
            out,
            "seeds {}..{} ({} runs a policy, mean [min–max])",
            seeds[0],
            seeds[seeds.len() - 1],
            seeds.len()
        )?;
    }
    for (i, p) in points.iter().enumerate() {
        if i > 0 || seeds.len() > 1 {
            writeln!(out)?;
        }
        if let Some(u) = p.utilisation {
            writeln!(
                out,
                "utilisation {} ({} requests/s)",
                figure::number(u),
                figure::number(p.rate_per_s)
            )?;
        }
        let summaries: Vec<PolicySummary<'_>> = p
            .runs
            .iter()
            .filter(|r| !r.is_empty())
            .map(|r| summarise(r))
            .collect();
        let ms: fn(f64) -> String = figure::number;
        let pct: fn(f64) -> String = figure::percent;
        let rows: Vec<[String; 7]> = summaries
            .iter()
            .map(|s| {
                let c = |v: Option<Spread>, f: fn(f64) -> String, unit: &str| {
                    table_cell(v, s.runs, f, unit)
                };
                [
                    s.policy.to_owned(),
                    c(s.p50_ms, ms, ""),
                    c(s.p99_ms, ms, ""),
                    c(s.p999_ms, ms, ""),
                    c(s.mean_ms, ms, ""),
                    c(s.extra_load_percent, pct, "%"),
                    c(s.utilisation_percent, pct, "%"),
                ]
            })
            .collect();
        let header = [
            "policy",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "mean ms",
            "extra load",
            "utilisation",
        ];
        let mut widths = [width, 9, 9, 9, 9, 11, 11];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row).skip(1) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 7]| {
            let mut text = format!("{:w$}", cells[0], w = widths[0]);
            for (cell, w) in cells.iter().zip(widths).skip(1) {
                text.push_str(&format!("  {cell:>w$}"));
            }
            text
        };
        writeln!(out, "{}", line(header))?;
        for row in &rows {
            writeln!(out, "{}", line(row.each_ref().map(String::as_str)))?;
        }
    }
    Ok(())
}

fn csv(out: &mut impl Write, points: &[Point], seeds: &[u64]) -> io::Result<()> {
    writeln!(
        out,
        "utilisation,rate_per_s,seed,policy,user_requests,p50_ms,p99_ms,p999_ms,mean_ms,extra_load_percent,hedges_refused,cancelled,utilisation_percent"
    )?;
    for p in points {
        let u = p.utilisation.map(|u| u.to_string()).unwrap_or_default();
        for runs in &p.runs {
            for (r, seed) in runs.iter().zip(seeds) {
                writeln!(
                    out,
                    "{u},{},{seed},{},{},{},{},{},{},{},{},{},{}",
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
    }
    Ok(())
}
