//! What a metastable run reports: per-window counts, rates after the outage and its outcome.
use std::fmt;

use herd::RuleName;
use serde::Serialize;

use super::scenario::MetastablePlan;
use crate::figure;

/// Counts over one reporting window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Window {
    /// When the window starts, in seconds.
    pub start_s: f64,
    /// New requests (their first attempts) sent in the window.
    pub first_attempts: u64,
    /// Retries sent in the window.
    pub retries: u64,
    /// Attempts sent while the server was down (lost; part of the two counts above).
    pub lost: u64,
    /// Requests the server completed (useful or not).
    pub throughput: u64,
    /// Requests completed while their client was still waiting: useful work.
    pub goodput: u64,
    /// Attempts that timed out in the window.
    pub timeouts: u64,
    /// Requests that gave up in the window: after `max_attempts` attempts, or because the
    /// retry budget denied a retry (as `gave_up` means in every model).
    pub gave_up: u64,
    /// Of `gave_up`, the requests whose retry the retry budget denied.
    pub denied_by_budget: u64,
    /// Requests waiting at the server (in service included) at the end of the window.
    pub queue: u64,
    /// Attempts refused at the door (a full queue, or admission control by latency).
    pub refused: u64,
    /// Queued attempts the server dropped unworked because their client had timed out.
    pub dropped: u64,
    /// Sum over the window's in-time answers of the steps from sending to answering (the
    /// answer is counted at the end of its step).
    pub wait_steps: u64,
}

impl Window {
    /// All attempts sent in the window.
    #[must_use]
    pub fn attempts(&self) -> u64 {
        self.first_attempts + self.retries
    }

    /// The window is healthy: at least `share` of the attempts that ended in it (answered in
    /// time, timed out, or refused at the door) were answered, and at most `knee_queue` requests wait at its end.
    ///
    /// A ratio of endings rather than goodput against new requests: Poisson arrivals make a
    /// window's new requests swing by ±6 % around 280 per second, and a burst above the
    /// server's capacity is answered in the next window, so a healthy server would
    /// fail a fixed "goodput ≥ 90 % of new requests" now and then by chance.
    ///
    /// The share is the decimal written, `digits / 10^k`, compared in integers: with 0.55 in
    /// `f64`, 55 answered of 100 would be `55 < 55.00000000000001`, unhealthy.
    fn healthy(&self, (digits, k): (u128, u32), knee_queue: u64) -> bool {
        let ended = u128::from(self.goodput + self.timeouts + self.refused);
        u128::from(self.goodput) * 10u128.pow(k) >= digits * ended && self.queue <= knee_queue
    }
}

/// Mean rates per second over the windows that start at or after the end of the last outage.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AfterOutage {
    /// From this time, in seconds (the start of the first window after the outage).
    pub from_s: f64,
    /// New requests per second.
    pub first_attempts_per_s: f64,
    /// Attempts (first and retries) per second.
    pub attempts_per_s: f64,
    /// Completed requests per second.
    pub throughput_per_s: f64,
    /// Useful completions per second.
    pub goodput_per_s: f64,
    /// Waiting at the server at the horizon.
    pub queue_at_horizon: u64,
}

