//! The lab hedge: measured against simulated, for one policy, within the sampling error of a run of the
//! lab's size.
//!
//! The lab meets the simulator's own arrivals and pauses for the seed (common random
//! numbers, [`herd_sim::latency::draws`]); what it cannot share is the service times and the
//! routing, drawn in an order only the simulator knows, and the overhead of the real world.
//! So the lab's figure is compared with the simulated run of the same seed, and the two
//! differ by the noise of a run given its arrivals and pauses.
//!
//! How large that noise is, is measured, not assumed: the simulator runs the same scenario
//! (the same requests and warm-up) with [`sim_runs`](crate::hedge::LabHedge::sim_runs) seeds, and the
//! standard deviation `σ` of a figure over them is the standard error of one run, all its
//! randomness included. It bounds the noise given the arrivals and pauses from above, so the
//! test is conservative: a figure agrees when `|measured − simulated| ≤ K · σ · √2` (two runs,
//! each with an error of at most `σ`). A binomial standard error, or an order-statistic
//! interval from the lab's own sample, would not do: slow requests and hedges come in bursts
//! (every request that meets a paused server is slow at once), so they are not independent
//! draws, and the seeds' spread sees the bursts.
//!
//! Latencies may lie higher by the real overhead the model leaves out (the way to the server
//! and back, and the servers' timers firing late), which the lab measures on every answer:
//! the allowance is the 99th percentile of that overhead per user request, in scenario
//! milliseconds. A figure that does not vary (the extra load of `none`: 0) must match
//! exactly. A run that lost a copy or a request, or whose copies the servers' and the
//! clients' counts do not account for, is not comparable.
use herd_sim::figure::number;

use super::{Judgement, Verdict};
use crate::hedge::report::PolicyReport;

/// Standard errors a figure may stray from the simulated seeds' mean.
pub const K: f64 = 4.0;

/// Whether `measured` lies within `K · sd · √2` of `simulated`, plus `above` on the upper
/// side.
#[must_use]
fn within(measured: f64, simulated: f64, sd: f64, above: f64) -> bool {
    let band = K * sd * std::f64::consts::SQRT_2;
    measured >= simulated - band && measured <= simulated + band + above
}

