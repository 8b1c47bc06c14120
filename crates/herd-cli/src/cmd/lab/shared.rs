//! What `herd lab storm` and `herd lab hedge` share: reading the scenario, the lab's errors,
//! and the exit a run's verdicts lead to.
use std::fmt::Display;
use std::io::{self, Write};
use std::path::Path;

use herd_lab::judge::Verdict;
use herd_lab::storm::LabStormError;
use serde::Serialize;

use crate::cmd::args::Format;
use crate::cmd::interrupt::Interrupt;
use crate::error::{CliError, CliResult};

/// A lab command's scenario and the name it prints: the file at `path`, or the built-in
/// scenario `builtin` named `builtin_name`. A file that cannot be read or parsed is bad
/// input naming the file; a built-in one that does not parse is a bug.
pub(crate) fn read_scenario<T, E: Display>(
    path: Option<&Path>,
    (builtin, builtin_name): (&str, &str),
    parse: impl Fn(&str) -> Result<T, E>,
) -> CliResult<(T, String)> {
    match path {
        None => Ok((
            parse(builtin).map_err(|e| CliError::Run(anyhow::anyhow!("built-in scenario: {e}")))?,
            builtin_name.to_owned(),
        )),
        Some(path) => {
            let text = crate::cmd::input_file::read_input(path, "scenario")?;
            let scenario =
                parse(&text).map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            Ok((scenario, path.display().to_string()))
        }
    }
}

/// The lab's own errors as the CLI's: bad input exits 2, a failed run 1.
pub(crate) fn storm_error(e: LabStormError) -> CliError {
    match e {
        LabStormError::Input(msg) => CliError::input(msg),
        LabStormError::Run(msg) => CliError::Run(anyhow::anyhow!(msg)),
    }
}

/// How a lab command ends once its `runs` (`total` of them, called `what`: "runs",
/// "policies") are judged: exit 1 when any was not comparable (it `lost` something on the
/// way) or differs from the simulation `beyond` its bound, success otherwise.
pub(crate) fn exit_on_verdicts(
    verdicts: impl IntoIterator<Item = Verdict>,
    total: usize,
    what: &str,
    lost: &str,
    beyond: &str,
) -> CliResult {
    let (mut not_comparable, mut differs) = (0, 0);
    for v in verdicts {
        match v {
            Verdict::NotComparable => not_comparable += 1,
            Verdict::Differs => differs += 1,
            Verdict::Agrees | Verdict::TooSmall => {}
        }
    }
    if not_comparable > 0 {
        return Err(CliError::Run(anyhow::anyhow!(
            "{not_comparable} of {total} {what} {lost} and are not comparable"
        )));
    }
    if differs > 0 {
        return Err(CliError::Run(anyhow::anyhow!(
            "{differs} of {total} {what} differ from the simulation beyond {beyond}"
        )));
    }
    Ok(())
}

/// Prints a lab command's results once every run is done: nothing more as a table (it was
/// printed run by run), `json` as one JSON object, or the lines `write_csv` writes.
pub(crate) fn print_results<W: Write>(
    out: &mut W,
    format: Format,
    json: &impl Serialize,
    write_csv: impl FnOnce(&mut W) -> io::Result<()>,
) -> CliResult {
    match format {
        Format::Table => {}
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, json)?;
            writeln!(out)?;
        }
        Format::Csv => write_csv(out)?,
    }
    Ok(())
}

/// Runs `work` on `runtime` unless Ctrl-C comes first (then `None`, and `work` is dropped:
/// its servers and clients stop with it), so that a lab prints the runs that finished. One
/// [`Interrupt`] watches for the whole command, so a Ctrl-C between two runs is not lost.
pub(crate) fn until_ctrl_c<T>(
    runtime: &tokio::runtime::Runtime,
    interrupt: &Interrupt,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    runtime.block_on(async {
        tokio::select! {
            done = work => Some(done),
            () = async {
                while !interrupt.is_set() {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            } => None,
        }
    })
}

/// The error a lab ends with after Ctrl-C, once it printed what finished (as `lab chain`).
pub(crate) fn interrupted(finished: usize, total: usize, what: &str) -> CliError {
    CliError::Run(anyhow::anyhow!(
        "interrupted after {finished} of {total} {what}"
    ))
}
