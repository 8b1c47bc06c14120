//! From what each user request saw to the figures: percentiles by nearest rank, extra load
//! on both sides of the wire, and the accounting of every copy.
use std::sync::atomic::Ordering;

use herd_sim::latency::nearest_rank;
use serde::Serialize;

use super::clients::{CopyLedger, fate};
use super::server::Ledger;

/// The figures compared with the simulator, in the scenario's milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HedgeFigures {
    /// Median user latency.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Mean user latency.
    pub mean_ms: f64,
    /// Copies sent beyond one per sub-request, per sub-request, in percent.
    pub extra_load_percent: f64,
}

impl HedgeFigures {
    /// The figures of one simulated run.
    #[must_use]
    pub fn of(r: &herd_sim::latency::LatencyResult) -> Self {
        Self {
            p50_ms: r.p50_ms,
            p99_ms: r.p99_ms,
            p999_ms: r.p999_ms,
            mean_ms: r.mean_ms,
            extra_load_percent: r.extra_load_percent,
        }
    }

    /// The figures by name, in order, for the verdict and the table.
    #[must_use]
    pub fn named(&self) -> [(&'static str, f64); 5] {
        [
            ("p50 ms", self.p50_ms),
            ("p99 ms", self.p99_ms),
            ("p99.9 ms", self.p999_ms),
            ("mean ms", self.mean_ms),
            ("extra load %", self.extra_load_percent),
        ]
    }
}

/// Every copy, accounted for. The clients' count and the servers' must agree exactly:
/// `sent = received + cancelled_before_arrival`, with no copy received twice and none the
/// clients did not send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Accounting {
    /// User requests started.
    pub user_requests: u64,
    /// Sub-requests (user requests × fan-out).
    pub sub_requests: u64,
    /// Copies the clients handed to the HTTP client.
    pub sent: u64,
    /// Copies the servers received, by their own count.
    pub received: u64,
    /// Copies answered.
    pub answered: u64,
    /// Copies dropped by the hedge after they reached their server (served as wasted work).
    pub dropped_after_arrival: u64,
    /// Copies dropped by the hedge before they reached their server.
    pub cancelled_before_arrival: u64,
    /// Copies that failed without an answer (transport errors, or not 200).
    pub failed: u64,
    /// Keys a server received more than once (a copy resent behind the clients' back).
    pub duplicates: u64,
    /// Copies a server received that the clients never sent, or answered copies no server
    /// counted: both impossible unless the accounting is wrong.
    pub unexplained: u64,
    /// User requests that ended without an answer to every sub-request.
    pub gave_up: u64,
    /// User requests still running at the wall-clock bound (counted in `gave_up` too).
    pub unfinished: u64,
}

impl Accounting {
    /// Whether every copy is accounted for and every user request answered.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.sent == self.received + self.cancelled_before_arrival
            && self.duplicates == 0
            && self.unexplained == 0
            && self.failed == 0
            && self.gave_up == 0
    }
}

/// Tallies both ledgers, key by key.
pub(crate) fn account(
    clients: &CopyLedger,
    servers: &Ledger,
    user_requests: u64,
    fan_out: u32,
) -> Accounting {
    let mut a = Accounting {
        user_requests,
        sub_requests: user_requests * u64::from(fan_out),
        received: servers.total(),
        ..Accounting::default()
    };
    for (fate, received) in clients.fates.iter().zip(&servers.received) {
        let fate = fate.load(Ordering::Acquire);
        let received = u64::from(received.load(Ordering::Acquire));
        if received > 1 {
            a.duplicates += received - 1;
        }
        match fate {
            fate::NONE => a.unexplained += received,
            fate::ANSWERED => {
                a.sent += 1;
                a.answered += 1;
                if received == 0 {
                    a.unexplained += 1;
                }
            }
            fate::DROPPED | fate::SENT => {
                a.sent += 1;
                if received == 0 {
                    a.cancelled_before_arrival += 1;
                } else {
                    a.dropped_after_arrival += 1;
                }
            }
            _ => {
                a.sent += 1;
                a.failed += 1;
                if received == 0 {
                    a.cancelled_before_arrival += 1;
                }
            }
        }
    }
    a.unexplained += servers.bad_keys.load(Ordering::Acquire);
    a
}

