//! `herd check`'s what-if (the default, unless `--scenario` asks for the storm): each
//! retrying policy, the call path's layers together and the mesh's path to its failing
//! service, through a brownout, an overload and an outage, as set beside the fix the
//! findings derive. Identical translations (the same semantics in another file or route) are
//! simulated once.
use std::fmt::Write as _;

use clap::Args;
use herd_sim::check::whatif::{self, Comparison, FailureStatus, Figures, WhatIfOptions};
use herd_sim::check::{Report, Translation};
use herd_sim::{Cancel, Limits, ScenarioError, figure};
use serde_json::{Value, json};

use super::output::truncate;
use crate::cmd::args::csv_field;
use crate::cmd::storm_flags::StormFlags;
use crate::error::{CliError, CliResult};

/// The what-if's own flags (beside the storm's `--capacity-rps`, `--outage-s`,
/// `--refusal-cost`, `--latency-ms` and `--seed`, which it shares).
#[derive(Debug, Default, Args)]
pub(crate) struct WhatIfFlags {
    /// The what-if's steady traffic, new requests per second (default: half of
    /// --capacity-rps, whose default is 1000).
    #[arg(long, value_name = "R")]
    rps: Option<f64>,
    /// The brownout's share of failing attempts, 0 to 1 (default 0.3).
    #[arg(long, value_name = "P")]
    brownout: Option<f64>,
    /// What the failing backend answers: `unavailable` (HTTP 503, or gRPC UNAVAILABLE for
    /// gRPC traffic; the default), an HTTP status (429, 500-599) or a gRPC status name.
    #[arg(long, value_name = "STATUS")]
    failure_status: Option<String>,
    /// A hop that gives up answers a 500 nobody retries, instead of passing its upstream's
    /// failure up unchanged (as Envoy does).
    #[arg(long)]
    gives_up_as_500: bool,
}

impl WhatIfFlags {
    /// Whether any of the what-if's own flags is given.
    pub(super) fn any(&self) -> bool {
        self.rps.is_some()
            || self.brownout.is_some()
            || self.failure_status.is_some()
            || self.gives_up_as_500
    }
}

/// The call path's layers run together: per layer (a file, or a Kubernetes object) its
/// policy with the most attempts, caller first; nothing with fewer than two.
pub(super) fn layered(configs: &[Translation]) -> Option<(String, Vec<Translation>)> {
    let layers = herd_sim::check::storm::layers(configs);
    if layers.len() < 2 {
        return None;
    }
    let path: Vec<Translation> = layers
        .iter()
        .filter_map(|l| {
            l.iter()
                .max_by_key(|t| t.max_attempts)
                .map(|t| (*t).clone())
        })
        .collect();
    Some((format!("all {} layers", path.len()), path))
}

/// One unit of the what-if: a policy, or a path of them run together.
pub(super) struct WhatIfRun {
    file: String,
    policy: String,
    comparison: Comparison,
}

/// The options the flags give; every problem is bad input naming the flag.
pub(super) fn options(
    flags: &WhatIfFlags,
    storm: &StormFlags,
    seed: Option<u64>,
) -> CliResult<WhatIfOptions> {
    let mut o = WhatIfOptions::default();
    if storm.clients.is_some() {
        return Err(CliError::input(
            "--clients: the what-if runs steady traffic (--rps); a burst of clients is the storm's (--scenario FILE)",
        ));
    }
    if let Some(c) = storm.capacity_rps {
        o.capacity_rps = c;
    }
    o.outage_s = storm.outage_s;
    if let Some(r) = storm.refusal_cost {
        o.refusal_cost = r;
    }
    if let Some(text) = &storm.latency_ms {
        o.latency_ms = text.trim().parse().map_err(|_| {
            CliError::input(format!(
                "--latency-ms: the what-if takes one number of milliseconds (an answer's time at an idle backend), got {text:?}"
            ))
        })?;
    }
    o.rps = flags.rps;
    if let Some(p) = flags.brownout {
        o.brownout = p;
    }
    if let Some(s) = &flags.failure_status {
        o.failure_status = FailureStatus::parse(s)
            .map_err(|e| CliError::input(format!("--failure-status: {e}")))?;
    }
    o.gives_up_as_500 = flags.gives_up_as_500;
    if let Some(seed) = seed {
        o.seed = seed;
    }
    o.check().map_err(flag_error)?;
    Ok(o)
}

/// A what-if error, its field named as the flag that sets it.
fn flag_error(e: ScenarioError) -> CliError {
    match e.field_name() {
        Some(f) if !f.contains('.') && f != "policy" => {
            CliError::input(format!("--{}: {}", f.replace('_', "-"), e.message()))
        }
        _ => CliError::input(e),
    }
}

