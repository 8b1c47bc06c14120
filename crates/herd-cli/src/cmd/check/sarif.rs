//! `herd check --format sarif`: SARIF 2.1.0, the format code-scanning services read (GitHub
//! code scanning, GitLab, Azure DevOps), as a linter reports.
//!
//! One rule per code of the table of messages (its help, its level, and its heading in
//! `docs/check.md`); one result per finding, located by file and line; the other places a
//! finding applies to as related locations. `tests/suite/check_sarif.rs` validates the output
//! against the official SARIF 2.1.0 JSON schema.
use herd_sim::check::messages::{DOCS_PAGE, MESSAGES, Message, message};
use herd_sim::check::{Report, Severity};
use serde_json::{Value, json};

/// The official schema's address (SARIF 2.1.0, Errata 01).
const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A file name as a URI reference: relative paths stay relative, every byte outside the
/// unreserved set and `/` percent-encoded (`<stdin>` becomes `%3Cstdin%3E`).
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn rule(m: &Message) -> Value {
    let mut r = json!({
        "id": m.code,
        "shortDescription": {"text": m.help},
        "fullDescription": {"text": m.help},
        "help": {
            "text": format!("{} See {DOCS_PAGE}, section `{}`.", m.help, m.code),
            "markdown": format!("{} See [{DOCS_PAGE}]({DOCS_PAGE}#{}).", m.help, m.anchor()),
        },
        "defaultConfiguration": {"level": level(m.level)},
    });
    // The page's address when the package names its repository.
    let repository = env!("CARGO_PKG_REPOSITORY");
    if !repository.is_empty() {
        r["helpUri"] = format!(
            "{}/blob/main/{DOCS_PAGE}#{}",
            repository.trim_end_matches('/'),
            m.anchor()
        )
        .into();
    }
    r
}

fn location(file: &str, line: usize) -> Value {
    json!({
        "physicalLocation": {
            "artifactLocation": {"uri": uri(file)},
            "region": {"startLine": line.max(1)},
        }
    })
}

/// The SARIF log of `report`.
pub(super) fn sarif(report: &Report) -> Value {
    let mut rules: Vec<Value> = MESSAGES.iter().map(rule).collect();
    let mut ids: Vec<&str> = MESSAGES.iter().map(|m| m.code).collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            // A code a translator raises that the table does not (yet) list still gets a rule.
            let index = ids.iter().position(|c| *c == f.code).unwrap_or_else(|| {
                ids.push(f.code);
                rules.push(
                    json!({"id": f.code, "defaultConfiguration": {"level": level(f.severity)}}),
                );
                ids.len() - 1
            });
            debug_assert!(message(f.code).is_some() || index >= MESSAGES.len());
            let mut r = json!({
                "ruleId": f.code,
                "ruleIndex": index,
                "level": level(f.severity),
                "message": {"text": format!("{} Fix: {}.", f.message, f.fix.trim_end_matches('.'))},
                "locations": [location(&f.file, f.line)],
            });
            let others: Vec<Value> = f
                .places
                .iter()
                .filter(|p| p.line != f.line)
                .enumerate()
                .map(|(i, p)| {
                    let mut l = location(&f.file, p.line);
                    l["id"] = i.into();
                    l["message"] = json!({"text": format!("also applies to {}", p.name)});
                    l
                })
                .collect();
            if !others.is_empty() {
                r["relatedLocations"] = others.into();
            }
            r
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "herd",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_become_uri_references() {
        assert_eq!(
            uri("scenarios/configs/a b.yaml"),
            "scenarios/configs/a%20b.yaml"
        );
        assert_eq!(uri("<stdin>"), "%3Cstdin%3E");
    }
}
