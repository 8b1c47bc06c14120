//! What a response means: the HTTP reading (status, `Retry-After`, your classifier) and the
//! gRPC reading (the `grpc-status` in the trailers, or in the headers of a trailers-only
//! answer, and the pushback beside it).

use std::future::Future;

use http::{HeaderMap, Response, StatusCode};
use http_body::Body;

use super::body::{Buffered, buffer};
use super::grpc::{GrpcCodes, grpc_verdict};
use super::{BoxError, Failure};
use crate::classify::{self, Verdict};
use crate::clock::Clock;

/// How the layer reads responses: [`Http`] (the body as it is) or [`Grpc`] (the body read
/// into a [`Buffered`], for its trailers). Sealed, and its workings are the layer's own.
pub trait Protocol<B>: super::sealed::Sealed + reading::Read<B> {}

impl<K> super::sealed::Sealed for Http<K> {}
impl super::sealed::Sealed for Grpc {}

/// The workings of [`Protocol`], in a module no one outside the crate can name.
pub(crate) mod reading {
    use std::future::Future;

    use http::Response;

    use super::{BoxError, Clock, Failure, Verdict};

    /// How the layer reads a response.
    pub trait Read<B>: Send + Sync + 'static {
        /// The body of the responses the layer returns.
        type Body;
        /// Whether the method decides idempotency (HTTP) or the policy alone does (gRPC:
        /// every call is a POST, and A6 leaves retrying to the configured status codes). The
        /// three flags default to HTTP's answers.
        const BY_METHOD: bool = true;
        /// Reads what classification needs (gRPC: the body, for its trailers).
        fn read(
            &self,
            response: Response<B>,
        ) -> impl Future<Output = Result<Response<Self::Body>, BoxError>> + Send;
        /// `None` for a success, or what the failure says.
        fn classify<C: Clock>(&self, response: &Response<Self::Body>, clock: &C)
        -> Option<Verdict>;
        /// Whether the response carries a failure status on the wire (HTTP status ≥ 400, a
        /// gRPC status other than OK): only then is a `retry-exhausted` mark believed.
        fn is_failure_status(&self, response: &Response<Self::Body>) -> bool;
        /// How the hooks see a failed response.
        fn failure(&self, response: &Response<Self::Body>) -> Failure<'static>;
        /// Whether the layer should drain the body of a failed response before the pause.
        const DRAIN: bool = true;
        /// Whether each attempt tells the server its time limit in `grpc-timeout`.
        const GRPC_TIMEOUT: bool = false;
    }
}

use reading::Read;

/// Decides about a response in HTTP mode: `None` for a success, or a [`Verdict`]. The layer
/// passes what herd's own reading says (`default`), so a classifier changes only the cases it
/// cares about. Implemented by every `Fn(&Response<B>, Option<Verdict>) -> Option<Verdict>`.
pub trait ClassifyResponse<B>: Send + Sync + 'static {
    /// The classification of `response`, given herd's `default`.
    fn classify(&self, response: &Response<B>, default: Option<Verdict>) -> Option<Verdict>;
}

impl<B, F> ClassifyResponse<B> for F
where
    F: Fn(&Response<B>, Option<Verdict>) -> Option<Verdict> + Send + Sync + 'static,
{
    fn classify(&self, response: &Response<B>, default: Option<Verdict>) -> Option<Verdict> {
        self(response, default)
    }
}

/// herd's HTTP reading as it is: statuses below 400 succeed, the others are classified by
/// [`classify::http_response`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultHttp;

impl<B> ClassifyResponse<B> for DefaultHttp {
    fn classify(&self, _: &Response<B>, default: Option<Verdict>) -> Option<Verdict> {
        default
    }
}

/// HTTP mode, with a response classifier `K` (see [`RetryLayer::classify`](super::RetryLayer::classify)).
#[derive(Clone, Copy, Debug, Default)]
pub struct Http<K = DefaultHttp>(pub(crate) K);

