//! `herd lab hedge`: the latency model checked against real sockets and herd's own hedging
//! layer.
//!
//! A pool of real HTTP servers on 127.0.0.1 (one ephemeral port each) serves copies with the
//! scenario's service times and pauses, each server a FIFO queue in front of one worker, on
//! the model's timeline ([`server`](self) module docs). Open-loop clients (Poisson arrivals,
//! seeded) send each user request's sub-requests through [`herd::hedge::HedgeLayer`] over a
//! real hyper client, one policy after another, each on a fresh pool that meets the same
//! arrivals and the same pauses: the simulator's own for the seed
//! ([`herd_sim::latency::draws`]). Time is scaled: at `time_scale = 0.5` a 10 ms service time
//! lasts 5 ms.
//!
//! Measured: the user latency's p50, p99, p99.9 and mean, and the extra load, counted by the
//! clients (copies sent) and by the servers (copies received). The two counts are reconciled
//! copy by copy: every copy the clients sent was received, or was cancelled before it
//! arrived; nothing is received twice or from nowhere; a user request that gives up is
//! counted. The figures stand beside the simulator's for the same scenario and seed, and the
//! spread of its figures over several seeds, with a verdict (see [`verdict`]).
//!
//! What is modelled: Poisson arrivals, fan-out, the pool, the three service laws, pauses,
//! the `none`, `delay` and `percentile` policies, `max_copies`, budgets. Tied requests
//! (servers that tell each other when one starts) and `cancel_losers = true` (servers that
//! stop a copy its client dropped) are refused, naming the field.
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use herd::asynchronous::TokioClock;
use herd::budget::{BudgetConfig, RetryBudget};
use herd::hedge::{Hedge, HedgeDelay, HedgeLayer, HedgePolicy, MAX_COPIES};
use herd::rng::SplitMix64;
use herd_sim::Watch;
use herd_sim::latency::{
    self, LatencyModel, LatencyScenario, PolicyKind, PolicySpec, draws, nearest_rank,
};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

mod clients;
pub(crate) mod measure;
pub(crate) mod report;
mod server;

pub use crate::time_scale::MAX_TIME_SCALE;
pub use measure::{Accounting, HedgeFigures};
pub use report::{PolicyReport, Spread};

use clients::{CopyAnswer, CopyFailed, CopyLedger, CopyService, SubRequest};
use server::{Law, Pool};

/// The most user requests one policy's run sends, warm-up included.
pub const MAX_REQUESTS: u64 = 20_000;
/// The most servers (each a listener and a worker).
pub const MAX_SERVERS: u32 = 64;
/// The widest fan-out.
pub const MAX_FAN_OUT: u32 = 10;
/// The shortest mean service time in real time: tokio's timers have a millisecond's
/// resolution, so shorter times would be mostly timer.
pub const MIN_SERVICE_REAL_MS: f64 = 2.0;
/// The longest the lab plays, in real seconds, every policy together.
pub const MAX_REAL_S: f64 = 300.0;
/// The most simulated runs (seeds) for the spread.
pub const MAX_SIM_RUNS: u32 = 200;
/// Simulated runs (seeds) by default.
pub const DEFAULT_SIM_RUNS: u32 = 30;

/// Seed streams of the clients' routing, one a sub-request from here (the arrivals are the
/// simulator's). Below 2³² with every user and sub-request the bounds allow (2·10⁵), as
/// every stream number of the latency model, so that `SplitMix64::derive` never seeds two
/// of them alike (docs/rng.md).
const ROUTING: u64 = 1 << 24;
const _: () = assert!(ROUTING + MAX_REQUESTS * MAX_FAN_OUT as u64 <= 1 << 32);

/// The delay of a percentile policy before its first window has enough samples: in the
/// model no copy is hedged then, so the lab waits longer than any run.
const NOT_YET: Duration = Duration::from_secs(3600);

/// The scenario `herd lab hedge` plays without a file (`scenarios/lab-hedge.toml`): a pool at
/// 20 % utilisation whose servers pause for 100 ms about every 2 s, sized for real sockets.
pub const DEFAULT_SCENARIO: &str = include_str!("../../../../scenarios/lab-hedge.toml");

