//! `herd sweep`: a grid of scenario fields × rules × seeds, in parallel, as a table and a
//! heat map.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use clap::Args;
use herd_sim::Limits;
use herd_sim::sweep::{Axis, Row, Sweep};
use toml::Value;

use crate::error::{CliError, CliResult};

use super::args::Format;
use super::interrupt::Interrupt;
use super::progress;
use super::storm::chart::ChartFile;

mod chart;
mod heatmap;
mod output;

/// Sweep scenario fields over a grid: every combination, every rule, many seeds, all cores.
///
/// Each --set PATH=V1,V2,… names a field of the scenario by its dotted path (as in the
/// scenario file) and its values; the grid is every combination. Values are TOML
/// (`1e3`, `0.05`, `[[0, 10]]`); `A..B:STEP` is an inclusive range. `outage_s=X,…` is a
/// shorthand for one outage [0, X) (`server.outages = [[0, X]]`; 0 = none).
///
/// Every cell runs every rule with seeds S..S+K-1 (the same seeds in every cell) and reports,
/// per metric, the mean and a 95 % interval on the mean over the seeds. A metric that did not
/// happen in some runs (everyone served, recovery) is averaged over the runs where it did,
/// and the count is shown.
///
/// Metrics: recovered_s (time to recover: seconds from the end of the last outage to the
/// first window from which every window serves all its arrivals; never if clients still wait
/// at the horizon), recovered (1 or 0: its mean is the share of runs that recovered),
/// half_served_s, all_served_s, requests_per_client, peak_after_outage,
/// served, gave_up, denied_by_budget. A `model = "metastable"` scenario reports
/// recovered_s, recovered, attempts_per_s, goodput_per_s, throughput_per_s, queue_at_horizon,
/// served, gave_up, denied_by_budget (docs/metastable.md); `model = "contention"` reports
/// calls, calls_per_client, completion_ms (docs/contention.md).
///
/// Example: herd sweep --set outage_s=5,10,20,40 --set clients.arrivals_per_s=0,100,200,300
/// --set horizon_s=300 --rule full --runs 10 --heatmap phase.png
///
/// Or one field against the metrics: herd sweep --set clients.latency.sd_ms=0,10,30,100,300,1000
/// --rule exponential,full --runs 20 --chart noise.png
#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    /// Scenario file (TOML). Without one, the embedded default scenario.
    #[arg(value_name = "SCENARIO")]
    scenario: Option<PathBuf>,
    /// A field and its values: PATH=V1,V2,… or PATH=A..B:STEP (repeatable; one axis each).
    #[arg(long = "set", value_name = "PATH=VALUES", value_parser = parse_axis)]
    axes: Vec<Axis>,
    /// Throttles to compare, by `[retry.throttle]` kind, each with its system's defaults, as
    /// one more axis of the grid (the first; repeatable, or a comma list: --throttle
    /// envoy-budget,grpc); `none` runs without one. The same as --set
    /// retry.throttle.kind=KIND,…; --set retry.throttle.k=1.5,2 then varies a setting.
    #[arg(long = "throttle", value_name = "KIND", value_delimiter = ',')]
    throttles: Vec<String>,
    #[command(flatten)]
    rules: super::args::RuleArgs,
    /// --clients, --capacity-rps, --outage-s, --refusal-cost, --latency-ms: the storm
    /// scenario's fields, set in every cell (a storm scenario only).
    #[command(flatten)]
    flags: super::storm_flags::StormFlags,
    /// First seed; defaults to the scenario's seed.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Runs per cell and rule, with seeds S..S+K−1.
    #[arg(long, value_name = "K", default_value_t = 10)]
    runs: u64,
    /// Metrics to report, comma-separated; the heat map shows the first. Default for the
    /// table: the model's headline (the storm's recovered_s, all_served_s,
    /// requests_per_client, peak_after_outage; another model's first four); for CSV and JSON:
    /// all.
    #[arg(long = "metric", value_name = "M,…", value_delimiter = ',')]
    metrics: Vec<String>,
    /// Output format: table (one row per cell and rule, mean ± half the 95 % interval), csv
    /// (one line per cell and rule: mean, interval bounds and defined runs per metric) or json
    /// (one object, {"grid": {…}, "cells": […]}).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also draw a heat map of the first metric over two swept fields to FILE.svg or FILE.png,
    /// one panel per rule (and per value of any other swept field).
    #[arg(long, value_name = "FILE")]
    heatmap: Option<PathBuf>,
    /// Also draw each metric (the first four) against the one swept field to FILE.svg or
    /// FILE.png: one line per rule, the 95 % interval as error bars.
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
    /// The swept field across the heat map; defaults to the first --set.
    #[arg(long, value_name = "PATH")]
    x: Option<String>,
    /// The swept field up the heat map; defaults to the second --set.
    #[arg(long, value_name = "PATH")]
    y: Option<String>,
    /// The most client-runs (cells × rules × seeds × clients per run) to simulate.
    #[arg(long, value_name = "N", default_value_t = 2_000_000_000)]
    max_work: u64,
}

