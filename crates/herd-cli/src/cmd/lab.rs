//! `herd lab`: real HTTP services on loopback. `herd lab chain` runs a service graph;
//! `herd lab storm` (in `lab_storm.rs`) plays a storm scenario.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use herd::rule::millis;
use herd::{RuleName, RuleParams};
use herd_lab::chain::{Chain, ChainOptions, Comparison, DEFAULT_GRAPH, MAX_REQUESTS, Measurement};
use herd_sim::graph::{Graph, Options, predict};
use serde::Serialize;

use crate::cmd::amplify::{Format, count, load_graph, simulation_slack};
use crate::error::{CliError, CliResult};

/// Run real HTTP services on 127.0.0.1 and measure what retries do to them.
#[derive(Debug, Args)]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    Chain(ChainArgs),
    Storm(crate::cmd::lab_storm::LabStormArgs),
}

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
#[command(verbatim_doc_comment)]
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
    /// Pauses between attempts: immediate, constant, exponential, full, equal, decorrelated,
    /// grpc, decorrelated-v2.
    #[arg(long, default_value = "immediate", value_parser = parse_rule)]
    rule: RuleName,
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
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn parse_rule(s: &str) -> Result<RuleName, String> {
    s.parse()
        .map_err(|e: herd::rule::UnknownRule| e.to_string())
}

pub(crate) fn run(args: &LabArgs) -> CliResult {
    match &args.command {
        LabCommand::Chain(chain) => run_chain(chain),
        LabCommand::Storm(storm) => crate::cmd::lab_storm::run(storm),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    graph: &'a str,
    views: u64,
    layer_aware: bool,
    rule: &'a str,
    deterministic: bool,
    agrees: bool,
    failed_views: u64,
    interrupted: bool,
    services: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    name: String,
    address: String,
    received: u64,
    receives: f64,
    std_error: f64,
    predicted: f64,
    agrees: bool,
}

fn run_chain(args: &ChainArgs) -> CliResult {
    let (graph, label) = match &args.graph {
        Some(path) => (load_graph(path)?, path.display().to_string()),
        None => (
            Graph::from_toml(DEFAULT_GRAPH).map_err(|e| CliError::Run(e.into()))?,
            "default chain".to_owned(),
        ),
    };
    let input = |e: herd::InvalidRule| CliError::input(e);
    let params = RuleParams {
        base: millis("--base-ms", args.base_ms).map_err(input)?,
        cap: millis("--cap-ms", args.cap_ms).map_err(input)?,
        pause: millis("--pause-ms", args.pause_ms).map_err(input)?,
        ..RuleParams::default()
    };
    let rule = args
        .rule
        .build(&params)
        .map_err(|e| CliError::input(format!("{e} (rule {})", args.rule)))?;
    if args.views == 0 || args.views > herd_lab::chain::MAX_VIEWS {
        return Err(CliError::input(format!(
            "--views is {}; must be 1..={}",
            args.views,
            herd_lab::chain::MAX_VIEWS
        )));
    }
    let options = Options {
        layer_aware: args.layer_aware,
    };
    let prediction = predict(&graph, options).map_err(CliError::input)?;
    let requests = prediction.total() * args.views as f64;
    if requests > MAX_REQUESTS {
        return Err(CliError::input(format!(
            "--views {} would send about {requests:.3e} requests; at most {MAX_REQUESTS:.0e}",
            args.views
        )));
    }
    let chain_options = ChainOptions {
        layer_aware: args.layer_aware,
        rule,
        seed: args.seed,
        ..ChainOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (measurement, addresses) = runtime.block_on(async {
        let chain = Chain::start(&graph, chain_options)
            .await
            .map_err(anyhow::Error::from)?;
        let ctrl_c = async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let driven = chain.drive_until(args.views, ctrl_c).await;
        let addresses: Vec<String> = chain.addresses().iter().map(ToString::to_string).collect();
        let stopped = chain.shutdown().await;
        let measurement = driven.map_err(anyhow::Error::from)?;
        stopped.map_err(anyhow::Error::from)?;
        Ok::<_, CliError>((measurement, addresses))
    })?;
    let deterministic = graph.is_deterministic();
    let comparisons = measurement.compare(&prediction, deterministic, simulation_slack(&graph));
    let agrees = comparisons.iter().all(|c| c.agrees);
    let report = Report {
        graph: &label,
        views: measurement.views,
        layer_aware: args.layer_aware,
        rule: args.rule.as_str(),
        deterministic,
        agrees,
        failed_views: measurement.failed_views,
        interrupted: measurement.interrupted,
        services: rows(&measurement, comparisons, &addresses),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
        Format::Table => write_table(&mut out, &report)?,
    }
    out.flush()?;
    if measurement.interrupted {
        return Err(CliError::Run(anyhow::anyhow!(
            "interrupted after {} of {} views",
            measurement.views,
            args.views
        )));
    }
    if deterministic && !agrees {
        return Err(CliError::Run(anyhow::anyhow!(
            "measured counts differ from the prediction"
        )));
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
            receives: s.per_view,
            std_error: s.std_error,
            predicted: c.predicted,
            agrees: c.agrees,
        })
        .collect()
}

fn write_table(out: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let mode = if r.layer_aware {
        "layer-aware retries"
    } else {
        "classic retries at every layer"
    };
    writeln!(
        out,
        "{}: {} view(s) on 127.0.0.1, {mode}, rule {}",
        r.graph, r.views, r.rule
    )?;
    let width = r
        .services
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    writeln!(
        out,
        "{:<width$}  {:>21}  {:>10}  {:>14}  {:>10}",
        "service", "address", "received", "measured/view", "predicted"
    )?;
    for s in &r.services {
        let measured = if r.deterministic || s.std_error == 0.0 {
            count(s.receives)
        } else {
            format!("{:.4} ± {:.4}", s.receives, s.std_error)
        };
        let mark = if s.agrees { "" } else { "  ← differs" };
        writeln!(
            out,
            "{:<width$}  {:>21}  {:>10}  {:>14}  {:>10}{mark}",
            s.name,
            s.address,
            s.received,
            measured,
            count(s.predicted)
        )?;
    }
    let verdict = match (r.agrees, r.deterministic) {
        (true, true) => "measured equals predicted for every service",
        (true, false) => "measured agrees with predicted within the sampling error",
        (false, true) => "MEASURED DIFFERS from predicted",
        (false, false) => "measured is outside the sampling error of predicted",
    };
    writeln!(
        out,
        "{verdict}; {} of {} views failed",
        r.failed_views, r.views
    )?;
    Ok(())
}