/// Judges one policy's run.
#[must_use]
pub fn hedge(r: &PolicyReport) -> Judgement {
    let tolerance = format!(
        "tolerance: within {K}·√2 standard errors of the simulated run, the error from {} \
         seeds; latencies up to {} ms higher for the measured overhead",
        r.spread.runs,
        number(r.allowance_ms)
    );
    let a = &r.accounting;
    let mut lost = Vec::new();
    if a.failed > 0 {
        lost.push(format!("{} copies failed without an answer", a.failed));
    }
    if a.gave_up > 0 {
        lost.push(format!(
            "{} user requests gave up ({} still running at the time bound)",
            a.gave_up, a.unfinished
        ));
    }
    if a.duplicates > 0 || a.unexplained > 0 {
        lost.push(format!(
            "the servers' count does not account for the clients' copies ({} duplicates, {} \
             unexplained)",
            a.duplicates, a.unexplained
        ));
    }
    if a.sent != a.received + a.cancelled_before_arrival {
        lost.push(format!(
            "{} copies sent, {} received, {} cancelled before arrival",
            a.sent, a.received, a.cancelled_before_arrival
        ));
    }
    if !r.servers_settled {
        lost.push("the servers were still busy at the time bound".to_owned());
    }
    if !lost.is_empty() {
        return Judgement {
            verdict: Verdict::NotComparable,
            tolerance,
            reasons: lost,
        };
    }
    let mut reasons = Vec::new();
    let measured = r.measured.named();
    let simulated = r.simulated.named();
    let sd = r.spread.sd.named();
    for (((name, m), (_, sim)), (_, s)) in measured.iter().zip(simulated).zip(sd) {
        let above = if name.ends_with("ms") {
            r.allowance_ms
        } else {
            0.0
        };
        if !within(*m, sim, s, above) {
            reasons.push(format!(
                "{name} {}, simulated {} (σ {})",
                number(*m),
                number(sim),
                number(s)
            ));
        }
    }
    if !reasons.is_empty() {
        reasons.push(format!(
            "the real overhead per request reached {} ms at p99 (median {} ms): when that \
             is large beside the service time the machine did not keep up, and late answers \
             also send more hedges (raise --time-scale, or use a release build)",
            number(r.overhead_p99_real_ms),
            number(r.overhead_p50_real_ms)
        ));
    }
    Judgement::from_reasons(tolerance, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hedge::measure::{Accounting, HedgeFigures as Figures};
    use crate::hedge::report::Spread;

    fn report(measured: Figures, accounting: Accounting) -> PolicyReport {
        let simulated = Figures {
            p50_ms: 10.0,
            p99_ms: 60.0,
            p999_ms: 90.0,
            mean_ms: 15.0,
            extra_load_percent: 10.0,
        };
        let sd = Figures {
            p50_ms: 0.5,
            p99_ms: 5.0,
            p999_ms: 15.0,
            mean_ms: 0.7,
            extra_load_percent: 1.3,
        };
        PolicyReport {
            policy: "hedge".into(),
            seed: 1,
            time_scale: 1.0,
            measured_users: 1000,
            measured,
            order_intervals_ms: [(0.0, None); 3],
            servers_extra_load_percent: measured.extra_load_percent,
            simulated,
            spread: Spread {
                runs: 30,
                mean: simulated,
                sd,
            },
            overhead_p50_real_ms: 0.5,
            overhead_p99_real_ms: 2.0,
            allowance_ms: 2.0,
            accounting,
            first_error: None,
            servers_settled: true,
            real_s: 1.0,
            verdict: Judgement {
                verdict: Verdict::NotComparable,
                tolerance: String::new(),
                reasons: Vec::new(),
            },
        }
    }

    fn complete() -> Accounting {
        Accounting {
            user_requests: 1100,
            sub_requests: 1100,
            sent: 1210,
            received: 1205,
            answered: 1100,
            dropped_after_arrival: 105,
            cancelled_before_arrival: 5,
            ..Accounting::default()
        }
    }

    #[test]
    fn figures_within_the_band_agree_and_outside_differ() {
        let near = Figures {
            p50_ms: 11.5, // 1.5 above: within 4·√2·0.5 = 2.83 plus the 2 ms allowance
            p99_ms: 70.0,
            p999_ms: 100.0,
            mean_ms: 16.0,
            extra_load_percent: 12.0,
        };
        assert_eq!(hedge(&report(near, complete())).verdict, Verdict::Agrees);
        // Extra load 18 %: 8 above, beyond 4·√2·1.3 = 7.35, and no allowance on a count.
        let far = Figures {
            extra_load_percent: 18.0,
            ..near
        };
        let j = hedge(&report(far, complete()));
        assert_eq!(j.verdict, Verdict::Differs);
        assert!(
            j.reasons[0].starts_with("extra load % 18, simulated 10 (σ 1.3)"),
            "{:?}",
            j.reasons
        );
        // A latency 5 below: the allowance is above only.
        let low = Figures {
            p50_ms: 7.0,
            ..near
        };
        assert_eq!(hedge(&report(low, complete())).verdict, Verdict::Differs);
    }

    #[test]
    fn a_copy_unaccounted_for_or_a_request_that_gave_up_is_not_comparable() {
        let same = report(Figures::default(), complete()).simulated;
        let mut a = complete();
        a.received -= 1; // a copy sent that neither arrived nor was cancelled
        assert_eq!(hedge(&report(same, a)).verdict, Verdict::NotComparable);
        let mut a = complete();
        a.gave_up = 1;
        let j = hedge(&report(same, a));
        assert_eq!(j.verdict, Verdict::NotComparable);
        assert!(
            j.reasons[0].contains("1 user requests gave up"),
            "{:?}",
            j.reasons
        );
        let mut a = complete();
        a.duplicates = 1;
        assert_eq!(hedge(&report(same, a)).verdict, Verdict::NotComparable);
    }

    #[test]
    fn within_k_errors_and_the_allowance_above() {
        // σ = 1: the band is 4 · √2 = 5.66.
        assert!(within(15.6, 10.0, 1.0, 0.0));
        assert!(!within(15.7, 10.0, 1.0, 0.0));
        assert!(
            within(16.6, 10.0, 1.0, 1.0),
            "the overhead allowance is above only"
        );
        assert!(!within(4.3, 10.0, 1.0, 1.0));
        // No spread: exact.
        assert!(within(0.0, 0.0, 0.0, 0.0));
        assert!(!within(0.1, 0.0, 0.0, 0.0));
    }
}
