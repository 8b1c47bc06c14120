//! A tower layer that hedges any request type (feature `tower`).
//!
//! [`HedgeLayer`] wraps a `Service<Req>` that is `Clone` (each copy goes through its own
//! clone, as tower's own `hedge` and `retry` do) and whose requests are `Clone`, or are
//! `http::Request`s copied by one of the replay choices below. It runs the
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
//! # HTTP requests, and what the hedge did
//!
//! For `http::Request`s the layer has the replay choices of
//! [`RetryLayer`](crate::layer::RetryLayer): a `Clone` body copied as it is
//! ([`HedgeLayer::clone_body`]), a function that copies a request
//! ([`HedgeLayer::clone_request`], `None` = send it once, unhedged), or a body read into
//! memory up to a limit ([`HedgeLayer::buffer_body`]; a longer body is sent once, unhedged).
//! The last two hedge bodies that are not `Clone`: axum's `Body`, hyper's `Incoming`, tonic's
//! body. In these modes the service's error is a [`BoxError`] (reading the body may fail),
//! and every response carries a [`HedgeOutcome`] in its extensions: which copy answered and
//! how many were sent, for measuring the hedge's win rate.
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
use crate::layer::{BoxError, BufferBody, Buffered, CloneBody, CloneWith, Replay};

use super::run::{Copies, fly};
use super::{HedgeCopy, HedgeEvent, HedgePolicy};

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
///
/// `R` is how a copy of a request is made: [`CloneRequest`] (the request is `Clone`, the
/// default), or for `http::Request`s a [`CloneBody`], [`CloneWith`] or [`BufferBody`]
/// replay, set by [`clone_body`](Self::clone_body),
/// [`clone_request`](Self::clone_request) and [`buffer_body`](Self::buffer_body); these put
/// a [`HedgeOutcome`] in each response.
pub struct HedgeLayer<C: Clock, Req, Res, Err, R = CloneRequest> {
    policy: HedgePolicy<C>,
    classify: Option<Classifier<Res, Err>>,
    idempotent: Option<Idempotent<Req>>,
    on_hedge: Option<Hook>,
    replay: Arc<R>,
}

/// Copies a request with its own `Clone`: [`HedgeLayer`]'s default.
#[derive(Clone, Copy, Debug, Default)]
pub struct CloneRequest;

/// A hedged call through a [`HedgeLayer`] in an HTTP replay mode ([`HedgeLayer::clone_body`],
/// [`HedgeLayer::clone_request`], [`HedgeLayer::buffer_body`]), attached to the response's
/// extensions (read it with `response.extensions().get::<HedgeOutcome>()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeOutcome {
    /// The copy whose good answer is returned (1 for the first), or 0 when no copy answered
    /// well and the response is a failure (the fatal one, or the last).
    pub copy: u32,
    /// How many copies were sent in all.
    pub copies_sent: u32,
}

impl<C: Clock, Req, Res, Err, R> Clone for HedgeLayer<C, Req, Res, Err, R> {
    fn clone(&self) -> Self {
        Self {
            policy: self.policy.clone(),
            classify: self.classify.clone(),
            idempotent: self.idempotent.clone(),
            on_hedge: self.on_hedge.clone(),
            replay: Arc::clone(&self.replay),
        }
    }
}

impl<C: Clock, Req, Res, Err, R> fmt::Debug for HedgeLayer<C, Req, Res, Err, R> {
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
            replay: Arc::new(CloneRequest),
        }
    }
}

impl<C: Clock, B, Res, Err> HedgeLayer<C, http::Request<B>, Res, Err> {
    /// Copy each request with `Clone` (its body is `Clone`: `Full<Bytes>`, `String`), as
    /// [`RetryLayer`](crate::layer::RetryLayer) does by default, and put a [`HedgeOutcome`]
    /// in every response's extensions. ([`new`](Self::new) alone hedges any `Clone` request
    /// type, and cannot mark a response type it does not know.)
    #[must_use]
    pub fn clone_body(self) -> HedgeLayer<C, http::Request<B>, Res, Err, CloneBody>
    where
        B: Clone + Send + 'static,
    {
        self.replay_with(CloneBody)
    }