/// The outcome of one metastable run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetastableReport {
    /// The retry rule.
    #[serde(serialize_with = "crate::rule_serde::one::serialize")]
    pub rule: RuleName,
    /// The seed of the run.
    pub seed: u64,
    /// New requests per second offered.
    pub offered_qps: f64,
    /// Retry budget percentage (0 = no budget).
    pub budget_percent: f64,
    /// The reporting window, in seconds.
    pub window_s: f64,
    /// The end of the last outage, in seconds (0 without outages).
    pub outage_end_s: f64,
    /// New requests over the run (each one's first attempt).
    pub new_requests: u64,
    /// All attempts over the run, first attempts and retries (as `requests` means in every
    /// model).
    pub requests: u64,
    /// Requests answered in time.
    pub served: u64,
    /// Completions whose client had already given up on the attempt: wasted work.
    pub wasted: u64,
    /// Requests that gave up: after `max_attempts` attempts, or because the retry budget
    /// denied a retry. `served + gave_up + pending == new_requests`.
    pub gave_up: u64,
    /// Of `gave_up`, the requests whose retry the retry budget denied.
    pub denied_by_budget: u64,
    /// Requests still waiting for an answer or a retry at the horizon.
    pub pending: u64,
    /// Attempts refused at the door (bounded queue or admission control).
    pub refused: u64,
    /// Attempts dropped unworked by server-side deadlines.
    pub dropped: u64,
    /// Mean time from sending an attempt to its in-time answer, over the whole run, in
    /// seconds (`None` without answers). Time is in whole steps: an attempt counts as sent at
    /// the start of its step and answered at the end of its step, so this is at most one
    /// step longer than in continuous time.
    pub mean_response_s: Option<f64>,
    /// Rates after the outage.
    pub after_outage: AfterOutage,
    /// The start of the first window after the outage from which every window to the horizon
    /// is healthy; `None` when the last window is not ("still overloaded at the horizon").
    pub recovered_at_s: Option<f64>,
    /// In words: "recovered at T s" or "still overloaded at the horizon" (the JSON's `outcome`).
    pub outcome: String,
    /// Per-window counts.
    pub windows: Vec<Window>,
}

/// "retry budget 10 %", or "no retry budget" for 0.
pub(crate) fn budget_label(percent: f64) -> String {
    if percent > 0.0 {
        format!("retry budget {percent} %")
    } else {
        "no retry budget".to_owned()
    }
}

pub(crate) fn build(
    plan: &MetastablePlan,
    rule: RuleName,
    seed: u64,
    mut windows: Vec<Window>,
    new_requests: u64,
    pending: u64,
) -> MetastableReport {
    // The engine counts the two ways to give up apart; `gave_up` is both, as in every model.
    for w in &mut windows {
        w.gave_up += w.denied_by_budget;
    }
    let window_s = plan.seconds(plan.steps_per_window);
    let first_after = plan.after_last_outage().div_ceil(plan.steps_per_window) as usize;
    let after = windows.get(first_after..).unwrap_or_default();
    let span_s: f64 = after
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let end = windows
                .get(first_after + i + 1)
                .map_or(plan.seconds(plan.steps), |next| next.start_s);
            end - w.start_s
        })
        .sum();
    let rate = |f: fn(&Window) -> u64| {
        if span_s > 0.0 {
            after.iter().map(f).sum::<u64>() as f64 / span_s
        } else {
            0.0
        }
    };
    let after_outage = AfterOutage {
        from_s: after
            .first()
            .map_or(plan.seconds(plan.steps), |w| w.start_s),
        first_attempts_per_s: rate(|w| w.first_attempts),
        attempts_per_s: rate(Window::attempts),
        throughput_per_s: rate(|w| w.throughput),
        goodput_per_s: rate(|w| w.goodput),
        queue_at_horizon: windows.last().map_or(0, |w| w.queue),
    };
    // The earliest window after the outage from which all windows are healthy.
    let unhealthy_tail = after
        .iter()
        .rposition(|w| !w.healthy(plan.recovered_goodput, plan.knee_queue));
    let recovered = match unhealthy_tail {
        None => after.first(),
        Some(i) => after.get(i + 1),
    };
    let recovered_at_s = recovered.map(|w| w.start_s);
    let outcome = match recovered_at_s {
        Some(t) => format!("recovered at {t} s"),
        None => "still overloaded at the horizon".to_owned(),
    };
    let sum = |f: fn(&Window) -> u64| windows.iter().map(f).sum::<u64>();
    let throughput = sum(|w| w.throughput);
    let served = sum(|w| w.goodput);
    MetastableReport {
        rule,
        seed,
        offered_qps: plan.offered_qps,
        budget_percent: plan.budget.map_or(0.0, |b| b.percent),
        window_s,
        outage_end_s: plan.seconds(plan.after_last_outage()),
        // Every new request, sent or (by a throttle) refused or still held back.
        new_requests,
        requests: sum(Window::attempts),
        served,
        wasted: throughput - served,
        gave_up: sum(|w| w.gave_up),
        denied_by_budget: sum(|w| w.denied_by_budget),
        pending,
        refused: sum(|w| w.refused),
        dropped: sum(|w| w.dropped),
        mean_response_s: (served > 0)
            .then(|| sum(|w| w.wait_steps) as f64 / served as f64 * plan.step_ns as f64 / 1e9),
        after_outage,
        recovered_at_s,
        outcome,
        windows,
    }
}

