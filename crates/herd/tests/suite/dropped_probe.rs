//! A half-open breaker's probe whose call is dropped (a timeout above the layer, a cancelled
//! request) gives its permit back at once: the next call probes, instead of the breaker
//! staying shut for another cool-down.
//!
//! In-process services and tokio's paused time: nothing sleeps in real time.
#![cfg(feature = "tower")]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herd::Rule;
use herd::asynchronous::TokioClock;
use herd::breaker::{BreakerConfig, BreakerState, CircuitBreaker};
use herd::layer::RetryLayer;
use herd::policy::RetryPolicy;
use tower::{Layer, ServiceExt};

const COOL_DOWN: Duration = Duration::from_secs(5);

fn breaker(clock: &TokioClock) -> CircuitBreaker<TokioClock> {
    CircuitBreaker::with_seed(
        BreakerConfig::default()
            .min_calls(1)
            .cool_down(COOL_DOWN)
            .cool_down_jitter(0.0),
        *clock,
        1,
    )
    .unwrap()
}

/// The `n`th call (from 0): 0 fails, 1 hangs for an hour, later ones succeed.
async fn answer(n: usize) -> Result<http::Response<String>, Infallible> {
    match n {
        0 => Ok(http::Response::builder()
            .status(503)
            .body(String::new())
            .unwrap()),
        1 => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(http::Response::new("late".into()))
        }
        _ => Ok(http::Response::new("fine".into())),
    }
}

/// Regression: the probe's permit stayed out until a whole cool-down had passed without a
/// verdict, so the call right after a dropped probe was refused.
#[tokio::test(start_paused = true)]
async fn a_dropped_probe_gives_its_permit_back() {
    let clock = TokioClock::new();
    let breaker = breaker(&clock);
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(1)
        .breaker(breaker.clone())
        .clock(clock)
        .build()
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let inner = tower::service_fn(move |_: http::Request<String>| {
        answer(counted.fetch_add(1, Ordering::SeqCst))
    });
    let svc = RetryLayer::new(policy).layer(inner);
    let call = || svc.clone().oneshot(http::Request::new(String::new()));

    // One failure opens the breaker; after the cool-down it is half-open.
    assert_eq!(call().await.unwrap().status(), 503);
    assert_eq!(breaker.state(), BreakerState::Open);
    tokio::time::sleep(COOL_DOWN).await;
    assert_eq!(breaker.state(), BreakerState::HalfOpen);

    // The probe hangs, and the caller's own timeout drops it.
    let timed_out = tokio::time::timeout(Duration::from_secs(1), call()).await;
    assert!(timed_out.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // The next call probes at once, succeeds, and closes the breaker.
    let response = call().await.unwrap();
    assert_eq!(response.body(), "fine");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(breaker.state(), BreakerState::Closed);
}

/// The same for the async loop: a probe whose future is dropped gives its permit back.
#[tokio::test(start_paused = true)]
async fn a_dropped_probe_in_the_async_loop_gives_its_permit_back() {
    let clock = TokioClock::new();
    let breaker = breaker(&clock);
    let policy = RetryPolicy::builder(Rule::immediate())
        .max_attempts(1)
        .breaker(breaker.clone())
        .clock(clock)
        .build()
        .unwrap();
    let failed = policy.call(|_| async { Err::<(), _>("down") }).run_async();
    assert!(failed.await.is_err());
    tokio::time::sleep(COOL_DOWN).await;
    let hung = policy
        .call(|_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, &str>(())
        })
        .run_async();
    assert!(
        tokio::time::timeout(Duration::from_secs(1), hung)
            .await
            .is_err()
    );
    let probed = policy.call(|_| async { Ok::<_, &str>(7) }).run_async();
    assert_eq!(probed.await.unwrap().value, 7);
    assert_eq!(breaker.state(), BreakerState::Closed);
}
