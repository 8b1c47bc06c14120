//! One budget shared by a retry loop and a hedge inside it (what the hedging docs recommend)
//! is charged one deposit per logical call, whatever runs inside it: at 10 % with no
//! reserve, 100 calls that always fail earn exactly 10 extra sends (retries and hedges
//! together), not a deposit per hedged attempt.
//!
//! Time is tokio's paused clock; every failure is immediate, so the 10 s window never turns.
#![cfg(feature = "tower")]

mod support;

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

/// Regression: the retry loop deposited once per call and the hedge inside it once per
/// attempt, so each retry earned the next: 100 failing calls made 22 extra sends.
#[tokio::test(start_paused = true)]
async fn a_retry_loop_and_a_hedge_inside_it_deposit_once_per_call() {
    let clock = TokioClock::new();
    let budget = shared(&clock);
    let retry = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .budget(budget.clone())
        .clock(clock)
        .build()
        .unwrap();
    let hedge = HedgePolicy::builder(HedgeDelay::fixed(Duration::from_millis(10)))
        .max_copies(2)
        .budget(budget.clone())
        .clock(clock)
        .build()
        .unwrap();
    let sent = AtomicUsize::new(0);
    for _ in 0..CALLS {
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
        assert!(result.is_err());
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
    let budget = shared(&clock);
    let retry = RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .budget(budget.clone())
        .clock(clock)
        .build()
        .unwrap();
    let hedge = HedgePolicy::builder(HedgeDelay::fixed(Duration::from_millis(10)))
        .max_copies(2)
        .budget(budget.clone())
        .clock(clock)
        .build()
        .unwrap();
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
