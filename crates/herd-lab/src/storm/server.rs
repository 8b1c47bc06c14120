//! The lab's server: a real HTTP endpoint whose answers follow the storm model's rules.
//!
//! Requests are not answered one by one as they come: like the model's server, this one
//! accounts its work per *step*. Every request that arrives during a step waits in that
//! step's batch; when the step ends (a real timer tick), the server pays for accepting the
//! whole batch (a refusal costs `refusal_cost` of an answer), serves as many as the window's
//! remaining budget allows, in a seeded random order, and answers everyone: `200` served,
//! `503` refused. During an outage every request gets `503` at the step's end. So a refusal
//! really spends the budget that answers need, and a burst of refusals starves the answers,
//! as docs/model.md defines it.
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use herd::rng::{Rng, SplitMix64};
use herd_sim::refusal::{RefusalCost, WindowBudget};
use tokio::sync::oneshot;
use tokio::time::{Instant, MissedTickBehavior};

use super::LabStormError;
use crate::server_thread::Running;

/// The model's steps on a real clock: step `i` is `[epoch + i·step, epoch + (i+1)·step)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StepClock {
    pub(crate) epoch: Instant,
    /// One step in real time (the scenario's step times the time scale).
    pub(crate) step: Duration,
}

impl StepClock {
    /// The step the real clock is in now (0 before the epoch).
    pub(crate) fn step_now(&self) -> u64 {
        let since = Instant::now().saturating_duration_since(self.epoch);
        u64::try_from(since.as_nanos() / self.step.as_nanos().max(1)).unwrap_or(u64::MAX)
    }

    /// The real instant `fraction` of the way into step `step`.
    pub(crate) fn at(&self, step: u64, fraction: f64) -> Instant {
        let nanos = (u128::from(step) * self.step.as_nanos())
            .saturating_add((self.step.as_nanos() as f64 * fraction) as u128);
        self.epoch + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// What the server does with one step's batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// In an outage: everyone fails.
    Down,
    /// More arrivals than `collapse_above`: no one is served.
    Collapsed,
    /// This many are served, the rest refused.
    Serve(u64),
}

/// The server's rules, in steps: the storm's work budget (docs/model.md) per window.
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    pub(crate) capacity: u64,
    /// Exact, so a window serves exactly what the simulator's server does.
    pub(crate) refusal_cost: RefusalCost,
    pub(crate) collapse_above: Option<u64>,
    /// `[start, end)` in steps.
    pub(crate) outages: Vec<(u64, u64)>,
    pub(crate) steps_per_window: u64,
}

/// The work budget as it runs down through a window.
#[derive(Debug)]
pub(crate) struct Budget {
    rules: Rules,
    window: u64,
    left: WindowBudget,
}

impl Budget {
    pub(crate) fn new(rules: Rules) -> Self {
        let left = WindowBudget::full(0, rules.refusal_cost);
        Self {
            rules,
            window: u64::MAX,
            left,
        }
    }

    /// `arrivals` requests arrived during `step`: what becomes of them.
    pub(crate) fn settle(&mut self, step: u64, arrivals: u64) -> Settled {
        let rules = &self.rules;
        if rules.outages.iter().any(|&(a, b)| a <= step && step < b) {
            return Settled::Down;
        }
        let window = step / rules.steps_per_window.max(1);
        if window != self.window {
            self.window = window;
            self.left = WindowBudget::full(rules.capacity, rules.refusal_cost);
        }
        if rules.collapse_above.is_some_and(|t| arrivals > t) {
            self.left.refuse_all(arrivals);
            return Settled::Collapsed;
        }
        // Accepting all of them costs r each; each one served costs the remaining 1 − r.
        Settled::Serve(self.left.serve(arrivals))
    }
}

/// Arrivals and answers per step, as the server saw them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub(crate) arrivals: Vec<u64>,
    pub(crate) served: Vec<u64>,
    /// The latest a step was settled after its end, in real time.
    pub(crate) worst_tick_lag: Duration,
}

/// What a waiting request is told.
type Answer = oneshot::Sender<StatusCode>;

