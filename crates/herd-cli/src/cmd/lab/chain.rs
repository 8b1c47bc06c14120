//! `herd lab chain`: a service graph as real HTTP services on 127.0.0.1, the requests each
//! receives against `herd amplify`'s prediction (judged by `herd_lab::judge::chain`).
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use herd::rule::millis;
use herd::{RuleName, RuleParams};
use herd_lab::chain::{
    Chain, ChainOptions, Comparison, DEFAULT_GRAPH, MAX_REQUESTS, MIN_VIEWS_TO_JUDGE, Measurement,
};
use herd_lab::judge::{self, Judgement, Verdict};
use herd_sim::figure;
use herd_sim::graph::{Graph, Options, predict};
use serde::Serialize;

use super::shared::storm_error;
use crate::cmd::amplify::{load_graph, name_width};
use crate::cmd::args::{Format, csv_field};
use crate::cmd::progress;
use crate::error::{CliError, CliResult};
use herd_lab::storm::descriptors::{self, Descriptors};

/// Start a service graph as real HTTP services and measure the requests each receives
///
/// Every service of the graph (default: BFF → search → inventory → stock-db, 3 attempts at
/// every layer, stock-db failing every query) listens on 127.0.0.1 on an ephemeral port and
/// counts what it receives. Every call goes through herd's own tower retry layer with the
/// edge's attempts (no pause between attempts unless --rule says so); without --layer-aware
/// the layers retry every failure, as a classic retry library does. N entry requests are
/// sent one after another; the measured requests per entry request are printed beside the
/// prediction of `herd amplify`. Exits 1 when a deterministic graph's counts differ from the prediction.
/// Ctrl-C stops the drive between two views and shuts every server down.
#[derive(Debug, Args)]
#[command(
    verbatim_doc_comment,
    mut_arg("choices", |a| a.help(
        "Rule to run between attempts: immediate (the default: no pause), constant, \
         exponential, full, equal, decorrelated, grpc, decorrelated-v2, or `classic` (the first \
         six) or `all`. Repeatable, or a comma list (--rule full,equal); each rule is one drive"
    ))
)]
pub(crate) struct ChainArgs {
    /// The graph file (TOML); the default chain when omitted.
    graph: Option<PathBuf>,
    /// Entry requests to send (1..=10000).
    #[arg(long, default_value_t = 1, value_name = "N")]
    views: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Callers do not retry a failure marked "retries exhausted" by the layer below.
    #[arg(long)]
    layer_aware: bool,
    /// Pauses between attempts (default: immediate). Each rule is one drive of N views.
    #[command(flatten)]
    rules: crate::cmd::args::RuleArgs,
    /// First pause of the exponential family, in milliseconds.
    #[arg(long, default_value_t = 10.0, value_name = "MS")]
    base_ms: f64,
    /// Largest pause, in milliseconds.
    #[arg(long, default_value_t = 200.0, value_name = "MS")]
    cap_ms: f64,
    /// The pause of `constant`, in milliseconds.
    #[arg(long, default_value_t = 10.0, value_name = "MS")]
    pause_ms: f64,
    /// Seed of the lost-answer draws on edges with a failure_probability.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
    /// Drive each rule K times, with seeds S..S+K-1 (in [1, 100]).
    #[arg(long, default_value_t = 1, value_name = "K")]
    runs: u64,
}

#[derive(Serialize)]
struct ChainRun<'a> {
    graph: &'a str,
    views: u64,
    layer_aware: bool,
    rule: &'a str,
    seed: u64,
    deterministic: bool,
    /// Measured against predicted: the verdict, its tolerance and the services outside it.
    verdict: Judgement,
    failed_views: u64,
    interrupted: bool,
    services: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    name: String,
    address: String,
    /// Requests it received in all, over every view.
    received: u64,
    /// Requests it received per view, on average: the measurement.
    measured: f64,
    std_error: f64,
    /// Requests per entry request, computed exactly (as `herd amplify`'s `predicted`).
    predicted: f64,
    agrees: bool,
}

#[derive(Serialize)]
struct ChainJson<'a> {
    results: &'a [ChainRun<'a>],
}

