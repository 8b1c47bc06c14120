//! `herd lab chain`: a service graph as real HTTP services on loopback.
//!
//! Every service of a [`Graph`] becomes an axum app on `127.0.0.1:0` that counts the
//! requests it receives. A service marked `fails` answers 503 at once; any other service
//! calls each of its callees through that edge's client stack (retries with the edge's
//! attempts, pauses from the rule — none by default —, the budget, and the edge's
//! `failure_probability` as lost answers below the retries) and answers 200 when every call
//! succeeded, else 503, passing the "retries exhausted" mark up. [`Chain::drive`] sends N
//! entry requests one after another and measures what each service received per request,
//! to set beside the prediction of [`herd_sim::graph::predict`].
//!
//! With `layer_aware` off, every layer retries every failure, as a classic retry library
//! does; with it on, a layer returns a marked failure at once instead of retrying it.
//!
//! Everything listens on 127.0.0.1 only, every attempt has a timeout, and
//! [`Chain::shutdown`] (also run when a `Chain` is dropped) stops every server gracefully.
//!
//! # Examples
//!
//! ```
//! use herd_lab::chain::{Chain, ChainOptions};
//! use herd_sim::graph::Graph;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let graph = Graph::from_toml(herd_lab::chain::DEFAULT_GRAPH).unwrap();
//! let chain = Chain::start(&graph, ChainOptions::default()).await.unwrap();
//! let measured = chain.drive(1).await.unwrap();
//! assert_eq!(measured.received(), [1, 3, 9, 27]);
//! chain.shutdown().await.unwrap();
//! # });
//! ```

mod edge;
mod measure;
mod service;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use herd::Rule;
use herd::rng::Rng;
use herd::rng::SplitMix64;
use herd_sim::graph::Graph;
use http::{Request, Uri};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tower::ServiceExt;

pub use herd::layer::RETRY_EXHAUSTED;
pub use measure::{Comparison, MIN_VIEWS_TO_JUDGE, Measured, Measurement, agrees};

use edge::{EdgeConfig, EdgeService, edge_service};
use service::{ServiceState, handle};

/// The default graph: BFF → search → inventory → stock-db with 3 attempts at every layer and
/// a stock-db stub that fails every query (`scenarios/graphs/chain.toml`).
pub const DEFAULT_GRAPH: &str = include_str!("../../../scenarios/graphs/chain.toml");

/// The most entry requests one drive may send.
pub const MAX_VIEWS: u64 = 10_000;
/// The most requests (expected, all services together) one drive may cause.
pub const MAX_REQUESTS: f64 = 1_000_000.0;

/// How the lab runs its services.
#[derive(Clone, Debug)]
pub struct ChainOptions {
    /// Callers do not retry a failure marked "retries exhausted".
    pub layer_aware: bool,
    /// The pauses between attempts ([`Rule::immediate`] by default: no waiting).
    pub rule: Rule,
    /// Seed of the lost-answer draws (one stream per edge).
    pub seed: u64,
    /// How long one attempt may take before it counts as failed.
    pub attempt_timeout: Duration,
}

impl Default for ChainOptions {
    fn default() -> Self {
        Self {
            layer_aware: false,
            rule: Rule::immediate(),
            seed: 1,
            attempt_timeout: Duration::from_secs(10),
        }
    }
}

/// Why the lab could not run.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// A listener could not be bound on 127.0.0.1.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
    /// An entry request failed below HTTP (connection, timeout).
    #[error("entry request failed: {0}")]
    Request(String),
    /// An edge's retry layer could not be configured from the graph.
    #[error("{0}")]
    Edge(String),
    /// The run would be too large.
    #[error("{0}")]
    TooLarge(String),
    /// A server stopped with an error.
    #[error("server of {service} failed: {message}")]
    Server {
        /// The service.
        service: String,
        /// What happened.
        message: String,
    },
}

/// A running graph of lab services.
pub struct Chain {
    names: Vec<String>,
    /// Some edge has a retry budget: views are correlated through its bucket.
    budgets: bool,
    states: Vec<Arc<ServiceState>>,
    addresses: Vec<SocketAddr>,
    entry: usize,
    client: edge::HttpClient,
    stop: watch::Sender<bool>,
    servers: Vec<(String, JoinHandle<std::io::Result<()>>)>,
}

