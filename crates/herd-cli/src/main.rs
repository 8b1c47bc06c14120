//! The `herd` command.
use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod error;

use error::CliError;

/// Retries that break up the thundering herd.
///
/// herd shows what a retry rule does to a recovering server, draws the pauses of every rule,
/// and measures retry amplification on real services.
#[derive(Debug, Parser)]
#[command(name = "herd", version, propagate_version = true, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Rules(cmd::rules::RulesArgs),
    Storm(cmd::storm::StormArgs),
    Sweep(cmd::sweep::SweepArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Rules(args) => cmd::rules::run(&args),
        Command::Storm(args) => cmd::storm::run(&args),
        Command::Sweep(args) => cmd::sweep::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report(err),
    }
}

/// Prints one line for the error and picks the exit code: 2 for bad input, 1 otherwise.
/// A closed pipe (`herd rules … | head`) is not an error.
fn report(err: CliError) -> ExitCode {
    if err.is_broken_pipe() {
        return ExitCode::SUCCESS;
    }
    let _ = writeln!(io::stderr(), "error: {err}");
    ExitCode::from(err.exit_code())
}