    /// Make each copy of a request with `copy`, for bodies that are not `Clone`, as
    /// [`RetryLayer::clone_request`](crate::layer::RetryLayer::clone_request) does: it is
    /// called with each request before it is sent, and its copy is the next copy sent.
    /// `None` means the request cannot be sent again: it is sent once, unhedged.
    #[must_use]
    pub fn clone_request<F>(
        self,
        copy: F,
    ) -> HedgeLayer<C, http::Request<B>, Res, Err, CloneWith<F>>
    where
        F: Fn(&http::Request<B>) -> Option<http::Request<B>> + Send + Sync + 'static,
    {
        self.replay_with(CloneWith(copy))
    }

    /// Read each request's body into memory, up to `limit` bytes, and send a copy of it with
    /// every copy of the request; `rebuild` makes a body of the service's type from it
    /// (`axum::body::Body::new`, `tonic::body::Body::new`), as
    /// [`RetryLayer::buffer_body`](crate::layer::RetryLayer::buffer_body) does. A body longer
    /// than the limit is sent once (what was read, then the rest), unhedged.
    #[must_use]
    pub fn buffer_body<F>(
        self,
        limit: usize,
        rebuild: F,
    ) -> HedgeLayer<C, http::Request<B>, Res, Err, BufferBody<F>>
    where
        F: Fn(Buffered<B>) -> B + Send + Sync + 'static,
    {
        self.replay_with(BufferBody { limit, rebuild })
    }

    fn replay_with<R2>(self, replay: R2) -> HedgeLayer<C, http::Request<B>, Res, Err, R2> {
        HedgeLayer {
            policy: self.policy,
            classify: self.classify,
            idempotent: self.idempotent,
            on_hedge: self.on_hedge,
            replay: Arc::new(replay),
        }
    }
}

impl<C: Clock, Req, Res, Err, R> HedgeLayer<C, Req, Res, Err, R> {
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

impl<S, C: Clock, Req, Res, Err, R> Layer<S> for HedgeLayer<C, Req, Res, Err, R> {
    type Service = Hedge<S, C, Req, Res, Err, R>;
    fn layer(&self, inner: S) -> Self::Service {
        Hedge {
            inner,
            config: self.clone(),
        }
    }
}

/// The service [`HedgeLayer`] builds.
pub struct Hedge<S, C: Clock, Req, Res, Err, R = CloneRequest> {
    inner: S,
    config: HedgeLayer<C, Req, Res, Err, R>,
}

impl<S: Clone, C: Clock, Req, Res, Err, R> Clone for Hedge<S, C, Req, Res, Err, R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            config: self.config.clone(),
        }
    }
}

impl<S: fmt::Debug, C: Clock, Req, Res, Err, R> fmt::Debug for Hedge<S, C, Req, Res, Err, R> {
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

impl<S, C, Req, Err> Service<Req> for Hedge<S, C, Req, S::Response, Err, CloneRequest>
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
                        judge(answer, classify.as_ref())
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

impl<S, C, B, Err, R> Service<http::Request<B>>
    for Hedge<S, C, http::Request<B>, S::Response, Err, R>
where
    S: Service<http::Request<B>, Error = Err> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Response: IntoOutcome,
    Err: Into<BoxError> + Send + 'static,
    C: Clock,
    B: Send + 'static,
    R: Replay<B>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let ready = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, ready);
        let config = self.config.clone();
        Box::pin(async move {
            let idempotent = config.idempotent.as_ref().is_none_or(|f| f(&request));
            let replay = Arc::clone(&config.replay);
            let mut held = replay.hold(request).await?;
            let Some(first_request) = replay.next(&mut held) else {
                return Err("the request could not be sent".into());
            };
            // The first copy goes through the service `poll_ready` readied.
            let template = ready.clone();
            let copies = Replayed {
                replay: &*replay,
                held,
                first: Some((ready, first_request)),
                template,
                classify: config.classify.clone(),
            };
            let hook = config.on_hedge.clone();
            let mut on_hedge = |event: &HedgeEvent| {
                if let Some(hook) = &hook {
                    hook(event);
                }
            };
            let result = fly(
                &config.policy,
                copies,
                &|failed: &Failed<S::Response, Err>| match failed {
                    Failed::Response(_, v) | Failed::Error(_, v) => *v,
                },
                &mut on_hedge,
                idempotent,
                &crate::asynchronous::TokioSleep,
            )
            .await;
            match result {
                Ok(hedged) => Ok(hedged.value.with_outcome(HedgeOutcome {
                    copy: hedged.copy,
                    copies_sent: hedged.copies_sent,
                })),
                Err(error) => {
                    let copies_sent = error.copies_sent();
                    match error.into_error() {
                        Failed::Response(res, _) => Ok(res.with_outcome(HedgeOutcome {
                            copy: 0,
                            copies_sent,
                        })),
                        Failed::Error(e, _) => Err(e.into()),
                    }
                }
            }
        })
    }
}

