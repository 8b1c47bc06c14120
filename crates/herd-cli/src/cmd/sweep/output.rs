//! The sweep as a table, CSV or JSON: one row per cell and rule.
use std::io::{self, Write};

use herd_sim::figure;
use herd_sim::sweep::{Interval, PROPORTIONS, Row, Stats, Sweep, show};
use serde_json::{Map, Value as Json, json};

use crate::cmd::args::csv_field;

/// What a sweep printed: its scenario's name, the sweep, a row per cell and rule, and the
/// metrics asked for.
#[derive(Clone, Copy)]
pub(crate) struct Results<'a> {
    pub(crate) name: &'a str,
    pub(crate) sweep: &'a Sweep,
    pub(crate) rows: &'a [Row],
    pub(crate) metrics: &'a [&'a str],
}

/// `1 rule`, `3 rules`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `mean ± half [k/n]` (`share (lo–hi) [k/n]` for a proportion), `never`/`-` when it never
/// happened.
fn cell(stats: &Stats, runs: usize, metric: &str) -> String {
    let Some(mean) = stats.mean else {
        return if metric.ends_with("_s") { "never" } else { "-" }.to_owned();
    };
    // The one precision policy: the interval's first digit fixes the decimals of both.
    let mut s = match (stats.interval, stats.lo, stats.hi) {
        // Wilson's interval, and a t-interval clipped at 0, are not symmetric: print the ends.
        (Interval::Wilson | Interval::TClipped, Some(lo), Some(hi)) => {
            figure::mean_range(mean, lo, hi)
        }
        _ => stats
            .half_width()
            .map_or_else(|| figure::number(mean), |h| figure::mean_pm(mean, h)),
    };
    if stats.defined < runs {
        s.push_str(&format!(" [{}/{runs}]", stats.defined));
    }
    s
}