fn parse_axis(s: &str) -> Result<Axis, String> {
    s.parse::<Axis>().map_err(|e| {
        // clap prefixes its own "invalid value … for '--set'"; keep only the problem.
        let msg = e.to_string();
        msg.split_once(": ")
            .map_or(msg.clone(), |(_, rest)| rest.to_owned())
    })
}

/// The most attempts one run of a sweep may simulate (a few seconds of work), so that a cell
/// whose storm never ends stops the sweep with an error naming it instead of seeming to hang.
const MAX_ATTEMPTS_PER_RUN: u64 = 1_000_000_000;

/// What one run of a sweep may cost.
fn limits() -> Limits {
    Limits {
        max_run_attempts: MAX_ATTEMPTS_PER_RUN,
        ..Limits::default()
    }
}

/// The storm's shortcut flags applied to the base tree: it must be a storm scenario.
fn with_flags(args: &SweepArgs, base: Value) -> CliResult<Value> {
    if !args.flags.any() {
        return Ok(base);
    }
    let model = herd_sim::registry::of_tree(&base).map_err(CliError::input)?;
    if model.name != herd_sim::model::DEFAULT_MODEL {
        return Err(CliError::input(format!(
            "{} set fields of a storm scenario; this one is model = \"{}\": use --set",
            args.flags.given().join(", "),
            model.name
        )));
    }
    let mut scenario: herd_sim::Scenario =
        serde::Deserialize::deserialize(base).map_err(|e| CliError::input(e.to_string()))?;
    args.flags.apply(&mut scenario)?;
    Value::try_from(&scenario).map_err(|e| CliError::input(e.to_string()))
}

/// The scenario tree: the file as TOML, or an empty tree for the default scenario.
fn base(args: &SweepArgs) -> CliResult<(Value, String)> {
    match &args.scenario {
        None => Ok((
            Value::Table(toml::Table::new()),
            "default scenario".to_owned(),
        )),
        Some(path) => {
            let text = super::input_file::read_input(path, "scenario")?;
            let value = toml::from_str::<toml::Table>(&text).map_err(|e| {
                CliError::input(format!(
                    "{}: {}",
                    path.display(),
                    e.message().lines().next().unwrap_or("not TOML")
                ))
            })?;
            // Checked as `herd storm` checks it, whatever its model, for errors with the line.
            herd_sim::registry::check_text(&text, &limits())
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            Ok((Value::Table(value), path.display().to_string()))
        }
    }
}

/// Which metrics to report, checked against the sweep's.
fn metrics(args: &SweepArgs, sweep: &Sweep) -> CliResult<Vec<&'static str>> {
    let known = sweep.metric_names();
    if args.metrics.is_empty() {
        return Ok(match args.format {
            // Each model names its own.
            Format::Table => sweep.headline().to_vec(),
            Format::Csv | Format::Json => known.to_vec(),
        });
    }
    args.metrics
        .iter()
        .map(|m| {
            known
                .iter()
                .copied()
                .find(|k| *k == m.trim())
                .ok_or_else(|| {
                    CliError::input(format!(
                        "--metric {m}: unknown metric; the metrics are {}",
                        known.join(", ")
                    ))
                })
        })
        .collect()
}

