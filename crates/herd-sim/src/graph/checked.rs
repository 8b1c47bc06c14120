//! The validated graph: services, their calls, the entry, and a topological order.
//!
//! A [`Graph`] can only be built through [`Graph::from_toml`](crate::graph::Graph::from_toml)
//! or [`Graph::new`], which validate once; every other part of the module relies on that.

use super::error::GraphError;
use super::model::{Call, MAX_ATTEMPTS, Service};
use super::validate;

/// A validated service graph: names unique, callees known, no cycle, every service reachable
/// from the entry, every number in range.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    services: Vec<Service>,
    entry: usize,
    /// Callers before callees.
    order: Vec<usize>,
    /// `[retry.throttle]`: its kind and checked settings, one throttle per edge.
    throttle: Option<(String, crate::throttle::ThrottleSpec)>,
}

impl Graph {
    /// Validates `services` and builds the graph.
    ///
    /// # Errors
    ///
    /// A [`GraphError`] naming the first problem: a duplicate or empty name, an unknown entry,
    /// a number out of range, a cycle (printed as `a → b → a`), an unreachable service.
    pub fn new(services: Vec<Service>, entry: usize) -> Result<Self, GraphError> {
        let order = validate::check(&services, entry)?;
        Ok(Self {
            services,
            entry,
            order,
            throttle: None,
        })
    }

    /// The same graph with `[retry.throttle]` on every edge (one throttle per edge, shared by
    /// the calls on it), checked as every model checks it.
    ///
    /// # Errors
    ///
    /// A [`GraphError`] naming the throttle's field; an edge with a `budget_percent` too
    /// (one or the other); `aws-adaptive`, whose rate limiter needs time, which the graph
    /// does not have.
    pub fn with_throttle(
        mut self,
        table: &crate::throttle::ThrottleTable,
    ) -> Result<Self, GraphError> {
        let spec = table.check().map_err(|e| GraphError(e.to_string()))?;
        if spec == crate::throttle::ThrottleSpec::AwsAdaptive {
            return Err(GraphError(
                "retry.throttle.kind: aws-adaptive needs time (its rate limiter refills by the \
                 second), which the service graph does not have"
                    .to_owned(),
            ));
        }
        if let Some((i, c)) = self.edges().find(|(_, c)| c.budget_percent > 0.0) {
            return Err(GraphError(format!(
                "service \"{}\" calls \"{}\" with budget_percent {}: set either edge budgets \
                 or [retry.throttle], not both",
                self.services[i].name, self.services[c.to].name, c.budget_percent
            )));
        }
        self.throttle = Some((table.kind.clone(), spec));
        Ok(self)
    }

    /// The `[retry.throttle]` kind on every edge, if any.
    #[must_use]
    pub fn throttle_kind(&self) -> Option<&str> {
        self.throttle.as_ref().map(|(k, _)| k.as_str())
    }

    pub(crate) fn throttle(&self) -> Option<&crate::throttle::ThrottleSpec> {
        self.throttle.as_ref().map(|(_, s)| s)
    }

    /// The services, in file order.
    #[must_use]
    pub fn services(&self) -> &[Service] {
        &self.services
    }

    /// Index of the entry service.
    #[must_use]
    pub fn entry(&self) -> usize {
        self.entry
    }

    /// Service indices with every caller before its callees.
    #[must_use]
    pub fn topological_order(&self) -> &[usize] {
        &self.order
    }

    /// The largest `attempts` on any edge (1 when there is no edge).
    #[must_use]
    pub fn max_attempts(&self) -> u32 {
        self.edges().map(|(_, c)| c.attempts).max().unwrap_or(1)
    }

    /// Every edge as `(caller index, call)`.
    pub fn edges(&self) -> impl Iterator<Item = (usize, &Call)> {
        self.services
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.calls.iter().map(move |c| (i, c)))
    }

    /// Whether any edge is random (a failure probability strictly between 0 and 1) or has a
    /// budget, so that counts vary from request to request.
    #[must_use]
    pub fn is_deterministic(&self) -> bool {
        self.throttle.is_none()
            && self.edges().all(|(_, c)| {
                (c.failure_probability == 0.0 || c.failure_probability == 1.0)
                    && c.budget_percent == 0.0
            })
    }

    /// The same graph with each edge's attempts replaced by `attempts(caller, call)`.
    ///
    /// Used for the baseline without retries and for the advice. Attempts are clamped to
    /// `1..=MAX_ATTEMPTS`, so the result stays valid.
    #[must_use]
    pub fn with_attempts(&self, mut attempts: impl FnMut(usize, &Call) -> u32) -> Graph {
        let mut g = self.clone();
        for (i, s) in g.services.iter_mut().enumerate() {
            for c in &mut s.calls {
                c.attempts = attempts(i, c).clamp(1, MAX_ATTEMPTS);
            }
        }
        g
    }

    /// Index of the service called `name`.
    #[must_use]
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.services.iter().position(|s| s.name == name)
    }
}
