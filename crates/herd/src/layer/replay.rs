//! How the layer gets a request to send again: a request body must be sent once per attempt,
//! and most streaming bodies (axum's `Body`, hyper's `Incoming`, a tonic request) cannot be
//! cloned.
//!
//! - [`CloneBody`] (the default): the body type is `Clone` (`Full<Bytes>`, `String`).
//! - [`CloneWith`]: your function makes the copy, as tower's `Policy::clone_request` does;
//!   `None` means the request is sent once and never retried.
//! - [`BufferBody`]: the layer reads the body into memory, up to a size limit, before the first
//!   attempt, and sends that copy on each attempt. A body longer than the limit is sent once
//!   (the bytes already read, then the rest), never retried, and the outcome says so
//!   ([`StopReason::NotReplayable`](crate::StopReason::NotReplayable)).

use std::future::Future;

use http::Request;
use http::request::Parts;
use http_body::Body;

use super::BoxError;
use super::body::{Buffered, buffer};

/// A way to send a request again. Implemented by [`CloneBody`], [`CloneWith`] and
/// [`BufferBody`]; sealed, and its workings are the layers' own.
pub trait Replay<B>: super::sealed::Sealed + held::Hold<B> {}

impl super::sealed::Sealed for CloneBody {}
impl<F> super::sealed::Sealed for CloneWith<F> {}
impl<F> super::sealed::Sealed for BufferBody<F> {}

/// The workings of [`Replay`], in a module no one outside the crate can name: the trait is
/// sealed, and what a replay keeps between attempts ([`Pending`], [`Kept`]) is no part of
/// the public face.
pub(crate) mod held {
    use std::future::Future;

    use http::Request;

    use super::BoxError;

    /// How a replay keeps a request and makes the next copy.
    pub trait Hold<B>: Send + Sync + 'static {
        /// What is kept between attempts.
        type Held: Send;
        /// Takes the caller's request and keeps what later attempts need.
        fn hold(
            &self,
            request: Request<B>,
        ) -> impl Future<Output = Result<Self::Held, BoxError>> + Send;
        /// The request for the next attempt, if there is one.
        fn next(&self, held: &mut Self::Held) -> Option<Request<B>>;
        /// Whether [`next`](Self::next) will give another request.
        fn can_replay(&self, held: &Self::Held) -> bool;
    }

    /// A request waiting to be sent, and the copy for the attempt after it.
    #[derive(Debug)]
    pub struct Pending<B> {
        pub(super) next: Option<Request<B>>,
    }

    /// A request body in memory, or a request too large to keep.
    #[derive(Debug)]
    pub enum Kept<B> {
        /// The whole body is in memory; every attempt sends a copy.
        Whole(http::request::Parts, super::Buffered<B>),
        /// The body was longer than the limit: it is sent once.
        Once(Option<Request<B>>),
    }
}

use held::{Hold, Kept, Pending};

/// Replays a request by cloning its parts and body (the body type must be `Clone`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CloneBody;

impl<B: Clone + Send + 'static> Replay<B> for CloneBody {}

impl<B: Clone + Send + 'static> Hold<B> for CloneBody {
    type Held = (Parts, B);
    fn hold(&self, request: Request<B>) -> impl Future<Output = Result<Self::Held, BoxError>> {
        std::future::ready(Ok(request.into_parts()))
    }
    fn next(&self, (parts, body): &mut Self::Held) -> Option<Request<B>> {
        Some(Request::from_parts(parts.clone(), body.clone()))
    }
    fn can_replay(&self, _: &Self::Held) -> bool {
        true
    }
}

/// Replays a request with a function that copies it, called before each attempt is sent;
/// `None` means that request cannot be sent again. See
/// [`RetryLayer::clone_request`](super::RetryLayer::clone_request).
#[derive(Clone, Copy, Debug)]
pub struct CloneWith<F>(pub(crate) F);

impl<B, F> Replay<B> for CloneWith<F>
where
    B: Send + 'static,
    F: Fn(&Request<B>) -> Option<Request<B>> + Send + Sync + 'static,
{
}

impl<B, F> Hold<B> for CloneWith<F>
where
    B: Send + 'static,
    F: Fn(&Request<B>) -> Option<Request<B>> + Send + Sync + 'static,
{
    type Held = Pending<B>;
    fn hold(&self, request: Request<B>) -> impl Future<Output = Result<Self::Held, BoxError>> {
        std::future::ready(Ok(Pending {
            next: Some(request),
        }))
    }
    fn next(&self, held: &mut Self::Held) -> Option<Request<B>> {
        let request = held.next.take()?;
        held.next = (self.0)(&request);
        Some(request)
    }
    fn can_replay(&self, held: &Self::Held) -> bool {
        held.next.is_some()
    }
}

/// Replays a request by reading its body into memory, up to `limit` bytes. See
/// [`RetryLayer::buffer_body`](super::RetryLayer::buffer_body).
#[derive(Clone, Copy, Debug)]
pub struct BufferBody<F> {
    pub(crate) limit: usize,
    pub(crate) rebuild: F,
}

impl<B, F> Replay<B> for BufferBody<F>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
    F: Fn(Buffered<B>) -> B + Send + Sync + 'static,
{
}

impl<B, F> Hold<B> for BufferBody<F>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
    F: Fn(Buffered<B>) -> B + Send + Sync + 'static,
{
    type Held = Kept<B>;
    fn hold(
        &self,
        request: Request<B>,
    ) -> impl Future<Output = Result<Self::Held, BoxError>> + Send {
        let (parts, body) = request.into_parts();
        let limit = self.limit;
        let read = buffer(body, limit);
        async move {
            let buffered = read.await?;
            Ok(if buffered.is_complete() {
                Kept::Whole(parts, buffered)
            } else {
                Kept::Once(Some(Request::from_parts(parts, (self.rebuild)(buffered))))
            })
        }
    }
    fn next(&self, held: &mut Self::Held) -> Option<Request<B>> {
        match held {
            Kept::Whole(parts, buffered) => Some(Request::from_parts(
                parts.clone(),
                (self.rebuild)(buffered.replay()?),
            )),
            Kept::Once(request) => request.take(),
        }
    }
    fn can_replay(&self, held: &Self::Held) -> bool {
        matches!(held, Kept::Whole(..))
    }
}
