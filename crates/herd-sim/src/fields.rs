//! Checks of single scenario fields, shared by every model: each turns a user's number into a
//! checked value or an error naming the field, with one wording and one rounding. Times
//! become whole nanoseconds ([`nanos`]), so a scenario means the same to every model.
use std::time::Duration;

use herd::{InvalidRule, Rule, RuleName, RuleParams};

use crate::error::ScenarioError;

/// The longest time a scenario may mention, in seconds: about 31 years, far from `u64`
/// nanosecond overflow.
pub(crate) const MAX_SECONDS: f64 = 1e9;
/// Nanoseconds in a second.
pub(crate) const NANOS_PER_SEC: f64 = 1e9;

/// `ceil(a / b)` for `b > 0`: every length is rounded up to whole steps.
#[inline]
pub(crate) const fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// A number of seconds in `[0, 10^9]` as whole nanoseconds (rounded to the nearest).
pub(crate) fn nanos(field: &str, s: f64) -> Result<u64, ScenarioError> {
    seconds(field, s, true).map(|s| (s * NANOS_PER_SEC).round() as u64)
}

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

/// `x` (finite, at least 0) as the decimal it was written as: `(digits, k)` with
/// `x = digits / 10^k` exactly, or `None` when it needs more than `max_decimals` digits after
/// the point. `Display` for `f64` is the shortest string that reads back as `x`, never in
/// exponent form, so `0.3` is three tenths here, not the binary fraction nearest to it:
/// models whose arithmetic has exact boundaries count in units of `1/10^k` instead of floats.
pub(crate) fn exact_decimal(x: f64, max_decimals: u32) -> Option<(u128, u32)> {
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let text = x.to_string();
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let k = u32::try_from(fraction.len())
        .ok()
        .filter(|&k| k <= max_decimals)?;
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    Some((digits, k))
}

/// The most digits after the point a rate may have: rates are counted exactly in its units.
pub(crate) const MAX_RATE_DECIMALS: u32 = 9;

/// The largest numerator or denominator [`per_step`] hands out, so that a product with a
/// step count (below 2^32) or a sum of a few stays far from `u128` overflow.
const MAX_RATIO: u128 = 1 << 90;

/// `x` in exact form, as [`exact_decimal`], or an error naming `field`.
pub(crate) fn decimal(field: &str, x: f64) -> Result<(u128, u32), ScenarioError> {
    exact_decimal(x, MAX_RATE_DECIMALS).ok_or_else(|| {
        ScenarioError::field(
            field,
            format!(
                "must be a decimal with at most {MAX_RATE_DECIMALS} digits after the point, got {x}"
            ),
        )
    })
}

/// A rate of `per_s` a second (as the decimal written) over one step of `step_ns`, exactly:
/// `(numerator, denominator)` in lowest terms. So `7` a second in 100 ms steps is `7/10` a
/// step, and `floor(7/10 · k)` is exact at every `k`, where `0.7000000000000001 · k` in `f64`
/// is not.
pub(crate) fn per_step(
    field: &str,
    per_s: f64,
    step_ns: u64,
) -> Result<(u128, u128), ScenarioError> {
    let (digits, k) = decimal(field, per_s)?;
    let num = digits.checked_mul(u128::from(step_ns));
    let den = 10u128.checked_pow(k + 9);
    let (Some(num), Some(den)) = (num, den) else {
        return Err(too_fine(field, per_s, step_ns));
    };
    let g = gcd(num, den).max(1);
    let (num, den) = (num / g, den / g);
    if num > MAX_RATIO || den > MAX_RATIO {
        return Err(too_fine(field, per_s, step_ns));
    }
    Ok((num, den))
}

fn too_fine(field: &str, per_s: f64, step_ns: u64) -> ScenarioError {
    ScenarioError::field(
        field,
        format!(
            "{per_s} a second in steps of {step_ns} ns is finer than exact arithmetic holds \
             (write fewer decimals, or a shorter step)"
        ),
    )
}

/// The greatest common divisor (`gcd(0, 0) = 0`).
pub(crate) fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
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

/// Reads a list of outages, each exactly two numbers `[start_s, end_s]`: serde reads a
/// fixed-size pair from a longer list and drops the rest, so `[0, 10, 20]` was `[0, 10]`.
pub(crate) fn outage_pairs<'de, D>(deserializer: D) -> Result<Vec<[f64; 2]>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize as _;
    let lists = Vec::<Vec<f64>>::deserialize(deserializer)?;
    lists
        .into_iter()
        .map(|list| match list[..] {
            [start, end] => Ok([start, end]),
            _ => Err(serde::de::Error::custom(format!(
                "an outage is two numbers, [start_s, end_s]; got {} number(s)",
                list.len()
            ))),
        })
        .collect()
}