pub(crate) fn run(args: &SweepArgs) -> CliResult {
    let heatmap = ChartFile::of("--heatmap", args.heatmap.as_deref())?;
    let chart = ChartFile::of("--chart", args.chart.as_deref())?;
    let (base, name) = base(args)?;
    let base = with_flags(args, base)?;
    let prefix = args
        .scenario
        .as_ref()
        .map_or_else(String::new, |p| format!("{}: ", p.display()));
    let mut axes = args.axes.clone();
    if !args.throttles.is_empty() {
        let kinds = args.throttles.join(",");
        let axis = parse_axis(&format!("retry.throttle.kind={kinds}"))
            .map_err(|e| CliError::input(format!("--throttle {kinds}: {e}")))?;
        axes.insert(0, axis);
    }
    let sweep = Sweep::new(
        &base,
        axes,
        Some(args.rules.rules())
            .filter(|r| !r.is_empty())
            .as_deref(),
        args.seed,
        args.runs,
        &limits(),
    )
    .map_err(|e| {
        let e = e.to_string();
        // A kind given with --throttle is named by that flag.
        let e = match e.strip_prefix("--set retry.throttle.kind=") {
            Some(rest) if !args.throttles.is_empty() => format!("--throttle {rest}"),
            _ => e,
        };
        CliError::input(format!("{prefix}{e}"))
    })?;
    let metrics = metrics(args, &sweep)?;
    let axes = match heatmap {
        Some(_) => Some(heatmap::axes(&sweep, args.x.as_deref(), args.y.as_deref())?),
        None => {
            if args.x.is_some() || args.y.is_some() {
                return Err(CliError::input(
                    "--x and --y choose the heat map's axes; add --heatmap FILE",
                ));
            }
            None
        }
    };
    let chart_axis = match chart {
        Some(_) => Some(chart::axis(&sweep)?),
        None => None,
    };
    let work = sweep.client_runs();
    if work > u128::from(args.max_work) {
        return Err(CliError::input(format!(
            "the sweep simulates {work} client-runs ({} cells × {} rules × {} seeds × clients); --max-work allows {} (fewer --set values, --rule or --runs, or raise --max-work)",
            sweep.cells().len(),
            sweep.rules().len(),
            sweep.seeds().len(),
            args.max_work
        )));
    }

    for file in [heatmap, chart].into_iter().flatten() {
        file.check()?;
    }
    let (rows, finished_runs) = run_all(&sweep)?;

    if let (Some(file), Some(x)) = (chart, chart_axis) {
        chart::draw(file, &sweep, &rows, x, &metrics).map_err(CliError::Run)?;
    }

    if let (Some(file), Some((x, y))) = (heatmap, axes) {
        let metric = metrics.first().copied().unwrap_or("recovered_s");
        heatmap::draw(file, &sweep, &rows, x, y, metric).map_err(CliError::Run)?;
    }

    let mut out = BufWriter::new(io::stdout().lock());
    let results = output::Results {
        name: &name,
        sweep: &sweep,
        rows: &rows,
        metrics: &metrics,
    };
    match args.format {
        Format::Table => output::table(&mut out, &results)?,
        Format::Csv => output::csv(&mut out, &results)?,
        Format::Json => output::json(&mut out, &results)?,
    }
    out.flush()?;
    let whole = sweep.cells().len() * sweep.rules().len();
    if rows.len() < whole {
        return Err(CliError::Run(anyhow::anyhow!(
            "interrupted after {finished_runs} of {} runs: {} of {whole} rows printed, each over all its seeds",
            sweep.runs(),
            rows.len()
        )));
    }
    Ok(())
}

/// Runs the sweep on all cores with a progress bar on a terminal; after Ctrl-C, the runs not
/// yet started are left out (see [`Sweep::run`]). Returns the rows and the runs that finished.
fn run_all(sweep: &Sweep) -> CliResult<(Vec<Row>, u64)> {
    let done = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let interrupt = Interrupt::watch();
    let result = std::thread::scope(|scope| {
        let bar = scope.spawn(|| progress(&done, sweep.runs(), &finished));
        let rows = sweep.run(
            &|| {
                done.fetch_add(1, Ordering::Relaxed);
            },
            interrupt.flag(),
        );
        finished.store(true, Ordering::Release);
        bar.thread().unpark();
        let _ = bar.join();
        rows
    });
    let rows = result.map_err(CliError::input)?;
    Ok((rows, done.load(Ordering::Relaxed)))
}

/// Draws a bar on stderr until `finished` (see [`progress::draw`]).
fn progress(done: &AtomicU64, total: u64, finished: &AtomicBool) {
    let template = "{spinner} {elapsed} [{bar:30}] {pos}/{len} runs, {eta} to go";
    progress::draw(total, template, finished, || {
        (done.load(Ordering::Relaxed), String::new())
    });
}

/// The indices of the fields a sweep varies (a `--set` with one value only fixes a field).
fn swept(sweep: &Sweep) -> Vec<usize> {
    (0..sweep.axes().len())
        .filter(|&i| sweep.axes()[i].values().len() > 1)
        .collect()
}
