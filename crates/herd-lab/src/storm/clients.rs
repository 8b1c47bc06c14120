//! The lab's clients: tokio tasks that call the server through herd's async retry loop.
//!
//! Each client is one [`RetryPolicy`] call ([`Call::run_async_with`](herd::call::Call)) with
//! the scenario's rule, drawing its pauses from its own seeded generator. The simulator rounds
//! every pause up to whole steps (at least one), measured from the step of the failed attempt;
//! the [`StepSleeper`] does the same on the real clock: it sleeps until the middle of step
//! `attempt step + max(1, ceil(pause / step))`. That is the only place time is scaled: the
//! rule itself keeps the scenario's pauses.
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use herd::asynchronous::{AttemptTimedOut, Sleeper, TokioClock};
use herd::policy::RetryPolicy;
use herd::rng::SplitMix64;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;

use super::server::StepClock;

/// The HTTP client every task shares (one pool of keep-alive connections).
pub(crate) type Http = Client<HttpConnector, Empty<Bytes>>;

/// Where in its step a client knocks: the middle, far from both tick boundaries.
const KNOCK_AT: f64 = 0.5;

/// Why one attempt failed.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// The server answered 503: down, refused or collapsed.
    Refused,
    /// The request did not complete (a connection error).
    Transport,
    /// The retry loop cut the attempt (never, as no attempt timeout is set).
    TimedOut,
}

impl From<AttemptTimedOut> for AttemptError {
    fn from(_: AttemptTimedOut) -> Self {
        AttemptError::TimedOut
    }
}

/// What became of one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClientEnd {
    pub(crate) served: bool,
    pub(crate) attempts: u32,
    /// Attempts that reached the server in a later step than the one they aimed at.
    pub(crate) late: u32,
    /// Attempts that failed without an HTTP answer.
    pub(crate) transport_errors: u32,
}

/// The steps one client works with.
#[derive(Debug)]
struct Steps {
    /// The step of the last attempt.
    last: AtomicU64,
    /// The step the next attempt aims at.
    aimed: AtomicU64,
}

/// Sleeps the simulator's way: to the middle of the step the rounded pause lands on.
struct StepSleeper<'a> {
    clock: StepClock,
    step_sim: Duration,
    steps: &'a Steps,
}

impl Sleeper for StepSleeper<'_> {
    type Sleep = tokio::time::Sleep;

    fn sleep(&self, pause: Duration) -> tokio::time::Sleep {
        let steps = pause
            .as_nanos()
            .div_ceil(self.step_sim.as_nanos().max(1))
            .max(1);
        let steps = u64::try_from(steps).unwrap_or(u64::MAX);
        let target = self
            .steps
            .last
            .load(Ordering::Relaxed)
            .saturating_add(steps);
        self.steps.aimed.store(target, Ordering::Relaxed);
        tokio::time::sleep_until(self.clock.at(target, KNOCK_AT))
    }
}

/// Everything a client task needs.
pub(crate) struct Crowd {
    pub(crate) http: Http,
    pub(crate) url: hyper::Uri,
    pub(crate) policy: RetryPolicy<TokioClock>,
    pub(crate) clock: StepClock,
    pub(crate) step_sim: Duration,
    pub(crate) start_step: u64,
    pub(crate) seed: u64,
}

impl Crowd {
    /// One client: knock at the start step, retry by the rule until served or out of attempts.
    pub(crate) async fn client(self: Arc<Self>, id: u64) -> ClientEnd {
        let steps = Steps {
            last: AtomicU64::new(self.start_step),
            aimed: AtomicU64::new(self.start_step),
        };
        let late = AtomicU64::new(0);
        let transport = AtomicU64::new(0);
        tokio::time::sleep_until(self.clock.at(self.start_step, KNOCK_AT)).await;
        let sleeper = StepSleeper {
            clock: self.clock,
            step_sim: self.step_sim,
            steps: &steps,
        };
        let crowd: &Crowd = &self;
        let result = crowd
            .policy
            .call(|_attempt| {
                let now = crowd.clock.step_now();
                if now > steps.aimed.load(Ordering::Relaxed) {
                    late.fetch_add(1, Ordering::Relaxed);
                }
                steps.last.store(now, Ordering::Relaxed);
                // A zero pause skips the sleeper: the retry then aims at the next step.
                steps.aimed.store(now.saturating_add(1), Ordering::Relaxed);
                let transport = &transport;
                async move {
                    let outcome = crowd.knock().await;
                    if matches!(outcome, Err(AttemptError::Transport)) {
                        transport.fetch_add(1, Ordering::Relaxed);
                    }
                    outcome
                }
            })
            .rng(SplitMix64::derive(crowd.seed, id))
            .run_async_with(&sleeper)
            .await;
        let (served, attempts) = match result {
            Ok(success) => (true, success.attempts),
            Err(error) => (false, error.attempts()),
        };
        ClientEnd {
            served,
            attempts,
            late: u32::try_from(late.load(Ordering::Relaxed)).unwrap_or(u32::MAX),
            transport_errors: u32::try_from(transport.load(Ordering::Relaxed)).unwrap_or(u32::MAX),
        }
    }

    async fn knock(&self) -> Result<(), AttemptError> {
        let request = hyper::Request::post(self.url.clone())
            .body(Empty::new())
            .map_err(|_| AttemptError::Transport)?;
        let response = self
            .http
            .request(request)
            .await
            .map_err(|_| AttemptError::Transport)?;
        let status = response.status().as_u16();
        // Read the (tiny) body so the connection goes back to the pool.
        let _ = response.into_body().collect().await;
        if status == 200 {
            Ok(())
        } else {
            Err(AttemptError::Refused)
        }
    }
}

/// Opens a pooled connection (not part of the storm).
pub(crate) async fn warm_up(http: Http, ping: hyper::Uri) {
    let Ok(request) = hyper::Request::get(ping).body(Empty::new()) else {
        return;
    };
    if let Ok(response) = http.request(request).await {
        let _ = response.into_body().collect().await;
    }
}