/// Requests waiting for the end of their step, each stamped with the step it arrived in.
#[derive(Debug, Default)]
struct Waiting {
    /// `(step, answer)` in arrival order.
    requests: Vec<(u64, Answer)>,
    /// Steps before this one are settled; a request can no longer join them.
    open_from: u64,
}

/// Shared between the HTTP handler and the ticker.
#[derive(Debug)]
pub(crate) struct Desk {
    /// Set once, when the storm's clock starts (after the connections are warm).
    clock: OnceLock<StepClock>,
    waiting: Mutex<Waiting>,
}

impl Desk {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            clock: OnceLock::new(),
            waiting: Mutex::new(Waiting::default()),
        })
    }

    /// Starts the clock; later calls keep the first clock.
    pub(crate) fn start(&self, clock: StepClock) -> StepClock {
        *self.clock.get_or_init(|| clock)
    }

    /// A request arrives: it joins the step the clock is in (or the first one not yet
    /// settled, if the ticker got there first).
    fn arrive(&self, answer: Answer) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.clock.get().map_or(0, StepClock::step_now);
        let step = now.max(waiting.open_from);
        waiting.requests.push((step, answer));
    }

    /// Closes step `step` and takes its batch. The step is stamped on arrival, so a tick
    /// that fires late still settles exactly the requests that arrived during the step.
    fn close(&self, step: u64) -> Vec<Answer> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.open_from = step + 1;
        let (batch, later): (Vec<_>, Vec<_>) = std::mem::take(&mut waiting.requests)
            .into_iter()
            .partition(|(s, _)| *s <= step);
        waiting.requests = later;
        batch.into_iter().map(|(_, answer)| answer).collect()
    }

    fn close_all(&self) -> Vec<Answer> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.open_from = u64::MAX;
        std::mem::take(&mut waiting.requests)
            .into_iter()
            .map(|(_, answer)| answer)
            .collect()
    }
}

/// `POST /work`: wait for the end of the step, then get the step's verdict.
async fn work(State(desk): State<Arc<Desk>>) -> Response {
    let (tx, rx) = oneshot::channel();
    desk.arrive(tx);
    match rx.await {
        Ok(StatusCode::OK) => (StatusCode::OK, "served").into_response(),
        Ok(status) => (status, "refused").into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "closing").into_response(),
    }
}

/// `GET /ping`: opens a connection before the storm, so the pool starts warm.
async fn ping() -> &'static str {
    "pong"
}

/// Settles every step at its end until `stop` fires or `max_steps` have passed.
async fn tick(
    desk: Arc<Desk>,
    clock: StepClock,
    mut budget: Budget,
    seed: u64,
    max_steps: u64,
    stop: oneshot::Receiver<()>,
) -> Ledger {
    let mut stop = stop;
    let clock = desk.start(clock);
    let mut ledger = Ledger::default();
    let mut rng = SplitMix64::derive(seed, 0x5e4e_5e4e);
    let mut ticks = tokio::time::interval_at(clock.epoch + clock.step, clock.step);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Burst);
    for step in 0..max_steps {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = &mut stop => break,
        }
        let lag = Instant::now().saturating_duration_since(clock.at(step + 1, 0.0));
        ledger.worst_tick_lag = ledger.worst_tick_lag.max(lag);
        let mut batch = desk.close(step);
        let arrivals = batch.len() as u64;
        let served = match budget.settle(step, arrivals) {
            Settled::Serve(s) => s,
            Settled::Down | Settled::Collapsed => 0,
        };
        // Arrivals that share a step are served in random (seeded) order.
        for i in (1..batch.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            batch.swap(i, j);
        }
        for (i, answer) in batch.into_iter().enumerate() {
            let status = if (i as u64) < served {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            let _ = answer.send(status);
        }
        ledger.arrivals.push(arrivals);
        ledger.served.push(served);
    }
    // Whoever is still waiting hears "closing" when their sender drops here.
    drop(desk.close_all());
    ledger
}

/// The server on its own thread and runtime, as a real server would be in its own process:
/// the clients' tasks cannot delay its ticks, and it cannot delay theirs.
#[derive(Debug)]
pub(crate) struct ServerThread {
    pub(crate) addr: SocketAddr,
    start: Option<oneshot::Sender<StepClock>>,
    ledger: Option<oneshot::Receiver<Ledger>>,
    running: Running,
}

