//! What the library's tests share: budgets and breakers on a fake clock, with no reserve and
//! no jitter, so that every figure is exact.
#![allow(dead_code)] // each test binary uses its own share of these

#[cfg(not(loom))]
pub mod http;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herd::asynchronous::Sleeper;
use herd::breaker::{BreakerConfig, CircuitBreaker};
use herd::budget::{BudgetConfig, RetryBudget};
use herd::classify::Verdict;
use herd::clock::{Clock, FakeClock};
use herd::outcome::RetryError;
use herd::policy::RetryPolicy;

/// `s` whole seconds.
pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// A retry budget of `percent` of first attempts over a 10 s window, with no reserve.
pub fn budget<C: Clock>(clock: &C, percent: f64) -> RetryBudget<C> {
    RetryBudget::new(
        BudgetConfig::default()
            .percent(percent)
            .min_per_sec(0)
            .window(secs(10)),
        clock.clone(),
    )
    .unwrap()
}

/// A breaker that opens once `min_calls` calls failed and half-opens 5 s later, exactly.
pub fn breaker(clock: &FakeClock, min_calls: u32) -> CircuitBreaker<FakeClock> {
    CircuitBreaker::with_seed(
        BreakerConfig::default()
            .min_calls(min_calls)
            .cool_down_jitter(0.0),
        clock.clone(),
        1,
    )
    .unwrap()
}

/// How a call ended: why it stopped, after how many attempts.
pub fn ended<E>(err: &RetryError<E>) -> (herd::StopReason, u32) {
    (err.reason(), err.attempts())
}

/// Runs on `clock` a call whose every attempt fails (with `()`, judged as by default): how it
/// ended.
pub fn fails(policy: &RetryPolicy<FakeClock>, clock: &FakeClock) -> RetryError<()> {
    policy
        .call(|_| Err::<(), _>(()))
        .run_with(clock)
        .unwrap_err()
}

/// Like [`fails`], each failure judged `verdict`.
pub fn fails_as(
    policy: &RetryPolicy<FakeClock>,
    clock: &FakeClock,
    verdict: Verdict,
) -> RetryError<()> {
    policy
        .call(|_| Err::<(), _>(()))
        .classify(move |_: &()| verdict)
        .run_with(clock)
        .unwrap_err()
}

/// A sleeper that records each pause and returns at once: the tests check the pauses asked
/// for without sleeping in real time.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Duration>>>);

impl Recorder {
    /// The pauses so far, in order.
    pub fn pauses(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

impl Sleeper for Recorder {
    type Sleep = std::future::Ready<()>;
    fn sleep(&self, pause: Duration) -> Self::Sleep {
        self.0.lock().unwrap().push(pause);
        std::future::ready(())
    }
}

/// Sends `request` through `service` once it is ready, as `ServiceExt::oneshot` would without
/// giving the service up. Readiness must not fail; the call's own result is returned.
pub async fn send<S, R>(service: &mut S, request: R) -> Result<S::Response, S::Error>
where
    S: tower::Service<R>,
    S::Error: std::fmt::Debug,
{
    use tower::ServiceExt;
    service
        .ready()
        .await
        .expect("the service is ready")
        .call(request)
        .await
}
