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

/// The tail of `sorted` latencies (ns, ascending): at `points + 1` shares spaced evenly on a
/// log scale from 1 down to `1/n`, the latency (ms) that share of requests reaches or
/// exceeds, as `[ms, share]`, each point once. Exact for the sample: each point is one
/// measured latency. Public so that the page and `herd hedge --chart` draw the same curve.
#[must_use]
pub fn tail(sorted: &[u64], points: usize) -> Vec<[f64; 2]> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let decades = (n as f64).log10();
    let steps = points.max(1);
    let mut tail: Vec<[f64; 2]> = Vec::with_capacity(steps + 1);
    let mut last = usize::MAX;
    for k in 0..=steps {
        let share = 10f64.powf(-decades * k as f64 / steps as f64);
        // The index whose latency at least `at_least` requests reach.
        let at_least = ((share * n as f64).round() as usize).clamp(1, n);
        let i = n - at_least;
        if i != last {
            last = i;
            tail.push([sorted[i] as f64 / 1e6, at_least as f64 / n as f64]);
        }
    }
    tail
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
    #[test]
    fn the_tail_runs_from_everyone_to_the_slowest_request() {
        let sorted: Vec<u64> = (1..=1000).map(|i| i * 1_000_000).collect();
        let points = super::tail(&sorted, 160);
        assert_eq!(
            points[0],
            [1.0, 1.0],
            "every request takes at least the fastest"
        );
        assert_eq!(*points.last().expect("points"), [1000.0, 0.001]);
        // The p99 point: 10 requests of 1000 take 991 ms or more.
        assert!(points.contains(&[991.0, 0.01]), "{points:?}");
        assert!(
            points
                .windows(2)
                .all(|w| w[0][0] < w[1][0] && w[0][1] > w[1][1])
        );
    }

    #[test]
    fn one_request_is_one_point() {
        assert_eq!(super::tail(&[5_000_000], 160), vec![[5.0, 1.0]]);
        assert!(super::tail(&[], 160).is_empty());
    }

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