/// Outage intervals `[start_s, end_s)` in nanoseconds, sorted: each end a number of seconds
/// (see [`nanos`]), each ending after it starts and starting before the horizon, and no two
/// overlapping. Every model checks its outages here.
pub(crate) fn outages(
    field: &str,
    outages: &[[f64; 2]],
    horizon_ns: u64,
) -> Result<Vec<(u64, u64)>, ScenarioError> {
    let mut sorted = outages.to_vec();
    sorted.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let mut checked = Vec::with_capacity(sorted.len());
    for &[start, end] in &sorted {
        let (a, b) = (nanos(field, start)?, nanos(field, end)?);
        if a >= b {
            return Err(ScenarioError::field(
                field,
                format!("[{start}, {end}] must end after it starts"),
            ));
        }
        if a >= horizon_ns {
            return Err(ScenarioError::field(
                field,
                format!(
                    "[{start}, {end}] starts at or after the horizon ({} s)",
                    horizon_ns as f64 / NANOS_PER_SEC
                ),
            ));
        }
        checked.push((a, b));
    }
    for w in sorted.windows(2) {
        if w[1][0] < w[0][1] {
            return Err(ScenarioError::field(
                field,
                format!(
                    "[{}, {}] and [{}, {}] overlap",
                    w[0][0], w[0][1], w[1][0], w[1][1]
                ),
            ));
        }
    }
    Ok(checked)
}

/// The `[retry]` times as the rules' parameters: each a number of milliseconds (see
/// [`millis`]), and `cap_ms` at least `base_ms`. Every model reads its rules' times here.
pub(crate) fn rule_params(
    base_ms: f64,
    cap_ms: f64,
    pause_ms: f64,
) -> Result<RuleParams, ScenarioError> {
    let params = RuleParams::default()
        .base(millis("retry.base_ms", base_ms)?)
        .cap(millis("retry.cap_ms", cap_ms)?)
        .pause(millis("retry.pause_ms", pause_ms)?);
    if params.cap < params.base {
        return Err(ScenarioError::field(
            "retry.cap_ms",
            format!("must be at least base_ms ({base_ms}), got {cap_ms}"),
        ));
    }
    Ok(params)
}

/// `[retry] multiplier`: a finite number above 0 (`grpc` asks for at least 1 when built).
pub(crate) fn multiplier(field: &'static str, value: f64) -> Result<f64, ScenarioError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ScenarioError::field(
            field,
            format!("must be a finite number above 0, got {value}"),
        ))
    }
}

/// `[retry] jitter`: a fraction in `[0, 1]`.
pub(crate) fn fraction(field: &'static str, value: f64) -> Result<f64, ScenarioError> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(ScenarioError::field(
            field,
            format!("must be a fraction in [0, 1], got {value}"),
        ))
    }
}

/// Builds `name` from the `[retry]` parameters; a fault is the parameter's (`retry.base_ms`,
/// `retry.multiplier`, …). The one mapping from rule errors to field errors.
pub(crate) fn rule_of(name: RuleName, params: &RuleParams) -> Result<Rule, ScenarioError> {
    name.build(params).map_err(|e| {
        let field = match e {
            InvalidRule::ZeroBase => "retry.base_ms",
            InvalidRule::ZeroPause => "retry.pause_ms",
            InvalidRule::CapBelowBase { .. } => "retry.cap_ms",
            InvalidRule::Multiplier(_) => "retry.multiplier",
            InvalidRule::Jitter(_) => "retry.jitter",
            InvalidRule::Millis { field, .. } => field,
            // A fault herd adds later is the rule's as a whole.
            _ => "retry.rules",
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
    let value: T = toml::from_str(text).map_err(|e| crate::located::toml_error(text, &e))?;
    check(&value).map_err(|e| crate::located::locate(text, e))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_of_three_numbers_is_refused() {
        #[derive(Debug, serde::Deserialize)]
        struct Server {
            #[serde(deserialize_with = "outage_pairs")]
            #[allow(dead_code)]
            outages: Vec<[f64; 2]>,
        }
        let err = toml::from_str::<Server>("outages = [[0, 10, 20]]").unwrap_err();
        assert!(
            err.message()
                .contains("an outage is two numbers, [start_s, end_s]; got 3 number(s)"),
            "{err}"
        );
        assert!(toml::from_str::<Server>("outages = [[0, 10], [30]]").is_err());
        assert!(toml::from_str::<Server>("outages = [[0, 10], [20, 30]]").is_ok());
    }

    #[test]
    fn outages_are_checked_alike_for_every_model_in_nanoseconds() {
        let got = outages("server.outages", &[[5.0, 6.5], [0.0, 0.1]], 10_000_000_000).unwrap();
        assert_eq!(got, vec![(0, 100_000_000), (5_000_000_000, 6_500_000_000)]);
        let err = |list: &[[f64; 2]]| {
            outages("server.outages", list, 10_000_000_000)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[[0.0, 5.0], [4.0, 6.0]]),
            "server.outages: [0, 5] and [4, 6] overlap"
        );
        assert_eq!(
            err(&[[3.0, 3.0]]),
            "server.outages: [3, 3] must end after it starts"
        );
        assert_eq!(
            err(&[[10.0, 12.0]]),
            "server.outages: [10, 12] starts at or after the horizon (10 s)"
        );
        assert_eq!(
            err(&[[-1.0, 2.0]]),
            "server.outages: must be a number of seconds between 0 and 10^9, got -1"
        );
    }

    #[test]
    fn a_rule_error_names_the_parameter_or_the_rule_field() {
        let params = RuleParams::default().pause(Duration::ZERO);
        let err = rule_of(RuleName::Constant, &params).unwrap_err();
        assert_eq!(err.field_name(), Some("retry.pause_ms"));
        assert_eq!(ceil_div(7, 7), 1);
        assert_eq!(ceil_div(8, 7), 2);
        assert_eq!(nanos("x", 0.1).unwrap(), 100_000_000);
    }
}
