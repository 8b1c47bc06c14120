//! A tower layer that hedges any request type (feature `tower`).
//!
//! [`HedgeLayer`] wraps a `Service<Req>` that is `Clone` (each copy goes through its own
//! clone, as tower's own `hedge` and `retry` do) and whose requests are `Clone`. It runs the
//! same [`HedgeCall`](super::HedgeCall) as the async runner: the delay, the copies, the budget,
//! the fatal/non-fatal rule, the hooks. Each call boxes its future once; the runner inside
//! allocates nothing more.
//!
//! An answer is judged by a classifier over `Result<&Response, &Error>`: `None` means a good
//! answer, which wins; `Some(verdict)` a failure, fatal when the verdict is permanent. The
//! default takes every response as good and every error as non-fatal. When the call ends on
//! a failure that was a *response* (say a 503), the caller gets that response, not an error,
//! as with [`RetryLayer`](crate::layer::RetryLayer).
//!
//! Only idempotent requests are hedged: by default every request is (you chose to hedge this
//! service); [`HedgeLayer::idempotent_if`] decides per request, and [`http_idempotent`] is
//! RFC 9110's list for `http::Request`s.
//!
//! # Examples
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! use std::{convert::Infallible, time::Duration};
//! use herd::hedge::{HedgeDelay, HedgeLayer, HedgePolicy};
//! use herd::asynchronous::TokioClock;
//! use tower::{Layer, ServiceExt, service_fn};
//!
//! let policy = HedgePolicy::builder(HedgeDelay::fixed(Duration::from_millis(10)))
//!     .clock(TokioClock::new())
//!     .build()?;
//! let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
//! let service = service_fn(move |key: &'static str| {
//!     let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
//!     async move {
//!         if n == 0 { std::future::pending::<()>().await } // the first copy is stuck
//!         Ok::<_, Infallible>(format!("value of {key}"))
//!     }
//! });
//! let hedged = HedgeLayer::new(policy).layer(service);
//! assert_eq!(hedged.oneshot("k").await.unwrap(), "value of k");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use crate::classify::Verdict;
use crate::clock::Clock;

use super::{HedgeEvent, HedgePolicy};

type Classifier<Res, Err> = Arc<dyn Fn(Result<&Res, &Err>) -> Option<Verdict> + Send + Sync>;
type Idempotent<Req> = Arc<dyn Fn(&Req) -> bool + Send + Sync>;
type Hook = Arc<dyn Fn(&HedgeEvent) + Send + Sync>;

/// RFC 9110 §9.2.2's idempotent methods: GET, HEAD, OPTIONS, TRACE, PUT, DELETE.
#[must_use]
pub fn http_idempotent<B>(request: &http::Request<B>) -> bool {
    use http::Method;
    matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// Hedges the requests of the service it wraps; see the [module docs](self).
pub struct HedgeLayer<C: Clock, Req, Res, Err> {
    policy: HedgePolicy<C>,
    classify: Option<Classifier<Res, Err>>,
    idempotent: Option<Idempotent<Req>>,
    on_hedge: Option<Hook>,
}

impl<C: Clock, Req, Res, Err> Clone for HedgeLayer<C, Req, Res, Err> {
    fn clone(&self) -> Self {
        Self {
            policy: self.policy.clone(),
            classify: self.classify.clone(),
            idempotent: self.idempotent.clone(),
            on_hedge: self.on_hedge.clone(),
        }
    }
}

impl<C: Clock, Req, Res, Err> fmt::Debug for HedgeLayer<C, Req, Res, Err> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeLayer")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<C: Clock, Req, Res, Err> HedgeLayer<C, Req, Res, Err> {
    /// A layer that hedges with `policy`.
    #[must_use]
    pub fn new(policy: HedgePolicy<C>) -> Self {
        Self {
            policy,
            classify: None,
            idempotent: None,
            on_hedge: None,
        }
    }

    /// Judges each answer: `None` is a good answer; `Some(verdict)` a failure, fatal (ends the
    /// call) when permanent, non-fatal (send the next copy now) when transient.
    #[must_use]
    pub fn classify(
        mut self,
        classify: impl Fn(Result<&Res, &Err>) -> Option<Verdict> + Send + Sync + 'static,
    ) -> Self {
        self.classify = Some(Arc::new(classify));
        self
    }

    /// Which requests may be sent more than once; the others are sent once.
    #[must_use]
    pub fn idempotent_if(
        mut self,
        idempotent: impl Fn(&Req) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.idempotent = Some(Arc::new(idempotent));
        self
    }

    /// Calls `hook` for each hedge sent (for metrics and logs).
    #[must_use]
    pub fn on_hedge(mut self, hook: impl Fn(&HedgeEvent) + Send + Sync + 'static) -> Self {
        self.on_hedge = Some(Arc::new(hook));
        self
    }
}