/// Why a lab run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum LabHedgeError {
    /// The scenario or a setting is out of what the lab can play; names the field or flag.
    #[error("{0}")]
    Input(String),
    /// Something failed at run time (binding a socket, a task).
    #[error("{0}")]
    Run(String),
}

fn unsupported(field: String, what: &str) -> LabHedgeError {
    LabHedgeError::Input(format!(
        "{field}: lab hedge does not model {what} (herd hedge simulates it)"
    ))
}

/// A checked lab hedge: a latency scenario, a time scale, and how many runs (seeds) the simulator
/// runs for the spread.
#[derive(Clone, Debug)]
pub struct LabHedge {
    scenario: LatencyScenario,
    model: LatencyModel,
    time_scale: f64,
    sim_runs: u32,
}

type Hedged = Hedge<CopyService, TokioClock, SubRequest, CopyAnswer, CopyFailed>;

/// How one user request ended.
#[derive(Clone, Debug)]
struct UserEnd {
    user: u64,
    /// Latency and overhead (the largest of its sub-requests'), in real ns; `None`: it gave
    /// up.
    answered: Option<(u64, u64)>,
    /// Why it gave up.
    error: Option<String>,
}

impl LabHedge {
    /// Checks that the lab can play `scenario` at `time_scale`, with `sim_runs` simulated runs (seeds `S..S+sim_runs−1`).
    ///
    /// # Errors
    ///
    /// [`LabHedgeError::Input`] naming the field: an invalid scenario, more than
    /// [`MAX_REQUESTS`] requests, [`MAX_SERVERS`] servers or a fan-out over [`MAX_FAN_OUT`],
    /// tied requests or `cancel_losers`, a time scale outside `(0, MAX_TIME_SCALE]` or that
    /// makes the mean service shorter than [`MIN_SERVICE_REAL_MS`], or a run longer than
    /// [`MAX_REAL_S`].
    pub fn new(
        scenario: LatencyScenario,
        time_scale: f64,
        sim_runs: u32,
    ) -> Result<Self, LabHedgeError> {
        let model =
            LatencyModel::new(&scenario).map_err(|e| LabHedgeError::Input(e.to_string()))?;
        crate::time_scale::check(time_scale).map_err(LabHedgeError::Input)?;
        if !(2..=MAX_SIM_RUNS).contains(&sim_runs) {
            return Err(LabHedgeError::Input(format!(
                "sim_runs must be in [2, {MAX_SIM_RUNS}], got {sim_runs} (--sim-runs)"
            )));
        }
        for (i, p) in scenario.policies.iter().enumerate() {
            if p.kind == PolicyKind::Tied {
                return Err(unsupported(
                    format!("policies[{i}].kind"),
                    "tied requests (servers that tell each other when one starts)",
                ));
            }
            if p.cancel_losers {
                return Err(unsupported(
                    format!("policies[{i}].cancel_losers"),
                    "servers that stop a copy its client dropped",
                ));
            }
        }
        let total = scenario.requests.saturating_add(scenario.warmup_requests);
        if total > MAX_REQUESTS {
            return Err(LabHedgeError::Input(format!(
                "requests: lab hedge sends at most {MAX_REQUESTS} user requests per policy, warm-up \
                 included; got {} + {} (--requests, warmup_requests)",
                scenario.requests, scenario.warmup_requests
            )));
        }
        if scenario.servers.count > MAX_SERVERS {
            return Err(LabHedgeError::Input(format!(
                "servers.count: lab hedge runs at most {MAX_SERVERS} servers, got {}",
                scenario.servers.count
            )));
        }
        if scenario.traffic.fan_out > MAX_FAN_OUT {
            return Err(LabHedgeError::Input(format!(
                "traffic.fan_out: lab hedge fans out to at most {MAX_FAN_OUT}, got {}",
                scenario.traffic.fan_out
            )));
        }
        let service_real_ms = scenario.service.mean_ms * time_scale;
        if service_real_ms < MIN_SERVICE_REAL_MS {
            return Err(LabHedgeError::Input(format!(
                "time scale {time_scale}: a {} ms service time would last {service_real_ms} ms of \
                 real time; at least {MIN_SERVICE_REAL_MS} ms (timers are not finer): raise \
                 --time-scale or service.mean_ms",
                scenario.service.mean_ms
            )));
        }
        let lab = Self {
            scenario,
            model,
            time_scale,
            sim_runs,
        };
        let real_s = lab.real_seconds() * lab.scenario.policies.len() as f64;
        if real_s > MAX_REAL_S {
            return Err(LabHedgeError::Input(format!(
                "the run would take about {real_s:.0} s of real time, at most {MAX_REAL_S} s: fewer \
                 --requests, a smaller --time-scale or fewer policies"
            )));
        }
        Ok(lab)
    }

