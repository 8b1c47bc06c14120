//! What `herd check` prints: the table, the JSON object and the CSV rows, and the mesh's
//! counts in each.
use std::fmt::Write as _;

use herd_sim::Scenario;
use herd_sim::check::mesh::MeshReport;
use herd_sim::check::storm::{StormComparison, StormOutcome};
use herd_sim::check::{Report, Severity, Translation};
use herd_sim::figure;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::cmd::args::csv_field;

pub(super) fn mesh_json(m: &MeshReport) -> Value {
    let services = m.graph.services();
    let receives = |p: &herd_sim::graph::Prediction| {
        services
            .iter()
            .zip(&p.receives)
            .map(|(s, r)| json!({"name": s.name, "receives": r}))
            .collect::<Vec<_>>()
    };
    json!({
        "edges": m.edges.iter().map(|e| json!({
            "from": e.from,
            "to": e.to,
            "file": e.policy.as_ref().map(|t| t.file.clone()),
            "policy": e.policy.as_ref().map(|t| t.name.clone()),
            "attempts": e.attempts,
            "budget_percent": e.budget_percent,
        })).collect::<Vec<_>>(),
        "services": receives(&m.prediction),
        "amplification": m.amplification.iter().map(|a| json!({
            "service": services[a.service].name,
            "receives": a.receives,
            "without_retries": a.without_retries,
            "factor": a.factor(),
        })).collect::<Vec<_>>(),
        "advice": {
            "retry_only": m.advice.retry_on.iter().map(|(f, t, a)| json!({
                "from": services[*f].name, "to": services[*t].name, "attempts": a,
            })).collect::<Vec<_>>(),
            "attempts": m.advice.retry_on.iter().map(|r| r.2).max().unwrap_or(1),
            "services": receives(&m.advice.prediction),
        },
    })
}

