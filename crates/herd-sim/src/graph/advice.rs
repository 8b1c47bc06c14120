//! Amplification at the failing services, and which single layer should retry.

use super::checked::Graph;
use super::error::GraphError;
use super::exact::{Prediction, predict};
use super::odds::Options;

/// How much retries multiply the load on one failing service.
#[derive(Clone, Debug, PartialEq)]
pub struct Amplification {
    /// Index of the failing service.
    pub service: usize,
    /// Expected requests it receives per entry request, with the graph's retries.
    pub receives: f64,
    /// Expected requests it would receive with no retry anywhere (every edge 1 attempt).
    pub without_retries: f64,
}

impl Amplification {
    /// `receives / without_retries`, or `None` when it would receive nothing without retries.
    #[must_use]
    pub fn factor(&self) -> Option<f64> {
        (self.without_retries > 0.0).then(|| self.receives / self.without_retries)
    }
}

/// Amplification at every service marked `fails = true`, in file order.
///
/// # Errors
///
/// As [`predict`].
pub fn amplification(
    graph: &Graph,
    prediction: &Prediction,
    options: Options,
) -> Result<Vec<Amplification>, GraphError> {
    let baseline = predict(&graph.with_attempts(|_, _| 1), options)?;
    Ok(graph
        .services()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.fails)
        .map(|(i, _)| Amplification {
            service: i,
            receives: prediction.receives[i],
            without_retries: baseline.receives[i],
        })
        .collect())
}

/// Retry in one place only: on the edges where failures start.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The edges that keep retrying, as `(caller, callee)` indices.
    pub retry_on: Vec<(usize, usize)>,
    /// Attempts on those edges: the largest attempts the graph already configures anywhere.
    pub attempts: u32,
    /// The advised graph (every other edge at 1 attempt).
    pub graph: Graph,
    /// Its expected counts, with classic (not layer-aware) retries.
    pub prediction: Prediction,
}

/// Which layer should be the only one to retry, and the counts then.
///
/// The layer nearest the failure: every edge into a service marked `fails = true`, and every
/// edge with its own `failure_probability > 0`, keeps retrying (with the largest attempts the
/// graph configures anywhere); every other edge makes one attempt. A failure is then retried
/// once, where it happens, instead of once per layer above it.
///
/// # Errors
///
/// As [`predict`].
pub fn advise(graph: &Graph) -> Result<Advice, GraphError> {
    let services = graph.services();
    let keeps = |c: &super::model::Call| services[c.to].fails || c.failure_probability > 0.0;
    let attempts = graph.max_attempts();
    let mut retry_on: Vec<(usize, usize)> = graph
        .edges()
        .filter(|(_, c)| keeps(c) && attempts > 1)
        .map(|(s, c)| (s, c.to))
        .collect();
    retry_on.dedup();
    let advised = graph.with_attempts(|_, c| if keeps(c) { attempts } else { 1 });
    let prediction = predict(&advised, Options::default())?;
    Ok(Advice {
        retry_on,
        attempts,
        graph: advised,
        prediction,
    })
}
