//! Running the graph with random failures, request by request, to check the exact figures.
//!
//! Every call is an independent execution of the callee's subtree, exactly as in the exact
//! model; the only state shared between requests is each budgeted edge's token bucket.
//! Draws come from one [`SplitMix64`] seeded by the caller, so a run is reproducible.

use herd::rng::{Rng, SplitMix64};

use super::exact::{Options, Prediction};
use super::file::GraphError;
use super::model::Graph;

/// The most calls a simulation may make in all (expected), to keep runs bounded.
pub const MAX_SIMULATED_CALLS: f64 = 2e8;

/// Measured requests per entry request for one service.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedService {
    /// Sample mean of the requests the service received per entry request.
    pub mean: f64,
    /// Standard error of that mean (sample standard deviation / √N).
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
}

impl MonteCarlo {
    /// Whether every service's mean lies within the tolerance of `prediction`:
    /// `5 · std_error + 1e-9 · (1 + expected)`, plus `slack · (1 + expected)` for graphs with
    /// budgets (whose exact figure is the long-run limit of the token bucket).
    #[must_use]
    pub fn agrees_with(&self, prediction: &Prediction, slack: f64) -> bool {
        self.services
            .iter()
            .zip(&prediction.receives)
            .all(|(s, &want)| (s.mean - want).abs() <= tolerance(s, want, slack))
    }
}

/// The tolerance used by [`MonteCarlo::agrees_with`].
#[must_use]
pub fn tolerance(s: &SimulatedService, expected: f64, slack: f64) -> f64 {
    5.0 * s.std_error + (1e-9 + slack) * (1.0 + expected)
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
    /// Tokens per edge, indexed [service][call].
    tokens: Vec<Vec<f64>>,
    /// Requests received per service during the current entry request.
    counts: Vec<u64>,
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
            let budget = call.budget_percent / 100.0;
            if budget > 0.0 {
                self.tokens[s][i] += budget;
            }
            let mut result;
            let mut attempt = 1;
            loop {
                let callee = self.execute(call.to);
                let p = call.failure_probability;
                let lost = p > 0.0 && self.rng.next_f64() < p;
                result = if lost {
                    Answer::Failed { marked: false }
                } else {
                    callee
                };
                match result {
                    Answer::Ok => break,
                    Answer::Failed { marked: true } if self.options.layer_aware => break,
                    Answer::Failed { .. } => {}
                }
                if attempt >= call.attempts {
                    break;
                }
                if budget > 0.0 {
                    if self.tokens[s][i] < 1.0 {
                        break;
                    }
                    self.tokens[s][i] -= 1.0;
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
    if requests == 0 {
        return Err(GraphError("--simulate must be at least 1".to_owned()));
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
        counts: vec![0; n],
    };
    let mut sum = vec![0.0f64; n];
    let mut sum_sq = vec![0.0f64; n];
    let mut failed = 0u64;
    for _ in 0..requests {
        run.counts.iter_mut().for_each(|c| *c = 0);
        if run.execute(graph.entry()) != Answer::Ok {
            failed += 1;
        }
        for (i, &c) in run.counts.iter().enumerate() {
            let c = c as f64;
            sum[i] += c;
            sum_sq[i] += c * c;
        }
    }
    let count = requests as f64;
    let services = sum
        .iter()
        .zip(&sum_sq)
        .map(|(&s, &sq)| {
            let mean = s / count;
            let variance = if requests > 1 {
                ((sq - s * mean) / (count - 1.0)).max(0.0)
            } else {
                0.0
            };
            SimulatedService {
                mean,
                std_error: (variance / count).sqrt(),
            }
        })
        .collect();
    Ok(MonteCarlo {
        requests,
        seed,
        services,
        entry_failed: failed as f64 / count,
    })
}
