//! One budget shared by a retry loop and a hedge inside it (what the hedging docs recommend)
//! is charged one deposit per logical call, whatever runs inside it: at 10 % with no
//! reserve, 100 calls that always fail earn exactly 10 extra sends (retries and hedges
//! together), not a deposit per hedged attempt.
//!
//! Time is tokio's paused clock; every failure is immediate, so the 10 s window never turns.
#![cfg(feature = "tower")]

use crate::support;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herd::Rule;
use herd::asynchronous::TokioClock;
use herd::budget::RetryBudget;
use herd::hedge::{HedgeDelay, HedgePolicy};
use herd::policy::RetryPolicy;

const CALLS: usize = 100;

fn shared(clock: &TokioClock) -> RetryBudget<TokioClock> {
    support::budget(clock, 10.0)
}

/// Three immediate attempts over a hedge of two copies after 10 ms, both on one budget.
fn retry_over_hedge(clock: &TokioClock) -> (RetryPolicy<TokioClock>, HedgePolicy<TokioClock>) {
    let budget = shared(clock);
    let retry = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .budget(budget.clone())
        .clock(*clock)
        .build()
        .unwrap();
    let hedge = HedgePolicy::builder(HedgeDelay::fixed(Duration::from_millis(10)))
        .max_copies(2)
        .budget(budget)
        .clock(*clock)
        .build()
        .unwrap();
    (retry, hedge)
}

/// One call through `retry`, each attempt hedged by `hedge`, whose every copy fails at once
/// with a reset; `sent` counts the copies.
async fn fails(
    retry: &RetryPolicy<TokioClock>,
    hedge: &HedgePolicy<TokioClock>,
    sent: &AtomicUsize,
) {
    let result = retry
        .call(|_| {
            hedge
                .hedge(|_| {
                    sent.fetch_add(1, Ordering::SeqCst);
                    async { Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset)) }
                })
                .run_async()
        })
        .run_async()
        .await;
    assert!(result.is_err(), "every copy failed");
}

/// Regression: the retry loop deposited once per call and the hedge inside it once per
/// attempt, so each retry earned the next: 100 failing calls made 22 extra sends.
#[tokio::test(start_paused = true)]
async fn a_retry_loop_and_a_hedge_inside_it_deposit_once_per_call() {
    let clock = TokioClock::new();
    let (retry, hedge) = retry_over_hedge(&clock);
    let sent = AtomicUsize::new(0);
    for _ in 0..CALLS {
        fails(&retry, &hedge, &sent).await;
    }
    // 100 deposits of 0.1 retry: exactly 10 sends beyond the first of each call.
    assert_eq!(sent.load(Ordering::SeqCst) - CALLS, 10);
}
/// The same through the tower layers: a `RetryLayer` over a `HedgeLayer`, one budget.
#[tokio::test(start_paused = true)]
async fn a_retry_layer_over_a_hedge_layer_deposits_once_per_call() {
    use herd::hedge::HedgeLayer;
    use herd::layer::RetryLayer;
    use tower::{Layer, ServiceExt};

    let clock = TokioClock::new();
    let (retry, hedge) = retry_over_hedge(&clock);
    let sent = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&sent);
    let inner = tower::service_fn(move |_: http::Request<String>| {
        counted.fetch_add(1, Ordering::SeqCst);
        async {
            Ok::<_, io::Error>(
                http::Response::builder()
                    .status(503)
                    .body(String::new())
                    .unwrap(),
            )
        }
    });
    let hedged = HedgeLayer::new(hedge)
        .clone_request(|r: &http::Request<String>| {
            let mut copy = http::Request::new(r.body().clone());
            *copy.uri_mut() = r.uri().clone();
            Some(copy)
        })
        .classify(
            |answer: Result<&http::Response<String>, &io::Error>| match answer {
                Ok(res) if res.status().is_server_error() => {
                    Some(herd::classify::Verdict::transient())
                }
                Ok(_) => None,
                Err(_) => Some(herd::classify::Verdict::transient()),
            },
        )
        .layer(inner);
    let svc = RetryLayer::new(retry).layer(hedged);
    for _ in 0..CALLS {
        let response = svc
            .clone()
            .oneshot(http::Request::new(String::new()))
            .await
            .unwrap();
        assert_eq!(response.status(), 503);
        // No copy answered well: the hedge's outcome says so.
        let outcome = response.extensions().get::<herd::hedge::HedgeOutcome>();
        assert_eq!(outcome.map(|o| o.copy), Some(0));
    }
    assert_eq!(sent.load(Ordering::SeqCst) - CALLS, 10);
}

