//! Idempotency: a non-idempotent call is retried after an ambiguous failure only when the
//! user says the server deduplicates by key; no header overrides `.idempotent(false)`; keys
//! that leave the process are not drawn from a fixed seed.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herd::asynchronous::{Sleeper, TokioClock};
use herd::classify::{self, Verdict};
use herd::clock::FakeClock;
use herd::layer::{IDEMPOTENCY_KEY, RetryLayer};
use herd::policy::RetryPolicy;
use herd::{Rule, StopReason};
use tower::{Layer, Service, ServiceExt};

#[derive(Clone, Copy, Default)]
struct NoSleep;

impl Sleeper for NoSleep {
    type Sleep = std::future::Ready<()>;
    fn sleep(&self, _: Duration) -> Self::Sleep {
        std::future::ready(())
    }
}

#[test]
fn an_ambiguous_failure_is_retried_for_a_non_idempotent_call_only_if_the_server_deduplicates() {
    let clock = FakeClock::new();
    let run = |deduplicates: bool, verdict: Verdict| {
        let policy = RetryPolicy::builder(Rule::immediate())
            .max_attempts(3)
            .idempotent(false)
            .server_deduplicates(deduplicates)
            .clock(clock.clone())
            .build()
            .unwrap();
        let err = policy
            .call(|_| Err::<(), _>(()))
            .classify(move |_: &()| verdict)
            .run_with(&clock)
            .unwrap_err();
        (err.reason(), err.attempts())
    };
    for ambiguous in [
        classify::http_status(500),
        classify::io_kind(std::io::ErrorKind::TimedOut),
    ] {
        assert_eq!(run(false, ambiguous), (StopReason::NotIdempotent, 1));
        assert_eq!(run(true, ambiguous), (StopReason::Attempts, 3));
    }
    // A 503 with Retry-After is ambiguous too.
    let busy = classify::http_status_after(503, Some(Duration::ZERO));
    assert_eq!(run(false, busy), (StopReason::NotIdempotent, 1));
}

async fn post_attempts(policy: RetryPolicy<TokioClock>, with_key: bool, send_key: bool) -> usize {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let inner = tower::service_fn(move |_: http::Request<String>| {
        counted.fetch_add(1, Ordering::SeqCst);
        let mut response = http::Response::new(String::new());
        *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        async move { Ok::<_, Infallible>(response) }
    });
    let mut svc = RetryLayer::new(policy)
        .send_idempotency_key(send_key)
        .sleeper(NoSleep)
        .layer(inner);
    let mut request = http::Request::post("http://example.test/charge")
        .body(String::new())
        .unwrap();
    if with_key {
        request
            .headers_mut()
            .insert(IDEMPOTENCY_KEY, "from-upstream".parse().unwrap());
    }
    let _ = svc.ready().await.unwrap().call(request).await.unwrap();
    calls.load(Ordering::SeqCst)
}

fn layer_policy(idempotent: bool, deduplicates: bool) -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(Rule::immediate())
        .max_attempts(3)
        .idempotent(idempotent)
        .server_deduplicates(deduplicates)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_incoming_key_does_not_override_idempotent_false() {
    // Regression: an `Idempotency-Key` header on the request made the layer treat the call
    // as idempotent, even under a policy built with `.idempotent(false)`.
    assert_eq!(
        post_attempts(layer_policy(false, false), true, false).await,
        1
    );
    // Nor does a key the layer sends itself.
    assert_eq!(
        post_attempts(layer_policy(false, false), false, true).await,
        1
    );
    assert_eq!(
        post_attempts(layer_policy(true, false), true, true).await,
        1,
        "POST after a 500"
    );
    // Saying the server deduplicates does.
    assert_eq!(
        post_attempts(layer_policy(true, true), false, true).await,
        3
    );
}

#[test]
fn keys_sent_by_the_loop_are_not_reproducible_but_a_seeded_call_is() {
    let clock = FakeClock::new();
    let policy = RetryPolicy::builder(Rule::immediate())
        .clock(clock.clone())
        .build()
        .unwrap();
    let key = |seeded: bool| {
        let call = policy.call(|a| Ok::<_, ()>(a.key));
        if seeded {
            call.rng(herd::rng::SplitMix64::new(9)).run_with(&clock)
        } else {
            call.run_with(&clock)
        }
        .unwrap()
        .value
    };
    assert_ne!(key(false), key(false));
    assert_eq!(key(true), key(true));
}
