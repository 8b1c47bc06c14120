//! `herd storm` for scenarios of the other models (`model = "metastable"`,
//! `model = "contention"`, any later one), reached through `herd_sim::model`; the storm is
//! the default model and runs in `storm.rs`.
use std::io::{self, BufWriter, Write};
use std::path::Path;

use clap::Args;
use herd::RuleName;
use herd_sim::contention::{Contention, ContentionReport, ContentionScenario};
use herd_sim::metastable::{self, Metastable, MetastableScenario};
use herd_sim::model::{self, AnyModel, Model, Variant};
use herd_sim::{Limits, Simulation};
use rayon::prelude::*;

use super::{EngineArg, Format, StormArgs};
use crate::error::{CliError, CliResult};

/// Flags for the metastable and contention models.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// model = "metastable": run each new-request rate LO, LO+STEP, …, HI (per second) and
    /// report which recover by themselves after the outage.
    #[arg(long, value_name = "LO..HI:STEP")]
    sweep_offered: Option<String>,
    /// model = "contention": compare the rules at N = LO, LO+STEP, …, HI clients.
    #[arg(long, value_name = "LO..HI:STEP")]
    sweep_clients: Option<String>,
}

/// The largest number of points one sweep flag may ask for.
const MAX_POINTS: usize = 10_000;

/// `LO..HI:STEP` as the values LO, LO+STEP, … up to HI (inclusive).
fn parse_range(flag: &str, text: &str) -> CliResult<Vec<f64>> {
    let bad = || {
        CliError::input(format!(
            "{flag} must be LO..HI:STEP with 0 <= LO <= HI and STEP > 0 (e.g. 150..300:10), got {text}"
        ))
    };
    let (range, step) = text.split_once(':').ok_or_else(bad)?;
    let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
    let parse = |s: &str| s.trim().parse::<f64>().map_err(|_| bad());
    let (lo, hi, step) = (parse(lo)?, parse(hi)?, parse(step)?);
    if !(lo.is_finite() && hi.is_finite() && step.is_finite()) || lo < 0.0 || hi < lo || step <= 0.0
    {
        return Err(bad());
    }
    let count = ((hi - lo) / step + 1e-9).floor() + 1.0;
    if count > MAX_POINTS as f64 {
        return Err(CliError::input(format!(
            "{flag}: {count} points is too many (at most {MAX_POINTS})"
        )));
    }
    // Rounded to 10^-9 so that 0.1 steps print as 0.3, not 0.30000000000000004.
    Ok((0..count as usize)
        .map(|i| ((lo + step * i as f64) * 1e9).round() / 1e9)
        .collect())
}

fn refuse(args: &StormArgs, model: &str, allowed: &[&str]) -> CliResult {
    let given = [
        ("--clients", args.clients.is_some()),
        ("--scale-capacity", args.scale_capacity),
        ("--engine", !matches!(args.engine, EngineArg::Agent)),
        ("--refusal-cost", args.refusal_cost.is_some()),
        ("--latency-ms", args.latency_ms.is_some()),
        ("--pauses", args.pauses.is_some()),
        ("--chart", args.chart.is_some()),
        ("--sweep-offered", args.models.sweep_offered.is_some()),
        ("--sweep-clients", args.models.sweep_clients.is_some()),
    ];
    for (flag, set) in given {
        if set && !allowed.contains(&flag) {
            return Err(CliError::input(format!(
                "{flag} does not apply to model = \"{model}\""
            )));
        }
    }
    Ok(())
}

