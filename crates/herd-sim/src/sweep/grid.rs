//! `--set PATH=V1,V2,…`: one axis of the grid.
//!
//! `PATH` is a dotted path into the scenario (`clients.count`, `server.refusal_cost`). Each
//! value is a TOML value (`1e3`, `0.05`, `true`, `"text"`, `[[0, 10]]`); a bare word that is
//! not TOML is taken as a string (`model=storm`). Commas inside brackets or quotes do not
//! split. A value `A..B:STEP` is a range from `A` to `B` inclusive (`10..100:10`; the step
//! defaults to 1); with whole bounds and step it gives integers, otherwise floats rounded to
//! the decimals written.
//!
//! `outage_s` (also spelled `server.outage_s`) is a shorthand: `outage_s=5,10` sets
//! `server.outages` to one outage `[[0, 5]]`, then `[[0, 10]]`; `0` means no outage.
//!
//! `retry.throttle.kind=grpc,ratio` replaces the whole `[retry.throttle]` table by that kind
//! with every setting at its system's default (`none`: no throttle), before any other axis
//! sets one of those settings (`--set retry.throttle.k=1.5,2`).
use std::fmt;
use std::str::FromStr;

use toml::Value;

use super::SweepError;

/// The most values one axis may have.
pub const MAX_AXIS_VALUES: usize = 10_000;

/// What an axis sets in the scenario tree.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Target {
    /// A dotted path, as its keys.
    Path(Vec<String>),
    /// `server.outages = [[0, x]]` (`[]` for x = 0).
    OutageLength,
    /// `retry.throttle` = the kind's table with its defaults written out (`none`: removed).
    ThrottleKind,
}

/// The dotted path whose axis picks the throttle.
pub(crate) const THROTTLE_KIND: &str = "retry.throttle.kind";
/// The table a throttle's settings live in.
pub(crate) const THROTTLE_TABLE: &str = "retry.throttle";

/// One swept field and its values, in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    name: String,
    pub(crate) target: Target,
    values: Vec<Value>,
}

impl Axis {
    /// The field as written (`clients.count`, `outage_s`).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The values, as written (for `outage_s`, the lengths).
    #[must_use]
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    pub(crate) fn values_mut(&mut self) -> &mut Vec<Value> {
        &mut self.values
    }

    /// The value to put at the target for the axis value `v`.
    pub(crate) fn tree_value(&self, v: &Value) -> Result<Value, String> {
        match self.target {
            Target::Path(_) => Ok(v.clone()),
            Target::ThrottleKind => {
                let Value::String(kind) = v else {
                    return Err(format!("must be a throttle kind or none, got {v}"));
                };
                if kind == "none" {
                    return Ok(Value::Table(toml::Table::new()));
                }
                let table = crate::throttle::ThrottleTable {
                    kind: kind.clone(),
                    ..Default::default()
                };
                let filled = table
                    .filled()
                    .map_err(|e| e.message().trim_start_matches("expected ").to_owned())
                    .map_err(|m| format!("expected none or {m}"))?;
                Value::try_from(&filled).map_err(|e| e.to_string())
            }
            Target::OutageLength => {
                let x = match v {
                    Value::Integer(i) => *i as f64,
                    Value::Float(f) => *f,
                    other => return Err(format!("must be a number of seconds, got {other}")),
                };
                if !x.is_finite() || x < 0.0 {
                    return Err(format!("must be a number of seconds >= 0, got {x}"));
                }
                Ok(if x == 0.0 {
                    Value::Array(Vec::new())
                } else {
                    Value::Array(vec![Value::Array(vec![Value::Float(0.0), Value::Float(x)])])
                })
            }
        }
    }

    /// The dotted path in the tree that this axis sets.
    #[must_use]
    pub fn path(&self) -> String {
        match &self.target {
            Target::Path(keys) => keys.join("."),
            Target::OutageLength => "server.outages".to_owned(),
            Target::ThrottleKind => THROTTLE_KIND.to_owned(),
        }
    }

