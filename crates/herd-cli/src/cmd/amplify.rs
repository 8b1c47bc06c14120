//! `herd amplify`: how many requests each service of a graph receives per entry request.
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use herd_sim::graph::{
    Advice, Amplification, Graph, MonteCarlo, Options, Prediction, advise, amplification, predict,
    simulate,
};
use serde::Serialize;

use crate::error::{CliError, CliResult};

/// Extra tolerance of the Monte Carlo check, relative to `1 + expected`: 2 % on graphs with
/// budgets (the exact figure is the token bucket's long-run limit), 0.1 % otherwise (for rare
/// events a finite run may not see).
pub(crate) fn simulation_slack(graph: &Graph) -> f64 {
    if graph.edges().any(|(_, c)| c.budget_percent > 0.0) {
        0.02
    } else {
        1e-3
    }
}

/// Compute how many requests each service of a graph receives per entry request
///
/// The graph file names an entry and lists services; each service lists its calls as
/// { to, attempts, failure_probability = 0, budget_percent = 0 }, and a service marked
/// `fails = true` fails every request. The output gives, per entry request, the expected
/// requests each service receives, the amplification at each failing service, and the
/// advice: which single layer should retry, and the counts then. See docs/amplify.md.
///
/// Example: scenarios/graphs/chain.toml (3 attempts at every layer of BFF → search →
/// inventory → stock-db) gives 1, 3, 9, 27; with --layer-aware 1, 1, 1, 3.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct AmplifyArgs {
    /// The graph file (TOML).
    graph: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Callers do not retry a failure marked "retries exhausted" by the layer below.
    #[arg(long)]
    layer_aware: bool,
    /// Also run N entry requests with random failures and compare with the exact figures.
    #[arg(long, value_name = "N")]
    simulate: Option<u64>,
    /// Seed of the Monte Carlo run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// How to print the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned columns for people.
    Table,
    /// One JSON object for scripts.
    Json,
}

/// Reads and validates a graph file; every problem is bad input (exit 2).
pub(crate) fn load_graph(path: &Path) -> CliResult<Graph> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
    Graph::from_toml(&text).map_err(|e| CliError::input(format!("{}: {e}", path.display())))
}

#[derive(Serialize)]
struct Report<'a> {
    graph: String,
    entry: &'a str,
    layer_aware: bool,
    services: Vec<ServiceRow<'a>>,
    amplification: Vec<AmplificationRow<'a>>,
    advice: AdviceRow<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    simulation: Option<SimulationRow<'a>>,
}

#[derive(Serialize)]
struct ServiceRow<'a> {
    name: &'a str,
    receives: f64,
    fails: bool,
    answer_failure_probability: f64,
}

#[derive(Serialize)]
struct AmplificationRow<'a> {
    service: &'a str,
    receives: f64,
    without_retries: f64,
    factor: Option<f64>,
}

#[derive(Serialize)]
struct AdviceRow<'a> {
    retry_only: Vec<EdgeRow<'a>>,
    services: Vec<CountRow<'a>>,
    layer_aware_services: Vec<CountRow<'a>>,
}

#[derive(Serialize)]
struct EdgeRow<'a> {
    from: &'a str,
    to: &'a str,
    attempts: u32,
}

#[derive(Serialize)]
struct CountRow<'a> {
    name: &'a str,
    receives: f64,
}

#[derive(Serialize)]
struct SimulationRow<'a> {
    requests: u64,
    seed: u64,
    agrees: bool,
    entry_failed: f64,
    services: Vec<SimulatedRow<'a>>,
}

#[derive(Serialize)]
struct SimulatedRow<'a> {
    name: &'a str,
    mean: f64,
    std_error: f64,
    expected: f64,
}

fn counts<'a>(graph: &'a Graph, p: &Prediction) -> Vec<CountRow<'a>> {
    graph
        .services()
        .iter()
        .zip(&p.receives)
        .map(|(s, &receives)| CountRow {
            name: &s.name,
            receives,
        })
        .collect()
}

pub(crate) fn run(args: &AmplifyArgs) -> CliResult {
    let graph = load_graph(&args.graph)?;
    let options = Options {
        layer_aware: args.layer_aware,
    };
    let input = |e: herd_sim::graph::GraphError| CliError::input(e);
    let prediction = predict(&graph, options).map_err(input)?;
    let amp = amplification(&graph, &prediction, options).map_err(input)?;
    let advice = advise(&graph).map_err(input)?;
    let aware = predict(&graph, Options { layer_aware: true }).map_err(input)?;
    let simulation = match args.simulate {
        Some(n) => Some(simulate(&graph, options, &prediction, n, args.seed).map_err(input)?),
        None => None,
    };
    let report = build_report(
        args,
        &graph,
        &prediction,
        &amp,
        &advice,
        &aware,
        &simulation,
    );
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
        Format::Table => write_table(&mut out, &report)?,
    }
    out.flush()?;
    Ok(())
}

