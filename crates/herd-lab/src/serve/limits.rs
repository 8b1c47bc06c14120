//! What one request may ask of the server: body size, simulation size, and how many
//! simulations run at once.
//!
//! A simulation is CPU work; the async executor must not run it, and a burst of requests
//! must not queue unbounded work. So each simulation takes a permit from a semaphore *without
//! waiting* (a busy server answers 503 with `Retry-After` rather than building a queue; the
//! page's own requests are few) and runs on the blocking pool.
use std::sync::Arc;
use std::time::Duration;

use herd_sim::{Cancel, Limits};
use tokio::sync::Semaphore;

use super::error::ApiError;

/// Most clients a storm request may simulate.
pub const MAX_STORM_CLIENTS: u64 = 200_000;
/// Most seconds of outage a storm request may ask for.
pub const MAX_OUTAGE_S: f64 = 600.0;
/// Most answers per window a storm request may give the server.
pub const MAX_CAPACITY: u64 = 1_000_000;
/// Most attempts one storm request may simulate: the run stops with a 400 past this, so a
/// request costs at most a second or two of one core.
pub const MAX_STORM_ATTEMPTS: u64 = 20_000_000;
/// The simulator's limits for one request's run: [`Limits::interactive`] with at most
/// [`MAX_STORM_ATTEMPTS`] attempts.
pub(crate) const fn run_limits() -> Limits {
    Limits {
        max_run_attempts: MAX_STORM_ATTEMPTS,
        ..Limits::interactive()
    }
}
/// Most clients the dots scene draws.
pub const MAX_DOT_CLIENTS: u32 = 1_000;
/// Most failures (rows) the dots scene draws.
pub const MAX_DOT_FAILURES: u32 = 12;
/// Most layers (call edges) the layers scene chains.
pub const MAX_LAYERS: usize = 8;
/// Most attempts one layer may make per call.
pub const MAX_LAYER_ATTEMPTS: u32 = 10;

/// Most copies one hedging request may send over its five policies (`(requests + warm-up) ·
/// fan_out · copies`, summed): the measured requests are cut to fit, so that a request's work
/// is known, and bounded, before it runs.
pub const MAX_HEDGE_COPIES: u64 = 6_000_000;
/// Most user requests a hedging request may ask to measure.
pub const MAX_HEDGE_REQUESTS: u64 = 200_000;
/// Fewest user requests a hedging run measures (so that p99.9 is the 10th slowest or later).
pub const MIN_HEDGE_REQUESTS: u64 = 10_000;
/// The widest fan-out the hedging scene offers.
pub const MAX_HEDGE_FAN_OUT: u32 = 50;
/// The longest hedge delay, in ms.
pub const MAX_HEDGE_DELAY_MS: f64 = 1000.0;
/// The highest utilisation (without hedging) the hedging scene runs: past it the queues
/// grow without bound whatever the policy.
pub const MAX_HEDGE_UTILISATION: f64 = 1.0;

/// The server's limits. [`ServeLimits::default`] suits a person's laptop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// Largest request body in bytes (larger ones get 413).
    pub max_body_bytes: usize,
    /// Simulations that may run at once (more get 503). Zero refuses every simulation,
    /// which tests use to check the busy answer.
    pub max_concurrent: usize,
    /// Answer requests addressed to any host name. Off (the default), a request whose `Host`
    /// is not loopback gets 421: a guard against DNS rebinding for a server on 127.0.0.1.
    pub any_host: bool,
    /// Connections open at once; more wait in the kernel's backlog until one closes.
    pub max_connections: usize,
    /// A connection whose request headers have not all arrived within this is closed, so a
    /// half-sent request cannot hold a connection (or shutdown) for ever.
    pub header_read_timeout: Duration,
    /// A request whose body has not all arrived within this (counted from when its handler
    /// starts reading it, not between bytes) gets 408 and its connection is closed, so a
    /// body sent a byte at a time cannot hold a connection.
    pub body_read_timeout: Duration,
    /// A simulation still running after this is cancelled and answered 503: the most
    /// wall-clock time one request may take of a simulation slot (the work caps keep the
    /// page's own requests far below it).
    pub max_run_time: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 16 * 1024,
            max_concurrent: 2,
            any_host: false,
            max_connections: 64,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            max_run_time: Duration::from_secs(10),
        }
    }
}

/// Admission to the blocking pool: at most `max_concurrent` simulations at once, each for
/// at most `max_run_time`.
#[derive(Clone, Debug)]
pub(crate) struct Gate {
    permits: Arc<Semaphore>,
    size: usize,
    max_run_time: Duration,
}

/// Sets its flag when dropped: the handler that waits for a simulation is dropped when its
/// client goes away or the server shuts down, and the simulation then stops.
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Gate {
    pub(crate) fn new(size: usize, max_run_time: Duration) -> Self {
        Self {
            // Past tokio's ceiling the semaphore panics; nobody runs that many anyway.
            permits: Arc::new(Semaphore::new(size.min(Semaphore::MAX_PERMITS))),
            size,
            max_run_time,
        }
    }

    /// Runs `work` on the blocking pool if a slot is free, else answers 503 at once. `work`
    /// is handed a flag that is set when the answer is no longer wanted: the wait dropped
    /// (the client left, the server is shutting down) or past `max_run_time` (then 503). The
    /// slot is held until `work` returns, so a simulation that ignores the flag still counts.
    pub(crate) async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        F: FnOnce(&Cancel) -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
            return Err(ApiError::busy(format!(
                "busy: {} simulation(s) already running; try again shortly",
                self.size
            )));
        };
        let cancel = Cancel::new();
        let guard = CancelOnDrop(cancel.clone());
        let joined = tokio::time::timeout(
            self.max_run_time,
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                work(&cancel)
            }),
        )
        .await;
        drop(guard);
        match joined {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(ApiError::internal(format!("simulation failed: {e}"))),
            Err(_) => Err(ApiError::busy(format!(
                "the simulation took longer than the page's limit of {} s and was stopped; \
                 ask for less work",
                self.max_run_time.as_secs_f64()
            ))),
        }
    }
}