/// Runs a scenario file whose model is not the storm, through the model interface;
/// `Ok(false)` when it is the storm, which `storm.rs` runs with its own flags.
///
/// A model with a report of its own (metastable, contention) prints it; any other model
/// prints its metrics for each rule and seed ([`write_metrics`]).
pub(crate) fn run(args: &StormArgs, path: &Path, text: &str) -> CliResult<bool> {
    let named = |e: herd_sim::ScenarioError| CliError::input(format!("{}: {e}", path.display()));
    // A file that is not TOML is reported by the storm's parser, with its line.
    let Ok(table) = text.parse::<toml::Table>() else {
        return storm_only(args);
    };
    let registration = model::of_tree(&toml::Value::Table(table)).map_err(named)?;
    if registration.name == <Simulation as Model>::NAME {
        return storm_only(args);
    }
    let checked = model::check_text(text, &Limits::default()).map_err(named)?;
    let any = checked.as_any();
    if let Some(m) = any.downcast_ref::<Metastable>() {
        refuse(args, registration.name, &["--sweep-offered"])?;
        run_metastable(args, m.scenario().clone())?;
    } else if let Some(c) = any.downcast_ref::<Contention>() {
        refuse(args, registration.name, &["--clients", "--sweep-clients"])?;
        run_contention(args, c.scenario().clone())?;
    } else if any.is::<herd_sim::latency::LatencyModel>() {
        return Err(CliError::input(format!(
            "{}: a latency scenario compares hedging policies: run it with `herd hedge {}` \
             (or vary it with `herd sweep`)",
            path.display(),
            path.display()
        )));
    } else {
        refuse(args, registration.name, &[])?;
        // A model that compares variants of its own (strategies, say) runs them all.
        let variants: Vec<Variant> = match args.rules.rules_or(&checked.rules()) {
            rules if rules.is_empty() => checked.variants(),
            rules => rules.into_iter().map(Variant::Rule).collect(),
        };
        let seeds = seeds(args, args.seed.unwrap_or_else(|| checked.seed()));
        let mut out = BufWriter::new(io::stdout().lock());
        write_metrics(&mut out, args.format, &*checked, &variants, &seeds)?;
        out.flush()?;
    }
    Ok(true)
}

/// The storm's flags are the storm's own; `Ok(false)`: run the storm. The default
/// scenario (no file) is the storm too.
pub(crate) fn storm_only(args: &StormArgs) -> CliResult<bool> {
    if args.models.sweep_offered.is_some() || args.models.sweep_clients.is_some() {
        return Err(CliError::input(
            "--sweep-offered and --sweep-clients vary the open-loop arrivals of \
             model = \"metastable\" and the clients of \"contention\"; the storm has \
             neither: use `herd sweep` to vary it",
        ));
    }
    Ok(false)
}

