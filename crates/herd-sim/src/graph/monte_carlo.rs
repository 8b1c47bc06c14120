//! Running the graph with random failures, request by request, to check the exact figures.
//!
//! Every call is an independent execution of the callee's subtree, exactly as in the exact
//! model; the only state shared between requests is each budgeted edge's token bucket.
//! Draws come from one [`SplitMix64`] seeded by the caller, so a run is reproducible.

use std::sync::Arc;

use herd::budget::{Budget, RetryPermit};
use herd::clock::FakeClock;
use herd::rng::{Rng, SplitMix64};
use herd::throttle::EnvoyRetryLimit;

use super::checked::Graph;
use super::error::GraphError;
use super::exact::{Exactness, Prediction};
use super::odds::Options;
use super::stationary::fraction;

/// The most calls a simulation may make in all (expected), to keep runs bounded.
pub const MAX_SIMULATED_CALLS: f64 = 2e8;

/// Measured requests per entry request for one service.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedService {
    /// Sample mean of the requests the service received per entry request.
    pub mean: f64,
    /// Standard error of that mean: sample standard deviation / √N when requests are
    /// independent (no budget), else by batch means (the spread of [`BATCHES`] consecutive
    /// batches' means / √batches), since a bucket's state carries from one request to the
    /// next and makes successive requests' counts correlated.
    pub std_error: f64,
}

/// The result of a Monte Carlo run.
#[derive(Clone, Debug, PartialEq)]
pub struct MonteCarlo {
    /// Entry requests simulated.
    pub requests: u64,
    /// Seed of the generator.
    pub seed: u64,
    /// Per service, indexed like [`Graph::services`].
    pub services: Vec<SimulatedService>,
    /// Fraction of entry requests whose answer failed.
    pub entry_failed: f64,
    /// Whether the standard errors are by batch means.
    pub batched: bool,
}

/// How many standard errors a simulated mean may stray from the prediction before the two
/// are said to differ (a two-sided chance of about 6 in 100 000 per service for a normal
/// mean).
pub const Z: f64 = 4.0;

/// The z a test compares at so that `comparisons` comparisons together fail by chance with
/// probability at most `false_failure` (Bonferroni: each at `false_failure / comparisons`,
/// two-sided), for a mean whose standard error is estimated from `degrees_of_freedom`
/// (Student's t, by its Cornish–Fisher expansion; `None` for a standard error known or
/// estimated from so many samples that the normal law holds).
///
/// The normal tail is that of a mean of many requests (the central limit theorem); a test
/// with few, heavy-tailed samples needs more than this.
///
/// # Examples
///
/// ```
/// use herd_sim::graph::z_limit;
/// assert!((z_limit(1e-6, 1, None) - 4.892).abs() < 1e-3);
/// assert!(z_limit(1e-6, 100, Some(49)) > z_limit(1e-6, 100, None));
/// ```
#[must_use]
pub fn z_limit(false_failure: f64, comparisons: usize, degrees_of_freedom: Option<u32>) -> f64 {
    let each = false_failure / comparisons.max(1) as f64;
    // Bisection on the two-sided tail 2·Q(z) = erfc(z/√2), which falls with z.
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if erfc(mid / std::f64::consts::SQRT_2) > each {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let z = 0.5 * (lo + hi);
    match degrees_of_freedom {
        None => z,
        Some(v) => {
            let v = f64::from(v.max(1));
            let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
            z + (z3 + z) / (4.0 * v)
                + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
                + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v * v * v)
        }
    }
}

/// The complementary error function, with a relative error below 1.2·10⁻⁷ (Press et al.,
/// *Numerical Recipes*, `erfcc`, a Chebyshev fit).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Consecutive batches for the batch-means standard error of graphs with budgets.
pub const BATCHES: u64 = 50;

impl MonteCarlo {
    /// Whether every service's mean lies within [`tolerance`] of `prediction`.
    #[must_use]
    pub fn agrees_with(&self, prediction: &Prediction) -> bool {
        self.agrees_within(prediction, Z)
    }

    /// Whether every service's mean lies within `z` standard errors of `prediction` (with
    /// the floor and the stated errors of [`tolerance`]).
    #[must_use]
    pub fn agrees_within(&self, prediction: &Prediction, z: f64) -> bool {
        let known = known_error(prediction);
        self.services
            .iter()
            .zip(&prediction.receives)
            .all(|(s, &want)| {
                (s.mean - want).abs() <= tolerance_at(z, s.std_error, want, self.requests, known)
            })
    }

    /// Degrees of freedom of the standard errors: `BATCHES − 1` with batch means, else
    /// `None` (the requests' own spread, from as many samples as requests).
    #[must_use]
    pub fn degrees_of_freedom(&self) -> Option<u32> {
        self.batched.then_some(BATCHES as u32 - 1)
    }
}