/// Descriptors a chain needs: a listener per service, and per call edge (and the entry's
/// own client) a connection in use and one idle in the client's pool, each a socket at
/// both ends; calls are made one at a time, so no more are open at once.
fn chain_descriptors(graph: &Graph) -> u64 {
    let services = graph.services().len() as u64;
    let edges = graph.edges().count() as u64;
    descriptors::SPARE_DESCRIPTORS + services + 4 * (edges + 1)
}

pub(crate) fn run(args: &ChainArgs) -> CliResult {
    let (graph, label) = match &args.graph {
        Some(path) => (load_graph(path)?, path.display().to_string()),
        None => (
            Graph::from_toml(DEFAULT_GRAPH).map_err(|e| CliError::Run(e.into()))?,
            "default chain".to_owned(),
        ),
    };
    let input = |e: herd::InvalidRule| CliError::input(e);
    let params = RuleParams::default()
        .base(millis("--base-ms", args.base_ms).map_err(input)?)
        .cap(millis("--cap-ms", args.cap_ms).map_err(input)?)
        .pause(millis("--pause-ms", args.pause_ms).map_err(input)?);
    let rules = args.rules.rules_or(&[RuleName::Immediate]);
    let built = rules
        .iter()
        .map(|name| {
            name.build(&params)
                .map_err(|e| CliError::input(format!("{e} (rule {name})")))
        })
        .collect::<CliResult<Vec<_>>>()?;
    if args.views == 0 || args.views > herd_lab::chain::MAX_VIEWS {
        return Err(CliError::input(format!(
            "views must be in [1, {}], got {} (--views)",
            herd_lab::chain::MAX_VIEWS,
            args.views
        )));
    }
    let options = Options {
        layer_aware: args.layer_aware,
    };
    let prediction = predict(&graph, options).map_err(CliError::input)?;
    let runs = crate::cmd::args::check_closed("runs", args.runs, 1, 100)?;
    let requests = prediction.total() * args.views as f64 * rules.len() as f64 * runs as f64;
    if requests > MAX_REQUESTS {
        return Err(CliError::input(format!(
            "--views {} would send about {requests:.3e} requests; at most {MAX_REQUESTS:.0e}",
            args.views
        )));
    }
    // Too few descriptors fail connections, which would read as a wrong count: refuse up
    // front, as `lab storm` does.
    let needed = chain_descriptors(&graph);
    if let Descriptors::Raised { from, to } = descriptors::ensure_for(
        needed,
        &format!("{} services", graph.services().len()),
        "use a smaller graph",
    )
    .map_err(storm_error)?
    {
        eprintln!("note: raised the open-file limit from {from} to {to} ({needed} needed)");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let deterministic = graph.is_deterministic();
    let mut drives = Vec::new();
    let jobs = rules
        .iter()
        .zip(built)
        .flat_map(|(name, rule)| (0..runs).map(move |i| (name, rule, args.seed.wrapping_add(i))));
    for (name, rule, seed) in jobs {
        let chain_options = ChainOptions {
            layer_aware: args.layer_aware,
            rule,
            seed,
            ..ChainOptions::default()
        };
        let spinner = progress::spinner(format!(
            "lab chain: rule {name}, seed {seed}, {} views",
            args.views
        ));
        let drive = runtime.block_on(async {
            let chain = Chain::start(&graph, chain_options)
                .await
                .map_err(anyhow::Error::from)?;
            let ctrl_c = async {
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let driven = chain.drive_until(args.views, ctrl_c).await;
            let addresses: Vec<String> =
                chain.addresses().iter().map(ToString::to_string).collect();
            let stopped = chain.shutdown().await;
            let measurement = driven.map_err(anyhow::Error::from)?;
            stopped.map_err(anyhow::Error::from)?;
            Ok::<_, CliError>((measurement, addresses))
        });
        spinner.finish_and_clear();
        let (measurement, addresses) = drive?;
        let interrupted = measurement.interrupted;
        drives.push((*name, seed, measurement, addresses));
        if interrupted {
            break;
        }
    }
    let reports: Vec<ChainRun<'_>> = drives
        .iter()
        .map(|(name, seed, measurement, addresses)| {
            let judged = judge::chain(measurement, &prediction, deterministic);
            ChainRun {
                graph: &label,
                views: measurement.views,
                layer_aware: args.layer_aware,
                rule: name.as_str(),
                seed: *seed,
                deterministic,
                verdict: judged.judgement,
                failed_views: measurement.failed_views,
                interrupted: measurement.interrupted,
                services: rows(measurement, judged.services, addresses),
            }
        })
        .collect();
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &ChainJson { results: &reports })?;
            writeln!(out)?;
        }
        Format::Table => {
            for (i, report) in reports.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                write_table(&mut out, report)?;
            }
        }
        Format::Csv => write_csv(&mut out, &reports)?,
    }
    out.flush()?;
    if let Some((_, _, m, _)) = drives.iter().find(|(_, _, m, _)| m.interrupted) {
        return Err(CliError::Run(anyhow::anyhow!(
            "interrupted after {} of {} views",
            m.views,
            args.views
        )));
    }
    if reports
        .iter()
        .any(|r| r.verdict.verdict == Verdict::Differs)
    {
        return Err(CliError::Run(anyhow::anyhow!(
            "measured counts differ from the prediction"
        )));
    }
    Ok(())
}