/// Runs every rule with every seed (in parallel, printed rule-major) and prints each run's
/// metrics: what `herd storm` shows of a model without a report of its own.
fn write_metrics(
    out: &mut impl Write,
    format: Format,
    model: &dyn AnyModel,
    variants: &[Variant],
    seeds: &[u64],
) -> CliResult {
    let jobs: Vec<(&Variant, u64)> = variants
        .iter()
        .flat_map(|v| seeds.iter().map(move |&s| (v, s)))
        .collect();
    let runs = jobs
        .par_iter()
        .map(|&(v, seed)| model.run_variant(v, seed).map(|m| (v, seed, m)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)?;
    let names = model.metric_names();
    let shown = |v: Option<f64>| v.map_or_else(String::new, |x| x.to_string());
    match format {
        Format::Json => {
            let results: Vec<_> = runs
                .iter()
                .map(|(rule, seed, m)| {
                    let metrics: serde_json::Map<_, _> =
                        m.iter().map(|(n, v)| (n.to_owned(), v.into())).collect();
                    serde_json::json!({ "rule": rule.as_str(), "seed": seed, "metrics": metrics })
                })
                .collect();
            let value = serde_json::json!({ "model": model.name(), "results": results });
            serde_json::to_writer(&mut *out, &value).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
        Format::Table | Format::Csv => {
            let sep = if format == Format::Csv { "," } else { "  " };
            writeln!(out, "rule{sep}seed{sep}{}", names.join(sep))?;
            for (rule, seed, m) in &runs {
                let values: Vec<String> = names.iter().map(|n| shown(m.get(n).flatten())).collect();
                writeln!(out, "{rule}{sep}{seed}{sep}{}", values.join(sep))?;
            }
        }
    }
    Ok(())
}

/// Runs `run` for every rule with every seed, in parallel: `(rule, seed, result)` in the order
/// rule-major, seed-minor.
fn every_rule_and_seed<T: Send>(
    rules: &[RuleName],
    seeds: &[u64],
    run: impl Fn(RuleName, u64) -> Result<T, herd_sim::ScenarioError> + Sync,
) -> CliResult<Vec<(RuleName, u64, T)>> {
    let jobs: Vec<(RuleName, u64)> = rules
        .iter()
        .flat_map(|&r| seeds.iter().map(move |&s| (r, s)))
        .collect();
    jobs.par_iter()
        .map(|&(rule, seed)| run(rule, seed).map(|result| (rule, seed, result)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)
}

fn seeds(args: &StormArgs, first: u64) -> Vec<u64> {
    (0..u64::from(args.runs))
        .map(|k| first.wrapping_add(k))
        .collect()
}

fn run_metastable(args: &StormArgs, mut scenario: MetastableScenario) -> CliResult {
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    let rules = if args.rules.rules().is_empty() {
        vec![scenario.retry.rule]
    } else {
        args.rules.rules()
    };
    let limits = Limits::default();
    let seeds = seeds(args, scenario.seed);
    let mut out = BufWriter::new(io::stdout().lock());
    if let Some(range) = &args.models.sweep_offered {
        let offered = parse_range("--sweep-offered", range)?;
        let sweeps = rules
            .par_iter()
            .map(|&rule| metastable::sweep_offered(&scenario, &limits, rule, &offered, &seeds))
            .collect::<Result<Vec<_>, _>>()
            .map_err(CliError::input)?;
        match args.format {
            Format::Json => {
                serde_json::to_writer(&mut out, &serde_json::json!({ "sweeps": sweeps }))
                    .map_err(anyhow::Error::from)?;
                writeln!(out)?;
            }
            Format::Table => {
                for sweep in &sweeps {
                    write!(out, "{sweep}")?;
                }
            }
            Format::Csv => {
                writeln!(
                    out,
                    "rule,budget_percent,offered_qps,runs,recovered,recovered_at_s,attempts_per_s,goodput_per_s"
                )?;
                for s in &sweeps {
                    for p in &s.points {
                        let at = p.recovered_at_s.map_or_else(String::new, |t| t.to_string());
                        writeln!(
                            out,
                            "{},{},{},{},{},{at},{},{}",
                            s.rule,
                            s.budget_percent,
                            p.offered_qps,
                            p.runs,
                            p.recovered,
                            p.attempts_per_s,
                            p.goodput_per_s
                        )?;
                    }
                }
            }
        }
        out.flush()?;
        return Ok(());
    }
    let model = Metastable::new(&scenario, &limits).map_err(CliError::input)?;
    let reports: Vec<_> = every_rule_and_seed(&rules, &seeds, |rule, seed| model.run(rule, seed))?
        .into_iter()
        .map(|(_, _, report)| report)
        .collect();
    match args.format {
        Format::Json => {
            let value = serde_json::json!({ "scenario": scenario, "results": reports });
            serde_json::to_writer(&mut out, &value).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
        Format::Table => {
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                write!(out, "{r}")?;
            }
        }
        Format::Csv => {
            writeln!(
                out,
                "rule,seed,start_s,first_attempts,retries,lost,throughput,goodput,timeouts,gave_up,denied_by_budget,queue"
            )?;
            for r in &reports {
                for w in &r.windows {
                    writeln!(
                        out,
                        "{},{},{},{},{},{},{},{},{},{},{},{}",
                        r.rule,
                        r.seed,
                        w.start_s,
                        w.first_attempts,
                        w.retries,
                        w.lost,
                        w.throughput,
                        w.goodput,
                        w.timeouts,
                        w.gave_up,
                        w.denied_by_budget,
                        w.queue
                    )?;
                }
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn run_contention(args: &StormArgs, mut scenario: ContentionScenario) -> CliResult {
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    if let Some(n) = args.clients {
        scenario.clients.count = n;
    }
    if args.runs > 1 {
        scenario.runs = args.runs;
    }
    if !args.rules.rules().is_empty() {
        scenario.retry.rules = args.rules.rules();
    }
    let model = Contention::new(&scenario, &Limits::default()).map_err(CliError::input)?;
    let counts: Vec<u64> = match &args.models.sweep_clients {
        None => vec![scenario.clients.count],
        Some(range) => {
            let values = parse_range("--sweep-clients", range)?;
            if values.iter().any(|v| v.fract() != 0.0 || *v < 1.0) {
                return Err(CliError::input(format!(
                    "--sweep-clients must give whole numbers of clients, at least 1, got {range}"
                )));
            }
            values.into_iter().map(|v| v as u64).collect()
        }
    };
    let rules = model.rules();
    let jobs: Vec<(u64, RuleName)> = counts
        .iter()
        .flat_map(|&n| rules.iter().map(move |&r| (n, r)))
        .collect();
    let points = jobs
        .par_iter()
        .map(|&(n, rule)| model.average(rule, n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)?;
    let report = ContentionReport::new(&model, &rules, points);
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Json => {
            serde_json::to_writer(&mut out, &report).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
        Format::Table => write!(out, "{report}")?,
        Format::Csv => {
            writeln!(
                out,
                "rule,clients,runs,calls,calls_per_client,completion_ms"
            )?;
            for p in &report.points {
                writeln!(
                    out,
                    "{},{},{},{},{},{}",
                    p.rule, p.clients, p.runs, p.calls, p.calls_per_client, p.completion_ms
                )?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd_sim::ScenarioError;
    use herd_sim::model::Metrics;

    /// A model the CLI knows nothing about: a coin that lands heads on odd seeds.
    #[derive(Debug)]
    struct Coin;

    impl Model for Coin {
        const NAME: &'static str = "coin";
        const ABOUT: &'static str = "a coin";
        const METRICS: &'static [&'static str] = &["heads", "never"];
        fn check(_: &toml::Value, _: &Limits) -> Result<Self, ScenarioError> {
            Ok(Coin)
        }
        fn sweepable(&self) -> Result<toml::Value, ScenarioError> {
            Ok(toml::Value::Table(toml::Table::new()))
        }
        fn rules(&self) -> Vec<RuleName> {
            vec![RuleName::Immediate]
        }
        fn seed(&self) -> u64 {
            1
        }
        fn cost(&self) -> u64 {
            1
        }
        fn run(&self, _: RuleName, seed: u64) -> Result<Metrics, ScenarioError> {
            let mut m = Metrics::new();
            m.set("heads", Some((seed % 2) as f64));
            m.set("never", None);
            Ok(m)
        }
    }

    #[test]
    fn any_model_prints_its_metrics_per_rule_and_seed() {
        let rules = [RuleName::Immediate, RuleName::Full];
        let mut csv = Vec::new();
        let rules: Vec<Variant> = rules.into_iter().map(Variant::Rule).collect();
        write_metrics(&mut csv, Format::Csv, &Coin, &rules, &[1, 2]).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "rule,seed,heads,never\nimmediate,1,1,\nimmediate,2,0,\nfull,1,1,\nfull,2,0,\n"
        );
        let mut json = Vec::new();
        write_metrics(&mut json, Format::Json, &Coin, &rules[..1], &[3]).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["model"], "coin");
        assert_eq!(value["results"][0]["metrics"]["heads"], 1.0);
        assert!(value["results"][0]["metrics"]["never"].is_null());
    }

    #[test]
    fn ranges_parse_inclusively() {
        assert_eq!(
            parse_range("--sweep-clients", "10..50:20").unwrap(),
            vec![10.0, 30.0, 50.0]
        );
        assert_eq!(parse_range("--x", "5..5:1").unwrap(), vec![5.0]);
        assert_eq!(
            parse_range("--x", "0.1..0.3:0.1").unwrap(),
            vec![0.1, 0.2, 0.3]
        );
        for bad in [
            "10..5:1",
            "1..2",
            "a..b:1",
            "1..2:0",
            "-1..2:1",
            "0..1e9:1e-3",
        ] {
            assert!(parse_range("--x", bad).is_err(), "{bad}");
        }
    }
}
