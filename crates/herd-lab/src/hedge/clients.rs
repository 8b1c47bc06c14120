//! The lab's clients: open-loop arrivals (Poisson, seeded), each user request fanning out to
//! sub-requests, each sub-request a call through herd's [`HedgeLayer`] over a real hyper
//! client, and a ledger of every copy the clients sent.
//!
//! The service under the layer sends one copy per call: to a server drawn at random, one the
//! sub-request has not used yet (while there is one), as the latency model routes copies.
//! A copy's fate is kept by its key: sent, answered, failed on the wire, or dropped by the
//! hedge (the call ended while it was in flight).
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use herd::hedge::MAX_COPIES;
use herd::rng::{Rng, SplitMix64};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::time::Instant;
use tower::Service;

use super::server::{ARRIVED, FINISH, KEY};

pub(crate) type HttpClient = Client<HttpConnector, Empty<Bytes>>;

/// A copy's fate, by key.
pub(crate) mod fate {
    /// Never sent.
    pub(crate) const NONE: u8 = 0;
    /// Handed to the HTTP client; still in flight.
    pub(crate) const SENT: u8 = 1;
    /// Answered.
    pub(crate) const ANSWERED: u8 = 2;
    /// Failed without an HTTP answer (a transport error) or with a status other than 200.
    pub(crate) const FAILED: u8 = 3;
    /// Dropped in flight: the call ended (another copy answered) before this one did.
    pub(crate) const DROPPED: u8 = 4;
}

/// Key of copy `copy` (1-based) of sub-request `sub` of user request `user`.
pub(crate) fn key(user: u64, sub: u32, fan_out: u32, copy: u32) -> usize {
    ((user * u64::from(fan_out) + u64::from(sub)) * u64::from(MAX_COPIES) + u64::from(copy - 1))
        as usize
}

/// What the clients sent, per copy key.
#[derive(Debug)]
pub(crate) struct CopyLedger {
    pub(crate) fates: Vec<AtomicU8>,
}

impl CopyLedger {
    pub(crate) fn new(keys: usize) -> Self {
        Self {
            fates: (0..keys).map(|_| AtomicU8::new(fate::NONE)).collect(),
        }
    }

    fn set(&self, key: usize, fate: u8) {
        self.fates[key].store(fate, Ordering::Release);
    }
}

/// One sub-request: which copies it has sent and where, shared by its copies.
#[derive(Clone, Debug)]
pub(crate) struct SubRequest {
    pub(crate) user: u64,
    pub(crate) sub: u32,
    route: Arc<Mutex<Route>>,
}

#[derive(Debug)]
struct Route {
    sent: u32,
    used: [u32; MAX_COPIES as usize],
    rng: SplitMix64,
}

impl SubRequest {
    pub(crate) fn new(user: u64, sub: u32, rng: SplitMix64) -> Self {
        Self {
            user,
            sub,
            route: Arc::new(Mutex::new(Route {
                sent: 0,
                used: [0; MAX_COPIES as usize],
                rng,
            })),
        }
    }
}

/// One copy's answer, timed on the run's epoch (nanoseconds).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopyAnswer {
    /// When the copy was handed to the HTTP client.
    pub(crate) sent: u64,
    /// When it reached the server (the server's clock: the same process).
    pub(crate) arrived: u64,
    /// Its ideal finish on the server's timeline.
    pub(crate) finish: u64,
    /// When the answer was back.
    pub(crate) answered: u64,
}

impl CopyAnswer {
    /// What the model leaves out: the way there, and the way back with the server's timer.
    pub(crate) fn overhead(&self) -> u64 {
        self.arrived.saturating_sub(self.sent) + self.answered.saturating_sub(self.finish)
    }
}

/// Why a copy failed.
#[derive(Debug)]
pub(crate) struct CopyFailed(pub(crate) String);

/// Sends one copy per call; see the module docs.
#[derive(Clone, Debug)]
pub(crate) struct CopyService {
    pub(crate) http: HttpClient,
    pub(crate) servers: Arc<Vec<SocketAddr>>,
    pub(crate) ledger: Arc<CopyLedger>,
    pub(crate) fan_out: u32,
    pub(crate) epoch: Instant,
}

/// Marks its copy dropped unless it ended.
struct Guard {
    ledger: Arc<CopyLedger>,
    key: usize,
    ended: bool,
}

impl Guard {
    fn end(mut self, fate: u8) {
        self.ledger.set(self.key, fate);
        self.ended = true;
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.ended {
            self.ledger.set(self.key, fate::DROPPED);
        }
    }
}

fn since(epoch: Instant) -> u64 {
    u64::try_from(Instant::now().saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX)
}

fn header(response: &http::Response<hyper::body::Incoming>, name: &str) -> Option<u64> {
    response.headers().get(name)?.to_str().ok()?.parse().ok()
}

impl Service<SubRequest> for CopyService {
    type Response = CopyAnswer;
    type Error = CopyFailed;
    type Future = Pin<Box<dyn Future<Output = Result<CopyAnswer, CopyFailed>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CopyFailed>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: SubRequest) -> Self::Future {
        let n = self.servers.len() as u32;
        let (copy, server) = {
            let mut route = request.route.lock().unwrap_or_else(PoisonError::into_inner);
            let sent = route.sent as usize;
            let server = loop {
                let pick = route.rng.below(u64::from(n)) as u32;
                if sent >= n as usize || !route.used[..sent].contains(&pick) {
                    break pick;
                }
            };
            if sent < MAX_COPIES as usize {
                route.used[sent] = server;
            }
            route.sent += 1;
            (route.sent, server)
        };
        let key = key(request.user, request.sub, self.fan_out, copy);
        let uri = format!("http://{}/copy", self.servers[server as usize]);
        let this = self.clone();
        Box::pin(async move {
            let req = http::Request::get(uri)
                .header(KEY, key.to_string())
                .body(Empty::<Bytes>::new())
                .map_err(|e| CopyFailed(e.to_string()))?;
            this.ledger.set(key, fate::SENT);
            let guard = Guard {
                ledger: Arc::clone(&this.ledger),
                key,
                ended: false,
            };
            let sent = since(this.epoch);
            let response = match this.http.request(req).await {
                Ok(response) => response,
                Err(e) => {
                    guard.end(fate::FAILED);
                    return Err(CopyFailed(format!("copy {copy}: {e}")));
                }
            };
            let status = response.status();
            let times = (header(&response, ARRIVED), header(&response, FINISH));
            // Read the (empty) body so the connection goes back to the pool.
            let body = response.into_body().collect().await;
            let answered = since(this.epoch);
            match (status, times, body) {
                (http::StatusCode::OK, (Some(arrived), Some(finish)), Ok(_)) => {
                    guard.end(fate::ANSWERED);
                    Ok(CopyAnswer {
                        sent,
                        arrived,
                        finish,
                        answered,
                    })
                }
                (status, _, body) => {
                    guard.end(fate::FAILED);
                    Err(CopyFailed(format!(
                        "copy {copy}: status {status}{}",
                        body.err().map(|e| format!(", {e}")).unwrap_or_default()
                    )))
                }
            }
        })
    }
}