/// Aligned columns: the swept fields, the rule, then each metric.
pub(crate) fn table(out: &mut impl Write, results: &Results<'_>) -> io::Result<()> {
    let Results {
        name,
        sweep,
        rows,
        metrics,
    } = *results;
    let seeds = sweep.seeds();
    let (first, last) = (
        seeds.first().copied().unwrap_or(0),
        seeds.last().copied().unwrap_or(0),
    );
    // The proportions shown, if any, are described too.
    let shares: Vec<&str> = PROPORTIONS
        .into_iter()
        .filter(|p| metrics.contains(p))
        .collect();
    let shares = if shares.is_empty() {
        String::new()
    } else {
        format!(
            " ({}: share (ends of the 95 % Wilson interval))",
            shares.join(", ")
        )
    };
    writeln!(
        out,
        "{name}: {} × {} × {} ({first}..={last}); mean ± half-width of the 95 % t-interval{shares}",
        count(sweep.cells().len(), "cell"),
        count(sweep.rules().len(), "rule"),
        count(seeds.len(), "seed"),
    )?;
    let mut header: Vec<String> = sweep.axes().iter().map(|a| a.name().to_owned()).collect();
    header.push("rule".into());
    header.extend(metrics.iter().map(|m| (*m).to_owned()));
    let mut lines = vec![header];
    for row in rows {
        let mut line: Vec<String> = sweep.cells()[row.cell].values().iter().map(show).collect();
        line.push(row.rule.to_string());
        for m in metrics {
            line.push(
                row.metric(m)
                    .map_or_else(|| "-".into(), |s| cell(s, row.runs, m)),
            );
        }
        lines.push(line);
    }
    let columns = lines.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numeric = sweep.axes().len() + 1;
    for line in &lines {
        let mut text = String::new();
        for (c, (v, w)) in line.iter().zip(&widths).enumerate() {
            if c > 0 {
                text.push_str("  ");
            }
            let pad = w - v.chars().count();
            if c >= numeric {
                text.push_str(&" ".repeat(pad));
                text.push_str(v);
            } else {
                text.push_str(v);
                text.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    if rows.iter().any(|r| {
        metrics.iter().any(|m| {
            r.metric(m)
                .is_some_and(|s| s.defined > 0 && s.defined < r.runs)
        })
    }) {
        writeln!(
            out,
            "[k/n]: the metric happened in k of n runs; its mean and interval are over those k."
        )?;
    }
    Ok(())
}

/// The interval method's name, as the JSON and the CSV write it.
fn interval_name(interval: Option<Interval>) -> &'static str {
    match interval {
        Some(Interval::Wilson) => "wilson",
        Some(Interval::TClipped) => "t_clipped",
        _ => "t",
    }
}

/// Header: the swept fields, `rule`, `runs`, then `M_mean,M_lo,M_hi,M_defined,M_interval`
/// per metric.
/// An absent value is an empty field.
pub(crate) fn csv(out: &mut impl Write, results: &Results<'_>) -> io::Result<()> {
    let Results {
        sweep,
        rows,
        metrics,
        ..
    } = *results;
    let mut header: Vec<String> = sweep.axes().iter().map(|a| csv_field(a.name())).collect();
    header.push("rule".into());
    header.push("runs".into());
    for m in metrics {
        for part in ["mean", "lo", "hi", "defined", "interval"] {
            header.push(format!("{m}_{part}"));
        }
    }
    writeln!(out, "{}", header.join(","))?;
    let opt = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    for row in rows {
        let mut line: Vec<String> = sweep.cells()[row.cell]
            .values()
            .iter()
            .map(|v| csv_field(&show(v)))
            .collect();
        line.push(row.rule.to_string());
        line.push(row.runs.to_string());
        for m in metrics {
            match row.metric(m) {
                Some(s) => line.extend([
                    opt(s.mean),
                    opt(s.lo),
                    opt(s.hi),
                    s.defined.to_string(),
                    interval_name(Some(s.interval)).to_owned(),
                ]),
                None => line.extend([
                    String::new(),
                    String::new(),
                    String::new(),
                    "0".into(),
                    interval_name(None).to_owned(),
                ]),
            }
        }
        writeln!(out, "{}", line.join(","))?;
    }
    Ok(())
}

fn toml_to_json(v: &toml::Value) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// `{"scenario": …, "base": {the scenario with every field}, "grid": {"fields": […], "rules": […], "seeds": […], "metrics": […]},
/// "cells": [{"values": {…}, "rule": …, "runs": …, "metrics": {M: {mean, lo, hi, defined}}}]}`.
pub(crate) fn json(out: &mut impl Write, results: &Results<'_>) -> io::Result<()> {
    let fields: Vec<Json> = results
        .sweep
        .axes()
        .iter()
        .map(|a| {
            json!({
                "field": a.name(),
                "path": a.path(),
                "values": a.values().iter().map(toml_to_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let cells: Vec<Json> = results
        .rows
        .iter()
        .map(|row| {
            let values: Map<String, Json> = results
                .sweep
                .axes()
                .iter()
                .zip(results.sweep.cells()[row.cell].values())
                .map(|(a, v)| (a.name().to_owned(), toml_to_json(v)))
                .collect();
            let stats: Map<String, Json> = results
                .metrics
                .iter()
                .map(|m| {
                    let s = row.metric(m);
                    (
                        (*m).to_owned(),
                        json!({
                            "mean": s.and_then(|s| s.mean),
                            "lo": s.and_then(|s| s.lo),
                            "hi": s.and_then(|s| s.hi),
                            "defined": s.map_or(0, |s| s.defined),
                            "interval": interval_name(s.map(|s| s.interval)),
                        }),
                    )
                })
                .collect();
            json!({
                "values": values,
                "rule": row.rule.as_str(),
                "runs": row.runs,
                "metrics": stats,
            })
        })
        .collect();
    let report = json!({
        "scenario": results.name,
        "base": toml_to_json(results.sweep.base()),
        "grid": {
            "fields": fields,
            "rules": results.sweep.rules().iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            "seeds": {"first": results.sweep.seeds().first(), "count": results.sweep.seeds().len()},
            "metrics": results.metrics,
            "interval": "95 % interval on the mean over the `defined` runs where the metric \
                         happened: Wilson's score interval for a 0/1 metric (`interval`: \
                         \"wilson\"), Student's t otherwise (\"t\"), clipped at 0 for a \
                         metric that is never negative when its lower end fell below \
                         (\"t_clipped\")",
        },
        "cells": cells,
    });
    serde_json::to_writer(&mut *out, &report).map_err(io::Error::from)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(mean: f64, lo: f64, hi: f64, interval: Interval) -> Stats {
        Stats {
            mean: Some(mean),
            lo: Some(lo),
            hi: Some(hi),
            defined: 20,
            interval,
        }
    }

    #[test]
    fn cells_print_to_their_interval() {
        let t = stats(29.634, 29.514, 29.754, Interval::T);
        assert_eq!(cell(&t, 20, "all_served_s"), "29.6 ± 0.1");
        let point = stats(600.0, 600.0, 600.0, Interval::T);
        assert_eq!(cell(&point, 20, "all_served_s"), "600");
        let share = stats(0.27, 0.11, 0.47, Interval::Wilson);
        assert_eq!(cell(&share, 20, "recovered"), "0.3 (0.1–0.5)");
    }

    #[test]
    fn csv_quotes_arrays() {
        assert_eq!(csv_field("[[0, 10]]"), "\"[[0, 10]]\"");
        assert_eq!(csv_field("full"), "full");
    }
}