/// The metrics of a metastable run for `herd sweep`, in report order.
pub const METRICS: &[&str] = &[
    "recovered_s",
    "recovered",
    "attempts_per_s",
    "goodput_per_s",
    "throughput_per_s",
    "queue_at_horizon",
    "served",
    "gave_up",
    "denied_by_budget",
];

impl MetastableReport {
    /// The figures `herd sweep` aggregates, named as in [`METRICS`]: `recovered_s` is the
    /// time from the end of the last outage to the recovery (`None`: still overloaded at the
    /// horizon), `recovered` is 1 or 0 (its mean over seeds is the share of runs that
    /// recovered), the rates are those after the outage.
    #[must_use]
    pub fn metrics(&self) -> crate::model::Metrics {
        let mut m = crate::model::Metrics::new();
        let a = &self.after_outage;
        m.set(
            "recovered_s",
            self.recovered_at_s
                .map(|t| ((t - self.outage_end_s) * 1e6).round() / 1e6),
        );
        let recovered = if self.recovered_at_s.is_some() {
            1.0
        } else {
            0.0
        };
        m.set("recovered", Some(recovered));
        m.set("attempts_per_s", Some(a.attempts_per_s));
        m.set("goodput_per_s", Some(a.goodput_per_s));
        m.set("throughput_per_s", Some(a.throughput_per_s));
        m.set("queue_at_horizon", Some(a.queue_at_horizon as f64));
        m.set("served", Some(self.served as f64));
        m.set("gave_up", Some(self.gave_up as f64));
        m.set("denied_by_budget", Some(self.denied_by_budget as f64));
        m
    }
}

impl fmt::Display for MetastableReport {
    /// A table, one row per window, then the outcome.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let budget = budget_label(self.budget_percent);
        writeln!(
            f,
            "rule {}, {budget}, offered {} new requests/s, seed {} (per {} s window)",
            self.rule, self.offered_qps, self.seed, self.window_s
        )?;
        writeln!(
            f,
            "{:>8} {:>8} {:>8} {:>8} {:>8} {:>10} {:>8} {:>8}",
            "t (s)", "offered", "first", "retries", "attempts", "throughput", "goodput", "queue"
        )?;
        let offered = self.offered_qps * self.window_s;
        for w in &self.windows {
            writeln!(
                f,
                "{:>8} {:>8} {:>8} {:>8} {:>8} {:>10} {:>8} {:>8}",
                figure::number(w.start_s),
                figure::number(offered),
                w.first_attempts,
                w.retries,
                w.attempts(),
                w.throughput,
                w.goodput,
                w.queue
            )?;
        }
        let a = &self.after_outage;
        writeln!(
            f,
            "after the outage (from {} s): {} attempts/s ({}x the new requests), \
             throughput {}/s, goodput {}/s, queue {} at the horizon",
            figure::number(a.from_s),
            figure::number(a.attempts_per_s),
            figure::number(if a.first_attempts_per_s > 0.0 {
                a.attempts_per_s / a.first_attempts_per_s
            } else {
                0.0
            }),
            figure::number(a.throughput_per_s),
            figure::number(a.goodput_per_s),
            a.queue_at_horizon
        )?;
        writeln!(
            f,
            "new requests {}, served {}, gave up {} (denied by the budget {}), pending {}, wasted work {}",
            self.new_requests,
            self.served,
            self.gave_up,
            self.denied_by_budget,
            self.pending,
            self.wasted
        )?;
        if self.refused > 0 || self.dropped > 0 {
            writeln!(
                f,
                "refused at the door {}, dropped unworked (client gone) {}",
                self.refused, self.dropped
            )?;
        }
        writeln!(f, "outcome: {}", self.outcome)
    }
}