/// The semantics of `t`, without where it was written: two policies with the same key run
/// the same and get the same fix. The methods stay: a route of POSTs is fixed by turning its
/// retries off (`retries-non-idempotent`), the same policy for GETs is not.
fn key(t: &Translation) -> Translation {
    let mut k = t.clone();
    k.file.clear();
    k.line = 0;
    k.name.clear();
    k.defaults.clear();
    k.field_lines.clear();
    k
}

/// Every retrying policy alone, then the layers of the call path and the mesh's path.
///
/// Memory does not grow with the number of identical policies: each is simulated once, and
/// the load series (kept only for `keep_load`, the chart) are dropped.
pub(super) fn runs(
    report: &Report,
    layered: &[(String, Vec<Translation>)],
    options: &WhatIfOptions,
    keep_load: bool,
) -> CliResult<Vec<WhatIfRun>> {
    let limits = Limits::default();
    let cancel = Cancel::new();
    let mut done: Vec<(Vec<Translation>, Comparison)> = Vec::new();
    let mut out = Vec::new();
    let mut run = |path: &[&Translation], file: String, policy: String| -> CliResult {
        let mut keys: Vec<Translation> = path.iter().map(|t| key(t)).collect();
        // A path of several hops names them in its notes and reasons, so it shares runs only
        // with a path of the same names; one policy's text says "it" and shares with any.
        if path.len() > 1 {
            for (k, t) in keys.iter_mut().zip(path) {
                k.name.clone_from(&t.name);
            }
        }
        let comparison = match done.iter().find(|(k, _)| *k == keys) {
            Some((_, c)) => with_places(c, path),
            None => {
                let mut c = whatif::compare(path, options, &limits, &cancel)
                    .map_err(|e| CliError::input(format!("{file}: {policy} (the what-if): {e}")))?;
                if !keep_load {
                    for f in &mut c.faults {
                        f.load = [Vec::new(), Vec::new()];
                    }
                }
                done.push((keys, c.clone()));
                c
            }
        };
        out.push(WhatIfRun {
            file,
            policy,
            comparison,
        });
        Ok(())
    };
    for t in report.configs.iter().filter(|t| t.retries()) {
        run(&[t], t.file.clone(), t.name.clone())?;
    }
    for (label, path) in layered {
        let refs: Vec<&Translation> = path.iter().collect();
        let files: Vec<&str> = path.iter().map(|t| t.file.as_str()).collect();
        run(&refs, files.join(" → "), label.clone())?;
    }
    Ok(out)
}

/// A cached comparison, run for a path of the same semantics (and, for several hops, the
/// same names), for `path`: its changes name this path's files, lines and policy.
fn with_places(c: &Comparison, path: &[&Translation]) -> Comparison {
    let mut c = c.clone();
    for change in &mut c.fix_changes {
        if let Some(t) = path.iter().find(|t| t.name == change.policy) {
            change.file = t.file.clone();
            change.line = t.line;
        } else if let [t] = path {
            change.file = t.file.clone();
            change.line = t.line;
            change.policy = t.name.clone();
        }
    }
    c
}

fn figures_json(f: &Figures) -> Value {
    serde_json::to_value(f).unwrap_or(Value::Null)
}

/// The JSON list of runs: one per policy and fault.
pub(super) fn json(runs: &[WhatIfRun]) -> Value {
    let mut list = Vec::new();
    for r in runs {
        for f in &r.comparison.faults {
            list.push(json!({
                "file": r.file,
                "policy": r.policy,
                "scenario": f.fault,
                "fault_s": f.fault_s,
                "as_set": figures_json(&f.as_set),
                "fix": figures_json(&f.fix),
                "fix_changes": r.comparison.fix_changes,
                "no_fix": r.comparison.no_fix,
                "same_because": f.same_because,
                "notes": f.notes,
            }));
        }
    }
    Value::Array(list)
}

/// The settings the runs used.
pub(super) fn settings_json(o: &WhatIfOptions) -> Value {
    json!({
        "rps": o.offered_rps(),
        "capacity_rps": o.capacity_rps,
        "brownout": o.brownout,
        "overload": o.overload,
        "failure_status": o.failure_status.to_string(),
        "seed": o.seed,
    })
}

fn opt(v: Option<f64>) -> String {
    v.map_or("never".to_owned(), |v| format!("{} s", figure::number(v)))
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), figure::number)
}

