//! `herd storm`: what each retry rule does to a recovering server.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use clap::{Args, ValueEnum};
use herd::RuleName;
use herd_sim::{
    Engine, Limits, Pauses, RunResult, Scenario, Simulation, THROTTLE_KINDS, ThrottleTable, Watch,
};
use rayon::prelude::*;

use super::args::Format;
use super::interrupt::Interrupt;
use super::progress;
use crate::error::{CliError, CliResult};

pub(crate) mod chart;
mod models;
pub(crate) mod output;
pub(crate) mod table;

/// Simulate a retry storm: clients that fail together during an outage, retrying by each rule.
///
/// With no SCENARIO it runs the default scenario of docs/model.md (2000 clients, an outage
/// over the first 10 s, then 50 answers per 100 ms) for the six classic rules and prints one
/// row per rule: when half and all of the clients were served, the requests each client sent,
/// the peak load after the outage, and a sparkline of arrivals per window against capacity.
///
/// A scenario is a TOML file (see scenarios/default.toml); every field is optional. Runs are
/// exact and reproducible: the same seed gives the same output on every machine.
///
/// A scenario with `model = "metastable"` (scenarios/metastable-retry.toml: open-loop
/// traffic that keeps a slowed server overloaded after an outage) or `model = "contention"`
/// (scenarios/contention.toml: Brooker's optimistic-concurrency experiment) runs that model
/// instead and prints its own report; see docs/metastable.md and docs/contention.md.
#[derive(Debug, Args)]
pub(crate) struct StormArgs {
    /// Scenario file (TOML). Without one, the embedded default scenario.
    #[arg(value_name = "SCENARIO")]
    scenario: Option<PathBuf>,
    #[command(flatten)]
    rules: super::args::RuleArgs,
    /// Seed of the first run; defaults to the scenario's seed.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Run seeds S..S+K-1 in parallel and report mean, min and max (1 to 100 000; only
    /// the first seed's run keeps its per-window series, in the table, chart and JSON).
    #[arg(long, value_name = "K", default_value_t = 1)]
    runs: u32,
    /// --clients, --capacity-rps, --outage-s, --refusal-cost, --latency-ms (capacity is not
    /// scaled with --clients unless --scale-capacity is given).
    #[command(flatten)]
    pub(crate) flags: super::storm_flags::StormFlags,
    /// With --clients N: scale `server.capacity` and `server.collapse_above` by N / the
    /// scenario's `clients.count`, so the storm keeps its shape at any size (the default
    /// scenario's 50 per 2000 clients becomes 25 000 000 per 10^9).
    #[arg(long, requires = "clients")]
    scale_capacity: bool,
    /// The engine: `agent` follows every client (the reference); `cohort` moves clients in
    /// counts, so 10^9 clients take well under a second (exact in distribution, except that
    /// the `decorrelated` rules' memory is quantized).
    #[arg(long, value_enum, default_value_t = EngineArg::Agent)]
    engine: EngineArg,
    /// How the rules draw their pauses (overrides `pauses`): `steps` draws whole steps with
    /// base, cap and pause in steps (the default scenario's mode; those parameters must then
    /// be whole numbers of steps); `continuous` draws nanoseconds and rounds each pause up to
    /// whole steps. docs/model.md defines both and shows the difference.
    #[arg(long, value_enum, value_name = "MODE")]
    pauses: Option<PausesArg>,
    /// Throttles to compare, by `[retry.throttle]` kind, each with its system's defaults and
    /// one table each (repeatable; a comma list is accepted: --throttle envoy-budget,grpc);
    /// `none` runs without one. Replaces the scenario's own `[retry.throttle]`; docs/model.md
    /// lists the kinds.
    #[arg(long = "throttle", value_name = "KIND", value_delimiter = ',')]
    throttles: Vec<String>,
    /// Output format: table (one row per rule, with a sparkline), json (one object,
    /// {"scenario": {…}, "results": […]}) or csv (one line per run).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also draw arrivals per window, one panel per rule, to FILE.svg or FILE.png.
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
}

