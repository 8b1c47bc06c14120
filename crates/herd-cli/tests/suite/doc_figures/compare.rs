//! Comparing a value with a figure as the docs print it, and finding the figure in the prose.
use serde_json::Value;

/// Checks that `value` (times `scale`) prints as `figure`: a number with as many decimals as
/// `figure` has (thousands may be grouped with spaces, `52 950`; a minus may be `−`),
/// `null`, `true`, `false`, or a string in double quotes.
pub fn prints_as(value: &Value, scale: f64, figure: &str) -> Result<(), String> {
    let want = normalise(figure);
    let got = match (value, want.as_str()) {
        (Value::Null, _) | (Value::Bool(_), _) => value.to_string(),
        (Value::String(s), _) => format!("\"{s}\""),
        (Value::Number(n), w) => {
            let x = n.as_f64().ok_or("not a number")? * scale;
            let decimals = w.split_once('.').map_or(0, |(_, d)| d.len());
            let printed = format!("{x:.decimals$}");
            // `-0.0` prints as the docs would write it: 0.0.
            match printed.strip_prefix('-') {
                Some(p) if p.chars().all(|c| c == '0' || c == '.') => p.to_owned(),
                _ => printed,
            }
        }
        (Value::Object(o), _) if o.contains_key("mean") => {
            return Err("an interval: compare its `.mean`, or write `MEAN ± HALF`".to_owned());
        }
        _ => return Err(format!("cannot compare {value} with a figure")),
    };
    if got == want {
        Ok(())
    } else {
        Err(format!("the docs say {figure}, the command prints {got}"))
    }
}

/// `figure` without its grouping spaces, with an ASCII minus.
fn normalise(figure: &str) -> String {
    figure
        .chars()
        .filter(|c| !matches!(c, ' ' | '\u{a0}' | '\u{202f}' | '\u{2009}'))
        .map(|c| if c == '−' { '-' } else { c })
        .collect()
}

/// Whether `scope` quotes `figure` as a whole figure (`29.7` is not quoted by `129.7` or
/// `29.75`; a string figure is quoted without its double quotes).
pub fn quoted_in(scope: &str, figure: &str) -> bool {
    let text = figure
        .strip_prefix('"')
        .and_then(|f| f.strip_suffix('"'))
        .unwrap_or(figure);
    let numeric = |c: char| c.is_ascii_digit();
    scope.match_indices(text).any(|(at, _)| {
        let before = scope[..at].chars().next_back();
        let mut after = scope[at + text.len()..].chars();
        let next = after.next();
        let then = after.next();
        let clean_before = !before.is_some_and(|c| numeric(c) || c == '.' || c == '−' || c == '-');
        let clean_after = match next {
            Some(c) if numeric(c) => false,
            Some('.' | ',') => !then.is_some_and(numeric),
            _ => true,
        };
        clean_before && clean_after
    })
}
