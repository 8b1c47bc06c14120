//! Measured beside simulated: the storm's figures from the server's ledger and from the
//! simulator, the difference per metric, and the load per window side by side.
use std::fmt::Write as _;

use herd_sim::RunResult;
use herd_sim::figure::{Kind, number, signed, with_unit};
use serde::Serialize;

/// The storm's figures (docs/model.md) for one run, measured or simulated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StormFigures {
    /// Clients served.
    pub served: u64,
    /// Clients that gave up (ran out of attempts).
    pub gave_up: u64,
    /// Clients neither served nor given up when the run ended.
    pub waiting: u64,
    /// All attempts the server received.
    pub requests: u64,
    /// When half the clients had been served, in scenario seconds.
    pub half_served_s: Option<f64>,
    /// When the last client was served, if all were.
    pub all_served_s: Option<f64>,
    /// `requests / clients`.
    pub requests_per_client: f64,
    /// The most arrivals in one window at or after the end of the last outage.
    pub peak_after_outage: u64,
}

impl StormFigures {
    /// The simulator's figures.
    #[must_use]
    pub fn simulated(result: &RunResult) -> Self {
        Self {
            served: result.served,
            gave_up: result.gave_up,
            waiting: result.waiting,
            requests: result.requests,
            half_served_s: result.half_served_s,
            all_served_s: result.all_served_s,
            requests_per_client: result.requests_per_client,
            peak_after_outage: result.peak_after_outage,
        }
    }
}

/// The least and the most a figure came to over several simulated seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Range {
    /// The least.
    pub min: f64,
    /// The most.
    pub max: f64,
}

impl Range {
    /// The range of `values`; `None` when any is missing (not everyone served, say).
    #[must_use]
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Option<Self> {
        let mut range: Option<Range> = None;
        for v in values {
            let v = v?;
            range = Some(match range {
                None => Range { min: v, max: v },
                Some(r) => Range {
                    min: r.min.min(v),
                    max: r.max.max(v),
                },
            });
        }
        range
    }
}

/// For a jittered rule, how much the simulated figures vary with the seed alone: the lab's
/// clients draw from other generators, so the measured figures should fall about here.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedSpread {
    /// Runs simulated, one a seed.
    pub runs: u32,
    /// Half served by, seconds.
    pub half_served_s: Option<Range>,
    /// All served by, seconds.
    pub all_served_s: Option<Range>,
    /// Requests per client.
    pub requests_per_client: Option<Range>,
    /// Peak after the outage.
    pub peak_after_outage: Option<Range>,
}

impl SeedSpread {
    /// The spread of simulated runs.
    #[must_use]
    pub fn of(runs: &[RunResult]) -> Self {
        Self {
            runs: u32::try_from(runs.len()).unwrap_or(u32::MAX),
            half_served_s: Range::of(runs.iter().map(|r| r.half_served_s)),
            all_served_s: Range::of(runs.iter().map(|r| r.all_served_s)),
            requests_per_client: Range::of(runs.iter().map(|r| Some(r.requests_per_client))),
            peak_after_outage: Range::of(runs.iter().map(|r| Some(r.peak_after_outage as f64))),
        }
    }
}

/// One lab run: what the real server measured beside what the simulator predicts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabReport {
    /// The rule.
    pub rule: String,
    /// The seed of the simulation and of the clients' generators.
    pub seed: u64,
    /// Clients.
    pub clients: u64,
    /// Real seconds per scenario second.
    pub time_scale: f64,
    /// One step in real milliseconds.
    pub step_real_ms: f64,
    /// The window in scenario seconds.
    pub window_s: f64,
    /// The server's capacity per window.
    pub capacity: f64,
    /// The first window after the last outage.
    pub first_window_after_outage: usize,
    /// From the real server's ledger and the clients' ends.
    pub measured: StormFigures,
    /// From `herd-sim` for the same scenario, rule and seed.
    pub simulated: StormFigures,
    /// For jittered rules: the simulated figures over several seeds.
    pub seed_spread: Option<SeedSpread>,
    /// Arrivals per window at the real server.
    pub measured_arrivals: Vec<u64>,
    /// Answers per window at the real server.
    pub measured_served: Vec<u64>,
    /// Arrivals per window in the simulation.
    pub simulated_arrivals: Vec<u64>,
    /// Answers per window in the simulation.
    pub simulated_served: Vec<u64>,
    /// Attempts the clients made (equals the server's count unless a request was lost).
    pub client_attempts: u64,
    /// Attempts that reached the server a step later than they aimed (timer or load lag).
    pub late_attempts: u64,
    /// Attempts that failed without an HTTP answer.
    pub transport_errors: u64,
    /// The latest a step was settled after its end, in real milliseconds.
    pub worst_tick_lag_ms: f64,
    /// How long the storm took in real seconds.
    pub real_s: f64,
    /// Measured against simulated, with the tolerance ([`crate::judge::storm`]).
    pub verdict: Option<crate::judge::Judgement>,
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |s| with_unit(s, Kind::Seconds))
}

fn seconds_diff(measured: Option<f64>, simulated: Option<f64>) -> String {
    match (measured, simulated) {
        (Some(m), Some(s)) => format!("{} s", signed(m - s)),
        (None, None) => "same".to_owned(),
        _ => "differs".to_owned(),
    }
}