/// Which engine runs the storm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum EngineArg {
    /// Every client exact, a few bytes each.
    Agent,
    /// Clients in counts: cost independent of their number.
    Cohort,
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Self {
        match e {
            EngineArg::Agent => Engine::Agent,
            EngineArg::Cohort => Engine::Cohort,
        }
    }
}

/// How the rules draw their pauses (`pauses` in a scenario).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum PausesArg {
    /// Whole steps: the rule runs with base, cap and pause in steps.
    Steps,
    /// Nanoseconds, each pause rounded up to whole steps.
    Continuous,
}

impl From<PausesArg> for Pauses {
    fn from(p: PausesArg) -> Self {
        match p {
            PausesArg::Steps => Pauses::Steps,
            PausesArg::Continuous => Pauses::Continuous,
        }
    }
}

/// The most runs one invocation may ask for.
const MAX_RUNS: u32 = 100_000;
/// The most attempts one run may simulate: a minute or two of work, so that a scenario whose
/// storm never ends (ten million clients retrying at once for an hour) stops with an error
/// instead of seeming to hang.
const MAX_ATTEMPTS_PER_RUN: u64 = 10_000_000_000;

/// The scenario to run, with the command-line overrides applied.
fn scenario(args: &StormArgs, text: Option<&str>) -> CliResult<(Scenario, String)> {
    let (mut scenario, name) = match (&args.scenario, text) {
        (None, _) | (_, None) => {
            let mut scenario = Scenario::default();
            if let Some(pauses) = args.pauses {
                scenario.pauses = pauses.into();
            }
            (scenario, "default scenario".to_owned())
        }
        (Some(path), Some(text)) => {
            let engine = Engine::from(args.engine);
            // `--pauses` before the check: it decides whether the rules' times must be whole
            // steps.
            let limits = engine.limits(&Limits::default());
            let scenario = Scenario::from_toml_str(text, &limits, |s| {
                if let Some(pauses) = args.pauses {
                    s.pauses = pauses.into();
                }
            })
            .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            (scenario, path.display().to_string())
        }
    };
    if let Some(n) = args.flags.clients
        && args.scale_capacity
    {
        let from = scenario.clients.count;
        if from == 0 {
            return Err(CliError::input(
                "--scale-capacity: the scenario's clients.count is 0, nothing to scale from",
            ));
        }
        let scale = |x: u64| {
            u64::try_from(u128::from(x) * u128::from(n) / u128::from(from)).unwrap_or(u64::MAX)
        };
        scenario.server.capacity = scale(scenario.server.capacity);
        scenario.server.collapse_above = scale(scenario.server.collapse_above);
    }
    args.flags.apply(&mut scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    let rules = args.rules.rules();
    if !rules.is_empty() {
        scenario.retry.rules = rules;
    }
    Ok((scenario, name))
}

pub(crate) fn run(args: &StormArgs) -> CliResult {
    if args.runs == 0 || args.runs > MAX_RUNS {
        return Err(CliError::input(format!(
            "--runs must be between 1 and {MAX_RUNS}, got {}",
            args.runs
        )));
    }
    let chart_file = chart::ChartFile::of("--chart", args.chart.as_deref())?;
    let text = match &args.scenario {
        Some(path) => {
            // `model = "metastable"` or `"contention"` runs another model (storm/models.rs).
            let text = super::input_file::read_input(path, "scenario")?;
            if models::run(args, path, &text)? {
                return Ok(());
            }
            Some(text)
        }
        None => None,
    };
    let (scenario, name) = scenario(args, text.as_deref())?;
    let variants = throttled(args, &scenario, &name)?;
    let mut out = BufWriter::new(io::stdout().lock());
    for (i, (scenario, name)) in variants.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        run_one(args, scenario, name, chart_file, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

/// The scenario once per `--throttle` kind (or as it is, without the flag), with its name.
fn throttled(
    args: &StormArgs,
    scenario: &Scenario,
    name: &str,
) -> CliResult<Vec<(Scenario, String)>> {
    if args.throttles.is_empty() {
        return Ok(vec![(scenario.clone(), name.to_owned())]);
    }
    if args.throttles.len() > 1 && args.format != Format::Table {
        return Err(CliError::input(
            "--throttle with several kinds prints one table each: use --format table, or one kind",
        ));
    }
    if args.throttles.len() > 1 && args.chart.is_some() {
        return Err(CliError::input(
            "--chart takes one --throttle kind at a time",
        ));
    }
    args.throttles
        .iter()
        .map(|kind| {
            let kind = kind.trim();
            let mut s = scenario.clone();
            s.retry.throttle = match kind {
                "none" => None,
                k if THROTTLE_KINDS.contains(&k) => Some(ThrottleTable {
                    kind: k.to_owned(),
                    ..ThrottleTable::default()
                }),
                _ => {
                    return Err(CliError::input(format!(
                        "--throttle: expected none or one of {}, got `{kind}`",
                        THROTTLE_KINDS.join(", ")
                    )));
                }
            };
            Ok((s, format!("{name}, throttle {kind}")))
        })
        .collect()
}

/// Runs one scenario and prints it.
fn run_one(
    args: &StormArgs,
    scenario: &Scenario,
    name: &str,
    chart_file: Option<chart::ChartFile<'_>>,
    out: &mut impl Write,
) -> CliResult {
    // For the cohort engine, `max_attempts` bounds cohort updates instead (its unit of work).
    let limits = Limits {
        max_run_attempts: MAX_ATTEMPTS_PER_RUN,
        ..Limits::default()
    };
    let sim = Simulation::with_engine(scenario, &limits, args.engine.into()).map_err(|e| {
        let prefix = args
            .scenario
            .as_ref()
            .map_or_else(String::new, |p| format!("{}: ", p.display()));
        CliError::input(format!("{prefix}{e}"))
    })?;

    if let Some(file) = chart_file {
        file.check()?;
    }
    let rules = sim.rules();
    let seeds: Vec<u64> = (0..u64::from(args.runs))
        .map(|k| scenario.seed.wrapping_add(k))
        .collect();
    let interrupt = Interrupt::watch();
    let results = run_all(&sim, &rules, &seeds, &interrupt)?;
    let total = rules.len() * seeds.len();
    // After Ctrl-C: the rules that finished a run, and only those.
    let rules: Vec<RuleName> = rules
        .into_iter()
        .filter(|r| results.iter().any(|x| x.rule == *r))
        .collect();

    if let Some(file) = chart_file {
        let first: Vec<&RunResult> = rules
            .iter()
            .filter_map(|r| results.iter().find(|x| x.rule == *r))
            .collect();
        chart::draw(file, scenario, &first).map_err(CliError::Run)?;
    }

    match args.format {
        Format::Table => table::write(out, name, scenario, &rules, &results)?,
        Format::Json => output::json(out, scenario, &rules, &results)?,
        Format::Csv => output::csv(out, &results)?,
    }
    out.flush()?;
    if results.len() < total {
        return Err(CliError::Run(anyhow::anyhow!(
            "interrupted after {} of {total} runs",
            results.len()
        )));
    }
    Ok(())
}

/// Runs every rule with every seed in parallel, in the order rule-major, seed-minor; after
/// Ctrl-C (`interrupt`), the runs not yet started are left out.
/// Shows a progress bar on a terminal when the runs take more than a moment.
fn run_all(
    sim: &Simulation,
    rules: &[RuleName],
    seeds: &[u64],
    interrupt: &Interrupt,
) -> CliResult<Vec<RunResult>> {
    let jobs: Vec<(RuleName, u64)> = rules
        .iter()
        .flat_map(|&r| seeds.iter().map(move |&s| (r, s)))
        .collect();
    // Each run's share of its horizon simulated, in thousandths.
    let done: Vec<AtomicU32> = jobs.iter().map(|_| AtomicU32::new(0)).collect();
    let finished = AtomicBool::new(false);
    let order = longest_first(sim, &jobs);
    let results = std::thread::scope(|scope| {
        let bar = scope.spawn(|| progress(&done, &finished));
        let results = order
            .par_iter()
            .map(|&i| {
                if interrupt.is_set() {
                    return Ok((i, None));
                }
                let (rule, seed) = jobs[i];
                let share = &done[i];
                let mut note = |f: f64| share.store((f * 1000.0) as u32, Ordering::Relaxed);
                // Runs under way finish after Ctrl-C: they are printed.
                let run = sim.run(rule, seed, Watch::none().progress(&mut note));
                run.map(|r| (i, Some(keep_series_of_first(r, seeds[0]))))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|mut runs| {
                runs.sort_unstable_by_key(|&(i, _)| i);
                runs.into_iter().filter_map(|(_, run)| run).collect()
            });
        finished.store(true, Ordering::Release);
        bar.thread().unpark();
        let _ = bar.join();
        results
    });
    results.map_err(CliError::input)
}

/// The jobs' indices, the longest runs first by [`Simulation::cost_rank`] and in the jobs'
/// order otherwise. Handed to rayon in this order, the first worker takes the long runs
/// while the others steal the rest, so no core is left finishing a long run alone after the
/// short ones (the results go back to the jobs' order).
fn longest_first(sim: &Simulation, jobs: &[(RuleName, u64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sim.cost_rank(jobs[i].0)));
    order
}

/// A run's result as kept until the output: its figures, and its series (the load in each
/// window, hundreds of kilobytes an hour's run) only for the first seed, the only run the
/// table and the chart draw. So memory and `--format json` grow by a few hundred bytes a
/// run, not by its series: 100 000 runs of the default scenario once took 6 GB.
fn keep_series_of_first(mut result: RunResult, first_seed: u64) -> RunResult {
    if result.seed != first_seed {
        // Its JSON says `"series": null`: not kept, rather than empty.
        result.series.drop_windows();
    }
    result
}

/// Draws a bar on stderr until `finished` (see [`progress::draw`]): each run counts 1000.
fn progress(done: &[AtomicU32], finished: &AtomicBool) {
    let template = "{spinner} {elapsed} [{bar:30}] {percent}% {msg}";
    progress::draw(done.len() as u64 * 1000, template, finished, || {
        let shares: Vec<u64> = done
            .iter()
            .map(|d| u64::from(d.load(Ordering::Relaxed).min(1000)))
            .collect();
        let complete = shares.iter().filter(|&&d| d == 1000).count();
        let message = format!("{complete}/{} runs", done.len());
        (shares.iter().sum(), message)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd_sim::{Engine, Limits, Scenario};

    fn jobs(rules: &[RuleName]) -> Vec<(RuleName, u64)> {
        rules.iter().flat_map(|&r| [(r, 1), (r, 2)]).collect()
    }

    /// On the cohort engine the memory-keeping jittered rules go first, then the other
    /// jittered ones, each in the jobs' order; the agent engine keeps the jobs' order.
    #[test]
    fn the_longest_runs_start_first() {
        let scenario = Scenario::default();
        let limits = Engine::Cohort.limits(&Limits::default());
        let cohort = Simulation::with_engine(&scenario, &limits, Engine::Cohort).unwrap();
        let jobs = jobs(&RuleName::CLASSIC);
        let names: Vec<_> = longest_first(&cohort, &jobs)
            .into_iter()
            .map(|i| jobs[i])
            .collect();
        use RuleName::*;
        assert_eq!(
            names,
            [
                (Decorrelated, 1),
                (Decorrelated, 2),
                (Full, 1),
                (Full, 2),
                (Equal, 1),
                (Equal, 2),
                (Immediate, 1),
                (Immediate, 2),
                (Constant, 1),
                (Constant, 2),
                (Exponential, 1),
                (Exponential, 2),
            ]
        );
        let agent = Simulation::new(&scenario, &Limits::default()).unwrap();
        let order = longest_first(&agent, &jobs);
        assert_eq!(order, (0..jobs.len()).collect::<Vec<_>>());
    }
}