/// The prediction's own stated error: 0 when exact, the truncation error of the stationary
/// computation, and 0 for an approximation (whose error is what the comparison shows).
#[must_use]
pub fn known_error(prediction: &Prediction) -> f64 {
    match prediction.exactness {
        Exactness::Stationary {
            truncation_error, ..
        } => truncation_error,
        _ => 0.0,
    }
}

/// The tolerance used by [`MonteCarlo::agrees_with`] (and by `herd lab chain`, which
/// measures a real chain against the same prediction): [`Z`] standard errors, the standard
/// error floored at `1 / requests` (one request more or less; a run that never saw a rare
/// event has a sample spread of 0), plus the prediction's stated error and float rounding
/// (`1e-9 · (1 + expected)`). No fixed percentage.
#[must_use]
pub fn tolerance(std_error: f64, expected: f64, requests: u64, known: f64) -> f64 {
    tolerance_at(Z, std_error, expected, requests, known)
}

/// [`tolerance`] at `z` standard errors instead of [`Z`].
#[must_use]
pub fn tolerance_at(z: f64, std_error: f64, expected: f64, requests: u64, known: f64) -> f64 {
    z * std_error.max(1.0 / requests.max(1) as f64) + known + 1e-9 * (1.0 + expected)
}

/// How an answer came back in one simulated execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Ok,
    Failed { marked: bool },
}

struct Run<'g, R> {
    graph: &'g Graph,
    options: Options,
    rng: R,
    /// Tokens per edge, indexed [service][call], in units (see [`units`]).
    tokens: Vec<Vec<f64>>,
    /// Per edge, `(deposit, price)` in units: `(m, den)` for a budget `β = m / den`, so
    /// that the bucket counts exactly; `None` without a budget.
    units: Vec<Vec<Option<(f64, f64)>>>,
    /// Requests received per service during the current entry request.
    counts: Vec<u64>,
    /// `[retry.throttle]`, one per edge, indexed [service][call] (empty without one).
    throttles: Vec<Vec<EdgeThrottle>>,
}

/// One edge's throttle: the library's type as a retry loop uses it (its `Budget` interface),
/// and Envoy's limit, whose active requests are the edge's attempts in flight.
struct EdgeThrottle {
    budget: Arc<dyn Budget>,
    envoy: Option<EnvoyRetryLimit>,
}

impl<R: Rng> Run<'_, R> {
    fn execute(&mut self, s: usize) -> Answer {
        self.counts[s] += 1;
        let graph = self.graph;
        let service = &graph.services()[s];
        if service.fails {
            return Answer::Failed { marked: false };
        }
        let mut answer = Answer::Ok;
        for (i, call) in service.calls.iter().enumerate() {
            let budget = self.units[s][i];
            if let Some((deposit, _)) = budget {
                self.tokens[s][i] += deposit;
            }
            let throttle = self.throttles.get(s).map(|t| {
                let t = &t[i];
                (t.budget.clone(), t.envoy.clone())
            });
            if let Some((b, _)) = &throttle {
                b.on_request();
            }
            // The permit of the retry under way (a throttle's), released by its answer.
            let mut permit: Option<RetryPermit> = None;
            let mut result;
            let mut attempt = 1;
            loop {
                let active = throttle
                    .as_ref()
                    .and_then(|(_, e)| e.as_ref().map(EnvoyRetryLimit::start_request));
                let callee = self.execute(call.to);
                drop(active);
                let p = call.failure_probability;
                let lost = p > 0.0 && self.rng.next_f64() < p;
                result = if lost {
                    Answer::Failed { marked: false }
                } else {
                    callee
                };
                if let Some((b, _)) = &throttle {
                    if result == Answer::Ok {
                        b.on_success();
                        if let Some(p) = permit.take() {
                            p.succeeded();
                        }
                    } else {
                        b.on_failure();
                        permit = None;
                    }
                }
                match result {
                    Answer::Ok => break,
                    Answer::Failed { marked: true } if self.options.layer_aware => break,
                    Answer::Failed { .. } => {}
                }
                if attempt >= call.attempts {
                    break;
                }
                if let Some((_, price)) = budget {
                    if self.tokens[s][i] < price {
                        break;
                    }
                    self.tokens[s][i] -= price;
                }
                if let Some((b, _)) = &throttle {
                    match b.try_retry_permit() {
                        Some(p) => permit = Some(p),
                        None => break,
                    }
                }
                attempt += 1;
            }
            if let Answer::Failed { marked } = result {
                // The layer marks a failure it gives up on after being allowed to retry.
                let marked = self.options.layer_aware && (marked || call.attempts >= 2);
                answer = match answer {
                    Answer::Failed { marked: m } => Answer::Failed {
                        marked: m || marked,
                    },
                    Answer::Ok => Answer::Failed { marked },
                };
            }
        }
        answer
    }
}

