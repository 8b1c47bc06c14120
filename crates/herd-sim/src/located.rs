//! Errors located in a scenario file: the line of a TOML syntax error, and the line on which a
//! field named by a validation error is set. Shared by every model's file reader.
use crate::error::ScenarioError;

/// Turns a TOML parser error into one line naming the field and the line.
pub(crate) fn toml_error(text: &str, err: &toml::de::Error) -> ScenarioError {
    let line = err.span().map(|span| line_of(text, span.start));
    let message = err.message().to_owned();
    // serde names an unknown field itself; for type errors, recover the key from the line.
    let field = line.and_then(|l| key_at_line(text, l));
    let error = match field {
        Some(field) if !message.contains("unknown field") => ScenarioError::field(field, message),
        _ => ScenarioError::general(message),
    };
    error.at_line(line)
}

fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key assigned on a line (`server.capacity`), from the nearest table header above.
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?.trim();
    let (key, _) = here.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() {
        return None;
    }
    let table = lines[..line - 1].iter().rev().find_map(|l| {
        let l = l.trim();
        l.strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .map(|t| t.trim().to_owned())
    });
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_owned(),
    })
}

/// Adds the line on which a field is set to a validation error, when the file sets it.
pub(crate) fn locate(text: &str, err: ScenarioError) -> ScenarioError {
    let Some(field) = err.field_name() else {
        return err;
    };
    let (table, key) = match field.rsplit_once('.') {
        Some((t, k)) => (Some(t), k),
        None => (None, field),
    };
    let mut current: Option<String> = None;
    let mut found = None;
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(t) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            current = Some(t.trim().to_owned());
            continue;
        }
        let Some((k, _)) = l.split_once('=') else {
            continue;
        };
        if k.trim().trim_matches('"') == key && current.as_deref() == table {
            found = Some(i + 1);
            break;
        }
    }
    err.at_line(found)
}
