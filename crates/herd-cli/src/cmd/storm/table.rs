//! The table: one row per rule, with a sparkline of arrivals per window against capacity.
use std::io::{self, Write};

use herd::RuleName;
use herd_sim::figure::{self, Kind};
use herd_sim::{RunResult, Scenario, Series};

use super::output::{Spread, summarise};

/// Columns of the sparkline at most.
const SPARK_COLUMNS: usize = 48;
/// Glyphs for arrivals up to 1/4, 1/2, 3/4 and 1 × capacity, then up to 2×, 4×, 8× and beyond.
const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A time in seconds, by the one precision policy (`herd_sim::figure`).
pub(crate) fn seconds(s: f64) -> String {
    figure::with_unit(s, Kind::Seconds)
}

/// The glyph for `arrivals` in a window of `capacity`.
fn glyph(arrivals: u64, capacity: f64) -> char {
    if arrivals == 0 {
        return ' ';
    }
    let x = arrivals as f64 / capacity.max(f64::MIN_POSITIVE);
    let bounds = [0.25, 0.5, 0.75, 1.0, 2.0, 4.0, 8.0];
    let i = bounds
        .iter()
        .position(|&b| x <= b)
        .unwrap_or(LEVELS.len() - 1);
    LEVELS[i]
}

/// Arrivals per window squeezed into `columns` columns over `windows` windows: each column
/// shows the busiest window it covers.
pub(crate) fn sparkline(series: &Series, windows: usize, columns: usize) -> String {
    if windows == 0 || columns == 0 {
        return String::new();
    }
    (0..columns)
        .map(|c| {
            let lo = c * windows / columns;
            let hi = ((c + 1) * windows / columns).max(lo + 1);
            let busiest = series
                .arrivals
                .get(lo..hi.min(series.arrivals.len()))
                .and_then(|s| s.iter().copied().max())
                .unwrap_or(0);
            glyph(busiest, series.capacity)
        })
        .collect()
}

fn outages(scenario: &Scenario) -> String {
    if scenario.server.outages.is_empty() {
        return "no outage".to_owned();
    }
    let list: Vec<String> = scenario
        .server
        .outages
        .iter()
        .map(|[a, b]| format!("{a}–{b} s"))
        .collect();
    format!(
        "outage{} {}",
        if list.len() > 1 { "s" } else { "" },
        list.join(", ")
    )
}

/// A cell: the value of one run, or `mean [min–max]` over several, then the unit; noting how
/// many runs had a value when some had none.
pub(crate) fn cell(
    spread: Option<Spread>,
    runs: usize,
    fmt: fn(f64) -> String,
    unit: &str,
) -> String {
    let Some(s) = spread else {
        return "—".to_owned();
    };
    let mut text = if s.min == s.max {
        fmt(s.mean)
    } else {
        format!("{} [{}–{}]", fmt(s.mean), fmt(s.min), fmt(s.max))
    };
    text.push_str(unit);
    if s.runs < runs {
        text.push_str(&format!(" ({}/{runs} runs)", s.runs));
    }
    text
}

/// Windows shown by the sparklines and the chart: twice the median active span of the rules
/// whose storm ended (nobody left waiting at the horizon), at most the longest span. So quick
/// rules are not squeezed into one column by a slow one, nor by several that never finish
/// (with a refusal cost, three of the six classic rules run to the horizon and would
/// otherwise be the median). When no rule's storm ended, the median of all of them.
pub(crate) fn shown_windows(results: &[&RunResult]) -> usize {
    let span = |r: &&RunResult| r.series.arrivals.len();
    let longest = results.iter().map(span).max().unwrap_or(0);
    let mut spans: Vec<usize> = results
        .iter()
        .filter(|r| r.waiting == 0)
        .map(span)
        .collect();
    if spans.is_empty() {
        spans = results.iter().map(span).collect();
    }
    spans.sort_unstable();
    let median = spans.get(spans.len() / 2).copied().unwrap_or(0);
    median.saturating_mul(2).min(longest)
}

