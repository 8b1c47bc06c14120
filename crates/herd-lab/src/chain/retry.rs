//! The retry step of an edge.
//!
//! **Interim:** this is a thin stand-in with the contract of herd's tower retry layer
//! (`herd::layer`, being built on the `lib` branch): up to `attempts` attempts, pauses drawn
//! with the rule, a 5xx or transport error retried, a failure it gives up on after being
//! allowed to retry (attempts ≥ 2) marked with `retry-exhausted: 1`, and — when
//! `respect_exhausted` — a marked answer returned at once, not retried. It is built in one
//! place, [`edge_service`](super::edge::edge_service), so swapping in the layer is one edit.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::task::{Context, Poll};

use herd::Rule;
use herd::rng::ThreadRng;
use http::{HeaderValue, Request, Response};
use tower::{Service, ServiceExt};

use super::edge::{Body, BoxError};

/// The header a layer puts on a failure it gave up on after retrying.
pub const RETRY_EXHAUSTED: &str = "retry-exhausted";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A retry budget as a token bucket: each first attempt earns `ratio` tokens, a retry needs
/// one whole token and spends it. It starts empty and has no cap (the model of
/// `herd_sim::graph`).
#[derive(Debug)]
pub(crate) struct Bucket {
    ratio: f64,
    tokens: Mutex<f64>,
}

impl Bucket {
    pub(crate) fn new(ratio: f64) -> Self {
        Self {
            ratio,
            tokens: Mutex::new(0.0),
        }
    }

    fn deposit(&self) {
        if let Ok(mut t) = self.tokens.lock() {
            *t += self.ratio;
        }
    }

    fn withdraw(&self) -> bool {
        match self.tokens.lock() {
            Ok(mut t) if *t >= 1.0 => {
                *t -= 1.0;
                true
            }
            _ => false,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct RetrySettings {
    pub(crate) attempts: u32,
    pub(crate) rule: Rule,
    pub(crate) respect_exhausted: bool,
    pub(crate) budget: Option<Arc<Bucket>>,
}

#[derive(Clone)]
pub(crate) struct Retry<S> {
    inner: S,
    settings: RetrySettings,
}

impl<S> Retry<S> {
    pub(crate) fn new(inner: S, settings: RetrySettings) -> Self {
        Self { inner, settings }
    }
}

fn rebuild(parts: &http::request::Parts, body: &Body) -> Request<Body> {
    let mut req = Request::new(body.clone());
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = parts.uri.clone();
    *req.version_mut() = parts.version;
    *req.headers_mut() = parts.headers.clone();
    req
}

impl<S> Service<Request<Body>> for Retry<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = BoxError>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response<Body>, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let settings = self.settings.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let mut pauses = settings.rule.schedule(ThreadRng);
            if let Some(b) = &settings.budget {
                b.deposit();
            }
            let mut attempt = 1;
            loop {
                let result = inner.clone().oneshot(rebuild(&parts, &body)).await;
                let marked = matches!(&result, Ok(r) if r.headers().contains_key(RETRY_EXHAUSTED));
                let retryable = match &result {
                    Ok(r) => {
                        r.status().is_server_error() && !(marked && settings.respect_exhausted)
                    }
                    Err(_) => true,
                };
                if !retryable {
                    return result;
                }
                let allowed = attempt < settings.attempts
                    && settings.budget.as_ref().is_none_or(|b| b.withdraw());
                if !allowed {
                    // Give up; mark the failure if this layer was allowed to retry.
                    return result.map(|mut r| {
                        if settings.attempts >= 2 {
                            r.headers_mut()
                                .insert(RETRY_EXHAUSTED, HeaderValue::from_static("1"));
                        }
                        r
                    });
                }
                attempt += 1;
                let pause = pauses.next().unwrap_or_default();
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
        })
    }
}