/// A response that can carry a [`HedgeOutcome`]: `http::Response`s.
pub trait IntoOutcome: sealed::Sealed {
    /// The response with `outcome` in its extensions.
    #[must_use]
    fn with_outcome(self, outcome: HedgeOutcome) -> Self;
}

mod sealed {
    /// Keeps [`IntoOutcome`](super::IntoOutcome) to `http::Response`.
    #[allow(unreachable_pub)]
    pub trait Sealed {}
}

impl<B> sealed::Sealed for http::Response<B> {}

impl<B> IntoOutcome for http::Response<B> {
    fn with_outcome(mut self, outcome: HedgeOutcome) -> Self {
        self.extensions_mut().insert(outcome);
        self
    }
}

/// The copies of a request held by a replay: the first goes through the service that
/// `poll_ready` readied, each hedge through a fresh clone.
struct Replayed<'r, R: Replay<B>, B, S, Res, Err> {
    replay: &'r R,
    held: R::Held,
    first: Option<(S, http::Request<B>)>,
    template: S,
    classify: Option<Classifier<Res, Err>>,
}

impl<R, B, S, Err> Copies<CopyFuture<S::Response, Err>> for Replayed<'_, R, B, S, S::Response, Err>
where
    R: Replay<B>,
    S: Service<http::Request<B>, Error = Err> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    Err: Send + 'static,
    B: Send + 'static,
{
    fn more(&self) -> bool {
        self.first.is_some() || self.replay.can_replay(&self.held)
    }

    fn make(&mut self, _: HedgeCopy) -> CopyFuture<S::Response, Err> {
        let (service, request) = match self.first.take() {
            Some((service, request)) => (Either::Ready(service), Some(request)),
            None => (
                Either::Fresh(self.template.clone()),
                self.replay.next(&mut self.held),
            ),
        };
        let classify = self.classify.clone();
        Box::pin(async move {
            let Some(request) = request else {
                // `more` said the replay has another copy, and it always gives it.
                unreachable!("a copy is made only when the replay has one");
            };
            let answer = match service {
                Either::Ready(mut s) => s.call(request).await,
                Either::Fresh(s) => oneshot(s, request).await,
            };
            judge(answer, classify.as_ref())
        })
    }
}

/// One copy in flight, boxed: each hedge through the layer allocates its future.
type CopyFuture<Res, Err> = Pin<Box<dyn Future<Output = Result<Res, Failed<Res, Err>>> + Send>>;

/// A copy's answer with its verdict.
fn judge<Res, Err>(
    answer: Result<Res, Err>,
    classify: Option<&Classifier<Res, Err>>,
) -> Result<Res, Failed<Res, Err>> {
    let verdict = match classify {
        Some(f) => f(answer.as_ref()),
        None => default_verdict(answer.as_ref()),
    };
    match (answer, verdict) {
        (Ok(res), None) => Ok(res),
        (Ok(res), Some(verdict)) => Err(Failed::Response(res, verdict)),
        (Err(e), verdict) => Err(Failed::Error(e, verdict.unwrap_or_else(Verdict::transient))),
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