fn build_report<'a>(
    args: &AmplifyArgs,
    graph: &'a Graph,
    prediction: &Prediction,
    amp: &[Amplification],
    advice: &Advice,
    aware: &Prediction,
    simulation: &Option<MonteCarlo>,
) -> Report<'a> {
    let services = graph.services();
    let name = |i: usize| services[i].name.as_str();
    Report {
        graph: args.graph.display().to_string(),
        entry: name(graph.entry()),
        layer_aware: args.layer_aware,
        services: services
            .iter()
            .enumerate()
            .map(|(i, s)| ServiceRow {
                name: &s.name,
                receives: prediction.receives[i],
                fails: s.fails,
                answer_failure_probability: prediction.answers[i].failure(),
            })
            .collect(),
        amplification: amp
            .iter()
            .map(|a| AmplificationRow {
                service: name(a.service),
                receives: a.receives,
                without_retries: a.without_retries,
                factor: a.factor(),
            })
            .collect(),
        advice: AdviceRow {
            retry_only: advice
                .retry_on
                .iter()
                .map(|&(from, to)| EdgeRow {
                    from: name(from),
                    to: name(to),
                    attempts: advice.attempts,
                })
                .collect(),
            services: counts(graph, &advice.prediction),
            layer_aware_services: counts(graph, aware),
        },
        simulation: simulation.as_ref().map(|sim| SimulationRow {
            requests: sim.requests,
            seed: sim.seed,
            agrees: sim.agrees_with(prediction, simulation_slack(graph)),
            entry_failed: sim.entry_failed,
            services: services
                .iter()
                .zip(&sim.services)
                .zip(&prediction.receives)
                .map(|((s, m), &expected)| SimulatedRow {
                    name: &s.name,
                    mean: m.mean,
                    std_error: m.std_error,
                    expected,
                })
                .collect(),
        }),
    }
}

/// A count as people read it: whole numbers without decimals, others with up to four.
pub(crate) fn count(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round())
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn list(rows: &[CountRow<'_>]) -> String {
    rows.iter()
        .map(|r| format!("{} {}", r.name, count(r.receives)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_table(out: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let mode = if r.layer_aware {
        "layer-aware retries"
    } else {
        "classic retries at every layer"
    };
    writeln!(out, "{}: per request to {} ({mode})", r.graph, r.entry)?;
    let width = r
        .services
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    writeln!(
        out,
        "{:<width$}  {:>12}  {:>12}",
        "service", "receives", "answer fails"
    )?;
    for s in &r.services {
        let note = if s.fails { "  (fails)" } else { "" };
        writeln!(
            out,
            "{:<width$}  {:>12}  {:>11}%{note}",
            s.name,
            count(s.receives),
            count(100.0 * s.answer_failure_probability)
        )?;
    }
    if !r.amplification.is_empty() {
        writeln!(out)?;
        writeln!(out, "amplification at failing services:")?;
        for a in &r.amplification {
            match a.factor {
                Some(f) => writeln!(
                    out,
                    "  {}: {} requests, {}× the {} it would receive without retries",
                    a.service,
                    count(a.receives),
                    count(f),
                    count(a.without_retries)
                )?,
                None => writeln!(out, "  {}: receives nothing", a.service)?,
            }
        }
    }
    writeln!(out)?;
    if r.advice.retry_only.is_empty() {
        writeln!(
            out,
            "advice: nothing to retry; with one attempt everywhere:"
        )?;
    } else {
        let edges = r
            .advice
            .retry_only
            .iter()
            .map(|e| format!("{} → {} ({} attempts)", e.from, e.to, e.attempts))
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(out, "advice: retry only at {edges}; then:")?;
    }
    writeln!(out, "  {}", list(&r.advice.services))?;
    if !r.layer_aware {
        writeln!(
            out,
            "or keep every layer as it is and make it --layer-aware:"
        )?;
        writeln!(out, "  {}", list(&r.advice.layer_aware_services))?;
    }
    if let Some(sim) = &r.simulation {
        writeln!(out)?;
        let verdict = if sim.agrees { "agrees" } else { "DIFFERS" };
        writeln!(
            out,
            "Monte Carlo, {} requests, seed {}: {verdict} with the exact figures",
            sim.requests, sim.seed
        )?;
        writeln!(
            out,
            "{:<width$}  {:>12}  {:>12}  {:>10}",
            "service", "expected", "simulated", "± std err"
        )?;
        for s in &sim.services {
            writeln!(
                out,
                "{:<width$}  {:>12}  {:>12.4}  {:>10.4}",
                s.name,
                count(s.expected),
                s.mean,
                s.std_error
            )?;
        }
        writeln!(
            out,
            "entry answers failed: {:.2}%",
            100.0 * sim.entry_failed
        )?;
    }
    Ok(())
}