impl ServerThread {
    /// Binds 127.0.0.1:0 on a new thread and serves `/work` and `/ping`; the steps start
    /// with [`ServerThread::start`].
    pub(crate) async fn spawn(
        budget: Budget,
        seed: u64,
        max_steps: u64,
    ) -> Result<Self, LabStormError> {
        let (start_tx, start_rx) = oneshot::channel::<StepClock>();
        let (ledger_tx, ledger_rx) = oneshot::channel::<Ledger>();
        let (addr, running) = crate::server_thread::spawn(
            "lab-storm-server",
            2,
            "the server's",
            move |ready, stop| serve(budget, seed, max_steps, ready, start_rx, stop, ledger_tx),
        )
        .await
        .map_err(LabStormError::Run)?;
        Ok(Self {
            addr,
            start: Some(start_tx),
            ledger: Some(ledger_rx),
            running,
        })
    }

    /// Starts the steps.
    pub(crate) fn start(&mut self, clock: StepClock) {
        if let Some(start) = self.start.take() {
            let _ = start.send(clock);
        }
    }

    /// Stops the steps and the server and returns the ledger.
    pub(crate) async fn finish(mut self) -> Result<Ledger, LabStormError> {
        self.running.stop();
        let ledger = match self.ledger.take() {
            Some(rx) => rx.await.map_err(|_| {
                LabStormError::Run("the server stopped without its ledger".to_owned())
            }),
            None => Err(LabStormError::Run(
                "the ledger was already taken".to_owned(),
            )),
        };
        // The thread ends right after sending the ledger.
        self.running.join().await;
        ledger
    }
}

async fn serve(
    budget: Budget,
    seed: u64,
    max_steps: u64,
    ready: oneshot::Sender<Result<SocketAddr, String>>,
    start: oneshot::Receiver<StepClock>,
    mut stop: oneshot::Receiver<()>,
    ledger: oneshot::Sender<Ledger>,
) {
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => {
            let _ = ready.send(Err(format!("binding 127.0.0.1:0: {e}")));
            return;
        }
    };
    let addr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(e) => {
            let _ = ready.send(Err(format!("reading the bound address: {e}")));
            return;
        }
    };
    let desk = Desk::new();
    let app = Router::new()
        .route("/work", post(work))
        .route("/ping", get(ping))
        .with_state(Arc::clone(&desk));
    let (stop_http, http_stopped) = oneshot::channel::<()>();
    let http = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = http_stopped.await;
            })
            .await
    });
    let _ = ready.send(Ok(addr));
    let clock = tokio::select! {
        clock = start => clock.ok(),
        _ = &mut stop => None,
    };
    if let Some(clock) = clock {
        let result = tick(desk, clock, budget, seed, max_steps, stop).await;
        let _ = ledger.send(result);
    }
    let _ = stop_http.send(());
    let _ = http.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(refusal_cost: f64) -> Rules {
        Rules {
            capacity: 50,
            refusal_cost: RefusalCost::new(refusal_cost).unwrap(),
            collapse_above: None,
            outages: vec![(0, 100)],
            steps_per_window: 1,
        }
    }

    #[test]
    fn down_during_outages_then_min_of_arrivals_and_capacity() {
        let mut b = Budget::new(rules(0.0));
        assert_eq!(b.settle(99, 10), Settled::Down);
        assert_eq!(b.settle(100, 2000), Settled::Serve(50));
        assert_eq!(b.settle(101, 20), Settled::Serve(20));
    }

    #[test]
    fn two_thousand_refusals_eat_the_budget() {
        let mut b = Budget::new(rules(0.1));
        assert_eq!(b.settle(100, 2000), Settled::Serve(0));
        assert_eq!(b.settle(101, 100), Settled::Serve(44));
    }

    /// Regression: the float formula served 46 here; `47 + 0.1 · 30 = 50` exactly.
    #[test]
    fn exact_boundary_serves_the_last_client() {
        let mut b = Budget::new(rules(0.1));
        assert_eq!(b.settle(100, 77), Settled::Serve(47));
    }
}