fn count_diff(measured: u64, simulated: u64) -> String {
    let d = i128::from(measured) - i128::from(simulated);
    if simulated == 0 {
        format!("{d:+}")
    } else {
        format!("{d:+} ({} %)", signed(d as f64 / simulated as f64 * 100.0))
    }
}

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Both series as sparklines on one scale, each column the busiest of its windows.
fn sparklines(a: &[u64], b: &[u64], columns: usize) -> (String, String, usize) {
    let n = a.len().max(b.len()).max(1);
    let per = n.div_ceil(columns.max(1));
    let top = a.iter().chain(b).copied().max().unwrap_or(0).max(1);
    let line = |s: &[u64]| -> String {
        (0..n.div_ceil(per))
            .map(|c| {
                let v = s.iter().skip(c * per).take(per).copied().max().unwrap_or(0);
                if v == 0 {
                    ' '
                } else {
                    let i = ((v as f64 / top as f64) * 7.0).round() as usize;
                    BARS[i.min(7)]
                }
            })
            .collect()
    };
    (line(a), line(b), per)
}

impl LabReport {
    /// The report as text: the metrics table, sparklines and the first windows after the
    /// outage side by side.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let m = &self.measured;
        let s = &self.simulated;
        let spread = self.seed_spread.as_ref();
        let spread_header = spread.map_or(String::new(), |sp| format!("sim, {} runs", sp.runs));
        let w = if spread.is_some() { 15 } else { 0 };
        let _ = writeln!(
            out,
            "{:<22} {:>12} {:>12} {:>w$}  difference",
            "metric", "measured", "simulated", spread_header
        );
        let range = |pick: fn(&SeedSpread) -> Option<Range>, unit: &str| {
            spread.map_or(String::new(), |sp| {
                pick(sp).map_or("–".to_owned(), |r| {
                    format!("{}–{}{unit}", number(r.min), number(r.max))
                })
            })
        };
        let spreads = [
            range(|sp| sp.half_served_s, " s"),
            range(|sp| sp.all_served_s, " s"),
            range(|sp| sp.requests_per_client, ""),
            range(|sp| sp.peak_after_outage, ""),
            String::new(),
            String::new(),
            String::new(),
        ];
        let rows = [
            (
                "half served by",
                seconds(m.half_served_s),
                seconds(s.half_served_s),
                seconds_diff(m.half_served_s, s.half_served_s),
            ),
            (
                "all served by",
                seconds(m.all_served_s),
                seconds(s.all_served_s),
                seconds_diff(m.all_served_s, s.all_served_s),
            ),
            (
                "requests per client",
                number(m.requests_per_client),
                number(s.requests_per_client),
                format!(
                    "{} ({} %)",
                    signed(m.requests_per_client - s.requests_per_client),
                    signed(if s.requests_per_client > 0.0 {
                        (m.requests_per_client / s.requests_per_client - 1.0) * 100.0
                    } else {
                        0.0
                    })
                ),
            ),
            (
                "peak after outage",
                m.peak_after_outage.to_string(),
                s.peak_after_outage.to_string(),
                count_diff(m.peak_after_outage, s.peak_after_outage),
            ),
            (
                "served",
                m.served.to_string(),
                s.served.to_string(),
                count_diff(m.served, s.served),
            ),
            (
                "gave up",
                m.gave_up.to_string(),
                s.gave_up.to_string(),
                count_diff(m.gave_up, s.gave_up),
            ),
            (
                "requests",
                m.requests.to_string(),
                s.requests.to_string(),
                count_diff(m.requests, s.requests),
            ),
        ];
        for ((name, measured, simulated, diff), spread) in rows.into_iter().zip(spreads) {
            let _ = writeln!(
                out,
                "{name:<22} {measured:>12} {simulated:>12} {spread:>w$}  {diff}"
            );
        }
        let (ma, sa, per) = sparklines(&self.measured_arrivals, &self.simulated_arrivals, 72);
        let _ = writeln!(
            out,
            "\narrivals per {} ms window (a column is the busiest of {per} window{}):",
            number(self.window_s * 1000.0),
            if per == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "  measured   |{ma}|");
        let _ = writeln!(out, "  simulated  |{sa}|");
        let first = self.first_window_after_outage;
        let _ = writeln!(
            out,
            "\n{:>8} {:>9} {:>9} {:>9} {:>9}",
            "t (s)", "arrivals", "(sim)", "served", "(sim)"
        );
        let get = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        for w in first.saturating_sub(2)..first + 10 {
            let _ = writeln!(
                out,
                "{:>8} {:>9} {:>9} {:>9} {:>9}",
                number(w as f64 * self.window_s),
                get(&self.measured_arrivals, w),
                get(&self.simulated_arrivals, w),
                get(&self.measured_served, w),
                get(&self.simulated_served, w)
            );
        }
        let _ = writeln!(
            out,
            "\n{} attempts sent by the clients, {} received by the server; {} arrived a step late; \
             {} transport errors; worst tick lag {} ms; {} s of real time.",
            self.client_attempts,
            m.requests,
            self.late_attempts,
            self.transport_errors,
            number(self.worst_tick_lag_ms),
            number(self.real_s)
        );
        if let Some(judgement) = &self.verdict {
            let _ = writeln!(out, "{}", judgement.line());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_needs_every_value() {
        let r = Range::of([Some(3.0), Some(1.0), Some(2.0)]).unwrap();
        assert_eq!((r.min, r.max), (1.0, 3.0));
        assert_eq!(Range::of([Some(1.0), None]), None);
        assert_eq!(Range::of(std::iter::empty()), None);
    }

    #[test]
    fn sparklines_share_one_scale() {
        let (a, b, per) = sparklines(&[0, 4, 8], &[8, 0, 0], 72);
        assert_eq!(per, 1);
        assert_eq!(a, " ▅█");
        assert_eq!(b, "█  ");
    }
}
