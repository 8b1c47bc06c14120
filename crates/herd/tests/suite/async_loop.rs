//! The async loop on tokio's paused time (and on a fake clock, runtime-free): per-attempt
//! timeouts, the last attempt cut at the deadline, timeouts never proving "not processed"
//! (its tracing events are tests/tracing_events.rs, a binary of their own).
#![cfg(feature = "tokio")]

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use herd::asynchronous::TokioClock;
use herd::classify::{self, Verdict};
use herd::clock::{Clock, FakeClock};
use herd::policy::{PolicyBuilder, RetryPolicy};
use herd::{Rule, StopReason};

use crate::support;

use support::secs;

/// `rule`'s policy of at most `attempts` attempts on `clock`, with `limit` applied (a deadline,
/// an attempt timeout).
fn policy_of<C: Clock>(
    rule: Rule,
    attempts: u32,
    clock: C,
    limit: impl FnOnce(PolicyBuilder<C>) -> PolicyBuilder<C>,
) -> RetryPolicy<C> {
    limit(
        RetryPolicy::builder(rule)
            .max_attempts(attempts)
            .clock(clock),
    )
    .build()
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn each_attempt_is_cut_at_its_timeout() {
    let clock = TokioClock::new();
    let policy = policy_of(Rule::constant(secs(1)).unwrap(), 3, clock, |p| {
        p.attempt_timeout(secs(2))
    });
    let err = policy
        .call(|_| async {
            tokio::time::sleep(secs(3600)).await;
            Ok::<(), io::Error>(())
        })
        .classify(classify::io_error)
        .run_async()
        .await
        .unwrap_err();
    assert_eq!((err.reason(), err.attempts()), (StopReason::Attempts, 3));
    assert_eq!(err.timed_out().map(|t| t.after), Some(secs(2)));
    assert!(err.last_error().is_none(), "no attempt returned an error");
    assert_eq!(err.elapsed(), secs(2 + 1 + 2 + 1 + 2));
    assert_eq!(clock.now(), secs(8));
}

#[tokio::test(start_paused = true)]
async fn the_last_attempt_is_cut_at_the_deadline() {
    let clock = TokioClock::new();
    let policy = policy_of(Rule::constant(secs(1)).unwrap(), 10, clock, |p| {
        p.deadline(secs(10))
    });
    let started = AtomicUsize::new(0);
    let err = policy
        .call(|a| {
            started.fetch_add(1, Ordering::SeqCst);
            async move {
                // the first attempt fails after 6 s, the second would hang for an hour
                let wait = if a.number == 1 { secs(6) } else { secs(3600) };
                tokio::time::sleep(wait).await;
                Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset))
            }
        })
        .classify(classify::io_error)
        .run_async()
        .await
        .unwrap_err();
    assert_eq!(err.reason(), StopReason::Deadline);
    assert_eq!(started.load(Ordering::SeqCst), 2);
    assert_eq!(
        err.elapsed(),
        secs(10),
        "6 s, 1 s pause, then cut after 3 s"
    );
    assert_eq!(err.timed_out().map(|t| t.after), Some(secs(3)));
    assert_eq!(
        err.last_error().unwrap().kind(),
        io::ErrorKind::ConnectionReset,
        "the first attempt's own error is kept"
    );
}

#[tokio::test(start_paused = true)]
async fn the_attempt_is_told_the_time_left() {
    let clock = TokioClock::new();
    let policy = policy_of(Rule::constant(secs(1)).unwrap(), 3, clock, |p| {
        p.deadline(secs(10))
    });
    let mut seen = Vec::new();
    let _ = policy
        .call(|a| {
            seen.push(a.remaining);
            async {
                tokio::time::sleep(secs(2)).await;
                Err::<(), io::Error>(io::ErrorKind::ConnectionReset.into())
            }
        })
        .run_async()
        .await;
    assert_eq!(seen, [Some(secs(10)), Some(secs(7)), Some(secs(4))]);
}