    /// The scenario.
    #[must_use]
    pub fn scenario(&self) -> &LatencyScenario {
        &self.scenario
    }

    /// The time scale.
    #[must_use]
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }

    /// Seeds the simulator runs for the spread.
    #[must_use]
    pub fn sim_runs(&self) -> u32 {
        self.sim_runs
    }

    /// User requests one policy's run sends, warm-up included.
    #[must_use]
    pub fn users(&self) -> u64 {
        self.scenario.requests + self.scenario.warmup_requests
    }

    /// The expected real length of one policy's arrivals, in seconds.
    #[must_use]
    pub fn real_seconds(&self) -> f64 {
        self.users() as f64 / self.scenario.traffic.rate_per_s * self.time_scale
    }

    /// File descriptors a run needs: two per copy in flight (the client's socket and the
    /// server's), for as many copies as Little's law gives over a user request's slowest
    /// plausible life (a pause, 20 mean services, every hedge delay), four times over.
    #[must_use]
    pub fn descriptors_needed(&self) -> u64 {
        let s = &self.scenario;
        let copies = s
            .policies
            .iter()
            .map(|p| p.max_copies.clamp(1, MAX_COPIES))
            .max()
            .unwrap_or(1);
        let delay_ms = s.policies.iter().map(|p| p.delay_ms).fold(0.0f64, f64::max);
        let life_s =
            (s.hiccups.pause_ms + 20.0 * s.service.mean_ms + f64::from(copies) * delay_ms) / 1000.0;
        let in_flight = (s.traffic.rate_per_s * life_s * 4.0).ceil() as u64 + 1;
        let in_flight =
            in_flight.min(self.users()) * u64::from(s.traffic.fan_out) * u64::from(copies);
        crate::storm::descriptors::needed(in_flight + u64::from(s.servers.count))
    }

    /// The simulator's figures for policy `index` at the scenario's seed, and over
    /// [`sim_runs`](Self::sim_runs) seeds from it.
    ///
    /// # Errors
    ///
    /// [`LabHedgeError::Input`] when there is no such policy.
    pub fn predict(&self, index: usize) -> Result<(HedgeFigures, Spread), LabHedgeError> {
        let seed = self.scenario.seed;
        let runs = (0..u64::from(self.sim_runs))
            .map(|i| {
                self.model
                    .run(index, seed.wrapping_add(i), Watch::none())
                    .map(|(r, _)| HedgeFigures::of(&r))
                    .map_err(|e| LabHedgeError::Input(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((runs[0], Spread::of(&runs)))
    }

    fn real(&self, ms: f64) -> Duration {
        Duration::from_secs_f64(ms * self.time_scale / 1000.0)
    }

    fn hedge_policy(&self, p: &PolicySpec) -> Result<HedgePolicy<TokioClock>, LabHedgeError> {
        let (delay, copies) = match p.kind {
            PolicyKind::Delay => (HedgeDelay::fixed(self.real(p.delay_ms)), p.max_copies),
            // As the model: its learning windows and samples, no hedge before.
            PolicyKind::Percentile => (
                HedgeDelay::Percentile {
                    quantile: p.quantile,
                    min: Duration::ZERO,
                    max: NOT_YET,
                    window: self.real(latency::LEARNING_WINDOW.as_secs_f64() * 1000.0),
                    min_samples: latency::LEARNING_MIN_SAMPLES,
                },
                p.max_copies,
            ),
            _ => (HedgeDelay::fixed(Duration::ZERO), 1),
        };
        let mut builder = HedgePolicy::builder(delay).max_copies(copies);
        if let Some(percent) = p.budget_percent {
            // As the model: that percentage of sub-requests over its window, no reserve.
            let budget = RetryBudget::new(
                BudgetConfig::default()
                    .percent(percent)
                    .min_per_sec(0)
                    .window(self.real(latency::BUDGET_WINDOW.as_secs_f64() * 1000.0)),
                TokioClock::new(),
            )
            .map_err(|e| LabHedgeError::Input(format!("{}: {e}", p.name)))?;
            builder = builder.budget(Arc::new(budget));
        }
        builder
            .clock(TokioClock::new())
            .build()
            .map_err(|e| LabHedgeError::Input(format!("{}: {e}", p.name)))
    }

    fn law(&self) -> Law {
        let s = &self.scenario;
        Law {
            distribution: s.service.distribution,
            mean_ns: s.service.mean_ms * 1e6,
            sigma: s.service.sigma,
            time_scale: self.time_scale,
        }
    }

    /// Plays policy number `index` on loopback and reports it beside the simulator. Counts
    /// every user request that ends in `done`, for a progress bar. Takes about
    /// [`real_seconds`](Self::real_seconds), and at most twice that and 5 s.
    ///
    /// # Errors
    ///
    /// [`LabHedgeError::Input`] when there is no such policy; [`LabHedgeError::Run`] when a
    /// socket cannot be bound or a task fails.
    pub async fn run_policy(
        &self,
        index: usize,
        done: &AtomicU64,
    ) -> Result<PolicyReport, LabHedgeError> {
        let spec = self
            .scenario
            .policies
            .get(index)
            .ok_or_else(|| LabHedgeError::Input(format!("no policy number {index}")))?;
        let (simulated, spread) = self.predict(index)?;
        let policy = self.hedge_policy(spec)?;
        let s = &self.scenario;
        let seed = s.seed;
        let fan_out = s.traffic.fan_out;
        let users = self.users();
        let keys = usize::try_from(users * u64::from(fan_out) * u64::from(MAX_COPIES))
            .map_err(|_| LabHedgeError::Input("requests: too many for this machine".into()))?;
        let epoch = Instant::now() + Duration::from_millis(100);
        // The simulator's own pauses and arrivals for this seed: the lab meets what the
        // simulated run beside it meets.
        let pauses = (0..s.servers.count)
            .map(|i| draws::ServerPauses::new(s, seed, i))
            .collect();
        let pool = Pool::spawn(pauses, keys, self.law(), seed, epoch).await?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        // No resending behind the hedge's back: every copy the servers see was sent once.
        let http = Client::builder(TokioExecutor::new())
            .retry_canceled_requests(false)
            .build(connector);
        let ledger = Arc::new(CopyLedger::new(keys));
        let service = CopyService {
            http,
            servers: Arc::new(pool.addrs.clone()),
            ledger: Arc::clone(&ledger),
            fan_out,
            epoch,
        };
        let hedged: Hedged = HedgeLayer::new(policy).layer(service);
        let bound = epoch + Duration::from_secs_f64(self.real_seconds() * 2.0 + 5.0);
        let started = Instant::now();
        let mut tasks = JoinSet::new();
        let mut ends: Vec<UserEnd> = Vec::with_capacity(users as usize);
        let mut collect = |joined: Result<UserEnd, tokio::task::JoinError>| match joined {
            Ok(end) => {
                ends.push(end);
                done.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(LabHedgeError::Run(format!(
                "a user request's task failed: {e}"
            ))),
        };
        for (user, at_ns) in (0..users).zip(draws::arrivals(s, seed)) {
            let at = epoch + Duration::from_nanos((at_ns as f64 * self.time_scale) as u64);
            if at >= bound {
                break;
            }
            tokio::time::sleep_until(at).await;
            tasks.spawn(user_request(hedged.clone(), user, fan_out, seed));
            while let Some(joined) = tasks.try_join_next() {
                collect(joined)?;
            }
        }
        loop {
            match tokio::time::timeout_at(bound, tasks.join_next()).await {
                Ok(Some(joined)) => collect(joined)?,
                Ok(None) => break,
                Err(_) => {
                    tasks.abort_all();
                    break;
                }
            }
        }
        drop(tasks);
        drop(hedged);
        let real_s = started.elapsed().as_secs_f64();
        // Copies dropped in flight may still be on their way, and the servers finish what
        // they received: wait until they are quiet before counting.
        let settle = self.real(s.hiccups.pause_ms * 2.0) + Duration::from_secs(5);
        let servers_settled = pool.settle(Duration::from_millis(50), settle).await;
        let mut accounting = measure::account(&ledger, &pool.ledger, users, fan_out);
        let finished = ends.len() as u64;
        accounting.unfinished = users - finished;
        accounting.gave_up =
            accounting.unfinished + ends.iter().filter(|e| e.answered.is_none()).count() as u64;
        // The measured users: after the warm-up.
        let warmup = s.warmup_requests;
        let per_user = u64::from(fan_out) * u64::from(MAX_COPIES);
        let first_key = (warmup * per_user) as usize;
        let subs = s.requests * u64::from(fan_out);
        let sent = ledger.fates[first_key..]
            .iter()
            .filter(|f| f.load(Ordering::Acquire) != clients::fate::NONE)
            .count() as u64;
        let received: u64 = pool.ledger.received[first_key..]
            .iter()
            .map(|c| u64::from(c.load(Ordering::Acquire)))
            .sum();
        pool.finish().await;
        let measured_ends: Vec<&UserEnd> = ends.iter().filter(|e| e.user >= warmup).collect();
        let mut latencies: Vec<u64> = measured_ends
            .iter()
            .filter_map(|e| e.answered.map(|(l, _)| l))
            .collect();
        let mut overheads: Vec<u64> = measured_ends
            .iter()
            .filter_map(|e| e.answered.map(|(_, o)| o))
            .collect();
        let mut measured = measure::latency_figures(&mut latencies, self.time_scale);
        let order_intervals_ms =
            [500, 990, 999].map(|q| measure::order_interval(&latencies, q, self.time_scale));
        measured.extra_load_percent = measure::extra_percent(sent, subs);
        overheads.sort_unstable();
        let overhead_p50 = nearest_rank(&overheads, 500) as f64 / 1e6;
        let overhead_p99 = nearest_rank(&overheads, 990) as f64 / 1e6;
        let mut report = PolicyReport {
            policy: spec.name.clone(),
            seed,
            time_scale: self.time_scale,
            measured_users: latencies.len() as u64,
            measured,
            order_intervals_ms,
            servers_extra_load_percent: measure::extra_percent(received, subs),
            simulated,
            spread,
            overhead_p50_real_ms: overhead_p50,
            overhead_p99_real_ms: overhead_p99,
            allowance_ms: overhead_p99 / self.time_scale,
            accounting,
            first_error: ends.iter().find_map(|e| e.error.clone()),
            servers_settled,
            real_s,
            verdict: crate::judge::Judgement {
                verdict: crate::judge::Verdict::NotComparable,
                tolerance: String::new(),
                reasons: Vec::new(),
            },
        };
        report.verdict = crate::judge::hedge(&report);
        Ok(report)
    }
}

/// One user request: its sub-requests at once, each a hedged call; done when all are.
async fn user_request(hedged: Hedged, user: u64, fan_out: u32, seed: u64) -> UserEnd {
    let start = Instant::now();
    let call = |sub: u32| {
        let rng = SplitMix64::derive(seed, ROUTING + user * u64::from(fan_out) + u64::from(sub));
        hedged.clone().oneshot(SubRequest::new(user, sub, rng))
    };
    let mut overhead = 0u64;
    let mut error = None;
    if fan_out == 1 {
        match call(0).await {
            Ok(answer) => overhead = answer.overhead(),
            Err(CopyFailed(e)) => error = Some(e),
        }
    } else {
        let mut subs = JoinSet::new();
        for sub in 0..fan_out {
            subs.spawn(call(sub));
        }
        while let Some(result) = subs.join_next().await {
            match result {
                Ok(Ok(answer)) => overhead = overhead.max(answer.overhead()),
                Ok(Err(CopyFailed(e))) => error = Some(e),
                Err(e) => error = Some(format!("a sub-request's task failed: {e}")),
            }
        }
    }
    let latency = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    UserEnd {
        user,
        answered: error.is_none().then_some((latency, overhead)),
        error,
    }
}
