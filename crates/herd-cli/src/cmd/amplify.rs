//! `herd amplify`: how many requests each service of a graph receives per entry request.
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use herd_sim::figure;
use herd_sim::graph::{
    Advice, Amplification, Exactness, Graph, MAX_SIMULATED_CALLS, MonteCarlo, Options, Prediction,
    Z, advise, amplification, known_error, predict, simulate, tolerance,
};
use serde::Serialize;

use crate::error::{CliError, CliResult};

/// Entry requests of the Monte Carlo run that gives the figures the exact computation could
/// not.
const CHECK_REQUESTS: u64 = 200_000;

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
    /// Also run N entry requests (at least 50) with random failures and compare with the
    /// figures within standard errors (run unasked, 200 000 requests, when budgets are beyond
    /// the exact computation: its means are then the figures).
    #[arg(long, value_name = "N")]
    simulate: Option<u64>,
    /// Seed of the Monte Carlo run.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
}

pub(crate) use super::args::Format;

/// Reads and validates a graph file; every problem is bad input (exit 2).
pub(crate) fn load_graph(path: &Path) -> CliResult<Graph> {
    let text = super::input_file::read_input(path, "graph")?;
    Graph::from_toml(&text).map_err(|e| CliError::input(format!("{}: {e}", path.display())))
}

#[derive(Serialize)]
struct AmplifyReport<'a> {
    graph: String,
    entry: &'a str,
    layer_aware: bool,
    exactness: ExactnessRow,
    services: Vec<ServiceRow<'a>>,
    amplification: Vec<AmplificationRow<'a>>,
    advice: AdviceRow<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    simulation: Option<SimulationRow<'a>>,
}

/// Whether the figures are exact: `exact` (closed form), `stationary` (budgets, exact but for
/// truncating the buckets at a cap, by at most `error`), `monte_carlo` (`why` the exact
/// computation could not be done; the figures are the simulation's means, each service
/// with its `std_error`).
#[derive(Serialize)]
struct ExactnessRow {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    states: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
}

fn exactness_row(p: &Prediction) -> ExactnessRow {
    match &p.exactness {
        Exactness::Stationary {
            states,
            truncation_error,
        } => ExactnessRow {
            kind: "stationary",
            error: Some(*truncation_error),
            states: Some(*states),
            why: None,
        },
        Exactness::Approximate { why } => ExactnessRow {
            kind: "monte_carlo",
            error: None,
            states: None,
            why: Some(why.clone()),
        },
        _ => ExactnessRow {
            kind: "exact",
            error: None,
            states: None,
            why: None,
        },
    }
}

#[derive(Serialize)]
struct ServiceRow<'a> {
    name: &'a str,
    /// Requests it receives per entry request: computed exactly, or the Monte Carlo mean.
    predicted: f64,
    /// The standard error of `predicted` when it is a Monte Carlo mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    std_error: Option<f64>,
    fails: bool,
    answer_failure_probability: f64,
}

#[derive(Serialize)]
struct AmplificationRow<'a> {
    service: &'a str,
    predicted: f64,
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
    predicted: f64,
}

#[derive(Serialize)]
struct SimulationRow<'a> {
    entry_requests: u64,
    seed: u64,
    /// Every service within `z_limit` standard errors (see `tolerance`).
    agrees: bool,
    z_limit: f64,
    entry_failed: f64,
    services: Vec<SimulatedRow<'a>>,
}

#[derive(Serialize)]
struct SimulatedRow<'a> {
    name: &'a str,
    /// Mean requests per entry request over the Monte Carlo run.
    simulated: f64,
    std_error: f64,
    predicted: f64,
    /// How far the mean may be from `predicted` and still agree.
    tolerance: f64,
}

fn counts<'a>(graph: &'a Graph, p: &Prediction) -> Vec<CountRow<'a>> {
    graph
        .services()
        .iter()
        .zip(&p.receives)
        .map(|(s, &predicted)| CountRow {
            name: &s.name,
            predicted,
        })
        .collect()
}

pub(crate) fn run(args: &AmplifyArgs) -> CliResult {
    let graph = load_graph(&args.graph)?;
    let options = Options {
        layer_aware: args.layer_aware,
    };
    let input = |e: herd_sim::graph::GraphError| CliError::input(e);
    let mut prediction = predict(&graph, options).map_err(input)?;
    let advice = advise(&graph).map_err(input)?;
    let aware = predict(&graph, Options { layer_aware: true }).map_err(input)?;
    // Budgets beyond the exact computation: a Monte Carlo run, even unasked, gives the
    // figures (the formula that treats every call as meeting an average bucket is biased).
    let approximate = matches!(prediction.exactness, Exactness::Approximate { .. });
    let requests = args.simulate.or_else(|| {
        approximate.then(|| {
            let per_request = prediction.total().max(1.0);
            (MAX_SIMULATED_CALLS / per_request).min(CHECK_REQUESTS as f64) as u64
        })
    });
    let simulation = match requests {
        Some(n) => Some(simulate(&graph, options, &prediction, n, args.seed).map_err(input)?),
        None => None,
    };
    if let (true, Some(sim)) = (approximate, &simulation) {
        prediction.receives = sim.services.iter().map(|s| s.mean).collect();
    }
    let amp = amplification(&graph, &prediction, options).map_err(input)?;
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
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
        Format::Table => write_table(&mut out, &report)?,
        Format::Csv => write_csv(&mut out, &report)?,
    }
    out.flush()?;
    Ok(())
}

