//! The lab's clients: tokio tasks that call the server through herd's async retry loop.
//!
//! Each client is one [`RetryPolicy`] call ([`Call::run_async_with`](herd::call::Call)) with
//! the scenario's rule as the simulator builds it (`herd_sim::Simulation::rule_in_steps`: in
//! whole steps under `pauses = "steps"`, else in nanoseconds), drawing its pauses from its own
//! seeded generator. The simulator turns every pause into whole steps (at least one),
//! measured from the step of the failed attempt; the [`StepSleeper`] does the same on the real
//! clock: it sleeps until a tenth of the way into step
//! `attempt step + max(1, ceil(pause / per_step))`, `per_step` being the rule's nanoseconds
//! per step (1 when it draws whole steps). That is the only place time is scaled.
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

/// Where in its step a client knocks: early, so that a request delayed by a busy machine
/// still arrives within the step (a timer never fires early, so it cannot arrive before).
const KNOCK_AT: f64 = 0.1;

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
}

/// Counts over all clients, kept as they go (a client cut off at the end still counts).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Attempts sent.
    pub(crate) attempts: AtomicU64,
    /// Attempts sent in a later step than the one they aimed at.
    pub(crate) late: AtomicU64,
    /// Attempts that failed without an HTTP answer.
    pub(crate) transport_errors: AtomicU64,
}

/// The steps one client works with.
#[derive(Debug)]
struct Steps {
    /// The step of the last attempt.
    last: AtomicU64,
    /// The step the next attempt aims at.
    aimed: AtomicU64,
}

/// Sleeps the simulator's way: into the step the rounded-up pause lands on.
struct StepSleeper<'a> {
    clock: StepClock,
    /// The rule's nanoseconds per step.
    per_step: u64,
    steps: &'a Steps,
}

impl Sleeper for StepSleeper<'_> {
    type Sleep = tokio::time::Sleep;

    fn sleep(&self, pause: Duration) -> tokio::time::Sleep {
        let steps = pause
            .as_nanos()
            .div_ceil(u128::from(self.per_step.max(1)))
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
    /// The rule's nanoseconds per step (see the module docs).
    pub(crate) per_step: u64,
    pub(crate) start_step: u64,
    pub(crate) seed: u64,
    pub(crate) tally: Tally,
}

impl Crowd {
    /// One client: knock at the start step, retry by the rule until served or out of attempts.
    pub(crate) async fn client(self: Arc<Self>, id: u64) -> ClientEnd {
        let steps = Steps {
            last: AtomicU64::new(self.start_step),
            aimed: AtomicU64::new(self.start_step),
        };
        tokio::time::sleep_until(self.clock.at(self.start_step, KNOCK_AT)).await;
        let sleeper = StepSleeper {
            clock: self.clock,
            per_step: self.per_step,
            steps: &steps,
        };
        let crowd: &Crowd = &self;
        let result = crowd
            .policy
            .call(|_attempt| {
                let now = crowd.clock.step_now();
                crowd.tally.attempts.fetch_add(1, Ordering::Relaxed);
                if now > steps.aimed.load(Ordering::Relaxed) {
                    crowd.tally.late.fetch_add(1, Ordering::Relaxed);
                }
                steps.last.store(now, Ordering::Relaxed);
                // A zero pause skips the sleeper: the retry then aims at the next step.
                steps.aimed.store(now.saturating_add(1), Ordering::Relaxed);
                async move {
                    let outcome = crowd.knock().await;
                    if matches!(outcome, Err(AttemptError::Transport)) {
                        crowd.tally.transport_errors.fetch_add(1, Ordering::Relaxed);
                    }
                    outcome
                }
            })
            .rng(SplitMix64::derive(crowd.seed, id))
            .run_async_with(&sleeper)
            .await;
        ClientEnd {
            served: result.is_ok(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    /// The sleeper lands where the simulator would: the failed attempt's step plus the pause
    /// rounded up to whole steps, at least one.
    #[tokio::test]
    async fn pauses_round_up_to_whole_steps_from_the_attempt() {
        let clock = StepClock {
            epoch: Instant::now(),
            step: Duration::from_millis(10),
        };
        let steps = Steps {
            last: AtomicU64::new(5),
            aimed: AtomicU64::new(5),
        };
        // A rule drawn in nanoseconds, 100 ms to a step.
        let in_ns = StepSleeper {
            clock,
            per_step: 100_000_000,
            steps: &steps,
        };
        // A rule drawn in whole steps (`pauses = "steps"`): one unit is one step.
        let in_steps = StepSleeper {
            per_step: 1,
            ..in_ns
        };
        let lands = |sleeper: &StepSleeper<'_>, pause: Duration, target: u64| {
            let sleep = sleeper.sleep(pause);
            assert_eq!(sleep.deadline(), clock.at(target, KNOCK_AT), "{pause:?}");
            assert_eq!(steps.aimed.load(Ordering::Relaxed), target, "{pause:?}");
        };
        for (pause_ms, target) in [(0, 6), (1, 6), (100, 6), (101, 7), (1000, 15)] {
            lands(&in_ns, Duration::from_millis(pause_ms), target);
        }
        for (pause, target) in [(0, 6), (1, 6), (2, 7), (3, 8), (10, 15)] {
            lands(&in_steps, Duration::from_nanos(pause), target);
        }
    }
}
