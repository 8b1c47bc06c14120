//! The *Layers* scene: a chain of services down to a failing database, one attempts control
//! per layer, the requests each receives computed by `herd_sim::graph` (as `herd amplify`).
use herd_sim::graph::{Call, Graph, Options, Service, predict};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::limits::{MAX_LAYER_ATTEMPTS, MAX_LAYERS};
use super::rules::in_range;

/// The services of the chain, top first; the database always comes last.
const NAMES: [&str; MAX_LAYERS] = [
    "BFF",
    "search",
    "inventory",
    "pricing",
    "catalog",
    "ledger",
    "rates",
    "quotes",
];
const DATABASE: &str = "stock-db";

/// What the page asks for.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayersRequest {
    /// Attempts per call, one per layer, top first (the last is the call to the database).
    pub attempts: Vec<u32>,
    /// A caller does not retry a failure its callee already retried and gave up on.
    #[serde(default)]
    pub layer_aware: bool,
}

/// Requests each service receives per request at the top, while the database fails.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Layers {
    /// Top first, the database last.
    pub services: Vec<ServiceLoad>,
    /// Whether the layer-aware option was on.
    pub layer_aware: bool,
}

/// One service's load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServiceLoad {
    /// The service.
    pub name: String,
    /// Requests it receives per entry request, computed exactly (as `herd amplify`'s
    /// `predicted`).
    pub predicted: f64,
}

impl LayersRequest {
    /// Checks the request and computes the loads.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] naming `attempts` when there are no layers, too many, or a count
    /// out of range.
    pub fn compute(&self) -> Result<Layers, ApiError> {
        let layers = in_range("attempts (layers)", self.attempts.len(), 1, MAX_LAYERS)?;
        for (i, &a) in self.attempts.iter().enumerate() {
            in_range(&format!("attempts[{i}]"), a, 1, MAX_LAYER_ATTEMPTS)?;
        }
        let mut services: Vec<Service> = (0..layers)
            .map(|i| Service {
                name: NAMES[i].to_owned(),
                fails: false,
                calls: vec![Call {
                    to: i + 1,
                    attempts: self.attempts[i],
                    failure_probability: 0.0,
                    budget_percent: 0.0,
                }],
            })
            .collect();
        services.push(Service {
            name: DATABASE.to_owned(),
            fails: true,
            calls: Vec::new(),
        });
        let graph = Graph::new(services, 0).map_err(|e| ApiError::bad_request(e.to_string()))?;
        let options = Options {
            layer_aware: self.layer_aware,
        };
        let prediction =
            predict(&graph, options).map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(Layers {
            services: graph
                .services()
                .iter()
                .zip(prediction.receives)
                .map(|(s, predicted)| ServiceLoad {
                    name: s.name.clone(),
                    predicted,
                })
                .collect(),
            layer_aware: self.layer_aware,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receives(attempts: &[u32], layer_aware: bool) -> Vec<f64> {
        let request = LayersRequest {
            attempts: attempts.to_vec(),
            layer_aware,
        };
        request
            .compute()
            .unwrap()
            .services
            .iter()
            .map(|s| s.predicted)
            .collect()
    }

    #[test]
    fn spec_chain() {
        assert_eq!(receives(&[3, 3, 3], false), [1.0, 3.0, 9.0, 27.0]);
        assert_eq!(receives(&[1, 1, 3], false), [1.0, 1.0, 1.0, 3.0]);
        assert_eq!(receives(&[3, 3, 3], true), [1.0, 1.0, 1.0, 3.0]);
    }

    #[test]
    fn bad_layers_are_named() {
        let empty = LayersRequest {
            attempts: vec![],
            layer_aware: false,
        };
        assert!(
            empty
                .compute()
                .unwrap_err()
                .message
                .starts_with("attempts (layers)")
        );
        let big = LayersRequest {
            attempts: vec![3, 11],
            layer_aware: false,
        };
        assert!(
            big.compute()
                .unwrap_err()
                .message
                .starts_with("attempts[1]")
        );
    }
}
