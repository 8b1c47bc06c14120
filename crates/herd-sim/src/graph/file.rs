//! The graph file: TOML in, a validated [`Graph`] out, or one clear line saying what is wrong.
//!
//! ```toml
//! entry = "bff"
//!
//! [[service]]
//! name = "bff"
//! calls = [{ to = "search", attempts = 3 }]
//!
//! [[service]]
//! name = "search"
//! calls = [{ to = "stock-db", attempts = 3, failure_probability = 0.1, budget_percent = 20 }]
//!
//! [[service]]
//! name = "stock-db"
//! fails = true
//! ```
//!
//! Unknown keys are rejected (a typo such as `atempts` must not silently mean "1").

use std::collections::HashMap;

use serde::Deserialize;

use super::checked::Graph;
use super::error::GraphError;
use super::model::{Call, Service};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphFile {
    entry: String,
    #[serde(rename = "service", default)]
    services: Vec<ServiceFile>,
    #[serde(default)]
    retry: Option<RetryFile>,
}

/// `[retry]`: only `[retry.throttle]`, one throttle per edge for the calls on it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryFile {
    #[serde(default)]
    throttle: Option<crate::throttle::ThrottleTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceFile {
    name: String,
    #[serde(default)]
    fails: bool,
    #[serde(default)]
    calls: Vec<CallFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallFile {
    to: String,
    attempts: u32,
    #[serde(default)]
    failure_probability: f64,
    #[serde(default)]
    budget_percent: f64,
}

impl Graph {
    /// Parses and validates a graph file.
    ///
    /// # Examples
    ///
    /// ```
    /// use herd_sim::graph::Graph;
    /// let g = Graph::from_toml(r#"
    ///     entry = "a"
    ///     [[service]]
    ///     name = "a"
    ///     calls = [{ to = "b", attempts = 3 }]
    ///     [[service]]
    ///     name = "b"
    ///     fails = true
    /// "#)?;
    /// assert_eq!(g.services().len(), 2);
    ///
    /// let cycle = Graph::from_toml(r#"
    ///     entry = "a"
    ///     [[service]]
    ///     name = "a"
    ///     calls = [{ to = "b", attempts = 2 }]
    ///     [[service]]
    ///     name = "b"
    ///     calls = [{ to = "a", attempts = 2 }]
    /// "#).unwrap_err();
    /// assert_eq!(cycle.to_string(), "the graph has a cycle: a → b → a");
    /// # Ok::<(), herd_sim::graph::GraphError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`GraphError`] for malformed TOML (with its line), an unknown key, an unknown callee
    /// or entry, and everything [`Graph::new`] rejects.
    pub fn from_toml(text: &str) -> Result<Self, GraphError> {
        let file: GraphFile = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().replace('\n', " ");
            match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    GraphError(format!("line {line}: {message}"))
                }
                None => GraphError(message),
            }
        })?;
        let mut index = HashMap::new();
        for (i, s) in file.services.iter().enumerate() {
            if index.insert(s.name.as_str(), i).is_some() {
                return Err(GraphError(format!("duplicate service name \"{}\"", s.name)));
            }
        }
        let entry = *index.get(file.entry.as_str()).ok_or_else(|| {
            GraphError(format!(
                "entry \"{}\" is not a service (services: {})",
                file.entry,
                names(&file.services)
            ))
        })?;
        let mut services = Vec::with_capacity(file.services.len());
        for s in &file.services {
            let mut calls = Vec::with_capacity(s.calls.len());
            for c in &s.calls {
                let to = *index.get(c.to.as_str()).ok_or_else(|| {
                    GraphError(format!(
                        "service \"{}\" calls unknown service \"{}\"",
                        s.name, c.to
                    ))
                })?;
                calls.push(Call {
                    to,
                    attempts: c.attempts,
                    failure_probability: c.failure_probability,
                    budget_percent: c.budget_percent,
                });
            }
            services.push(Service {
                name: s.name.clone(),
                fails: s.fails,
                calls,
            });
        }
        let graph = Graph::new(services, entry)?;
        match file.retry.and_then(|r| r.throttle) {
            Some(table) => graph.with_throttle(&table),
            None => Ok(graph),
        }
    }
}

fn names(services: &[ServiceFile]) -> String {
    if services.is_empty() {
        return "none".to_owned();
    }
    services
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
