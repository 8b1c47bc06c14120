//! One call edge of the lab: the HTTP client stack a service calls its callee through.
//!
//! ```text
//! herd::layer::RetryLayer (the edge's attempts, the rule, the budget, retry-exhausted)
//!   └─ lossy (the answer of one attempt is lost with failure_probability)
//!        └─ base (hyper client, per-attempt timeout, body read with a size limit)
//! ```
//!
//! The loss sits *below* the retries, so each attempt is lost independently, after the
//! callee did its work, exactly as in the model of `herd_sim::graph`.
//!
//! Every call of the lab goes through herd's own tower layer, configured from the edge:
//! `max_attempts` = the edge's attempts, the rule (immediate by default: no waiting), and for
//! `budget_percent` a [`RetryBudget`] with that percentage, no reserve and a one-day window
//! (a token bucket that starts empty and does not expire during a run, the graph model's
//! budget). Classic mode sets `respect_exhausted(false)`, as every other retry library
//! behaves; layer-aware mode keeps the layer's defaults. Marking is left on only for edges
//! that may retry (attempts ≥ 2): the layer also marks a failure it gives up on after a single
//! allowed attempt, which would stop the only retrying layer above from retrying a failure
//! that nobody retried.

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use herd::Rule;
use herd::asynchronous::TokioClock;
use herd::budget::{BudgetConfig, InvalidBudget, RetryBudget};
use herd::layer::RetryLayer;
use herd::policy::{InvalidPolicy, RetryPolicy};
use herd::rng::{Rng, SplitMix64};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt};

/// Request and response body of the lab: small, in memory, cheap to clone for a retry.
pub(crate) type Body = Full<Bytes>;
/// Errors crossing the client stack.
pub(crate) type BoxError = Box<dyn Error + Send + Sync>;
/// The client stack of one edge.
pub(crate) type EdgeService = BoxCloneSyncService<Request<Body>, Response<Body>, BoxError>;
/// The shared hyper client.
pub(crate) type HttpClient = Client<HttpConnector, Body>;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Largest answer body a lab service reads.
const MAX_BODY: usize = 64 * 1024;

/// How one edge behaves.
#[derive(Clone, Debug)]
pub(crate) struct EdgeConfig {
    pub(crate) attempts: u32,
    pub(crate) failure_probability: f64,
    pub(crate) budget_percent: f64,
    pub(crate) rule: Rule,
    pub(crate) layer_aware: bool,
    pub(crate) seed: u64,
    pub(crate) attempt_timeout: Duration,
}

/// Why an edge's retry layer could not be configured.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvalidEdge {
    #[error("{0}")]
    Policy(#[from] InvalidPolicy),
    #[error("{0}")]
    Budget(#[from] InvalidBudget),
}

/// Builds the client stack for one edge.
pub(crate) fn edge_service(
    client: HttpClient,
    config: &EdgeConfig,
) -> Result<EdgeService, InvalidEdge> {
    let base = Base {
        client,
        timeout: config.attempt_timeout,
    };
    let lossy = Lossy {
        inner: base,
        failure_probability: config.failure_probability,
        rng: Arc::new(Mutex::new(SplitMix64::new(config.seed))),
    };
    let clock = TokioClock::new();
    let mut policy = RetryPolicy::builder(config.rule)
        .max_attempts(config.attempts)
        .attempt_timeout(config.attempt_timeout);
    if config.budget_percent > 0.0 {
        let budget = RetryBudget::new(
            BudgetConfig::default()
                .percent(config.budget_percent)
                .min_per_sec(0)
                .window(Duration::from_secs(86_400)),
            clock,
        )?;
        policy = policy.budget(budget);
    }
    let layer = RetryLayer::new(policy.clock(clock).build()?).respect_exhausted(config.layer_aware);
    Ok(BoxCloneSyncService::new(layer.layer(lossy)))
}

/// The hyper client, with a per-attempt timeout and the answer body read into memory.
#[derive(Clone)]
struct Base {
    client: HttpClient,
    timeout: Duration,
}

impl Service<Request<Body>> for Base {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response<Body>, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let client = self.client.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let exchange = async {
                let response = client.request(req).await?;
                let (parts, body) = response.into_parts();
                let bytes = Limited::new(body, MAX_BODY).collect().await?.to_bytes();
                Ok::<_, BoxError>(Response::from_parts(parts, Full::new(bytes)))
            };
            match tokio::time::timeout(timeout, exchange).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer within {timeout:?}").into()),
            }
        })
    }
}

/// Loses the answer of one attempt with a fixed probability, after the callee did its work:
/// the caller then sees a bare 503 (unmarked), as after a timeout or a reset.
#[derive(Clone)]
struct Lossy<S> {
    inner: S,
    failure_probability: f64,
    rng: Arc<Mutex<SplitMix64>>,
}

impl<S> Service<Request<Body>> for Lossy<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response<Body>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let p = self.failure_probability;
        // Draw only on lossy edges, in call order: a sequential run is reproducible.
        let lost = p > 0.0
            && self
                .rng
                .lock()
                .map(|mut rng| rng.next_f64() < p)
                .unwrap_or(true);
        let inner = self.inner.clone();
        Box::pin(async move {
            let response = inner.oneshot(req).await?;
            if lost {
                let mut lost = Response::new(Full::new(Bytes::new()));
                *lost.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                return Ok(lost);
            }
            Ok(response)
        })
    }
}