    /// Whether this axis picks the throttle's kind (applied before the other axes).
    pub(crate) fn is_throttle_kind(&self) -> bool {
        self.target == Target::ThrottleKind
    }
}

impl FromStr for Axis {
    type Err = SweepError;

    fn from_str(arg: &str) -> Result<Self, SweepError> {
        let bad = |msg: String| SweepError::new(format!("--set {arg}: {msg}"));
        let Some((name, list)) = arg.split_once('=') else {
            return Err(bad(
                "expected PATH=V1,V2,… (e.g. clients.count=1e3,1e4)".into()
            ));
        };
        let name = name.trim();
        let keys: Vec<String> = name.split('.').map(|k| k.trim().to_owned()).collect();
        if keys.iter().any(|k| k.is_empty()) {
            return Err(bad(format!("`{name}` is not a dotted path")));
        }
        let target = if name == "outage_s" || name == "server.outage_s" {
            Target::OutageLength
        } else if name == THROTTLE_KIND {
            Target::ThrottleKind
        } else {
            Target::Path(keys)
        };
        let mut values = Vec::new();
        for part in split_top_level(list) {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad("empty value".into()));
            }
            match range(part).map_err(&bad)? {
                Some(r) => values.extend(r),
                None => values.push(scalar(part)),
            }
            if values.len() > MAX_AXIS_VALUES {
                return Err(bad(format!("more than {MAX_AXIS_VALUES} values")));
            }
        }
        if values.is_empty() {
            return Err(bad("no values".into()));
        }
        Ok(Axis {
            name: name.to_owned(),
            target,
            values,
        })
    }
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", self.name)?;
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(&show(v))?;
        }
        Ok(())
    }
}

/// A value as a person writes it: `1000`, `0.05`, `storm`, `[[0, 10]]`.
#[must_use]
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(x) => x.to_string(),
        other => other.to_string(),
    }
}

/// Splits at commas outside brackets, braces and quotes.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// A TOML value, or the text as a string when it is not one.
fn scalar(text: &str) -> Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_owned()))
}

fn decimals(text: &str) -> usize {
    text.split_once('.').map_or(0, |(_, frac)| {
        frac.chars().take_while(char::is_ascii_digit).count()
    })
}

