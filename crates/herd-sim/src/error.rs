//! The one error type of the simulator: what is wrong with a scenario, naming the field.
use std::fmt;

/// `Display` as `as_str()`, and `FromStr` from any case of a name in `ALL`, for an enum a
/// scenario or a flag names by a word (`engine`, `pauses`): any other word is an error naming
/// `$field`, with the message `$expected` writes from it.
macro_rules! named_by_word {
    ($ty:ty, $field:literal, $expected:expr) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::error::ScenarioError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <$ty>::ALL
                    .into_iter()
                    .find(|v| v.as_str().eq_ignore_ascii_case(s))
                    .ok_or_else(|| $crate::error::ScenarioError::field($field, ($expected)(s)))
            }
        }
    };
}
pub(crate) use named_by_word;

/// A scenario that cannot be run, with the field at fault and (for files) the line.
///
/// It displays as one line, `field (line N): problem`, fit for `error: …` on a terminal and
/// for a JSON error body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    field: Option<String>,
    line: Option<usize>,
    message: String,
}

impl ScenarioError {
    /// An error about `field` (dotted, as in the file: `server.capacity`).
    #[must_use]
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            line: None,
            message: message.into(),
        }
    }

    /// An error not tied to one field (a TOML syntax error, say).
    #[must_use]
    pub fn general(message: impl Into<String>) -> Self {
        Self {
            field: None,
            line: None,
            message: message.into(),
        }
    }

    /// The same error, located at a 1-based line of the scenario file.
    #[must_use]
    pub fn at_line(mut self, line: Option<usize>) -> Self {
        if line.is_some() {
            self.line = line;
        }
        self
    }

    /// The offending field, dotted (`server.refusal_cost`), when there is one.
    #[must_use]
    pub fn field_name(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The 1-based line in the scenario file, when known.
    #[must_use]
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The problem, without the field and line.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.field, self.line) {
            (Some(field), Some(line)) => write!(f, "{field} (line {line}): ")?,
            (Some(field), None) => write!(f, "{field}: ")?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        // Keep it to one line whatever the parser said.
        let mut first = true;
        for part in self
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            if !first {
                f.write_str("; ")?;
            }
            f.write_str(part)?;
            first = false;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}
