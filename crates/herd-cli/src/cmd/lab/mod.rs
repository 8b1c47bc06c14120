//! `herd lab`: real HTTP services on 127.0.0.1, measured against herd's own figures. One file
//! per lab (`chain`, `storm`, `hedge`); what they share is in `shared`. Every lab's verdict is
//! judged by `herd_lab::judge`.
use clap::{Args, Subcommand};

use crate::error::CliResult;

mod chain;
mod hedge;
mod shared;
mod storm;

/// Run real HTTP services on 127.0.0.1 and measure what retries and hedges do to them.
#[derive(Debug, Args)]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    Chain(chain::ChainArgs),
    Storm(storm::LabStormArgs),
    Hedge(hedge::LabHedgeArgs),
}

pub(crate) fn run(args: &LabArgs) -> CliResult {
    match &args.command {
        LabCommand::Chain(chain) => chain::run(chain),
        LabCommand::Storm(storm) => storm::run(storm),
        LabCommand::Hedge(hedge) => hedge::run(hedge),
    }
}
