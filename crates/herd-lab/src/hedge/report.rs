//! One policy's run: measured beside simulated, every copy accounted for, and the verdict.
use std::fmt::Write as _;

use herd_sim::figure::{mean_pm, number, percent};
use serde::Serialize;

use crate::judge::Judgement;

use super::measure::{Accounting, HedgeFigures};

/// A figure over the simulated seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Seeds simulated (the run's seed and the ones after it).
    pub runs: u32,
    /// Each figure's mean over the seeds.
    pub mean: HedgeFigures,
    /// Each figure's standard deviation over the seeds: one run's standard error.
    pub sd: HedgeFigures,
}

impl Spread {
    /// The mean and standard deviation of each figure over `runs`.
    #[must_use]
    pub fn of(runs: &[HedgeFigures]) -> Self {
        let n = runs.len().max(1) as f64;
        let stat = |f: fn(&HedgeFigures) -> f64| {
            let mean = runs.iter().map(f).sum::<f64>() / n;
            let var = if runs.len() > 1 {
                runs.iter().map(|r| (f(r) - mean).powi(2)).sum::<f64>() / (n - 1.0)
            } else {
                0.0
            };
            (mean, var.sqrt())
        };
        let (p50, p99, p999, mean, extra) = (
            stat(|r| r.p50_ms),
            stat(|r| r.p99_ms),
            stat(|r| r.p999_ms),
            stat(|r| r.mean_ms),
            stat(|r| r.extra_load_percent),
        );
        Self {
            runs: runs.len() as u32,
            mean: HedgeFigures {
                p50_ms: p50.0,
                p99_ms: p99.0,
                p999_ms: p999.0,
                mean_ms: mean.0,
                extra_load_percent: extra.0,
            },
            sd: HedgeFigures {
                p50_ms: p50.1,
                p99_ms: p99.1,
                p999_ms: p999.1,
                mean_ms: mean.1,
                extra_load_percent: extra.1,
            },
        }
    }
}

/// One policy played on real sockets, beside the simulator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyReport {
    /// The policy's name.
    pub policy: String,
    /// The seed of the lab's draws and of the simulated run beside it.
    pub seed: u64,
    /// Real seconds per scenario second.
    pub time_scale: f64,
    /// User requests measured (after the warm-up).
    pub measured_users: u64,
    /// The lab's figures, in scenario milliseconds; the extra load as the clients sent it.
    pub measured: HedgeFigures,
    /// Distribution-free 95 % intervals of p50, p99 and p99.9 from the lab's own sample, by
    /// order statistics (`None`: the sample is too small to bound it above). Shown, not
    /// judged by: they take the requests as independent, which bursts are not.
    pub order_intervals_ms: [(f64, Option<f64>); 3],
    /// The extra load as the servers counted it, over the measured users' sub-requests.
    pub servers_extra_load_percent: f64,
    /// The simulator's figures for the same scenario and seed.
    pub simulated: HedgeFigures,
    /// The simulator's figures over several seeds: what one run of this size varies by.
    pub spread: Spread,
    /// Real overhead per user request (the wire and the servers' timers), median, in real ms.
    pub overhead_p50_real_ms: f64,
    /// Its 99th percentile, in real ms.
    pub overhead_p99_real_ms: f64,
    /// How much higher a latency figure may be, in scenario ms: the overhead's 99th
    /// percentile over the time scale.
    pub allowance_ms: f64,
    /// Every copy, from both sides.
    pub accounting: Accounting,
    /// The first reason a user request gave up, if one did.
    pub first_error: Option<String>,
    /// Whether the servers had served every copy they received before the count was taken.
    pub servers_settled: bool,
    /// Real seconds the run took.
    pub real_s: f64,
    /// The verdict.
    pub verdict: Judgement,
}

impl PolicyReport {
    /// The table for people: the figures, the accounting, the overhead, the verdict.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<14} {:>10} {:>10} {:>24} {:>20}",
            "metric",
            "measured",
            "simulated",
            format!("sim, {} runs (mean ± sd)", self.spread.runs),
            "measured 95 % (o.s.)"
        );
        let measured = self.measured.named();
        let simulated = self.simulated.named();
        let mean = self.spread.mean.named();
        let sd = self.spread.sd.named();
        for i in 0..measured.len() {
            let interval = match self.order_intervals_ms.get(i) {
                Some((lo, Some(hi))) => format!("{}–{}", number(*lo), number(*hi)),
                Some((lo, None)) => format!("{}–?", number(*lo)),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "{:<14} {:>10} {:>10} {:>24} {:>20}",
                measured[i].0,
                number(measured[i].1),
                number(simulated[i].1),
                mean_pm(mean[i].1, sd[i].1),
                interval
            );
        }
        let a = &self.accounting;
        let _ = writeln!(
            out,
            "copies: {} sent by the clients, {} received by the servers, {} cancelled before \
             arrival; {} answered, {} dropped after arrival (served as wasted work), {} failed; \
             {} duplicates; {} of {} user requests gave up",
            a.sent,
            a.received,
            a.cancelled_before_arrival,
            a.answered,
            a.dropped_after_arrival,
            a.failed,
            a.duplicates,
            a.gave_up,
            a.user_requests
        );
        let _ = writeln!(
            out,
            "extra load counted by the servers: {} %; the wire and the servers' timers \
             added {} ms (median), {} ms (p99) of real time per request; {} s",
            percent(self.servers_extra_load_percent),
            number(self.overhead_p50_real_ms),
            number(self.overhead_p99_real_ms),
            number(self.real_s)
        );
        if let Some(e) = &self.first_error {
            let _ = writeln!(out, "first failure: {e}");
        }
        let _ = writeln!(out, "{}", self.verdict.line());
        out
    }
}