/// herd's HTTP reading of a response: `None` below 400, else [`classify::http_response`].
#[must_use]
pub fn http_default<B, C: Clock>(response: &Response<B>, clock: &C) -> Option<Verdict> {
    let status = response.status();
    (status.as_u16() >= 400).then(|| classify::http_response(status, response.headers(), clock))
}

impl<B, K> Protocol<B> for Http<K>
where
    B: Send + 'static,
    K: ClassifyResponse<B>,
{
}

impl<B, K> Read<B> for Http<K>
where
    B: Send + 'static,
    K: ClassifyResponse<B>,
{
    type Body = B;
    fn read(
        &self,
        response: Response<B>,
    ) -> impl Future<Output = Result<Response<B>, BoxError>> + Send {
        std::future::ready(Ok(response))
    }
    fn classify<C: Clock>(&self, response: &Response<B>, clock: &C) -> Option<Verdict> {
        self.0.classify(response, http_default(response, clock))
    }
    fn is_failure_status(&self, response: &Response<B>) -> bool {
        response.status().as_u16() >= 400
    }
    fn failure(&self, response: &Response<B>) -> Failure<'static> {
        Failure::Status(response.status())
    }
}

/// gRPC mode: the response body is read into memory (up to a limit) so that the status in its
/// trailers can be read before deciding. See [`RetryLayer::grpc`](super::RetryLayer::grpc).
#[derive(Clone, Debug)]
pub struct Grpc {
    pub(crate) codes: GrpcCodes,
    pub(crate) limit: usize,
}

/// The `grpc-status` of a buffered gRPC response: from the trailers, or from the headers of a
/// trailers-only answer.
fn grpc_status<B>(response: &Response<Buffered<B>>) -> Option<&http::HeaderValue> {
    response
        .body()
        .trailers()
        .and_then(|t| t.get("grpc-status"))
        .or_else(|| response.headers().get("grpc-status"))
}

/// Where the status was found: pushback is read from the same map.
fn grpc_map<B>(response: &Response<Buffered<B>>) -> &HeaderMap {
    match response.body().trailers() {
        Some(t) if t.contains_key("grpc-status") => t,
        _ => response.headers(),
    }
}

impl<B> Protocol<B> for Grpc
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
}

impl<B> Read<B> for Grpc
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Body = Buffered<B>;
    const BY_METHOD: bool = false;
    const DRAIN: bool = false;
    const GRPC_TIMEOUT: bool = true;
    fn read(
        &self,
        response: Response<B>,
    ) -> impl Future<Output = Result<Response<Buffered<B>>, BoxError>> + Send {
        let (parts, body) = response.into_parts();
        let read = buffer(body, self.limit);
        async move { Ok(Response::from_parts(parts, read.await?)) }
    }
    fn classify<C: Clock>(&self, response: &Response<Buffered<B>>, clock: &C) -> Option<Verdict> {
        if response.status() != StatusCode::OK {
            // Not a gRPC answer (a proxy's 503): read it as HTTP.
            return http_default(response, clock).or(Some(Verdict::permanent()));
        }
        match grpc_status(response) {
            Some(status) => grpc_verdict(status, grpc_map(response), &self.codes),
            // A stream longer than the limit whose status has not arrived yet is passed on.
            None => None,
        }
    }
    fn failure(&self, response: &Response<Buffered<B>>) -> Failure<'static> {
        let code = grpc_status(response)
            .and_then(|s| std::str::from_utf8(s.as_bytes()).ok())
            .and_then(|s| s.trim().parse::<u8>().ok());
        match code {
            Some(code) if response.status() == StatusCode::OK => Failure::Grpc(code),
            _ => Failure::Status(response.status()),
        }
    }
    fn is_failure_status(&self, response: &Response<Buffered<B>>) -> bool {
        response.status() != StatusCode::OK
            || grpc_status(response).is_some_and(|s| s.as_bytes() != b"0")
    }
}