impl Chain {
    /// Binds every service on `127.0.0.1:0`, wires the edges and starts serving.
    ///
    /// # Errors
    ///
    /// [`ChainError::Bind`] when a listener cannot be bound.
    pub async fn start(graph: &Graph, options: ChainOptions) -> Result<Self, ChainError> {
        let services = graph.services();
        let mut listeners = Vec::with_capacity(services.len());
        let mut addresses = Vec::with_capacity(services.len());
        for _ in services {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .await
                .map_err(ChainError::Bind)?;
            addresses.push(listener.local_addr().map_err(ChainError::Bind)?);
            listeners.push(listener);
        }
        let client: edge::HttpClient = Client::builder(TokioExecutor::new()).build_http();
        let mut seeds = SplitMix64::new(options.seed);
        let mut states = Vec::with_capacity(services.len());
        for s in services {
            let calls: Vec<(Uri, EdgeService)> = s
                .calls
                .iter()
                .map(|c| -> Result<_, ChainError> {
                    let config = EdgeConfig {
                        attempts: c.attempts,
                        failure_probability: c.failure_probability,
                        budget_percent: c.budget_percent,
                        rule: options.rule,
                        layer_aware: options.layer_aware,
                        seed: seeds.next_u64(),
                        attempt_timeout: options.attempt_timeout,
                    };
                    let edge = edge_service(client.clone(), &config).map_err(|e| {
                        ChainError::Edge(format!("call {} → {}: {e}", s.name, services[c.to].name))
                    })?;
                    Ok((uri_of(addresses[c.to]), edge))
                })
                .collect::<Result<_, _>>()?;
            states.push(Arc::new(ServiceState {
                received: AtomicU64::new(0),
                fails: s.fails,
                calls,
            }));
        }
        let (stop, _) = watch::channel(false);
        let mut servers = Vec::with_capacity(services.len());
        for ((s, listener), state) in services.iter().zip(listeners).zip(&states) {
            let app = Router::new().fallback(handle).with_state(Arc::clone(state));
            let mut stopped = stop.subscribe();
            let server = axum::serve(listener, app).with_graceful_shutdown(async move {
                // Resolves on a stop signal and when the sender is dropped.
                let _ = stopped.wait_for(|&s| s).await;
            });
            servers.push((s.name.clone(), tokio::spawn(server.into_future())));
        }
        Ok(Self {
            names: services.iter().map(|s| s.name.clone()).collect(),
            budgets: graph.edges().any(|(_, c)| c.budget_percent > 0.0),
            states,
            addresses,
            entry: graph.entry(),
            client,
            stop,
            servers,
        })
    }

    /// The address each service listens on, indexed like [`Graph::services`].
    #[must_use]
    pub fn addresses(&self) -> &[SocketAddr] {
        &self.addresses
    }

    /// Requests each service has received so far.
    #[must_use]
    pub fn counts(&self) -> Vec<u64> {
        self.states
            .iter()
            .map(|s| s.received.load(Ordering::Relaxed))
            .collect()
    }

    /// Sends one entry request (no retry: the user makes one page view) and returns whether
    /// it succeeded.
    ///
    /// # Errors
    ///
    /// [`ChainError::Request`] when the entry service cannot be reached in time.
    pub async fn view(&self) -> Result<bool, ChainError> {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = uri_of(self.addresses[self.entry]);
        let exchange = self.client.clone().oneshot(req);
        match tokio::time::timeout(Duration::from_secs(60), exchange).await {
            Ok(Ok(r)) => Ok(r.status().is_success()),
            Ok(Err(e)) => Err(ChainError::Request(e.to_string())),
            Err(_) => Err(ChainError::Request("no answer within 60 s".to_owned())),
        }
    }

    /// Sends `views` entry requests one after another and measures what every service
    /// received for each.
    ///
    /// # Errors
    ///
    /// [`ChainError::TooLarge`] for more than [`MAX_VIEWS`] views, and as [`Chain::view`].
    pub async fn drive(&self, views: u64) -> Result<Measurement, ChainError> {
        self.drive_until(views, std::future::pending()).await
    }

    /// As [`Chain::drive`], but stops early (between two views) when `stop` resolves; the
    /// measurement then covers the views that completed.
    ///
    /// # Errors
    ///
    /// As [`Chain::drive`].
    pub async fn drive_until(
        &self,
        views: u64,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Measurement, ChainError> {
        if views == 0 || views > MAX_VIEWS {
            return Err(ChainError::TooLarge(format!(
                "--views is {views}; must be 1..={MAX_VIEWS}"
            )));
        }
        let mut measurement = Measurement::new(self.names.clone(), views, self.budgets);
        tokio::pin!(stop);
        for _ in 0..views {
            let before = self.counts();
            let ok = tokio::select! {
                biased;
                () = &mut stop => {
                    measurement.interrupted = true;
                    break;
                }
                ok = self.view() => ok?,
            };
            let after = self.counts();
            measurement.record(&before, &after, ok);
        }
        Ok(measurement)
    }

    /// Stops every server gracefully and waits for them.
    ///
    /// # Errors
    ///
    /// [`ChainError::Server`] when a server stopped with an error or did not stop in time.
    pub async fn shutdown(mut self) -> Result<(), ChainError> {
        let _ = self.stop.send(true);
        let servers = std::mem::take(&mut self.servers);
        for (service, handle) in servers {
            let failed = |message: String| ChainError::Server {
                service: service.clone(),
                message,
            };
            match tokio::time::timeout(Duration::from_secs(10), handle).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => return Err(failed(e.to_string())),
                Ok(Err(e)) => return Err(failed(e.to_string())),
                Err(_) => return Err(failed("did not stop within 10 s".to_owned())),
            }
        }
        Ok(())
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn uri_of(address: SocketAddr) -> Uri {
    // An IPv4 socket address always forms a valid authority.
    Uri::builder()
        .scheme("http")
        .authority(address.to_string())
        .path_and_query("/")
        .build()
        .unwrap_or_default()
}
