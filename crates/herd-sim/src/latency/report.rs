//! One policy's figures: the latency percentiles a user sees, and what they cost.
use serde::Serialize;

/// The result of one policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LatencyResult {
    /// The policy's name.
    pub policy: String,
    /// User requests measured (after the warm-up).
    pub user_requests: u64,
    /// Median user latency, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// 99.9th percentile, in milliseconds.
    pub p999_ms: f64,
    /// Mean user latency, in milliseconds.
    pub mean_ms: f64,
    /// Copies sent beyond one per sub-request, as a percentage of sub-requests.
    pub extra_load_percent: f64,
    /// Hedges a budget refused.
    pub hedges_refused: u64,
    /// Copies cancelled before they finished (in a queue or in service).
    pub cancelled: u64,
    /// Fraction of server time spent serving (wasted copies included), in percent.
    pub utilisation_percent: f64,
}

/// The nearest-rank `q`-quantile of `sorted`: the value of rank `ceil(q · n)`, exact (0 for
/// an empty sample). Public so that a measurement (`herd lab hedge`) takes its percentiles as
/// the simulator does.
#[must_use]
pub fn nearest_rank(sorted: &[u64], q_per_mille: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len() as u64;
    let rank = (n * q_per_mille).div_ceil(1000).clamp(1, n);
    sorted[(rank - 1) as usize]
}

impl LatencyResult {
    pub(crate) fn new(
        policy: String,
        latencies: &mut [u64],
        subs: u64,
        copies: u64,
        hedges_refused: u64,
        cancelled: u64,
        utilisation: f64,
    ) -> Self {
        latencies.sort_unstable();
        let ms = |ns: u64| ns as f64 / 1e6;
        let n = latencies.len() as u64;
        let mean = if n == 0 {
            0.0
        } else {
            latencies.iter().map(|&l| u128::from(l)).sum::<u128>() as f64 / n as f64 / 1e6
        };
        Self {
            policy,
            user_requests: n,
            p50_ms: ms(nearest_rank(latencies, 500)),
            p99_ms: ms(nearest_rank(latencies, 990)),
            p999_ms: ms(nearest_rank(latencies, 999)),
            mean_ms: mean,
            extra_load_percent: if subs == 0 {
                0.0
            } else {
                (copies - subs) as f64 * 100.0 / subs as f64
            },
            hedges_refused,
            cancelled,
            utilisation_percent: utilisation * 100.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::nearest_rank;

    #[test]
    fn nearest_rank_is_exact() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&v, 500), 500);
        assert_eq!(nearest_rank(&v, 999), 999);
        assert_eq!(nearest_rank(&v[..10], 999), 10);
        assert_eq!(nearest_rank(&v[..10], 500), 5);
        assert_eq!(nearest_rank(&[], 500), 0);
    }
}
