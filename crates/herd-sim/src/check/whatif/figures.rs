//! The figures of one run, over the requests that arrived while the fault lasted.
use serde::Serialize;

use super::run::{BIN_NS, Plan, Trace};

/// Width of the windows `recovered_s` is judged on.
const RECOVERY_WINDOW_NS: u64 = 1_000_000_000;
/// Goodput within this share of normal is recovered.
const RECOVERED_WITHIN: f64 = 0.05;

/// What one fault does to one policy (or call path), over the requests that arrived while
/// it lasted. The standard errors treat those requests as independent draws: exact for a
/// brownout without a throttle, a guide otherwise.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Figures {
    /// Requests that arrived while the fault lasted.
    pub requests: u64,
    /// The share of them that finally succeeded, 0–1.
    pub goodput: f64,
    /// Its standard error, `√(g(1 − g)/n)`.
    pub goodput_se: f64,
    /// Attempts they sent to the failing backend, per request.
    pub amplification: f64,
    /// Its standard error (sample standard deviation over `√n`).
    pub amplification_se: f64,
    /// The most attempts the backend received in any second from the fault's start on,
    /// over its normal capacity per second.
    pub peak_load: f64,
    /// Seconds after the fault ended until every later second's requests succeed within 5 %
    /// of normal goodput; `None` when the run's last second is still below.
    pub recovered_s: Option<f64>,
    /// The median time from a request's arrival to its final answer (retries included), ms.
    pub p50_ms: Option<f64>,
    /// The 99th percentile of the same, ms.
    pub p99_ms: Option<f64>,
    /// Goodput of the requests answered before the fault began.
    pub normal_goodput: f64,
}

fn nearest_rank(sorted: &[u64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1] as f64 / 1e6)
}

/// The figures of `trace`, run under `plan`, against a backend of `capacity_rps`.
pub(crate) fn of(trace: &Trace, plan: &Plan, capacity_rps: f64) -> Figures {
    let during: Vec<_> = trace
        .requests
        .iter()
        .filter(|r| (plan.start_ns..plan.end_ns).contains(&r.arrival_ns))
        .collect();
    let n = during.len() as f64;
    let ok = during.iter().filter(|r| r.ok).count() as f64;
    let goodput = if n > 0.0 { ok / n } else { 1.0 };
    let mean = during.iter().map(|r| f64::from(r.attempts)).sum::<f64>() / n.max(1.0);
    let var = if n > 1.0 {
        during
            .iter()
            .map(|r| (f64::from(r.attempts) - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0)
    } else {
        0.0
    };
    let mut latencies: Vec<u64> = during.iter().map(|r| r.done_ns - r.arrival_ns).collect();
    latencies.sort_unstable();
    // Normal: the requests that were answered before the fault began.
    let before: Vec<_> = trace
        .requests
        .iter()
        .filter(|r| r.done_ns < plan.start_ns)
        .collect();
    let normal_goodput = if before.is_empty() {
        1.0
    } else {
        before.iter().filter(|r| r.ok).count() as f64 / before.len() as f64
    };
    // Peak: the most attempts in any second (ten bins) from the fault's start on.
    let first_bin = (plan.start_ns / BIN_NS) as usize;
    let per_second = (1_000_000_000 / BIN_NS) as usize;
    let series = &trace.series;
    let mut peak = 0u64;
    let mut i = first_bin;
    while i < series.len() {
        let end = (i + per_second).min(series.len());
        peak = peak.max(series[i..end].iter().sum());
        i += 1;
    }
    Figures {
        requests: during.len() as u64,
        goodput,
        goodput_se: if n > 0.0 {
            (goodput * (1.0 - goodput) / n).sqrt()
        } else {
            0.0
        },
        amplification: mean,
        amplification_se: (var / n.max(1.0)).sqrt(),
        peak_load: peak as f64 / capacity_rps,
        recovered_s: recovered_s(trace, plan, normal_goodput),
        p50_ms: nearest_rank(&latencies, 0.5),
        p99_ms: nearest_rank(&latencies, 0.99),
        normal_goodput,
    }
}

/// Seconds from the fault's end to the start of the first one-second window (of arrival
/// times) from which every later window's goodput is within 5 % of normal.
fn recovered_s(trace: &Trace, plan: &Plan, normal: f64) -> Option<f64> {
    let windows =
        (plan.horizon_ns.saturating_sub(plan.end_ns)).div_ceil(RECOVERY_WINDOW_NS) as usize;
    if windows == 0 {
        return None;
    }
    let mut counts = vec![(0u64, 0u64); windows];
    for r in trace
        .requests
        .iter()
        .filter(|r| r.arrival_ns >= plan.end_ns)
    {
        let w = ((r.arrival_ns - plan.end_ns) / RECOVERY_WINDOW_NS) as usize;
        if let Some(c) = counts.get_mut(w) {
            c.0 += 1;
            c.1 += u64::from(r.ok);
        }
    }
    let bad =
        |&(n, ok): &(u64, u64)| n > 0 && (ok as f64) < (1.0 - RECOVERED_WITHIN) * normal * n as f64;
    match counts.iter().rposition(bad) {
        None => Some(0.0),
        Some(last) if last + 1 < windows => Some((last + 1) as f64),
        Some(_) => None,
    }
}
