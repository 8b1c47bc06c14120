//! The lab's servers: a pool of real HTTP servers, each a FIFO queue in front of one worker
//! that serves one copy at a time, with the latency model's service times and pauses.
//!
//! Each server keeps the model's timeline exactly, in scenario nanoseconds since the run's
//! epoch (real time over the time scale): a copy that arrives at `a` starts at `max(a, when
//! the previous copy finished)`, or when the pause under way then ends (a paused server
//! starts nothing), takes a service time drawn at its start, and is stopped by every pause
//! in between, as `herd_sim::latency` defines it (docs/model.md). The pauses are
//! the simulator's own for the seed ([`herd_sim::latency::draws::ServerPauses`]), so the lab's
//! servers pause when the simulated ones do. The worker sleeps until that ideal finish
//! and answers; a late timer delays the answer but not the next copy's start, so the lateness
//! is measured (the answer carries its ideal finish) rather than accumulated. A copy whose
//! client has gone is still served to the end, as the model's default (`cancel_losers =
//! false`): a client that drops a request does not stop the server's work.
//!
//! Every copy that reaches a handler is counted on the server's own ledger, by its key
//! (user, sub-request, copy number), so the lab can account for every copy the clients sent.
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use herd::rng::SplitMix64;
use herd_sim::latency::Distribution;
use herd_sim::latency::draws::{self, ServerPauses};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::LabHedgeError;
use crate::server_thread::Running;

/// The header that carries a copy's key.
pub(crate) const KEY: &str = "x-copy-key";
/// The answer's headers: when the copy reached the server, and its ideal finish, in real
/// nanoseconds since the epoch.
pub(crate) const ARRIVED: &str = "x-arrived-ns";
pub(crate) const FINISH: &str = "x-finish-ns";

/// The seed stream of the servers' service times (their own: service times are drawn in
/// the order each server starts its copies, which the lab cannot share with the simulator).
const SERVICE_STREAM: u64 = 1 << 20;

/// What each server does: the scenario's service law, in scenario nanoseconds, and the
/// time scale that turns them into real ones.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Law {
    pub(crate) distribution: Distribution,
    pub(crate) mean_ns: f64,
    pub(crate) sigma: f64,
    pub(crate) time_scale: f64,
}

impl Law {
    /// A service time, in scenario nanoseconds, as the model draws one.
    pub(crate) fn service(&self, rng: &mut SplitMix64) -> u64 {
        draws::service_time(self.distribution, self.mean_ns, self.sigma, rng)
    }

    fn to_scenario(self, real_ns: u64) -> u64 {
        (real_ns as f64 / self.time_scale) as u64
    }

    fn to_real(self, scenario_ns: u64) -> u64 {
        (scenario_ns as f64 * self.time_scale) as u64
    }
}

/// The servers' own count of what they received.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// Per copy key: how many times a copy with that key reached a handler.
    pub(crate) received: Vec<AtomicU32>,
    /// Per server: copies received.
    pub(crate) per_server: Vec<AtomicU64>,
    /// Copies whose service ended (answered, or served for a client that had gone).
    pub(crate) served: AtomicU64,
    /// Keys that could not be read (a bug if ever non-zero).
    pub(crate) bad_keys: AtomicU64,
}

impl Ledger {
    fn new(keys: usize, servers: usize) -> Self {
        Self {
            received: (0..keys).map(|_| AtomicU32::new(0)).collect(),
            per_server: (0..servers).map(|_| AtomicU64::new(0)).collect(),
            served: AtomicU64::new(0),
            bad_keys: AtomicU64::new(0),
        }
    }

    /// Copies received in all.
    pub(crate) fn total(&self) -> u64 {
        self.per_server
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .sum()
    }
}

struct Job {
    arrived: u64,
    reply: oneshot::Sender<u64>,
}

#[derive(Clone)]
struct Front {
    index: usize,
    epoch: Instant,
    queue: mpsc::UnboundedSender<Job>,
    ledger: Arc<Ledger>,
}

fn since(epoch: Instant) -> u64 {
    u64::try_from(Instant::now().saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX)
}