#[cfg(test)]
mod tests {
    /// Exactly the share asked for is healthy: 55 answered of 100 at 0.55 (in `f64`,
    /// `0.55 · 100` is 55.00000000000001 and the window failed).
    #[test]
    fn exactly_the_healthy_share_is_healthy() {
        let w = |goodput, timeouts| Window {
            goodput,
            timeouts,
            ..Window::default()
        };
        let share = crate::fields::decimal("recovered_goodput", 0.55).unwrap();
        assert!(w(55, 45).healthy(share, 0));
        assert!(!w(54, 46).healthy(share, 0));
        assert!(w(0, 0).healthy(share, 0));
    }

    use super::*;
    use crate::limits::Limits;
    use crate::metastable::MetastableScenario;

    /// A plan with 1 s windows and an outage over [2 s, 4 s).
    fn plan() -> MetastablePlan {
        let s = MetastableScenario {
            horizon_s: 8.0,
            step_ms: 100.0,
            server: crate::metastable::SlowingServer {
                outages: vec![[2.0, 4.0]],
                knee_queue: 10,
                ..Default::default()
            },
            ..MetastableScenario::default()
        };
        MetastablePlan::new(&s, &Limits::default()).unwrap()
    }

    fn window(start_s: f64, goodput: u64, timeouts: u64, queue: u64) -> Window {
        Window {
            start_s,
            first_attempts: 10,
            goodput,
            throughput: goodput,
            timeouts,
            queue,
            ..Window::default()
        }
    }

    fn verdict(shape: &[(u64, u64, u64)]) -> Option<f64> {
        let windows = shape
            .iter()
            .enumerate()
            .map(|(i, &(g, t, q))| window(i as f64, g, t, q))
            .collect();
        build(&plan(), RuleName::Constant, 1, windows, 0, 0).recovered_at_s
    }

    #[test]
    fn recovery_is_the_start_of_the_healthy_tail_after_the_outage() {
        // Windows 0–1 before the outage do not count, even when unhealthy.
        let bad = (0, 10, 0);
        let good = (10, 0, 0);
        assert_eq!(
            verdict(&[bad, bad, bad, bad, good, good, good, good]),
            Some(4.0)
        );
        // A relapse at 5 s moves the recovery after it.
        assert_eq!(
            verdict(&[good, good, bad, bad, good, bad, good, good]),
            Some(6.0)
        );
        // A bad last window: still overloaded at the horizon.
        assert_eq!(
            verdict(&[good, good, bad, bad, good, good, good, bad]),
            None
        );
    }

    #[test]
    fn a_healthy_window_answers_ninety_percent_and_keeps_the_queue_below_the_knee() {
        let (bad, good) = ((0, 10, 0), (10, 0, 0));
        for (fifth, recovered) in [
            // 9 answered, 1 timed out: exactly 90 %.
            ((9, 1, 0), 4.0),
            ((8, 2, 0), 5.0),
            // The queue at the knee is fine, above it is not.
            ((10, 0, 10), 4.0),
            ((10, 0, 11), 5.0),
        ] {
            let shape = [bad, bad, bad, bad, fifth, good, good, good];
            assert_eq!(verdict(&shape), Some(recovered), "{fifth:?}");
        }
    }
}
