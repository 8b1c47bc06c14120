//! The `herd` command.
use std::io::{self, Write};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    Serve(cmd::serve::ServeArgs),
    Amplify(cmd::amplify::AmplifyArgs),
    Hedge(cmd::hedge::HedgeArgs),
    Check(cmd::check::CheckArgs),
    Lab(cmd::lab::LabArgs),
}

fn main() -> ExitCode {
    // `--refusal-cost -0.1` is a value in every subcommand, not an unknown flag `-0`.
    let command = cmd::args::allow_negative_numbers(Cli::command());
    let cli = match command
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let result = match cli.command {
        Command::Rules(args) => cmd::rules::run(&args),
        Command::Storm(args) => cmd::storm::run(&args),
        Command::Sweep(args) => cmd::sweep::run(&args),
        Command::Serve(args) => cmd::serve::run(&args),
        Command::Amplify(args) => cmd::amplify::run(&args),
        Command::Hedge(args) => cmd::hedge::run(&args),
        Command::Check(args) => cmd::check::run(&args),
        Command::Lab(args) => cmd::lab::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report(err),
    }
}

/// Help and version go to stdout as usual; a usage error becomes one line on stderr and exit 2.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        // 0 for --help and --version, 2 when a subcommand is missing.
        return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
    }
    let rendered = err.render().to_string();
    let line = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let _ = writeln!(
        io::stderr(),
        "{} (see --help)",
        herd_sim::shorten_values(&line)
    );
    ExitCode::from(2)
}

/// Prints one line for the error and picks the exit code: 2 for bad input, 1 otherwise.
/// A closed pipe (`herd rules … | head`) is not an error.
fn report(err: CliError) -> ExitCode {
    if err.is_broken_pipe() {
        return ExitCode::SUCCESS;
    }
    // One line, whatever was quoted in it (a 100 KB name, 1e308 in 309 digits).
    let line = herd_sim::shorten_values(&err.to_string());
    let _ = writeln!(io::stderr(), "error: {line}");
    ExitCode::from(err.exit_code())
}