/// One line per service: the exact figures, and the Monte Carlo ones when it ran.
fn write_csv(out: &mut impl Write, r: &AmplifyReport<'_>) -> io::Result<()> {
    use super::args::csv_field;
    write!(out, "service,predicted,fails,answer_failure_probability")?;
    if r.simulation.is_some() {
        write!(out, ",simulated,std_error")?;
    }
    writeln!(out)?;
    for (i, s) in r.services.iter().enumerate() {
        write!(
            out,
            "{},{},{},{}",
            csv_field(s.name),
            s.predicted,
            s.fails,
            s.answer_failure_probability
        )?;
        if let Some(sim) = &r.simulation {
            let m = &sim.services[i];
            write!(out, ",{},{}", m.simulated, m.std_error)?;
        }
        writeln!(out)?;
    }
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
) -> AmplifyReport<'a> {
    let services = graph.services();
    let name = |i: usize| services[i].name.as_str();
    AmplifyReport {
        graph: args.graph.display().to_string(),
        entry: name(graph.entry()),
        layer_aware: args.layer_aware,
        exactness: exactness_row(prediction),
        services: services
            .iter()
            .enumerate()
            .map(|(i, s)| ServiceRow {
                name: &s.name,
                predicted: prediction.receives[i],
                std_error: simulation
                    .as_ref()
                    .filter(|_| matches!(prediction.exactness, Exactness::Approximate { .. }))
                    .map(|sim| sim.services[i].std_error),
                fails: s.fails,
                answer_failure_probability: prediction.answers[i].failure(),
            })
            .collect(),
        amplification: amp
            .iter()
            .map(|a| AmplificationRow {
                service: name(a.service),
                predicted: a.receives,
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
            entry_requests: sim.requests,
            seed: sim.seed,
            agrees: sim.agrees_with(prediction),
            z_limit: Z,
            entry_failed: sim.entry_failed,
            services: services
                .iter()
                .zip(&sim.services)
                .zip(&prediction.receives)
                .map(|((s, m), &predicted)| SimulatedRow {
                    name: &s.name,
                    simulated: m.mean,
                    std_error: m.std_error,
                    predicted,
                    tolerance: tolerance(
                        m.std_error,
                        predicted,
                        sim.requests,
                        known_error(prediction),
                    ),
                })
                .collect(),
        }),
    }
}

/// The width of a table's service column: the longest name, and at least `service`.
pub(crate) fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names.map(str::len).max().unwrap_or(0).max("service".len())
}

fn list(rows: &[CountRow<'_>]) -> String {
    rows.iter()
        .map(|r| format!("{} {}", r.name, figure::number(r.predicted)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One row of the Monte Carlo table: the service, then four columns aligned right.
fn monte_carlo_row(out: &mut impl Write, width: usize, cells: [String; 5]) -> io::Result<()> {
    let [name, predicted, simulated, std_error, z] = cells;
    writeln!(
        out,
        "{name:<width$}  {predicted:>12}  {simulated:>12}  {std_error:>10}  {z:>8}"
    )
}

fn write_table(out: &mut impl Write, r: &AmplifyReport<'_>) -> io::Result<()> {
    let mode = if r.layer_aware {
        "layer-aware retries"
    } else {
        "classic retries at every layer"
    };
    writeln!(out, "{}: per request to {} ({mode})", r.graph, r.entry)?;
    match r.exactness.kind {
        "stationary" => writeln!(
            out,
            "figures with budgets: exact long-run means from the stationary law of the \
             buckets' tokens ({} states; truncation error below {:.0e})",
            r.exactness.states.unwrap_or(0),
            r.exactness.error.unwrap_or(0.0).max(1e-12)
        )?,
        "monte_carlo" => writeln!(
            out,
            "figures with budgets: Monte Carlo estimates (± one standard error, by batch \
             means), not exact: {}",
            r.exactness.why.as_deref().unwrap_or("")
        )?,
        _ => {}
    }
    let width = name_width(r.services.iter().map(|s| s.name));
    writeln!(
        out,
        "{:<width$}  {:>12}  {:>12}",
        "service", "receives", "answer fails"
    )?;
    for s in &r.services {
        let note = if s.fails { "  (fails)" } else { "" };
        let receives = match s.std_error {
            Some(se) => figure::mean_pm(s.predicted, se),
            None => figure::number(s.predicted),
        };
        writeln!(
            out,
            "{:<width$}  {:>12}  {:>11}%{note}",
            s.name,
            receives,
            figure::percent(100.0 * s.answer_failure_probability)
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
                    figure::number(a.predicted),
                    figure::number(f),
                    figure::number(a.without_retries)
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
        let verdict = if sim.agrees {
            "agrees with the figures within"
        } else {
            "DIFFERS from the figures by more than"
        };
        writeln!(
            out,
            "Monte Carlo, {} requests, seed {}: {verdict} {} standard errors",
            sim.entry_requests, sim.seed, sim.z_limit
        )?;
        let header = ["service", "predicted", "simulated", "± std err", "z"];
        monte_carlo_row(out, width, header.map(str::to_owned))?;
        for s in &sim.services {
            let z = if s.std_error > 0.0 {
                let z = (s.simulated - s.predicted) / s.std_error;
                let sign = if z > 0.0 { "+" } else { "" };
                format!("{sign}{}", figure::number(z))
            } else {
                "-".to_owned()
            };
            // The simulated mean to the precision of its standard error.
            let (simulated, std_error) = figure::mean_and_half(s.simulated, s.std_error);
            let row = [
                s.name.to_owned(),
                figure::number(s.predicted),
                simulated,
                std_error.unwrap_or_else(|| "0".to_owned()),
                z,
            ];
            monte_carlo_row(out, width, row)?;
        }
        writeln!(
            out,
            "entry answers failed: {} %",
            figure::percent(100.0 * sim.entry_failed)
        )?;
    }
    Ok(())
}
