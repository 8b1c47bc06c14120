//! Reading one value out of a command's JSON by a short path:
//!
//! - `.name` a field, `[3]` an item of a list,
//! - `[rule=full]` the first item of a list whose field `rule` prints as `full` (a string, or a
//!   number equal to it; `[values.clients.offered_qps=150]` reaches into the object `values`;
//!   `[rule=full&values.pauses=steps]` asks both),
//! - `.half` on an interval (an object with `lo` and `hi`): its half-width, `(hi − lo) / 2`
//!   (`hi − mean` for a t-interval clipped at 0, `"interval": "t_clipped"`),
//! - `.len` on a list: its length.
use serde_json::Value;

/// The value at `path` in `root`.
pub fn read(root: &Value, path: &str) -> Result<Value, String> {
    let mut here = root.clone();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            here = field(&here, &after[..end]).ok_or_else(|| missing(path, &after[..end]))?;
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after
                .find(']')
                .ok_or_else(|| format!("`{path}`: `[` is never closed"))?;
            here = item(&here, &after[..end]).ok_or_else(|| missing(path, &after[..end]))?;
            rest = &after[end + 1..];
        } else {
            return Err(format!("`{path}`: expected `.` or `[` at `{rest}`"));
        }
    }
    Ok(here)
}

fn missing(path: &str, step: &str) -> String {
    format!("`{path}`: no `{step}` there")
}

fn field(here: &Value, name: &str) -> Option<Value> {
    if let Some(v) = here.get(name) {
        return Some(v.clone());
    }
    match name {
        "half" => {
            let lo = here.get("lo")?.as_f64()?;
            let hi = here.get("hi")?.as_f64()?;
            // A t-interval clipped at 0 keeps its upper half: `hi − mean` is its half-width.
            if here.get("interval").and_then(Value::as_str) == Some("t_clipped") {
                Some(Value::from(hi - here.get("mean")?.as_f64()?))
            } else {
                Some(Value::from((hi - lo) / 2.0))
            }
        }
        "len" => Some(Value::from(here.as_array()?.len())),
        _ => None,
    }
}

fn item(here: &Value, selector: &str) -> Option<Value> {
    let list = here.as_array()?;
    match selector.split_once('=') {
        Some(_) => list
            .iter()
            .find(|v| {
                selector.split('&').all(|one| {
                    one.split_once('=')
                        .is_some_and(|(key, want)| selects(v, key, want))
                })
            })
            .cloned(),
        None => list.get(selector.parse::<usize>().ok()?).cloned(),
    }
}

/// Whether `v`'s field `key` is `want`; `key` may reach into an object by its first dot
/// (`values.clients.offered_qps` is the swept value `clients.offered_qps` of a sweep's cell).
fn selects(v: &Value, key: &str, want: &str) -> bool {
    let field = v.get(key).or_else(|| {
        let (outer, inner) = key.split_once('.')?;
        v.get(outer)?.get(inner)
    });
    match field {
        Some(Value::String(s)) => s == want,
        Some(Value::Number(n)) => want.parse::<f64>().is_ok_and(|w| n.as_f64() == Some(w)),
        Some(Value::Bool(b)) => want.parse::<bool>() == Ok(*b),
        Some(Value::Null) => want == "null",
        Some(Value::Array(_) | Value::Object(_)) | None => false,
    }
}