impl<S, C: Clock, Req, Res, Err> Layer<S> for HedgeLayer<C, Req, Res, Err> {
    type Service = Hedge<S, C, Req, Res, Err>;
    fn layer(&self, inner: S) -> Self::Service {
        Hedge {
            inner,
            config: self.clone(),
        }
    }
}

/// The service [`HedgeLayer`] builds.
pub struct Hedge<S, C: Clock, Req, Res, Err> {
    inner: S,
    config: HedgeLayer<C, Req, Res, Err>,
}

impl<S: Clone, C: Clock, Req, Res, Err> Clone for Hedge<S, C, Req, Res, Err> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            config: self.config.clone(),
        }
    }
}

impl<S: fmt::Debug, C: Clock, Req, Res, Err> fmt::Debug for Hedge<S, C, Req, Res, Err> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hedge")
            .field("inner", &self.inner)
            .field("config", &self.config)
            .finish()
    }
}

/// A failed copy, with its verdict: a response the classifier judged a failure, or the
/// service's error.
enum Failed<Res, Err> {
    Response(Res, Verdict),
    Error(Err, Verdict),
}

impl<S, C, Req, Err> Service<Req> for Hedge<S, C, Req, S::Response, Err>
where
    S: Service<Req, Error = Err> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    Err: Send + 'static,
    C: Clock,
    Req: Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = Err;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, Err>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Err>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The readied service takes the first copy; each hedge readies a clone of its own.
        let ready = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, ready);
        let config = self.config.clone();
        Box::pin(async move {
            let idempotent = config.idempotent.as_ref().is_none_or(|f| f(&request));
            let classify = config.classify.clone();
            let hook = config.on_hedge.clone();
            let template = ready.clone();
            let mut first = Some(ready);
            let result = config
                .policy
                .hedge(move |_copy| {
                    let request = request.clone();
                    // The first copy goes through the service `poll_ready` readied.
                    let service = match first.take() {
                        Some(s) => Either::Ready(s),
                        None => Either::Fresh(template.clone()),
                    };
                    let classify = classify.clone();
                    async move {
                        let answer = match service {
                            Either::Ready(mut s) => s.call(request).await,
                            Either::Fresh(s) => oneshot(s, request).await,
                        };
                        let verdict = match &classify {
                            Some(f) => f(answer.as_ref()),
                            None => default_verdict(answer.as_ref()),
                        };
                        match (answer, verdict) {
                            (Ok(res), None) => Ok(res),
                            (Ok(res), Some(verdict)) => Err(Failed::Response(res, verdict)),
                            (Err(e), verdict) => {
                                Err(Failed::Error(e, verdict.unwrap_or_else(Verdict::transient)))
                            }
                        }
                    }
                })
                .classify(|failed| match failed {
                    Failed::Response(_, v) | Failed::Error(_, v) => *v,
                })
                .on_hedge(|event| {
                    if let Some(hook) = &hook {
                        hook(event);
                    }
                })
                .idempotent(idempotent)
                .run_async()
                .await;
            match result {
                Ok(hedged) => Ok(hedged.value),
                Err(error) => match error.into_error() {
                    Failed::Response(res, _) => Ok(res),
                    Failed::Error(e, _) => Err(e),
                },
            }
        })
    }
}

enum Either<S> {
    Ready(S),
    Fresh(S),
}

fn default_verdict<Res, Err>(answer: Result<&Res, &Err>) -> Option<Verdict> {
    match answer {
        Ok(_) => None,
        Err(_) => Some(Verdict::transient()),
    }
}

/// Readies `service` and sends it `request` (tower's `oneshot`, without the `util` feature).
async fn oneshot<S: Service<Req>, Req>(
    mut service: S,
    request: Req,
) -> Result<S::Response, S::Error> {
    std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
    service.call(request).await
}