/// A classifier that (wrongly) calls every error "not processed" cannot make a timed-out,
/// non-idempotent request retryable: the server may have done the work.
#[tokio::test(start_paused = true)]
async fn a_timeout_never_proves_not_processed() {
    let policy = policy_of(Rule::immediate(), 3, TokioClock::new(), |p| {
        p.attempt_timeout(secs(1)).idempotent(false)
    });
    let calls = AtomicUsize::new(0);
    let err = policy
        .call(|_| {
            calls.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<Result<(), io::Error>>()
        })
        .classify(|_: &io::Error| Verdict::transient().not_processed())
        .run_async()
        .await
        .unwrap_err();
    assert_eq!(err.reason(), StopReason::NotIdempotent);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// An error type with no `From<AttemptTimedOut>`: the loop takes any error type.
#[derive(Debug, PartialEq)]
enum AppError {
    Busy,
}

/// The async loop needs no runtime: a fake clock is a sleeper too.
#[test]
fn runs_without_tokio_on_a_fake_clock() {
    let clock = FakeClock::new();
    let policy = policy_of(
        Rule::exponential(secs(1), secs(60)).unwrap(),
        4,
        clock.clone(),
        |p| p,
    );
    let future = policy
        .call(|_| async { Err::<(), _>(AppError::Busy) })
        .run_async_with(&clock);
    let err = block_on(future).unwrap_err();
    assert_eq!(err.last_error(), Some(&AppError::Busy));
    assert_eq!(clock.now(), secs(1 + 2 + 4));
}

#[test]
fn a_fake_clock_times_out_pending_attempts() {
    let clock = FakeClock::new();
    let policy = policy_of(Rule::immediate(), 2, clock.clone(), |p| {
        p.attempt_timeout(secs(5))
    });
    let err = block_on(
        policy
            .call(|_| std::future::pending::<Result<(), AppError>>())
            .run_async_with(&clock),
    )
    .unwrap_err();
    assert_eq!(err.last_error(), None);
    assert_eq!(err.timed_out().map(|t| t.after), Some(secs(5)));
    assert_eq!(clock.now(), secs(10));
}

/// Regression: `run_async` required `E: From<AttemptTimedOut>`, which ruled out error types
/// the caller does not own (`reqwest::Error`, `tonic::Status`). A foreign error type with no
/// conversion, closures whose argument types are inferred, and the timeout reported beside
/// the error, in the retry hook too.
#[test]
fn any_error_type_and_inferred_closures() {
    #[derive(Debug)]
    struct Foreign(u16);
    let clock = FakeClock::new();
    let policy = policy_of(Rule::immediate(), 3, clock.clone(), |p| {
        p.attempt_timeout(secs(1))
    });
    let mut seen = Vec::new();
    let mut gave_up = 0;
    let err = block_on(
        policy
            .call(|a| async move {
                if a.number == 1 {
                    Err(Foreign(503))
                } else {
                    std::future::pending::<Result<(), Foreign>>().await
                }
            })
            .when(|e| e.0 == 503)
            .on_retry(|event| seen.push((event.error.map(|e| e.0), event.timed_out.is_some())))
            .on_give_up(|e| gave_up += e.attempts())
            .run_async_with(&clock),
    )
    .unwrap_err();
    assert_eq!(seen, [(Some(503), false), (None, true)]);
    assert_eq!(gave_up, 3);
    assert_eq!(err.last_error().map(|e| e.0), Some(503));
    assert!(err.timed_out().is_some());
    assert_eq!(
        err.timed_out().unwrap().to_string(),
        "attempt timed out after 1s"
    );
}

/// A minimal executor for futures that never wait on anything but a fake clock.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// The async loop's future can be spawned on a multi-threaded runtime.
#[tokio::test]
async fn the_loop_future_is_send() {
    fn assert_send<T: Send>(t: T) -> T {
        t
    }
    let policy = RetryPolicy::builder(Rule::immediate())
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let handle = tokio::spawn(async move {
        assert_send(
            policy
                .call(|a| async move { Ok::<_, io::Error>(a.number) })
                .classify(classify::io_error)
                .run_async(),
        )
        .await
        .map(|s| s.value)
        .unwrap()
    });
    assert_eq!(handle.await.unwrap(), 1);
}