async fn copy(State(front): State<Front>, headers: HeaderMap) -> Response {
    let arrived = since(front.epoch);
    let key = headers
        .get(KEY)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    match key.and_then(|k| front.ledger.received.get(k)) {
        Some(count) => {
            count.fetch_add(1, Ordering::AcqRel);
        }
        None => {
            front.ledger.bad_keys.fetch_add(1, Ordering::AcqRel);
            return (StatusCode::BAD_REQUEST, "no copy key").into_response();
        }
    }
    front.ledger.per_server[front.index].fetch_add(1, Ordering::AcqRel);
    let (reply, answer) = oneshot::channel();
    if front.queue.send(Job { arrived, reply }).is_err() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    match answer.await {
        Ok(finish) => (
            StatusCode::OK,
            [(ARRIVED, arrived.to_string()), (FINISH, finish.to_string())],
        )
            .into_response(),
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// One server's worker: FIFO, one copy at a time, on the model's timeline.
async fn work(
    mut queue: mpsc::UnboundedReceiver<Job>,
    law: Law,
    mut service: SplitMix64,
    mut pauses: ServerPauses,
    epoch: Instant,
    ledger: Arc<Ledger>,
) {
    let mut free_at = 0u64;
    while let Some(job) = queue.recv().await {
        // The model's timeline, in scenario nanoseconds.
        // A paused server starts nothing: the copy starts when the pause ends.
        let ready = law.to_scenario(job.arrived).max(free_at);
        let start = pauses.paused_until(ready).unwrap_or(ready);
        let finish_scenario = pauses.finish(start, law.service(&mut service));
        free_at = finish_scenario;
        let finish = law.to_real(finish_scenario);
        tokio::time::sleep_until(epoch + Duration::from_nanos(finish)).await;
        ledger.served.fetch_add(1, Ordering::AcqRel);
        // A client that has gone does not stop the work: the copy was served all the same.
        let _ = job.reply.send(finish);
    }
}

/// The pool on its own thread and runtime, as real servers would be in their own
/// processes: the clients' tasks cannot delay its timers.
#[derive(Debug)]
pub(crate) struct Pool {
    pub(crate) addrs: Vec<SocketAddr>,
    pub(crate) ledger: Arc<Ledger>,
    running: Running,
}

impl Pool {
    /// Binds `servers` listeners on 127.0.0.1:0 on a new thread; their timelines start at
    /// `epoch`.
    pub(crate) async fn spawn(
        pauses: Vec<ServerPauses>,
        keys: usize,
        law: Law,
        seed: u64,
        epoch: Instant,
    ) -> Result<Self, LabHedgeError> {
        let servers = pauses.len();
        let ledger = Arc::new(Ledger::new(keys, servers));
        let shared = Arc::clone(&ledger);
        let (addrs, running) = crate::server_thread::spawn(
            "lab-hedge-servers",
            1,
            "the servers'",
            move |ready, stop| serve(pauses, law, seed, epoch, shared, ready, stop),
        )
        .await
        .map_err(LabHedgeError::Run)?;
        Ok(Self {
            addrs,
            ledger,
            running,
        })
    }

    /// Waits until every copy received has been served and nothing new arrived for
    /// `quiet`, or until `limit`; returns whether the servers went quiet.
    pub(crate) async fn settle(&self, quiet: Duration, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        let mut last = (u64::MAX, u64::MAX);
        let mut stable_since = Instant::now();
        loop {
            let now = (
                self.ledger.total(),
                self.ledger.served.load(Ordering::Acquire),
            );
            if now != last {
                last = now;
                stable_since = Instant::now();
            } else if now.0 == now.1 && stable_since.elapsed() >= quiet {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Stops the servers and joins their thread.
    pub(crate) async fn finish(self) {
        self.running.join().await;
    }
}

async fn serve(
    pauses: Vec<ServerPauses>,
    law: Law,
    seed: u64,
    epoch: Instant,
    ledger: Arc<Ledger>,
    ready: oneshot::Sender<Result<Vec<SocketAddr>, String>>,
    stop: oneshot::Receiver<()>,
) {
    let mut addrs = Vec::with_capacity(pauses.len());
    let mut tasks = tokio::task::JoinSet::new();
    let (stop_all, _) = tokio::sync::watch::channel(false);
    for (index, pauses) in pauses.into_iter().enumerate() {
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(e) => {
                let _ = ready.send(Err(format!("binding 127.0.0.1:0: {e}")));
                return;
            }
        };
        match listener.local_addr() {
            Ok(addr) => addrs.push(addr),
            Err(e) => {
                let _ = ready.send(Err(format!("reading a listener's address: {e}")));
                return;
            }
        }
        let (queue, jobs) = mpsc::unbounded_channel();
        tasks.spawn(work(
            jobs,
            law,
            SplitMix64::derive(seed, SERVICE_STREAM + index as u64),
            pauses,
            epoch,
            Arc::clone(&ledger),
        ));
        let front = Front {
            index,
            epoch,
            queue,
            ledger: Arc::clone(&ledger),
        };
        let app = Router::new().route("/copy", get(copy)).with_state(front);
        let mut stopped = stop_all.subscribe();
        tasks.spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.wait_for(|&s| s).await;
                })
                .await;
        });
    }
    if ready.send(Ok(addrs)).is_err() {
        return;
    }
    let _ = stop.await;
    let _ = stop_all.send(true);
    // Connections a client left open must not hold the thread: give them a moment.
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn ledger(keys: usize, servers: usize) -> Ledger {
        Ledger::new(keys, servers)
    }
}
