//! `herd storm` for scenarios of the other models (`model = "metastable"`,
//! `model = "contention"`, any later one), reached through `herd_sim::model`: the model runs
//! the comparison and prints its own report. The storm is the default model and runs in
//! `storm.rs`, with its own flags.
use std::io::{self, BufWriter, Write};
use std::path::Path;

use herd_sim::Limits;
use herd_sim::model::{AnyModel, DEFAULT_MODEL, Variant};
use herd_sim::registry;

use super::{EngineArg, Format, StormArgs};
use crate::error::{CliError, CliResult};

/// The storm's own flags, refused for another model rather than ignored.
fn refuse_storm_flags(args: &StormArgs, model: &str) -> CliResult {
    let given = [
        ("--scale-capacity", args.scale_capacity),
        ("--engine", !matches!(args.engine, EngineArg::Agent)),
        ("--capacity-rps", args.flags.capacity_rps.is_some()),
        ("--outage-s", args.flags.outage_s.is_some()),
        ("--refusal-cost", args.flags.refusal_cost.is_some()),
        ("--latency-ms", args.flags.latency_ms.is_some()),
        ("--pauses", args.pauses.is_some()),
        ("--throttle", !args.throttles.is_empty()),
        ("--chart", args.chart.is_some()),
    ];
    for (flag, set) in given {
        if set {
            return Err(CliError::input(format!(
                "{flag} does not apply to model = \"{model}\""
            )));
        }
    }
    Ok(())
}

/// `--clients N` on a model whose scenario has `clients.count`: the model checked again with
/// that count; on any other model, an error naming the flag.
fn with_clients(checked: Box<dyn AnyModel>, clients: u64) -> CliResult<Box<dyn AnyModel>> {
    let refused = || {
        CliError::input(format!(
            "--clients does not apply to model = \"{}\" (its scenario has no clients.count)",
            checked.name()
        ))
    };
    let mut tree = checked.sweepable().map_err(CliError::input)?;
    let count = tree
        .get_mut("clients")
        .and_then(|c| c.get_mut("count"))
        .ok_or_else(refused)?;
    *count = toml::Value::Integer(i64::try_from(clients).map_err(|_| refused())?);
    registry::check(&tree, &Limits::default())
        .map_err(|e| CliError::input(format!("--clients {clients}: {e}")))
}

/// Runs a scenario file whose model is not the storm, through the model interface;
/// `Ok(false)` when it is the storm, which `storm.rs` runs with its own flags.
pub(crate) fn run(args: &StormArgs, path: &Path, text: &str) -> CliResult<bool> {
    let named = |e: herd_sim::ScenarioError| CliError::input(format!("{}: {e}", path.display()));
    // A file that is not TOML is reported by the storm's parser, with its line.
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(false);
    };
    let registration = registry::of_tree(&toml::Value::Table(table)).map_err(named)?;
    if registration.name == DEFAULT_MODEL {
        return Ok(false);
    }
    refuse_storm_flags(args, registration.name)?;
    let mut checked = registry::check_text(text, &Limits::default()).map_err(named)?;
    if let Some(n) = args.flags.clients {
        checked = with_clients(checked, n)?;
    }
    let rules = args.rules.rules();
    let variants: Vec<Variant> = if rules.is_empty() {
        checked.variants()
    } else if checked.rules().is_empty() {
        return Err(CliError::input(format!(
            "{}: --rule does not apply to model = \"{}\", which compares variants of its own \
             ({}); vary them with `herd sweep`",
            path.display(),
            registration.name,
            checked
                .variants()
                .iter()
                .map(Variant::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    } else {
        rules.into_iter().map(Variant::Rule).collect()
    };
    let runs = if args.runs > 1 {
        args.runs
    } else {
        checked.runs()
    };
    let first = args.seed.unwrap_or_else(|| checked.seed());
    let seeds: Vec<u64> = (0..u64::from(runs))
        .map(|k| first.wrapping_add(k))
        .collect();
    let report = checked
        .report(&variants, &seeds, &herd_sim::Cancel::new())
        .map_err(named)?;
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Json => {
            serde_json::to_writer(&mut out, &report.to_json())?;
            writeln!(out)?;
        }
        Format::Table => report.write_table(&mut out)?,
        Format::Csv => report.write_csv(&mut out)?,
    }
    out.flush()?;
    Ok(true)
}