/// `A..B` or `A..B:STEP`, inclusive; `Ok(None)` when `text` is not a range.
fn range(text: &str) -> Result<Option<Vec<Value>>, String> {
    if text.starts_with(['[', '"', '\'', '{']) {
        return Ok(None);
    }
    let Some((a, rest)) = text.split_once("..") else {
        return Ok(None);
    };
    let (b, step) = rest.split_once(':').unwrap_or((rest, "1"));
    let (a, b, step) = (a.trim(), b.trim(), step.trim());
    let number = |t: &str| -> Result<Value, String> {
        match scalar(t) {
            v @ (Value::Integer(_) | Value::Float(_)) => Ok(v),
            _ => Err(format!("range {text}: `{t}` is not a number")),
        }
    };
    let (va, vb, vs) = (number(a)?, number(b)?, number(step)?);
    if let (Value::Integer(a), Value::Integer(b), Value::Integer(s)) = (&va, &vb, &vs) {
        if *s <= 0 || b < a {
            return Err(format!("range {text}: needs A <= B and a step > 0"));
        }
        let n = (b - a) / s + 1;
        if n as usize > MAX_AXIS_VALUES {
            return Err(format!("range {text}: more than {MAX_AXIS_VALUES} values"));
        }
        return Ok(Some((0..n).map(|i| Value::Integer(a + i * s)).collect()));
    }
    let f = |v: &Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    let (fa, fb, fs) = (f(&va), f(&vb), f(&vs));
    let (Some(fa), Some(fb), Some(fs)) = (fa, fb, fs) else {
        return Err(format!("range {text}: bounds and step must be numbers"));
    };
    let finite = fa.is_finite() && fb.is_finite() && fs.is_finite();
    if !finite || fs <= 0.0 || fb < fa {
        return Err(format!("range {text}: needs A <= B and a step > 0"));
    }
    let n = ((fb - fa) / fs + 1e-9).floor() + 1.0;
    if n > MAX_AXIS_VALUES as f64 {
        return Err(format!("range {text}: more than {MAX_AXIS_VALUES} values"));
    }
    let digits = decimals(a).max(decimals(step)).min(15) as i32;
    let scale = 10f64.powi(digits);
    Ok(Some(
        (0..n as u64)
            .map(|i| Value::Float(((fa + i as f64 * fs) * scale).round() / scale))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(s: &str) -> Axis {
        s.parse().unwrap()
    }

    #[test]
    fn values_are_toml() {
        let a = axis("clients.count=1e3,2000, 3e4");
        assert_eq!(a.name(), "clients.count");
        assert_eq!(
            a.values(),
            [
                Value::Float(1000.0),
                Value::Integer(2000),
                Value::Float(30000.0)
            ]
        );
        assert_eq!(
            axis("model=storm").values(),
            [Value::String("storm".into())]
        );
    }

    #[test]
    fn arrays_keep_their_commas() {
        let a = axis("server.outages=[[0,10]],[[0, 5], [20, 30]]");
        assert_eq!(a.values().len(), 2);
        assert_eq!(show(&a.values()[0]), "[[0, 10]]");
    }

    #[test]
    fn ranges() {
        let a = axis("server.capacity=10..50:10");
        assert_eq!(show(&a.values()[4]), "50");
        assert_eq!(a.values().len(), 5);
        let b = axis("server.refusal_cost=0..0.3:0.1");
        let shown: Vec<_> = b.values().iter().map(show).collect();
        assert_eq!(shown, ["0", "0.1", "0.2", "0.3"]);
        assert_eq!(axis("seed=1..3").values().len(), 3);
        assert!("x=5..1".parse::<Axis>().is_err());
        assert!("x=1..5:0".parse::<Axis>().is_err());
        assert!("x=1..1e9".parse::<Axis>().is_err());
    }

    #[test]
    fn malformed_arguments_are_named() {
        let err = "clients.count".parse::<Axis>().unwrap_err().to_string();
        assert!(
            err.starts_with("--set clients.count: expected PATH="),
            "{err}"
        );
        assert!("a..b=1".parse::<Axis>().is_err());
        assert!("x=1,,2".parse::<Axis>().is_err());
    }

    #[test]
    fn outage_shorthand() {
        let a = axis("outage_s=0,5");
        assert_eq!(a.path(), "server.outages");
        assert_eq!(a.tree_value(&a.values()[0]).unwrap(), Value::Array(vec![]));
        assert_eq!(
            a.tree_value(&a.values()[1]).unwrap().to_string(),
            "[[0.0, 5.0]]"
        );
        let neg = axis("server.outage_s=-1");
        assert!(neg.tree_value(&neg.values()[0]).is_err());
    }

    #[test]
    fn throttle_kind_writes_the_whole_table() {
        let a = axis("retry.throttle.kind=grpc,none");
        assert!(a.is_throttle_kind());
        assert_eq!(a.path(), "retry.throttle.kind");
        let grpc = a.tree_value(&a.values()[0]).unwrap();
        assert_eq!(grpc["kind"].as_str(), Some("grpc"));
        assert_eq!(grpc["max_tokens"].as_float(), Some(10.0));
        assert_eq!(grpc.as_table().map(toml::Table::len), Some(3));
        assert_eq!(
            a.tree_value(&a.values()[1]).unwrap(),
            Value::Table(toml::Table::new())
        );
        let bad = axis("retry.throttle.kind=nope");
        let err = bad.tree_value(&bad.values()[0]).unwrap_err();
        assert!(
            err.starts_with("expected none or one of sre-adaptive"),
            "{err}"
        );
    }
}
