//! Checks of single scenario fields shared by the metastable and contention models: each
//! turns a user's number into a checked value or an error naming the field.
use std::time::Duration;

use herd::{InvalidRule, Rule, RuleName, RuleParams};

use crate::error::ScenarioError;

/// The longest time a scenario may mention, in seconds (about 31 years).
pub(crate) const MAX_SECONDS: f64 = 1e9;

/// A finite number of seconds in `(0, 10^9]` (or `[0, 10^9]` when `zero_ok`).
pub(crate) fn seconds(field: &str, s: f64, zero_ok: bool) -> Result<f64, ScenarioError> {
    let low_ok = if zero_ok { s >= 0.0 } else { s > 0.0 };
    if !s.is_finite() || !low_ok || s > MAX_SECONDS {
        let range = if zero_ok {
            "between 0"
        } else {
            "above 0 and at most"
        };
        let sep = if zero_ok { " and " } else { " " };
        return Err(ScenarioError::field(
            field,
            format!("must be a number of seconds {range}{sep}10^9, got {s}"),
        ));
    }
    Ok(s)
}

/// A finite number in `[low, high]`.
pub(crate) fn number_in(field: &str, x: f64, low: f64, high: f64) -> Result<f64, ScenarioError> {
    if !x.is_finite() || x < low || x > high {
        return Err(ScenarioError::field(
            field,
            format!("must be a number between {low} and {high}, got {x}"),
        ));
    }
    Ok(x)
}

/// A number of milliseconds as a [`Duration`], exact to the nanosecond.
pub(crate) fn millis(field: &'static str, ms: f64) -> Result<Duration, ScenarioError> {
    herd::rule::millis(field, ms).map_err(|_| {
        ScenarioError::field(
            field,
            format!("must be a finite number of milliseconds between 0 and 10^12, got {ms}"),
        )
    })
}

/// Outage intervals `[start_s, end_s)`: finite, ordered, inside the horizon.
pub(crate) fn outages(
    field: &str,
    outages: &[[f64; 2]],
    horizon_s: f64,
) -> Result<Vec<(f64, f64)>, ScenarioError> {
    let mut checked = Vec::with_capacity(outages.len());
    for &[start, end] in outages {
        if !start.is_finite() || !end.is_finite() || start < 0.0 || end <= start {
            return Err(ScenarioError::field(
                field,
                format!("[{start}, {end}] must be [start_s, end_s) with 0 <= start_s < end_s"),
            ));
        }
        if start >= horizon_s {
            return Err(ScenarioError::field(
                field,
                format!("[{start}, {end}] starts at or after the horizon ({horizon_s} s)"),
            ));
        }
        checked.push((start, end.min(horizon_s)));
    }
    checked.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(checked)
}

/// Builds `name` from the `[retry]` parameters, naming the field at fault.
pub(crate) fn rule(name: RuleName, params: &RuleParams) -> Result<Rule, ScenarioError> {
    name.build(params).map_err(|e| {
        let field = match e {
            InvalidRule::ZeroBase => "retry.base_ms",
            InvalidRule::ZeroPause => "retry.pause_ms",
            InvalidRule::CapBelowBase { .. } => "retry.cap_ms",
            InvalidRule::Multiplier(_) | InvalidRule::Jitter(_) => "retry.rule",
            InvalidRule::Millis { field, .. } => field,
        };
        ScenarioError::field(field, format!("{e} (rule {name})"))
    })
}

/// Checks that the scenario's `model` key, when present, names `expected`.
pub(crate) fn model(model: Option<&str>, expected: &str) -> Result<(), ScenarioError> {
    match model {
        None => Ok(()),
        Some(m) if m == expected => Ok(()),
        Some(other) => Err(ScenarioError::field(
            "model",
            format!("must be \"{expected}\" for this scenario, got \"{other}\""),
        )),
    }
}

/// Parses a model's scenario file: TOML errors and check errors name the field and line.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    text: &str,
    check: impl FnOnce(&T) -> Result<(), ScenarioError>,
) -> Result<T, ScenarioError> {
    let value: T = toml::from_str(text).map_err(|e| crate::scenario::toml_error(text, &e))?;
    check(&value).map_err(|e| crate::scenario::locate(text, e))?;
    Ok(value)
}