pub(crate) fn write(
    out: &mut impl Write,
    name: &str,
    scenario: &Scenario,
    rules: &[RuleName],
    results: &[RunResult],
) -> io::Result<()> {
    let several = results.len() > rules.len();
    // The most runs of one rule (all rules have as many, unless Ctrl-C cut the runs short).
    let runs = rules
        .iter()
        .map(|r| results.iter().filter(|x| x.rule == *r).count())
        .max()
        .unwrap_or(0);
    let first: Vec<&RunResult> = rules
        .iter()
        .filter_map(|r| results.iter().find(|x| x.rule == *r))
        .collect();
    let clients = first.first().map_or(scenario.clients.count, |r| r.clients);
    let seeds = if several {
        format!(
            "seeds {}..{} ({runs} runs, mean [min–max])",
            scenario.seed,
            scenario.seed.wrapping_add(runs as u64 - 1)
        )
    } else {
        format!("seed {}", scenario.seed)
    };
    writeln!(
        out,
        "herd storm: {name}, {seeds}\n{clients} clients, capacity {} per {} ms window, refusal cost {}, {}",
        scenario.server.capacity,
        scenario.window_ms,
        scenario.server.refusal_cost,
        outages(scenario)
    )?;
    writeln!(out)?;

    let windows = shown_windows(&first);
    let columns = windows.min(SPARK_COLUMNS);
    let window_s = first.first().map_or(0.0, |r| r.series.window_s);
    let span = windows as f64 * window_s;
    let mut rows: Vec<Vec<String>> = vec![vec![
        "rule".into(),
        "served".into(),
        "gave up".into(),
        "waiting".into(),
        "half served".into(),
        "all served".into(),
        "req/client".into(),
        "peak after outage".into(),
        format!("arrivals per window, 0–{}", seconds(span)),
    ]];
    for (rule, one) in rules.iter().zip(&first) {
        let s = summarise(*rule, results);
        // Each rule's own runs: after Ctrl-C, rules may have finished different numbers.
        let runs = s.runs;
        rows.push(vec![
            rule.to_string(),
            cell(s.served, runs, figure::number, ""),
            cell(s.gave_up, runs, figure::number, ""),
            cell(s.waiting, runs, figure::number, ""),
            cell(s.half_served_s, runs, figure::number, " s"),
            cell(s.all_served_s, runs, figure::number, " s"),
            cell(s.requests_per_client, runs, figure::number, ""),
            cell(s.peak_after_outage, runs, figure::number, ""),
            {
                let mut line = sparkline(&one.series, windows, columns);
                if one.series.arrivals.len() > windows {
                    line.push('→');
                }
                line
            },
        ]);
    }
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let mut line = String::new();
        for (c, text) in row.iter().enumerate() {
            let pad = widths[c] - text.chars().count();
            if c == 0 || c == cols - 1 {
                line.push_str(text);
                if c < cols - 1 {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            } else {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(text);
            }
            if c < cols - 1 {
                line.push_str("  ");
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    if columns > 0 {
        writeln!(out)?;
        let per_column = span / columns as f64;
        writeln!(
            out,
            "sparkline: one column = {} (its busiest window); ▁▂▃▄ up to capacity, ▅▆▇█ up to 2×, 4×, 8× capacity and beyond; → activity goes on{}",
            seconds(per_column),
            if several { "; first seed" } else { "" }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `rule` whose arrivals span `windows` windows, with `waiting` clients left at
    /// the horizon.
    fn run_spanning(rule: RuleName, windows: usize, waiting: u64) -> RunResult {
        RunResult {
            rule,
            seed: 1,
            clients: 2000,
            served: 2000 - waiting,
            gave_up: 0,
            denied_by_budget: 0,
            waiting,
            half_served_s: None,
            all_served_s: None,
            last_attempt_s: Some(windows as f64 * 0.1),
            requests: windows as u64,
            requests_per_client: 1.0,
            peak_after_outage: 1,
            series: Series::new(0.1, 50.0, vec![1; windows], vec![1; windows]),
        }
    }

    /// Regression: with a refusal cost, the three unjittered rules never finish and run to
    /// the horizon (36 000 windows); as half the rules they were the median, so the shown
    /// span was the whole hour and the jittered rules sat in the first column.
    #[test]
    fn rules_that_never_finish_do_not_set_the_span() {
        let runs = [
            run_spanning(RuleName::Immediate, 36_000, 2000),
            run_spanning(RuleName::Constant, 36_000, 2000),
            run_spanning(RuleName::Exponential, 36_000, 2000),
            run_spanning(RuleName::Full, 300, 0),
            run_spanning(RuleName::Equal, 230, 0),
            run_spanning(RuleName::Decorrelated, 280, 0),
        ];
        let refs: Vec<&RunResult> = runs.iter().collect();
        // Twice the median of the three that ended (230, 280, 300).
        assert_eq!(shown_windows(&refs), 560);
        let line = sparkline(&runs[3].series, 560, SPARK_COLUMNS);
        assert!(
            line.chars().filter(|&c| c != ' ').count() > SPARK_COLUMNS / 2,
            "full's 30 s fill half the sparkline: {line:?}"
        );
        // When no rule's storm ended, the median of all of them; never past the longest.
        assert_eq!(shown_windows(&refs[..3]), 36_000);
        let quick = [run_spanning(RuleName::Full, 300, 0)];
        assert_eq!(shown_windows(&quick.iter().collect::<Vec<_>>()), 300);
        assert_eq!(shown_windows(&[]), 0);
    }

    #[test]
    fn glyphs_split_at_capacity() {
        assert_eq!(glyph(0, 50.0), ' ');
        assert_eq!(glyph(1, 50.0), '▁');
        assert_eq!(glyph(50, 50.0), '▄');
        assert_eq!(glyph(51, 50.0), '▅');
        assert_eq!(glyph(2000, 50.0), '█');
        assert_eq!(glyph(3, 0.0), '█');
    }

    #[test]
    fn seconds_follow_the_precision_policy() {
        for (s, text) in [
            (12.0, "12 s"),
            (785.5, "786 s"),
            (0.125, "0.125 s"),
            (5.25, "5.25 s"),
            (29.65, "29.6 s"),
        ] {
            assert_eq!(seconds(s), text);
        }
    }
}
