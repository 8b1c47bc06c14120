//! The command's error type: bad input (exit 2) apart from failures at run time (exit 1).
use std::fmt;

/// An error the command reports in one line.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The user's input (a flag, a file) is wrong; exit code 2.
    Input(String),
    /// Something failed while running; exit code 1.
    Run(anyhow::Error),
}

impl CliError {
    /// Bad input, naming the offending flag or field.
    pub(crate) fn input(msg: impl fmt::Display) -> Self {
        CliError::Input(msg.to_string())
    }

    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Input(_) => 2,
            CliError::Run(_) => 1,
        }
    }

    /// Whether the error is a write to a closed pipe (`herd … | head`), however it was
    /// wrapped: an `io::Error` of kind `BrokenPipe`, or one carried inside another
    /// (`io::Error::other(serde_json::Error)`, whose `source` skips the error it wraps).
    pub(crate) fn is_broken_pipe(&self) -> bool {
        match self {
            CliError::Run(e) => e.chain().any(broken_pipe),
            CliError::Input(_) => false,
        }
    }
}

fn broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return io.kind() == BrokenPipe || io.get_ref().is_some_and(|inner| broken_pipe(inner));
    }
    e.downcast_ref::<serde_json::Error>()
        .is_some_and(|json| json.io_error_kind() == Some(BrokenPipe))
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(msg) => f.write_str(msg),
            // `{:#}` prints the whole context chain on one line.
            CliError::Run(e) => write!(f, "{e:#}"),
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
        CliError::Run(e.into())
    }
}

pub(crate) type CliResult<T = ()> = Result<T, CliError>;
