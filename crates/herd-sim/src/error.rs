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

/// A field of a scenario file, by its dotted path as the file writes it (`server.capacity`;
/// `policies[].delay_ms` for that field of any item of a list).
///
/// The simulator's checks put a field on the [`ScenarioError`] they return, and the scenario
/// types name the fields a caller may want to map (`Scenario::CLIENTS_COUNT`), so that a form
/// naming its inputs differently maps an error with [`ScenarioError::is_at`]: the two agree by
/// construction, and a renamed field is a compile error, not a silently unmapped message.
///
/// # Examples
///
/// ```
/// use herd_sim::latency::LatencyScenario;
///
/// let mut scenario = LatencyScenario::default();
/// scenario.policies[1].delay_ms = -1.0;
/// let err = herd_sim::latency::LatencyModel::new(&scenario).unwrap_err();
/// assert!(err.is_at(LatencyScenario::POLICY_DELAY_MS));
/// assert_eq!(err.field_name(), Some("policies[1].delay_ms"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field(&'static str);

impl Field {
    /// The field at `path`, dotted; `[]` stands for any index of a list.
    pub(crate) const fn new(path: &'static str) -> Self {
        Self(path)
    }

    /// The dotted path, `[]` standing for any index.
    #[must_use]
    pub const fn path(self) -> &'static str {
        self.0
    }

    /// The path of this field in item `index` of its list: `policies[2].delay_ms`.
    pub(crate) fn of_item(self, index: usize) -> String {
        self.0.replacen("[]", &format!("[{index}]"), 1)
    }

    /// Whether `path`, as an error names it, is this field (`policies[3].delay_ms` is
    /// `policies[].delay_ms`).
    #[must_use]
    pub fn names(self, path: &str) -> bool {
        let mut rest = path;
        for (i, part) in self.0.split("[]").enumerate() {
            if i > 0 {
                // An index: `[` digits `]`.
                let Some(after) = rest.strip_prefix('[') else {
                    return false;
                };
                let digits =
                    after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let Some(after) = after[digits..].strip_prefix(']').filter(|_| digits > 0) else {
                    return false;
                };
                rest = after;
            }
            let Some(after) = rest.strip_prefix(part) else {
                return false;
            };
            rest = after;
        }
        rest.is_empty()
    }
}

impl From<Field> for String {
    fn from(field: Field) -> Self {
        field.0.to_owned()
    }
}

/// A scenario that cannot be run, with the field at fault and (for files) the line.
///
/// It displays as one line, `field (line N): problem`, fit for `error: …` on a terminal and
/// for a JSON error body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    field: Option<String>,
    line: Option<usize>,
    message: String,
    cancelled: bool,
}

impl ScenarioError {
    /// An error about `field` (dotted, as in the file: `server.capacity`).
    #[must_use]
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            line: None,
            message: message.into(),
            cancelled: false,
        }
    }

    /// An error not tied to one field (a TOML syntax error, say).
    #[must_use]
    pub fn general(message: impl Into<String>) -> Self {
        Self {
            field: None,
            line: None,
            message: message.into(),
            cancelled: false,
        }
    }

    /// A run stopped by its [`Watch`](crate::Watch)'s [`Cancel`](crate::Cancel) before it
    /// finished: it has no result.
    #[must_use]
    pub fn cancelled() -> Self {
        Self {
            cancelled: true,
            ..Self::general("the run was cancelled")
        }
    }

    /// Whether the run was stopped by its [`Cancel`](crate::Cancel), not by a problem with
    /// the scenario.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
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

    /// Whether the error is about `field` (any item of a list, for a field written with `[]`).
    #[must_use]
    pub fn is_at(&self, field: Field) -> bool {
        self.field.as_deref().is_some_and(|path| field.names(path))
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
        // Keep it to one line whatever the parser said, and short whatever it quoted.
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
            f.write_str(&shorten_values(part))?;
            first = false;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// The longest word an error line quotes whole; longer ones are cut in the middle.
const LONGEST_QUOTED: usize = 80;

/// `line` with long values shortened, for an error message that quotes what it was given: a
/// number written in more than 20 digits (`1e308` prints as 309) in scientific notation,
/// any other word over 80 characters cut to its start and end with its length. A line
/// without such values is returned as it is.
///
/// # Examples
///
/// ```
/// use herd_sim::shorten_values;
///
/// assert_eq!(shorten_values(&format!("got {}", 1e308)), "got 1e308");
/// let long = "x".repeat(100_000);
/// let short = shorten_values(&format!("unknown rule `{long}`"));
/// assert!(short.len() < 120 && short.contains("(100000 characters)"), "{short}");
/// assert_eq!(shorten_values("got 0.5 (--rate)"), "got 0.5 (--rate)");
/// ```
#[must_use]
pub fn shorten_values(line: &str) -> String {
    if line.split(' ').all(|w| w.chars().count() <= 20) {
        return line.to_owned();
    }
    line.split(' ')
        .map(shorten_word)
        .collect::<Vec<_>>()
        .join(" ")
}

fn shorten_word(word: &str) -> String {
    let chars = word.chars().count();
    if chars <= 20 {
        return word.to_owned();
    }
    // A long number, perhaps with punctuation around it (`[1000…0,` or `…0).`).
    let number = word.trim_matches(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'));
    if !number.is_empty()
        && let Ok(x) = number.parse::<f64>()
        && number.chars().filter(char::is_ascii_digit).count() > 20
    {
        return word.replacen(number, &format!("{x:e}"), 1);
    }
    if chars <= LONGEST_QUOTED {
        return word.to_owned();
    }
    // Quotes and brackets stay around the value; its length is the value's own.
    let quoted = |c: char| {
        matches!(
            c,
            '\'' | '"' | '`' | '(' | ')' | '[' | ']' | ',' | ':' | ';'
        )
    };
    let value = word.trim_matches(quoted);
    let start = word.len() - word.trim_start_matches(quoted).len();
    let (before, after) = (&word[..start], &word[start + value.len()..]);
    let chars = value.chars().count();
    let head: String = value.chars().take(40).collect();
    let tail: String = value.chars().skip(chars.saturating_sub(16)).collect();
    format!("{before}{head}…{tail}{after} ({chars} characters)")
}

#[cfg(test)]
mod field_tests {
    use super::Field;

    #[test]
    fn a_list_field_names_every_item_and_nothing_else() {
        let delay = Field::new("policies[].delay_ms");
        assert_eq!(delay.of_item(12), "policies[12].delay_ms");
        assert!(delay.names("policies[0].delay_ms"));
        assert!(delay.names("policies[12].delay_ms"));
        for other in [
            "policies[].delay_ms",
            "policies[x].delay_ms",
            "policies[1].delay_ms_x",
            "policies[1].quantile",
            "policies.delay_ms",
            "delay_ms",
        ] {
            assert!(!delay.names(other), "{other}");
        }
        let count = Field::new("clients.count");
        assert!(count.names("clients.count"));
        assert!(!count.names("clients.count2") && !count.names("clients"));
    }
}