fn write_csv(out: &mut impl Write, reports: &[ChainRun<'_>]) -> io::Result<()> {
    writeln!(
        out,
        "rule,seed,service,address,views,received,measured,std_error,predicted,agrees,verdict"
    )?;
    for r in reports {
        let verdict = r.verdict.verdict.name();
        for s in &r.services {
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{verdict}",
                r.rule,
                r.seed,
                csv_field(&s.name),
                s.address,
                r.views,
                s.received,
                s.measured,
                s.std_error,
                s.predicted,
                s.agrees
            )?;
        }
    }
    Ok(())
}

fn rows(m: &Measurement, comparisons: Vec<Comparison>, addresses: &[String]) -> Vec<Row> {
    m.services()
        .into_iter()
        .zip(comparisons)
        .zip(addresses)
        .map(|((s, c), address)| Row {
            name: s.name,
            address: address.clone(),
            received: s.received,
            measured: s.per_view,
            std_error: s.std_error,
            predicted: c.predicted,
            agrees: c.agrees,
        })
        .collect()
}

fn write_table(out: &mut impl Write, r: &ChainRun<'_>) -> io::Result<()> {
    let mode = if r.layer_aware {
        "layer-aware retries"
    } else {
        "classic retries at every layer"
    };
    writeln!(
        out,
        "{}: {} view(s) on 127.0.0.1, {mode}, rule {}, seed {}",
        r.graph, r.views, r.rule, r.seed
    )?;
    let width = name_width(r.services.iter().map(|s| s.name.as_str()));
    writeln!(
        out,
        "{:<width$}  {:>21}  {:>10}  {:>14}  {:>10}",
        "service", "address", "received", "measured/view", "predicted"
    )?;
    for s in &r.services {
        let measured = if r.deterministic || s.std_error == 0.0 {
            figure::number(s.measured)
        } else {
            figure::mean_pm(s.measured, s.std_error)
        };
        let mark = if s.agrees || r.verdict.verdict == Verdict::TooSmall {
            ""
        } else {
            "  ← differs"
        };
        writeln!(
            out,
            "{:<width$}  {:>21}  {:>10}  {:>14}  {:>10}{mark}",
            s.name,
            s.address,
            s.received,
            measured,
            figure::number(s.predicted)
        )?;
    }
    let verdict = match (r.verdict.verdict, r.deterministic) {
        (Verdict::Agrees, true) => "measured equals predicted for every service".to_owned(),
        (Verdict::Agrees, false) => {
            "measured agrees with predicted within the sampling error".to_owned()
        }
        (Verdict::Differs, true) => "MEASURED DIFFERS from predicted".to_owned(),
        (Verdict::Differs, false) => {
            "measured is outside the sampling error of predicted".to_owned()
        }
        (Verdict::TooSmall | Verdict::NotComparable, _) => format!(
            "too few views to judge a graph with random failures ({} of at least \
             {MIN_VIEWS_TO_JUDGE}; try --views {MIN_VIEWS_TO_JUDGE} or more)",
            r.views
        ),
    };
    writeln!(
        out,
        "{verdict}; {} of {} views failed",
        r.failed_views, r.views
    )?;
    Ok(())
}