/// A distribution-free 95 % interval for the `q`-quantile (per mille) of the law `sorted` was
/// drawn from, by order statistics: the values of ranks `n·q ∓ 1.96·√(n·q·(1 − q))`, the
/// upper end `None` when that rank is past the sample (too few requests to bound it). It
/// treats the requests as independent draws, which bursts of slow requests are not; the
/// report shows it beside the seeds' spread for that reason, and judges by the spread.
pub(crate) fn order_interval(
    sorted: &[u64],
    per_mille: u64,
    time_scale: f64,
) -> (f64, Option<f64>) {
    let n = sorted.len() as f64;
    if sorted.is_empty() {
        return (0.0, None);
    }
    let q = per_mille as f64 / 1000.0;
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let ms = |ns: u64| ns as f64 / 1e6 / time_scale;
    let lo = ((n * q - half).floor().max(1.0)) as usize;
    let hi = (n * q + half).ceil() as usize;
    (
        ms(sorted[lo.min(sorted.len()) - 1]),
        (hi <= sorted.len()).then(|| ms(sorted[hi.max(1) - 1])),
    )
}

/// Latency figures from the measured users' latencies (real nanoseconds), in scenario ms.
pub(crate) fn latency_figures(latencies: &mut [u64], time_scale: f64) -> HedgeFigures {
    latencies.sort_unstable();
    let ms = |ns: u64| ns as f64 / 1e6 / time_scale;
    let n = latencies.len().max(1) as f64;
    HedgeFigures {
        p50_ms: ms(nearest_rank(latencies, 500)),
        p99_ms: ms(nearest_rank(latencies, 990)),
        p999_ms: ms(nearest_rank(latencies, 999)),
        mean_ms: latencies.iter().map(|&l| l as f64).sum::<f64>() / n / 1e6 / time_scale,
        extra_load_percent: 0.0,
    }
}

/// Copies beyond one per sub-request, per sub-request, in percent.
pub(crate) fn extra_percent(copies: u64, subs: u64) -> f64 {
    if subs == 0 {
        0.0
    } else {
        (copies as f64 - subs as f64) * 100.0 / subs as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistic_intervals_bound_the_median_and_not_a_far_tail() {
        let v: Vec<u64> = (1..=1000).map(|i| i * 1_000_000).collect();
        // n·q = 500, half-width 1.96·√250 = 31: ranks 469 and 531.
        assert_eq!(order_interval(&v, 500, 1.0), (469.0, Some(531.0)));
        // p99.9 of 1000: rank 999 ± 1.96·√0.999, the upper rank 1001 is past the sample.
        assert_eq!(order_interval(&v, 999, 1.0), (997.0, None));
    }

    #[test]
    fn every_copy_is_accounted_for() {
        let clients = CopyLedger::new(6);
        let servers = super::super::server::tests::ledger(6, 1);
        let fates = [
            fate::ANSWERED,
            fate::DROPPED,
            fate::DROPPED,
            fate::NONE,
            fate::ANSWERED,
            fate::NONE,
        ];
        let received = [1, 1, 0, 0, 1, 0];
        for (i, (&f, &r)) in fates.iter().zip(&received).enumerate() {
            clients.fates[i].store(f, Ordering::Relaxed);
            servers.received[i].store(r, Ordering::Relaxed);
        }
        servers.per_server[0].store(3, Ordering::Relaxed);
        let a = account(&clients, &servers, 2, 1);
        assert_eq!((a.sent, a.received, a.cancelled_before_arrival), (4, 3, 1));
        assert_eq!((a.answered, a.dropped_after_arrival), (2, 1));
        assert!(a.is_complete(), "{a:?}");
        // A copy received twice, or one nobody sent, breaks the accounting.
        servers.received[0].store(2, Ordering::Relaxed);
        servers.received[5].store(1, Ordering::Relaxed);
        servers.per_server[0].store(5, Ordering::Relaxed);
        let a = account(&clients, &servers, 2, 1);
        assert_eq!((a.duplicates, a.unexplained), (1, 1));
        assert!(!a.is_complete());
    }
}