pub(super) fn mesh_table(m: &MeshReport) -> String {
    let services = m.graph.services();
    let counts = |p: &herd_sim::graph::Prediction| {
        services
            .iter()
            .zip(&p.receives)
            .map(|(s, r)| format!("{} {}", s.name, figure::number(*r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = String::from("\nMesh: requests per entry request\n");
    let _ = writeln!(s, "  as configured   {}", counts(&m.prediction));
    for a in &m.amplification {
        let _ = writeln!(
            s,
            "  {} fails: it receives {} requests per entry request ({}× what it would without retries)",
            services[a.service].name,
            figure::number(a.receives),
            a.factor().map_or("—".to_owned(), figure::number)
        );
    }
    let only: Vec<String> = m
        .advice
        .retry_on
        .iter()
        .map(|(f, t, a)| {
            format!(
                "{} → {} ({a} attempts)",
                services[*f].name, services[*t].name
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "  advice          {}: {}",
        if only.is_empty() {
            "retry on no call".to_owned()
        } else {
            format!("retry only on {}", only.join(", "))
        },
        counts(&m.advice.prediction)
    );
    s
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn translation_json(t: &Translation) -> Value {
    let throttle = t.throttle.as_ref().map(|th| {
        let mut m = Map::new();
        m.insert("kind".into(), th.kind.into());
        for (k, v) in &th.params {
            m.insert((*k).into(), json!(v));
        }
        Value::Object(m)
    });
    json!({
        "file": t.file,
        "line": t.line,
        "system": t.system.as_str(),
        "name": t.name,
        "max_attempts": t.max_attempts,
        "per_try_timeout_ms": t.per_try_timeout.map(ms),
        "timeout_ms": t.timeout.map(ms),
        "backoff": {
            "rule": t.backoff.rule.as_str(),
            "base_ms": ms(t.backoff.base),
            "cap_ms": ms(t.backoff.cap),
            "multiplier": t.backoff.multiplier,
            "jitter": t.backoff.jitter,
        },
        "retry_on": t.retry_on,
        "methods": t.methods,
        "throttle": throttle,
        "hedging": t.hedging.map(|h| json!({"max_attempts": h.max_attempts, "delay_ms": ms(h.delay)})),
        "defaults": t.defaults,
        "generation": t.generation.map(|g| json!({"name": g.as_str(), "clients": g.clients()})),
    })
}

#[derive(Serialize)]
struct OutcomeRow {
    served: u64,
    gave_up: u64,
    all_served_s: Option<f64>,
    requests_per_client: f64,
    peak_after_outage: u64,
}

impl From<&StormOutcome> for OutcomeRow {
    fn from(o: &StormOutcome) -> Self {
        Self {
            served: o.served,
            gave_up: o.gave_up,
            all_served_s: o.all_served_s,
            requests_per_client: o.requests_per_client,
            peak_after_outage: o.peak_after_outage,
        }
    }
}

pub(super) fn json_report(
    report: &Report,
    storms: &[StormComparison],
    scenario_name: &str,
    scenario: &Scenario,
    no_storm: bool,
) -> Value {
    let storm = (!no_storm).then(|| {
        json!({
            "scenario": scenario_name,
            "clients": scenario.clients.count,
            "seed": scenario.seed,
            "runs": storms.iter().map(|c| json!({
                "file": c.file,
                "name": c.name,
                "config": OutcomeRow::from(&c.config),
                "fix": OutcomeRow::from(&c.fix),
                "fix_summary": c.fix_summary,
                "notes": c.notes,
            })).collect::<Vec<_>>(),
        })
    });
    json!({
        "configs": report.configs.iter().map(translation_json).collect::<Vec<_>>(),
        "findings": report.findings.iter().map(|f| json!({
            "severity": f.severity.as_str(),
            "code": f.code,
            "file": f.file,
            "line": f.line,
            "message": f.message,
            "fix": f.fix,
            "places": f.places.iter().map(|p| json!({"line": p.line, "name": p.name})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "ignored": report.ignored.iter().map(|i| json!({
            "file": i.file, "line": i.line, "field": i.field,
        })).collect::<Vec<_>>(),
        "storm": storm,
    })
}

fn secs(s: Option<f64>) -> String {
    s.map_or("never".to_owned(), figure::number)
}

fn backoff_text(t: &Translation) -> String {
    let b = &t.backoff;
    match b.rule.as_str() {
        "immediate" => "immediate".to_owned(),
        "constant" => format!("constant {} ms", herd::rule::format_ms(b.base)),
        "grpc" | "grpc-retry" | "randomized" => format!(
            "{} ±{:.0} % ×{} from {} ms, cap {} ms",
            b.rule,
            b.jitter * 100.0,
            b.multiplier,
            herd::rule::format_ms(b.base),
            herd::rule::format_ms(b.cap)
        ),
        rule => format!(
            "{rule} ×{} from {} ms, cap {} ms",
            b.multiplier,
            herd::rule::format_ms(b.base),
            herd::rule::format_ms(b.cap)
        ),
    }
}

fn throttle_text(t: &Translation) -> String {
    t.throttle.as_ref().map_or("none".to_owned(), |th| {
        let params: Vec<String> = th.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
        format!("{} ({})", th.kind, params.join(", "))
    })
}

fn opt_ms(d: Option<std::time::Duration>) -> String {
    d.map_or("none".to_owned(), |d| {
        format!("{} ms", herd::rule::format_ms(d))
    })
}

pub(super) fn table(
    report: &Report,
    storms: &[StormComparison],
    scenario_name: &str,
    scenario: &Scenario,
) -> String {
    let mut s = String::new();
    let count = |sev: Severity| report.findings.iter().filter(|f| f.severity == sev).count();
    let _ = writeln!(
        s,
        "{} retry policies; findings: {} error, {} warning, {} info; {} keys ignored",
        report.configs.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
        report.ignored.len()
    );
    for t in &report.configs {
        let _ = writeln!(s, "\n{}:{}  {} {}", t.file, t.line, t.system, t.name);
        let attempts = t
            .max_attempts
            .map_or("no count (budget-bound)".to_owned(), |a| a.to_string());
        let rows = [
            ("attempts", attempts),
            ("backoff", backoff_text(t)),
            ("per-try timeout", opt_ms(t.per_try_timeout)),
            ("timeout", opt_ms(t.timeout)),
            (
                "retry on",
                if t.retry_on.is_empty() {
                    "-".to_owned()
                } else {
                    t.retry_on.join(", ")
                },
            ),
            ("throttle", throttle_text(t)),
            (
                "clients",
                t.generation.map_or("-".to_owned(), |g| {
                    format!("{} ({})", g.clients(), g.as_str())
                }),
            ),
            (
                "defaults",
                if t.defaults.is_empty() {
                    "-".to_owned()
                } else {
                    t.defaults.join(", ")
                },
            ),
        ];
        for (k, v) in rows {
            let _ = writeln!(s, "  {k:<16} {v}");
        }
        if let Some(h) = t.hedging {
            let _ = writeln!(
                s,
                "  {:<16} {} copies, {} ms apart",
                "hedging",
                h.max_attempts,
                herd::rule::format_ms(h.delay)
            );
        }
    }
    if !report.findings.is_empty() {
        let _ = writeln!(s, "\nFindings");
        for f in &report.findings {
            let _ = writeln!(
                s,
                "  {:<7} {}:{} [{}] {}",
                f.severity, f.file, f.line, f.code, f.message
            );
            if f.places.len() > 1 {
                let places: Vec<String> = f
                    .places
                    .iter()
                    .map(|p| format!("{} (line {})", p.name, p.line))
                    .collect();
                let _ = writeln!(
                    s,
                    "          at {} places: {}",
                    places.len(),
                    places.join(", ")
                );
            }
            let _ = writeln!(s, "          fix: {}", f.fix);
        }
    }
    if !report.ignored.is_empty() {
        let _ = writeln!(s, "\nIgnored (not retry settings herd reads)");
        for i in &report.ignored {
            let _ = writeln!(s, "  {}:{} {}", i.file, i.line, i.field);
        }
    }
    if !storms.is_empty() {
        let outages: Vec<String> = scenario
            .server
            .outages
            .iter()
            .map(|[a, b]| format!("{a}–{b} s"))
            .collect();
        let mut load = format!("{} clients at once", scenario.clients.count);
        if scenario.clients.arrivals_per_s > 0.0 {
            let _ = write!(load, " and {}/s arriving", scenario.clients.arrivals_per_s);
        }
        let outage = if outages.is_empty() {
            "none".to_owned()
        } else {
            outages.join(", ")
        };
        let _ = writeln!(
            s,
            "\nStorm ({scenario_name}): {load}, capacity {} per {} ms, outage {outage}, seed {}",
            scenario.server.capacity, scenario.window_ms, scenario.seed
        );
        let _ = writeln!(
            s,
            "  {:<32} {:>8} {:>8} {:>12} {:>12} {:>6}",
            "policy", "", "served", "all served s", "req/client", "peak"
        );
        for c in storms {
            for (label, o) in [("as set", &c.config), ("fix", &c.fix)] {
                let name = if label == "as set" {
                    c.name.as_str()
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "  {:<32} {:>8} {:>8} {:>12} {:>12} {:>6}",
                    truncate(name, 32),
                    label,
                    o.served,
                    secs(o.all_served_s),
                    figure::number(o.requests_per_client),
                    o.peak_after_outage
                );
            }
            let _ = writeln!(s, "  {:<32} fix: {}", "", c.fix_summary);
            for n in &c.notes {
                let _ = writeln!(s, "  {:<32} note: {n}", "");
            }
        }
    }
    s
}

/// `s` cut to `n` characters, the last an ellipsis when cut: a table's name column.
pub(super) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// One row per policy: its translation, then its storm and the fix's.
pub(super) fn csv(report: &Report, storms: &[StormComparison]) -> String {
    let mut s = String::from(
        "file,line,system,name,max_attempts,per_try_timeout_ms,timeout_ms,rule,base_ms,cap_ms,multiplier,throttle,defaults,served,all_served_s,requests_per_client,peak_after_outage,fix_served,fix_all_served_s,fix_requests_per_client,fix_peak_after_outage\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for t in &report.configs {
        let storm = storms.iter().find(|c| c.file == t.file && c.name == t.name);
        let side = |o: Option<&StormOutcome>| match o {
            Some(o) => format!(
                "{},{},{},{}",
                o.served,
                opt(o.all_served_s),
                o.requests_per_client,
                o.peak_after_outage
            ),
            None => ",,,".to_owned(),
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&t.file),
            t.line,
            t.system,
            csv_field(&t.name),
            t.max_attempts.map_or(String::new(), |a| a.to_string()),
            opt(t.per_try_timeout.map(ms)),
            opt(t.timeout.map(ms)),
            t.backoff.rule,
            ms(t.backoff.base),
            ms(t.backoff.cap),
            t.backoff.multiplier,
            csv_field(&throttle_text(t)),
            csv_field(&t.defaults.join(" ")),
            side(storm.map(|c| &c.config)),
            side(storm.map(|c| &c.fix)),
        );
    }
    s
}

/// `herd check --list`: the analyzers, then every message.
pub(super) fn list() -> String {
    use herd_sim::check::findings::{ANALYZERS, TRANSLATOR_CODES};
    use herd_sim::check::messages::{DOCS_PAGE, MESSAGES};
    let mut s = String::from("Analyzers\n");
    for a in ANALYZERS {
        let _ = writeln!(s, "  {:<12} {}", a.name, a.description);
        let _ = writeln!(s, "  {:<12} reads: {}", "", a.inputs);
        let _ = writeln!(
            s,
            "  {:<12} codes: {}{}",
            "",
            a.codes.join(", "),
            if a.call_path_only {
                " (with --call-path)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        s,
        "  {:<12} raised while reading a file: {}",
        "translators",
        TRANSLATOR_CODES.join(", ")
    );
    let _ = writeln!(
        s,
        "\nMessages (each explained under its heading in {DOCS_PAGE})"
    );
    for m in MESSAGES {
        let _ = writeln!(s, "  {:<27} {:<7} {}", m.code, m.level.as_str(), m.help);
    }
    s
}