fn row(s: &mut String, name: &str, fault: &str, side: &str, f: &Figures) {
    let _ = writeln!(
        s,
        "  {:<28} {:<13} {:<7} {:>7} {:>6} {:>6} {:>10} {:>8} {:>8}",
        truncate(name, 28),
        fault,
        side,
        format!("{:.3}", f.goodput),
        figure::number(f.amplification),
        figure::number(f.peak_load),
        opt(f.recovered_s),
        ms(f.p50_ms),
        ms(f.p99_ms),
    );
}

/// The table: per run, each fault as set and fixed, then the fix's changes and notes.
pub(super) fn table(runs: &[WhatIfRun], o: &WhatIfOptions) -> String {
    let mut s = String::new();
    if runs.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nWhat if the backend fails: {} new requests/s against a capacity of {}/s; brownout {} of attempts fail for {} s, overload to {} of the load for {} s, outage; failures answer {}; seed {}",
        figure::number(o.offered_rps()),
        figure::number(o.capacity_rps),
        figure::number(o.brownout),
        figure::number(o.brownout_s),
        figure::number(o.overload),
        figure::number(o.overload_s),
        o.failure_status,
        o.seed
    );
    let _ = writeln!(
        s,
        "  {:<28} {:<13} {:<7} {:>7} {:>6} {:>6} {:>10} {:>8} {:>8}",
        "policy", "fault", "", "goodput", "ampl.", "peak", "recovered", "p50 ms", "p99 ms"
    );
    for r in runs {
        for (i, f) in r.comparison.faults.iter().enumerate() {
            let name = if i == 0 { r.policy.as_str() } else { "" };
            let fault = if f.fault == whatif::Fault::Outage {
                format!("outage {} s", figure::number(f.fault_s))
            } else {
                f.fault.to_string()
            };
            row(&mut s, name, &fault, "as set", &f.as_set);
            row(&mut s, "", "", "fix", &f.fix);
            // Without a fix the line below says why once, for every fault.
            if let Some(why) = f
                .same_because
                .as_ref()
                .filter(|_| r.comparison.no_fix.is_none())
            {
                let _ = writeln!(s, "  {:<28} {:<13} fix = as set: {why}", "", "");
            }
        }
        if let Some(why) = &r.comparison.no_fix {
            let _ = writeln!(s, "  {:<28} as set = fix: {why}", "");
        }
        for c in &r.comparison.fix_changes {
            let _ = writeln!(
                s,
                "  {:<28} fix [{}] {}:{} {}: {}",
                "", c.code, c.file, c.line, c.policy, c.change
            );
            for line in c.snippet.lines() {
                let _ = writeln!(s, "  {:<32} {line}", "");
            }
        }
        let mut notes: Vec<&String> = Vec::new();
        for n in r.comparison.faults.iter().flat_map(|f| &f.notes) {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        for n in notes {
            let _ = writeln!(s, "  {:<28} note: {n}", "");
        }
    }
    s
}

/// One CSV row per run, fault and side.
pub(super) fn csv(runs: &[WhatIfRun]) -> String {
    let mut s = String::from(
        "file,policy,scenario,side,fault_s,requests,goodput,goodput_se,amplification,amplification_se,peak_load,recovered_s,p50_ms,p99_ms,fix_changes,same_because\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for r in runs {
        let changes: Vec<&str> = r.comparison.fix_changes.iter().map(|c| c.code).collect();
        for f in &r.comparison.faults {
            for (side, x) in [("as_set", &f.as_set), ("fix", &f.fix)] {
                let _ = writeln!(
                    s,
                    "{},{},{},{side},{},{},{},{},{},{},{},{},{},{},{},{}",
                    csv_field(&r.file),
                    csv_field(&r.policy),
                    f.fault,
                    f.fault_s,
                    x.requests,
                    x.goodput,
                    x.goodput_se,
                    x.amplification,
                    x.amplification_se,
                    x.peak_load,
                    opt(x.recovered_s),
                    opt(x.p50_ms),
                    opt(x.p99_ms),
                    csv_field(&changes.join(" ")),
                    csv_field(f.same_because.as_deref().unwrap_or("")),
                );
            }
        }
    }
    s
}

/// The panels `--chart` draws: (title, as set, fix, fault start s, fault length s).
pub(super) fn panels(runs: &[WhatIfRun]) -> Vec<super::whatif_chart::Panel> {
    runs.iter()
        .flat_map(|r| {
            r.comparison.faults.iter().map(move |f| {
                (
                    format!("{} — {}", r.policy, f.fault),
                    f.load[0].clone(),
                    f.load[1].clone(),
                    f.start_s,
                    f.fault_s,
                )
            })
        })
        .collect()
}
