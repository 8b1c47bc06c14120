//! Setting one dotted path in a scenario tree, with the type the field already has.
use toml::Value;

/// Sets `keys` in `tree` to `value`. The path must already exist (the tree is complete: every
/// field of the model is present), so a misspelt path is an error naming it. A whole float
/// for an integer field becomes an integer (`1e3` → `1000`); an integer for a float field
/// becomes a float.
pub(crate) fn set(tree: &mut Value, keys: &[String], value: Value) -> Result<(), String> {
    let path = keys.join(".");
    let mut node = tree;
    for (i, key) in keys.iter().enumerate() {
        let Value::Table(table) = node else {
            return Err(format!(
                "unknown field `{path}`: `{}` is not a table",
                keys[..i].join(".")
            ));
        };
        let known = || table.keys().cloned().collect::<Vec<_>>().join(", ");
        if !table.contains_key(key) {
            let within = if i == 0 {
                String::new()
            } else {
                format!(" in [{}]", keys[..i].join("."))
            };
            return Err(format!(
                "unknown field `{path}`; the fields{within} are {}",
                known()
            ));
        }
        node = table
            .get_mut(key)
            .ok_or_else(|| format!("unknown field `{path}`"))?;
    }
    *node = match (&*node, value) {
        (Value::Table(t), _) => {
            let fields = t.keys().cloned().collect::<Vec<_>>().join(", ");
            return Err(format!(
                "`{path}` is a table; set one of its fields: {fields}"
            ));
        }
        (Value::Integer(_), Value::Float(f)) => {
            if f.fract() != 0.0 || !f.is_finite() || f.abs() >= 9.2e18 {
                return Err(format!("{path} must be a whole number, got {f}"));
            }
            Value::Integer(f as i64)
        }
        (Value::Float(_), Value::Integer(i)) => Value::Float(i as f64),
        (_, v) => v,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(p: &str) -> Vec<String> {
        p.split('.').map(str::to_owned).collect()
    }

    fn tree() -> Value {
        toml::from_str("seed = 1\n[server]\ncapacity = 50\nrefusal_cost = 0.0\n").unwrap()
    }

    #[test]
    fn coerces_to_the_field_type() {
        let mut t = tree();
        set(&mut t, &keys("server.capacity"), Value::Float(1e3)).unwrap();
        assert_eq!(t["server"]["capacity"], Value::Integer(1000));
        set(&mut t, &keys("server.refusal_cost"), Value::Integer(0)).unwrap();
        assert_eq!(t["server"]["refusal_cost"], Value::Float(0.0));
        let err = set(&mut t, &keys("server.capacity"), Value::Float(2.5)).unwrap_err();
        assert_eq!(err, "server.capacity must be a whole number, got 2.5");
    }

    #[test]
    fn unknown_paths_are_named() {
        let mut t = tree();
        let err = set(&mut t, &keys("server.capacityy"), Value::Integer(1)).unwrap_err();
        assert!(
            err.starts_with("unknown field `server.capacityy`; the fields in [server] are"),
            "{err}"
        );
        let err = set(&mut t, &keys("seed.x"), Value::Integer(1)).unwrap_err();
        assert!(err.contains("`seed` is not a table"), "{err}");
        let err = set(&mut t, &keys("server"), Value::Integer(1)).unwrap_err();
        assert!(err.contains("is a table"), "{err}");
    }
}
