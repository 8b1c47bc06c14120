//! One logical call deposits once in a budget, whatever runs inside it.
//!
//! A budget shared by a retry loop and a hedge inside it (or by two retry layers, one inside
//! the other) would otherwise be paid a deposit by every level: each retry of the outer loop
//! starts a fresh inner call, whose deposit earns part of the next retry, and the ratio the
//! budget promises is lost (100 failing calls at 10 % made 20 extra sends, not 10).
//!
//! So a call that has deposited marks its budget as *charged* while its attempts run: the
//! mark is a thread-local list of budget identities ([`Budget::identity`]), pushed before each
//! poll of the attempt and popped after it (as `tracing`'s `Instrumented` enters its span),
//! so it follows the attempt's future wherever it is polled and never leaks to another task.
//! An inner call whose budget is marked does not deposit. Work that an attempt hands to
//! another task (a `tower::buffer`, a spawned future) is outside the mark and deposits as a
//! call of its own.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use crate::budget::Budget;

thread_local! {
    /// The identities of the budgets charged by the calls being polled on this thread.
    static CHARGED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Whether a call being polled on this thread already deposited in `budget`.
pub(crate) fn is_charged(budget: &dyn Budget) -> bool {
    let id = budget.identity();
    CHARGED.with(|c| c.borrow().contains(&id))
}

/// Pops the mark when the poll ends, also by a panic.
struct Marked;

impl Drop for Marked {
    fn drop(&mut self) {
        CHARGED.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

fn mark(id: usize) -> Marked {
    CHARGED.with(|c| c.borrow_mut().push(id));
    Marked
}

/// Runs `f` with `budget` marked charged (a blocking attempt).
pub(crate) fn charged_sync<T>(budget: Option<&dyn Budget>, f: impl FnOnce() -> T) -> T {
    match budget {
        Some(budget) => {
            let _marked = mark(budget.identity());
            f()
        }
        None => f(),
    }
}

/// Polls `future` with `budget` marked charged during each poll. Without a budget the future
/// is awaited as it is.
pub(crate) async fn charged<F: Future>(budget: Option<&dyn Budget>, future: F) -> F::Output {
    let Some(budget) = budget else {
        return future.await;
    };
    let id = budget.identity();
    let mut future = pin!(future);
    std::future::poll_fn(move |cx| {
        let _marked = mark(id);
        match future.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready(out),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}
