//! The hedging runner on tokio's paused time (no real sleeping), and against a real axum
//! server on 127.0.0.1 whose first copy of each request hangs.
#![cfg(feature = "tokio")]

use crate::support;

use std::future::pending;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herd::asynchronous::TokioClock;
use herd::budget::{BudgetConfig, RetryBudget};
use herd::classify::Verdict;
use herd::hedge::{HedgeCause, HedgeDelay, HedgeEvent, HedgePolicy, HedgeStop, InvalidHedge};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

fn policy(copies: u32, delay_ms: u64) -> HedgePolicy<TokioClock> {
    HedgePolicy::builder(HedgeDelay::fixed(MS * delay_ms as u32))
        .max_copies(copies)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

/// Counts the copies whose futures were dropped before they finished (cancelled).
struct DropCount(Arc<AtomicU32>, bool);
impl Drop for DropCount {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Copy `number` of a call: the first hangs forever, the others run `then`. Its guard counts
/// it in `cancelled` if its future is dropped before it finishes.
fn first_hangs<F: std::future::Future>(
    cancelled: &Arc<AtomicU32>,
    number: u32,
    then: F,
) -> impl std::future::Future<Output = F::Output> {
    let guard = DropCount(Arc::clone(cancelled), false);
    async move {
        let mut guard = guard; // the whole guard, not just its flag
        if number == 1 {
            pending::<()>().await;
        }
        let out = then.await;
        guard.1 = true;
        out
    }
}

#[tokio::test(start_paused = true)]
async fn a_hung_first_copy_is_answered_by_the_hedge_after_exactly_the_delay() {
    let p = policy(2, 10);
    let cancelled = Arc::new(AtomicU32::new(0));
    let events = Mutex::new(Vec::new());
    let t0 = Instant::now();
    let answer = p
        .hedge(|copy| {
            first_hangs(&cancelled, copy.number, async move {
                Ok::<_, io::Error>(copy.number)
            })
        })
        .on_hedge(|e| events.lock().unwrap().push(*e))
        .run_async()
        .await
        .unwrap();
    assert_eq!((answer.value, answer.copy, answer.copies_sent), (2, 2, 2));
    assert_eq!(t0.elapsed(), MS * 10);
    let events = events.into_inner().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].copy, events[0].after, events[0].cause),
        (2, MS * 10, HedgeCause::Delay)
    );
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        1,
        "the hung copy is dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn a_copy_that_answers_in_time_sends_no_hedge() {
    let p = policy(3, 10);
    let hedges = AtomicU32::new(0);
    let answer = p
        .hedge(|copy| async move {
            sleep(MS * 9).await;
            Ok::<_, io::Error>(copy.number)
        })
        .on_hedge(|_| {
            hedges.fetch_add(1, Ordering::SeqCst);
        })
        .run_async()
        .await
        .unwrap();
    assert_eq!((answer.value, answer.copies_sent), (1, 1));
    assert_eq!(hedges.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn copies_go_out_one_delay_apart_up_to_the_maximum() {
    let p = policy(4, 10);
    let sent_at = Mutex::new(Vec::new());
    let t0 = Instant::now();
    let answer = p
        .hedge(|copy| {
            sent_at.lock().unwrap().push(t0.elapsed());
            async move {
                // Every copy takes 100 ms: the first one answers, at 100 ms.
                sleep(MS * 100).await;
                Ok::<_, io::Error>(copy.number)
            }
        })
        .run_async()
        .await
        .unwrap();
    assert_eq!((answer.value, answer.copies_sent), (1, 4));
    assert_eq!(
        *sent_at.lock().unwrap(),
        [Duration::ZERO, MS * 10, MS * 20, MS * 30]
    );
    assert_eq!(t0.elapsed(), MS * 100);
}

#[tokio::test(start_paused = true)]
async fn a_fatal_error_from_any_copy_ends_the_call_and_cancels_the_others() {
    let p = policy(3, 10);
    let cancelled = Arc::new(AtomicU32::new(0));
    let t0 = Instant::now();
    let err = p
        .hedge(|copy| {
            first_hangs(&cancelled, copy.number, async {
                sleep(MS * 5).await;
                Err::<u32, _>(io::Error::new(io::ErrorKind::PermissionDenied, "no"))
            })
        })
        .classify(|e| {
            if e.kind() == io::ErrorKind::PermissionDenied {
                Verdict::permanent()
            } else {
                Verdict::transient()
            }
        })
        .run_async()
        .await
        .unwrap_err();
    assert_eq!(err.reason(), HedgeStop::Fatal);
    assert_eq!(err.copies_sent(), 2, "the third copy is never sent");
    assert_eq!(err.error().kind(), io::ErrorKind::PermissionDenied);
    assert_eq!(t0.elapsed(), MS * 15);
    assert_eq!(cancelled.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_non_fatal_error_sends_the_next_copy_at_once() {
    let p = policy(3, 50);
    let events = Mutex::new(Vec::<HedgeEvent>::new());
    let t0 = Instant::now();
    let answer = p
        .hedge(|copy| async move {
            sleep(MS).await;
            if copy.number < 3 {
                Err(io::Error::from(io::ErrorKind::ConnectionReset))
            } else {
                Ok(copy.number)
            }
        })
        .on_hedge(|e| events.lock().unwrap().push(*e))
        .run_async()
        .await
        .unwrap();
    assert_eq!((answer.value, answer.copies_sent), (3, 3));
    assert_eq!(t0.elapsed(), MS * 3, "never waited for the 50 ms delay");
    let causes: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .map(|e| (e.after, e.cause))
        .collect();
    assert_eq!(
        causes,
        [
            (MS, HedgeCause::NonFatalError),
            (MS * 2, HedgeCause::NonFatalError)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn when_every_copy_fails_the_last_error_is_returned() {
    let p = policy(3, 10);
    let err = p
        .hedge(|copy| async move {
            sleep(MS * 100).await;
            Err::<(), _>(copy.number)
        })
        .run_async()
        .await
        .unwrap_err();
    assert_eq!(err.reason(), HedgeStop::AllFailed);
    assert_eq!(err.copies_sent(), 3);
    // Copy 1 fails at 100 ms, copy 2 at 110 ms, copy 3 (sent at 20 ms) last, at 120 ms.
    assert_eq!(*err.error(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_is_not_idempotent_is_sent_once_and_waited_for() {
    let p = policy(3, 10);
    let t0 = Instant::now();
    let answer = p
        .hedge(|copy| async move {
            sleep(MS * 500).await;
            Ok::<_, io::Error>(copy.number)
        })
        .idempotent(false)
        .run_async()
        .await
        .unwrap();
    assert_eq!((answer.value, answer.copies_sent), (1, 1));
    assert_eq!(t0.elapsed(), MS * 500);
}

#[tokio::test(start_paused = true)]
async fn hedges_spend_the_retry_budget_shared_with_retries() {
    // A reserve of 2 retries and no percentage: two hedges in all, whatever the traffic.
    let budget = Arc::new(
        RetryBudget::new(
            BudgetConfig::default()
                .percent(0.0)
                .min_per_sec(2)
                .window(Duration::from_secs(1)),
            TokioClock::new(),
        )
        .unwrap(),
    );
    let p = HedgePolicy::builder(HedgeDelay::fixed(MS * 10))
        .max_copies(2)
        .budget(budget.clone())
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let mut sent = Vec::new();
    for _ in 0..4 {
        let answer = p
            .hedge(|copy| async move {
                sleep(MS * 50).await;
                Ok::<_, io::Error>(copy.number)
            })
            .run_async()
            .await
            .unwrap();
        sent.push(answer.copies_sent);
    }
    assert_eq!(sent, [2, 2, 1, 1]);
    assert!(!budget.withdraw(), "the hedges took the whole reserve");
}

#[tokio::test(start_paused = true)]
async fn a_percentile_delay_is_learned_from_recent_latencies() {
    let p = HedgePolicy::builder(HedgeDelay::Percentile {
        quantile: 0.9,
        min: MS,
        max: Duration::from_secs(1),
        window: Duration::from_secs(10),
        min_samples: 10,
    })
    .max_copies(2)
    .clock(TokioClock::new())
    .build()
    .unwrap();
    assert_eq!(
        p.current_delay(),
        Duration::from_secs(1),
        "nothing learned yet: the max"
    );
    // One window (10 s) of 100 calls answering in 1..=100 ms (5.05 s in all), none hedged:
    // the delay is still the 1 s maximum.
    for ms in 1..=100u32 {
        let a = p
            .hedge(|_| async move {
                sleep(MS * ms).await;
                Ok::<_, io::Error>(())
            })
            .run_async()
            .await
            .unwrap();
        assert_eq!(a.copies_sent, 1);
    }
    sleep(Duration::from_secs(5)).await; // the window ends
    let learned = p.current_delay();
    assert!(
        learned >= MS * 90 && learned <= MS * 90 * 17 / 16,
        "p90 of 1..=100 ms: {learned:?}"
    );
    // A call whose first copy hangs is now hedged at the learned delay.
    let t0 = Instant::now();
    let a = p
        .hedge(|copy| async move {
            if copy.number == 1 {
                pending::<()>().await;
            }
            Ok::<_, io::Error>(())
        })
        .run_async()
        .await
        .unwrap();
    assert_eq!(a.copies_sent, 2);
    // tokio's timer counts whole milliseconds, rounding a sleep up.
    let learned_ms = Duration::from_millis(learned.as_micros().div_ceil(1000) as u64);
    assert_eq!(t0.elapsed(), learned_ms);
}

#[test]
fn bad_settings_name_the_field() {
    let build = |copies| {
        HedgePolicy::builder(HedgeDelay::fixed(MS))
            .max_copies(copies)
            .build()
    };
    assert_eq!(build(0).unwrap_err(), InvalidHedge::MaxCopies(0));
    assert_eq!(build(6).unwrap_err(), InvalidHedge::MaxCopies(6));
    assert!(build(5).is_ok());
    let q = HedgePolicy::builder(HedgeDelay::percentile(1.0, MS, MS))
        .build()
        .unwrap_err();
    assert_eq!(q, InvalidHedge::Quantile(1.0));
    assert!(q.to_string().contains("quantile"));
    let q = HedgePolicy::builder(HedgeDelay::percentile(f64::NAN, MS, MS)).build();
    assert!(matches!(q, Err(InvalidHedge::Quantile(_))));
    let r = HedgePolicy::builder(HedgeDelay::percentile(0.5, MS * 2, MS))
        .build()
        .unwrap_err();
    assert_eq!(
        r,
        InvalidHedge::DelayRange {
            min: MS * 2,
            max: MS
        }
    );
}

/// A real server on 127.0.0.1: the first copy of each request (header `x-copy: 1`) hangs
/// until the client gives up on it; any other copy answers at once. Time is paused, so the
/// hedge delay passes without real sleeping while the first copy hangs.
mod on_loopback {
    use super::*;
    use axum::Router;
    use axum::extract::State;
    use axum::http::HeaderMap;
    use axum::routing::get;
    use http_body_util::{BodyExt, Empty};
    use hyper::body::Bytes;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    #[derive(Clone, Default)]
    struct Seen {
        requests: Arc<AtomicU32>,
        abandoned: Arc<AtomicU32>,
    }

    async fn handler(State(seen): State<Seen>, headers: HeaderMap) -> &'static str {
        seen.requests.fetch_add(1, Ordering::SeqCst);
        if headers.get("x-copy").is_some_and(|v| v == "1") {
            let _guard = DropCount(seen.abandoned.clone(), false);
            pending::<()>().await;
        }
        "ok"
    }

    #[tokio::test(start_paused = true)]
    async fn the_hedge_answers_and_the_server_sees_exactly_the_copies_allowed() {
        let seen = Seen::default();
        let app = Router::new()
            .route("/", get(handler))
            .with_state(seen.clone());
        let addr = support::http::serve(app).await;
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let p = policy(2, 20);
        for call in 1..=3u32 {
            let answer = p
                .hedge(|copy| {
                    let client = client.clone();
                    async move {
                        let req = http::Request::get(format!("http://{addr}/"))
                            .header("x-copy", copy.number.to_string())
                            .body(Empty::new())
                            .unwrap();
                        let res = client.request(req).await?;
                        let body = res.into_body().collect().await?.to_bytes();
                        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((copy.number, body))
                    }
                })
                .run_async()
                .await
                .unwrap();
            assert_eq!((answer.value.0, &answer.value.1[..]), (2, &b"ok"[..]));
            assert_eq!(answer.copies_sent, 2);
            assert_eq!(seen.requests.load(Ordering::SeqCst), 2 * call);
        }
        // The abandoned copies' connections close, so the server drops their handlers.
        for _ in 0..100 {
            if seen.abandoned.load(Ordering::SeqCst) == 3 {
                break;
            }
            tokio::task::yield_now().await;
            sleep(MS).await;
        }
        assert_eq!(seen.abandoned.load(Ordering::SeqCst), 3);
        assert_eq!(seen.requests.load(Ordering::SeqCst), 6);
    }
}

/// The tower layer: the same runner behind `Service`.
#[cfg(feature = "tower")]
mod layer {
    use super::*;
    use herd::hedge::{HedgeLayer, http_idempotent};
    use std::convert::Infallible;
    use tower::{Layer, ServiceExt, service_fn};

    type Req = http::Request<&'static str>;
    type Res = http::Response<&'static str>;

    /// Copy `n` (counted across the service's clones) answers with `statuses[n]`, or hangs
    /// when that status is 0.
    fn service(
        statuses: &'static [u16],
        seen: Arc<AtomicU32>,
    ) -> impl tower::Service<Req, Response = Res, Error = Infallible, Future: Send>
    + Clone
    + Send
    + 'static {
        service_fn(move |_req: Req| {
            let n = seen.fetch_add(1, Ordering::SeqCst) as usize;
            async move {
                sleep(MS).await;
                match statuses[n] {
                    0 => pending().await,
                    s => Ok(http::Response::builder().status(s).body("body").unwrap()),
                }
            }
        })
    }

    fn failure_statuses(answer: Result<&Res, &Infallible>) -> Option<Verdict> {
        let status = answer.ok()?.status();
        if status.is_server_error() {
            Some(Verdict::transient())
        } else if status.is_client_error() {
            Some(Verdict::permanent())
        } else {
            None
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_copy_is_hedged_through_the_layer() {
        let seen = Arc::new(AtomicU32::new(0));
        let hedges = Arc::new(AtomicU32::new(0));
        let h = hedges.clone();
        let svc = HedgeLayer::new(policy(2, 10))
            .on_hedge(move |_| {
                h.fetch_add(1, Ordering::SeqCst);
            })
            .layer(service(&[0, 200], seen.clone()));
        let t0 = Instant::now();
        let res = svc.oneshot(http::Request::new("")).await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(t0.elapsed(), MS * 11);
        assert_eq!(
            (seen.load(Ordering::SeqCst), hedges.load(Ordering::SeqCst)),
            (2, 1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_status_is_non_fatal_and_a_client_error_is_fatal() {
        // 503 then 200: the 503 sends the next copy at once (no 50 ms wait).
        let seen = Arc::new(AtomicU32::new(0));
        let svc = HedgeLayer::new(policy(3, 50))
            .classify(failure_statuses)
            .layer(service(&[503, 200], seen.clone()));
        let t0 = Instant::now();
        let res = svc.oneshot(http::Request::new("")).await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(t0.elapsed(), MS * 2);
        // 400 while copy 1 hangs: fatal, the caller gets the 400 and no third copy is sent.
        let seen = Arc::new(AtomicU32::new(0));
        let svc = HedgeLayer::new(policy(3, 10))
            .classify(failure_statuses)
            .layer(service(&[0, 400, 200], seen.clone()));
        let res = svc.oneshot(http::Request::new("")).await.unwrap();
        assert_eq!(res.status(), 400);
        assert_eq!(seen.load(Ordering::SeqCst), 2);
        // Without the classifier a 503 is an answer like any other.
        let seen = Arc::new(AtomicU32::new(0));
        let svc = HedgeLayer::new(policy(3, 50)).layer(service(&[503, 200], seen.clone()));
        assert_eq!(
            svc.oneshot(http::Request::new("")).await.unwrap().status(),
            503
        );
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_post_is_sent_once_when_only_idempotent_methods_are_hedged() {
        let seen = Arc::new(AtomicU32::new(0));
        let svc = HedgeLayer::new(policy(3, 10))
            .idempotent_if(http_idempotent)
            .layer(service(&[200, 200, 200], seen.clone()));
        let slow_post = http::Request::post("/").body("").unwrap();
        // Each copy takes 1 ms; a 0 ms delay would hedge a GET at once, never a POST.
        let res = svc.clone().oneshot(slow_post).await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        let seen = Arc::new(AtomicU32::new(0));
        let svc = HedgeLayer::new(policy(3, 0))
            .idempotent_if(http_idempotent)
            .layer(service(&[200, 200, 200], seen.clone()));
        svc.oneshot(http::Request::get("/").body("").unwrap())
            .await
            .unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 3);
    }
}