/// A budget's deposit and price in whole units when it is a small fraction (so that ten
/// deposits of 10 % make exactly one token), else in tokens.
fn units(percent: f64) -> Option<(f64, f64)> {
    (percent > 0.0).then(|| match fraction(percent) {
        Some((m, den)) => (m as f64, den as f64),
        None => (percent / 100.0, 1.0),
    })
}

/// Simulates `requests` entry requests with random failures.
///
/// # Errors
///
/// A [`GraphError`] when `requests` is 0, or when the run would make more than
/// [`MAX_SIMULATED_CALLS`] calls in expectation (`expected` is the exact prediction).
pub fn simulate(
    graph: &Graph,
    options: Options,
    expected: &Prediction,
    requests: u64,
    seed: u64,
) -> Result<MonteCarlo, GraphError> {
    if requests < BATCHES {
        // Fewer requests than batches leave batches empty: the standard errors would be
        // zero, and any simulated mean would "agree" within the floor of one request.
        return Err(GraphError(format!(
            "--simulate must be at least {BATCHES} (the standard errors come from {BATCHES} \
             batches of requests), got {requests}"
        )));
    }
    let calls = expected.total() * requests as f64;
    if calls > MAX_SIMULATED_CALLS {
        return Err(GraphError(format!(
            "--simulate {requests} would make about {calls:.3e} calls; at most \
             {MAX_SIMULATED_CALLS:.0e}"
        )));
    }
    let n = graph.services().len();
    let mut run = Run {
        graph,
        options,
        rng: SplitMix64::new(seed),
        tokens: graph
            .services()
            .iter()
            .map(|s| vec![0.0; s.calls.len()])
            .collect(),
        units: graph
            .services()
            .iter()
            .map(|s| s.calls.iter().map(|c| units(c.budget_percent)).collect())
            .collect(),
        counts: vec![0; n],
        // A throttle's clock stands still: the graph has no time, so its windows hold the
        // whole run.
        throttles: graph.throttle().map_or_else(Vec::new, |spec| {
            let clock = FakeClock::new();
            graph
                .services()
                .iter()
                .map(|s| {
                    s.calls
                        .iter()
                        .map(|_| {
                            let (budget, envoy) = spec.budget(&clock);
                            EdgeThrottle { budget, envoy }
                        })
                        .collect()
                })
                .collect()
        }),
    };
    let budgets = graph.throttle().is_some() || graph.edges().any(|(_, c)| c.budget_percent > 0.0);
    let batches = if budgets && requests >= 10 * BATCHES {
        BATCHES
    } else {
        1
    };
    // Request r belongs to batch ⌊r · batches / requests⌋: batches of near-equal size.
    let batch_of = |r: u64| (u128::from(r) * u128::from(batches) / u128::from(requests)) as u64;
    let mut in_batch = 0u64;
    let mut sum = vec![0.0f64; n];
    let mut sum_sq = vec![0.0f64; n];
    let mut batch_sum = vec![0.0f64; n];
    let mut batch_means: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut failed = 0u64;
    for r in 0..requests {
        run.counts.iter_mut().for_each(|c| *c = 0);
        if run.execute(graph.entry()) != Answer::Ok {
            failed += 1;
        }
        for (i, &c) in run.counts.iter().enumerate() {
            let c = c as f64;
            sum[i] += c;
            sum_sq[i] += c * c;
            batch_sum[i] += c;
        }
        in_batch += 1;
        if r + 1 == requests || batch_of(r + 1) != batch_of(r) {
            for i in 0..n {
                batch_means[i].push(batch_sum[i] / in_batch as f64);
                batch_sum[i] = 0.0;
            }
            in_batch = 0;
        }
    }
    let count = requests as f64;
    let services = (0..n)
        .map(|i| {
            let (s, sq) = (sum[i], sum_sq[i]);
            let mean = s / count;
            let std_error = if batches > 1 {
                let b = &batch_means[i];
                let k = b.len() as f64;
                let m = b.iter().sum::<f64>() / k;
                let var = b.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (k - 1.0);
                (var / k).sqrt()
            } else if requests > 1 {
                (((sq - s * mean) / (count - 1.0)).max(0.0) / count).sqrt()
            } else {
                0.0
            };
            SimulatedService { mean, std_error }
        })
        .collect();
    Ok(MonteCarlo {
        requests,
        seed,
        services,
        entry_failed: failed as f64 / count,
        batched: batches > 1,
    })
}
