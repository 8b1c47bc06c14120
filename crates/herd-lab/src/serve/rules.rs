//! The rule parameters every scene's request may carry, checked once, at the edge.
use std::time::Duration;

use herd::rule::millis;
use herd::{Rule, RuleName, RuleParams};

use super::error::ApiError;

/// Parses a rule name, naming the `rule` parameter on failure.
pub(crate) fn rule_name(text: &str) -> Result<RuleName, ApiError> {
    text.parse()
        .map_err(|e: herd::rule::UnknownRule| ApiError::bad_request(format!("rule: {e}")))
}

/// Builds a rule from optional millisecond fields (the library's defaults where absent).
pub(crate) fn build_rule(
    name: RuleName,
    base_ms: Option<f64>,
    cap_ms: Option<f64>,
    pause_ms: Option<f64>,
) -> Result<Rule, ApiError> {
    let defaults = RuleParams::default();
    let ms = |field: &'static str, value: Option<f64>, default: Duration| match value {
        None => Ok(default),
        Some(v) => millis(field, v).map_err(|e| ApiError::bad_request(e.to_string())),
    };
    let params = defaults
        .base(ms("base_ms", base_ms, defaults.base)?)
        .cap(ms("cap_ms", cap_ms, defaults.cap)?)
        .pause(ms("pause_ms", pause_ms, defaults.pause)?);
    name.build(&params).map_err(|e| {
        // herd's messages say `base`, `cap`, `pause`; the API's fields end in `_ms`.
        let text = e.to_string();
        ApiError::bad_request(match e {
            herd::InvalidRule::ZeroBase => format!("base_ms: {text}"),
            herd::InvalidRule::ZeroPause => format!("pause_ms: {text}"),
            herd::InvalidRule::CapBelowBase { .. } => format!("cap_ms: {text}"),
            _ => text,
        })
    })
}

/// Checks that `value` lies in `range`, naming `field`.
pub(crate) fn in_range<T>(field: &str, value: T, low: T, high: T) -> Result<T, ApiError>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    if value >= low && value <= high {
        Ok(value)
    } else {
        Err(ApiError::bad_request(format!(
            "{field} must be between {low} and {high}, got {value}"
        )))
    }
}

/// Serializes a rule by its name (herd's core carries no serde).
pub(crate) fn serialize_name<S: serde::Serializer>(
    rule: &RuleName,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(rule.as_str())
}
