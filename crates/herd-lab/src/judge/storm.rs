//! The lab storm: measured against simulated, one verdict per run, with the tolerance it used.
//!
//! Real timers fire late and a busy machine answers late, so the lab cannot match the
//! simulator to the request. A deterministic rule must come within [`TOLERANCE`] of the
//! simulated figure (times also get [`SLACK_WINDOWS`] windows for late attempts); a jittered
//! rule's clients draw from other generators than the simulator's, so its figures must fall
//! within the simulated seeds' range, widened by the same tolerance. A run that lost attempts
//! on the wire (transport errors) played another storm and is not compared at all.
use herd_sim::figure::number;

use super::{Judgement, Verdict};
use crate::storm::report::{LabReport, Range};

/// Relative tolerance on every figure.
pub const TOLERANCE: f64 = 0.10;
/// Extra tolerance on times, in windows.
pub const SLACK_WINDOWS: f64 = 2.0;

/// Whether `measured` is within the tolerance of `expected` (a point or a range).
fn within(measured: f64, lo: f64, hi: f64, slack: f64) -> bool {
    measured >= lo - (TOLERANCE * lo.abs() + slack)
        && measured <= hi + (TOLERANCE * hi.abs() + slack)
}

/// Judges one run.
#[must_use]
pub fn storm(r: &LabReport) -> Judgement {
    let jittered = r.seed_spread.is_some();
    let tolerance = if jittered {
        format!(
            "tolerance: within the range of {} simulated seeds ± {} %, times ± {SLACK_WINDOWS} windows",
            r.seed_spread.as_ref().map_or(0, |s| s.runs),
            number(TOLERANCE * 100.0)
        )
    } else {
        format!(
            "tolerance: ± {} %, times ± {SLACK_WINDOWS} windows",
            number(TOLERANCE * 100.0)
        )
    };
    if r.transport_errors > 0 {
        return Judgement {
            verdict: Verdict::NotComparable,
            tolerance,
            reasons: vec![format!(
                "{} attempts failed without an HTTP answer, so the server saw another storm \
                 (too few file descriptors, or an overloaded machine)",
                r.transport_errors
            )],
        };
    }
    let m = &r.measured;
    let s = &r.simulated;
    let spread = r.seed_spread.as_ref();
    let point = |v: f64| Range { min: v, max: v };
    let time_slack = SLACK_WINDOWS * r.window_s;
    let mut reasons = Vec::new();
    let mut check = |name: &str, measured: f64, expected: Range, slack: f64| {
        if !within(measured, expected.min, expected.max, slack) {
            let want = if expected.min == expected.max {
                number(expected.min)
            } else {
                format!("{}–{}", number(expected.min), number(expected.max))
            };
            reasons.push(format!("{name} {}, simulated {want}", number(measured)));
        }
    };
    check(
        "requests per client",
        m.requests_per_client,
        spread
            .and_then(|sp| sp.requests_per_client)
            .unwrap_or(point(s.requests_per_client)),
        0.0,
    );
    check(
        "peak after outage",
        m.peak_after_outage as f64,
        spread
            .and_then(|sp| sp.peak_after_outage)
            .unwrap_or(point(s.peak_after_outage as f64)),
        1.0,
    );
    let times = [
        (
            "half served by",
            m.half_served_s,
            s.half_served_s,
            spread.and_then(|sp| sp.half_served_s),
        ),
        (
            "all served by",
            m.all_served_s,
            s.all_served_s,
            spread.and_then(|sp| sp.all_served_s),
        ),
    ];
    for (name, measured, simulated, range) in times {
        match (measured, simulated) {
            (Some(mv), Some(sv)) => check(name, mv, range.unwrap_or(point(sv)), time_slack),
            (None, None) => {}
            (Some(_), None) => check(name, f64::INFINITY, point(0.0), 0.0),
            (None, Some(sv)) => check(name, f64::INFINITY, point(sv), 0.0),
        }
    }
    if !reasons.is_empty() && r.late_attempts > 0 {
        reasons.push(format!(
            "{} attempts arrived a step late: the machine did not keep up (try a larger \
             --time-scale)",
            r.late_attempts
        ));
    }
    Judgement::from_reasons(tolerance, reasons)
}
