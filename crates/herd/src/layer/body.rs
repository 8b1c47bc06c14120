//! Bodies read into memory: a request body kept for the next attempt, a gRPC response read
//! to its trailers before it is classified, and a failed response drained so that its
//! connection can go back to the pool.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use super::BoxError;

/// A body read into memory up to a limit: its data and trailers when it ended within the
/// limit ([`is_complete`](Self::is_complete)), or the data read so far followed by the rest of
/// the original body when it did not.
///
/// The layer hands it to your `rebuild` function (e.g. `axum::body::Body::new`,
/// `tonic::body::Body::new`) to make a request body again, and returns it as the response
/// body in gRPC mode.
pub struct Buffered<B> {
    chunks: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    rest: Option<Pin<Box<B>>>,
}

impl<B> std::fmt::Debug for Buffered<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffered")
            .field("len", &self.len())
            .field("trailers", &self.trailers)
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl<B> Buffered<B> {
    /// Whether the whole body (and its trailers) is in memory.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.rest.is_none()
    }

    /// The bytes held in memory.
    #[must_use]
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Bytes::len).sum()
    }

    /// Whether no bytes are held in memory.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The trailers, once read (only a complete body has them).
    #[must_use]
    pub fn trailers(&self) -> Option<&HeaderMap> {
        self.trailers.as_ref()
    }

    /// A copy of a complete body, to send again. `None` if the body is not complete.
    pub(crate) fn replay(&self) -> Option<Self> {
        self.is_complete().then(|| Self {
            chunks: self.chunks.clone(),
            trailers: self.trailers.clone(),
            rest: None,
        })
    }
}

impl<B> Body for Buffered<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(chunk) = this.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if let Some(rest) = this.rest.as_mut() {
            return match rest.as_mut().poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame.map_data(|mut d| {
                    let len = d.remaining();
                    d.copy_to_bytes(len)
                })))),
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
                Poll::Ready(None) => {
                    this.rest = None;
                    Poll::Ready(None)
                }
                Poll::Pending => Poll::Pending,
            };
        }
        Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
            && self.trailers.is_none()
            && self.rest.as_ref().is_none_or(|r| r.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        let held = self.len() as u64;
        match &self.rest {
            None => SizeHint::with_exact(held),
            Some(rest) => {
                let hint = rest.size_hint();
                let mut out = SizeHint::new();
                out.set_lower(hint.lower().saturating_add(held));
                if let Some(upper) = hint.upper() {
                    out.set_upper(upper.saturating_add(held));
                }
                out
            }
        }
    }
}

/// Reads `body` into memory until it ends or more than `limit` bytes have arrived.
pub(crate) async fn buffer<B>(body: B, limit: usize) -> Result<Buffered<B>, BoxError>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    let mut body = Box::pin(body);
    let mut chunks = VecDeque::new();
    let mut read = 0usize;
    let mut trailers: Option<HeaderMap> = None;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(Into::into)?;
        match frame.into_data() {
            Ok(mut data) => {
                let len = data.remaining();
                read = read.saturating_add(len);
                chunks.push_back(data.copy_to_bytes(len));
                if read > limit {
                    return Ok(Buffered {
                        chunks,
                        trailers: None,
                        rest: Some(body),
                    });
                }
            }
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    match trailers.as_mut() {
                        Some(all) => all.extend(t),
                        None => trailers = Some(t),
                    }
                }
            }
        }
    }
    Ok(Buffered {
        chunks,
        trailers,
        rest: None,
    })
}

/// Reads and discards up to `limit` bytes of a failed response's body, so that an HTTP/1
/// connection whose body was read to its end goes back to the pool instead of being closed.
/// A body longer than the limit (or that fails) is dropped part-read: its connection closes.
pub(crate) async fn drain<B: Body>(body: B, limit: usize) {
    let mut body = std::pin::pin!(body);
    let mut read = 0usize;
    while let Some(Ok(frame)) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        if let Some(data) = frame.data_ref() {
            read = read.saturating_add(data.remaining());
            if read > limit {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};

    #[tokio::test]
    async fn a_body_within_the_limit_is_complete_and_replays() {
        let buffered = buffer(Full::new(Bytes::from_static(b"hello")), 5)
            .await
            .unwrap();
        assert!(buffered.is_complete());
        let again = buffered.replay().unwrap();
        assert_eq!(again.collect().await.unwrap().to_bytes(), "hello");
        assert_eq!(buffered.collect().await.unwrap().to_bytes(), "hello");
    }

    /// `data`, then trailers with `grpc-status: status`.
    fn with_status(
        data: &'static [u8],
        status: &'static str,
    ) -> impl Body<Data = Bytes, Error = std::convert::Infallible> {
        Full::new(Bytes::from_static(data)).with_trailers(async move {
            let mut t = HeaderMap::new();
            t.insert("grpc-status", status.parse().unwrap());
            Some(Ok(t))
        })
    }

    #[tokio::test]
    async fn a_body_over_the_limit_keeps_its_rest_and_is_sent_whole() {
        let body = with_status(b"hello", "0");
        let buffered = buffer(body, 2).await.unwrap();
        assert!(!buffered.is_complete());
        assert!(buffered.replay().is_none());
        let collected = buffered.collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
        assert_eq!(collected.to_bytes(), "hello");
    }

    #[tokio::test]
    async fn trailers_are_kept_in_a_complete_body() {
        let body = with_status(b"x", "14");
        let buffered = buffer(body, 100).await.unwrap();
        assert_eq!(buffered.trailers().unwrap()["grpc-status"], "14");
        let collected = buffered.replay().unwrap().collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["grpc-status"], "14");
    }
}
