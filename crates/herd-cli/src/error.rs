//! The command's error type: bad input (exit 2) apart from failures at run time (exit 1).
use std::fmt;

/// An error the command reports in one line.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The user's input (a flag, a file) is wrong; exit code 2.
    Input(String),
    /// Something failed while running; exit code 1.
    Run(anyhow::Error),
    /// Reading or writing failed while running (the output, a chart); exit code 1.
    Io(std::io::Error),
}

impl CliError {
    /// Bad input, naming the offending flag or field.
    pub(crate) fn input(msg: impl fmt::Display) -> Self {
        CliError::Input(msg.to_string())
    }

    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Input(_) => 2,
            CliError::Run(_) | CliError::Io(_) => 1,
        }
    }

    /// Whether the error is a write to a closed pipe (`herd … | head`). Every write of the
    /// output returns an `io::Error` (JSON's through `From<serde_json::Error>`, which keeps
    /// the kind), so this is one match, not a search of an error chain.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(msg) => f.write_str(msg),
            // `{:#}` prints the whole context chain on one line.
            CliError::Run(e) => write!(f, "{e:#}"),
            CliError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::Run(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Io(e)
    }
}

/// Writing JSON failed: serde_json's own conversion keeps an I/O error's kind (a closed pipe
/// stays `BrokenPipe`).
impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        CliError::Io(e.into())
    }
}

pub(crate) type CliResult<T = ()> = Result<T, CliError>;