/// gRPC retry throttling shared by a retry loop and a hedge inside it: each of the loop's
/// attempts is one hedged call, and its outcome is counted once, by the loop, however many
/// copies the hedge sent. (A hedge on its own still counts each copy, as gRPC counts each
/// attempt.)
mod grpc_throttle {
    use super::*;
    use herd::budget::{GrpcThrottle, GrpcThrottleConfig};

    fn throttle() -> GrpcThrottle {
        GrpcThrottle::new(
            GrpcThrottleConfig::default()
                .max_tokens(10.0)
                .token_ratio(0.5),
        )
        .unwrap()
    }

    fn policies(
        throttle: &GrpcThrottle,
        max_attempts: u32,
    ) -> (RetryPolicy<TokioClock>, HedgePolicy<TokioClock>) {
        let clock = TokioClock::new();
        let retry = RetryPolicy::builder(Rule::immediate())
            .max_attempts(max_attempts)
            .budget(throttle.clone())
            .clock(clock)
            .build()
            .unwrap();
        let hedge = HedgePolicy::builder(HedgeDelay::fixed(Duration::from_millis(10)))
            .max_copies(3)
            .budget(throttle.clone())
            .clock(clock)
            .build()
            .unwrap();
        (retry, hedge)
    }

    /// Regression: every failed copy cost a token and the loop's attempt one more, so one
    /// call whose three copies failed took four tokens instead of one.
    #[tokio::test(start_paused = true)]
    async fn a_failed_hedged_attempt_costs_one_token() {
        let throttle = throttle();
        let (retry, hedge) = policies(&throttle, 1);
        let sent = AtomicUsize::new(0);
        fails(&retry, &hedge, &sent).await;
        assert_eq!(sent.load(Ordering::SeqCst), 3, "the hedge sent every copy");
        assert_eq!(throttle.tokens(), 9.0);
    }

    /// Regression: the winning copy earned `token_ratio` and the loop's attempt earned it
    /// again.
    #[tokio::test(start_paused = true)]
    async fn a_hedged_attempt_that_succeeds_earns_the_ratio_once() {
        let throttle = throttle();
        for _ in 0..4 {
            throttle.record_failure();
        }
        let (retry, hedge) = policies(&throttle, 1);
        let result = retry
            .call(|_| {
                hedge
                    .hedge(|copy| async move {
                        if copy.number == 1 {
                            Err(io::Error::from(io::ErrorKind::ConnectionReset))
                        } else {
                            Ok(copy.number)
                        }
                    })
                    .run_async()
            })
            .run_async()
            .await;
        assert_eq!(result.unwrap().value.value, 2);
        assert_eq!(throttle.tokens(), 6.5);
    }

    /// Alone, the hedge counts each copy's outcome: gRPC counts every attempt.
    #[tokio::test(start_paused = true)]
    async fn a_hedge_alone_counts_each_failed_copy() {
        let throttle = throttle();
        let (_, hedge) = policies(&throttle, 1);
        let result = hedge
            .hedge(|_| async { Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset)) })
            .run_async()
            .await;
        assert!(result.is_err());
        assert_eq!(throttle.tokens(), 7.0);
    }
}
