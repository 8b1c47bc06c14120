//! The async hedging runner: copies in flight, the delay timer, the first good answer.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

use crate::asynchronous::Sleeper;
#[cfg(feature = "tokio")]
use crate::asynchronous::TokioSleep;
use crate::classify::{AlwaysTransient, Classify, Verdict};
use crate::clock::Clock;

use super::{HedgeCopy, HedgePolicy, MAX_COPIES};

/// A hedged call that answered: the value, which copy answered, and how many were sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hedged<T> {
    /// The first good answer.
    pub value: T,
    /// The number of the copy that gave it (1 for the first).
    pub copy: u32,
    /// How many copies were sent in all.
    pub copies_sent: u32,
}

/// Why a hedged call ended without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeStop {
    /// A copy failed with an error the classifier calls permanent ("fatal" in gRPC's A6):
    /// every other copy was cancelled.
    Fatal,
    /// Every copy that could be sent failed with a transient error.
    AllFailed,
}

/// A hedged call that failed: the error that ended it, why, and how many copies were sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HedgeError<E> {
    error: E,
    reason: HedgeStop,
    copies_sent: u32,
}

impl<E> HedgeError<E> {
    /// The error that ended the call (the fatal one, or the last copy's).
    pub fn error(&self) -> &E {
        &self.error
    }

    /// The error, owned.
    pub fn into_error(self) -> E {
        self.error
    }

    /// Why the call ended.
    #[must_use]
    pub fn reason(&self) -> HedgeStop {
        self.reason
    }

    /// How many copies were sent.
    #[must_use]
    pub fn copies_sent(&self) -> u32 {
        self.copies_sent
    }
}

impl<E: fmt::Debug> fmt::Debug for HedgeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeError")
            .field("error", &self.error)
            .field("reason", &self.reason)
            .field("copies_sent", &self.copies_sent)
            .finish()
    }
}

impl<E: fmt::Display> fmt::Display for HedgeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            HedgeStop::Fatal => "a copy failed permanently",
            HedgeStop::AllFailed => "every copy failed",
        };
        write!(f, "{why} ({} sent)", self.copies_sent)?;
        // The error is the `source`: only the alternate form (`{:#}`) repeats it.
        if f.alternate() {
            write!(f, ": {}", self.error)?;
        }
        Ok(())
    }
}

impl<E: std::error::Error + 'static> std::error::Error for HedgeError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Why a hedge was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeCause {
    /// The copies before it had not answered within the hedging delay.
    Delay,
    /// A copy failed with a transient ("non-fatal") error, so the next one was sent at once.
    NonFatalError,
}

/// One hedge sent, for hooks and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeEvent {
    /// The copy's number (2 for the first hedge).
    pub copy: u32,
    /// Time since the call started.
    pub after: Duration,
    /// Why it was sent.
    pub cause: HedgeCause,
}

/// A hook called for each hedge sent. Implemented by every `FnMut(&HedgeEvent)`.
pub trait OnHedge {
    /// A hedge is being sent.
    fn on_hedge(&mut self, event: &HedgeEvent);
}

impl<F: FnMut(&HedgeEvent)> OnHedge for F {
    #[inline]
    fn on_hedge(&mut self, event: &HedgeEvent) {
        self(event);
    }
}

/// The hook that does nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHedgeHook;

impl OnHedge for NoHedgeHook {
    #[inline]
    fn on_hedge(&mut self, _: &HedgeEvent) {}
}

/// One hedged call being configured; run it with [`run_async`](HedgeCall::run_async) or
/// [`run_async_with`](HedgeCall::run_async_with).
#[must_use = "a hedged call does nothing until it is run"]
pub struct HedgeCall<'p, C: Clock, Op, E, K = AlwaysTransient, H = NoHedgeHook> {
    policy: &'p HedgePolicy<C>,
    error: PhantomData<fn(&E)>,
    op: Op,
    classify: K,
    on_hedge: H,
    idempotent: bool,
}

impl<'p, C: Clock, Op, E> HedgeCall<'p, C, Op, E> {
    pub(super) fn new(policy: &'p HedgePolicy<C>, op: Op) -> Self {
        Self {
            policy,
            error: PhantomData,
            op,
            classify: AlwaysTransient,
            on_hedge: NoHedgeHook,
            idempotent: true,
        }
    }
}

impl<'p, C: Clock, Op, E, K, H> HedgeCall<'p, C, Op, E, K, H> {
    /// Whether the operation is safe to send more than once (default true). A call that is
    /// not idempotent is sent once and never hedged.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// How to judge a copy's error: permanent ends the call (gRPC's "fatal"), transient sends
    /// the next copy at once. Default: every error is transient. A closure's argument type is
    /// inferred from the operation's error type: `.classify(|e| …)`.
    pub fn classify<K2: Fn(&E) -> Verdict>(self, classify: K2) -> HedgeCall<'p, C, Op, E, K2, H> {
        HedgeCall {
            policy: self.policy,
            error: PhantomData,
            op: self.op,
            classify,
            on_hedge: self.on_hedge,
            idempotent: self.idempotent,
        }
    }

    /// Calls `hook` for each hedge sent.
    pub fn on_hedge<H2: FnMut(&HedgeEvent)>(self, hook: H2) -> HedgeCall<'p, C, Op, E, K, H2> {
        HedgeCall {
            policy: self.policy,
            error: PhantomData,
            op: self.op,
            classify: self.classify,
            on_hedge: hook,
            idempotent: self.idempotent,
        }
    }
}

/// The copies in flight: at most [`MAX_COPIES`] futures pinned in place, their start times,
/// and the timer for the next copy. The timer is made only once the copies in flight have
/// been polled and none answered (`arm`), so a call answered at once never makes one.
struct Flight<'a, Fut, Sl> {
    slots: [Pin<&'a mut Option<Fut>>; MAX_COPIES as usize],
    started: [Duration; MAX_COPIES as usize],
    timer: Pin<&'a mut Option<Sl>>,
    arm: bool,
    sent: u32,
    outstanding: u32,
}

impl<'p, C, Op, Fut, T, E, K, H> HedgeCall<'p, C, Op, E, K, H>
where
    C: Clock,
    Op: FnMut(HedgeCopy) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    K: Classify<E>,
    H: OnHedge,
{
    /// Runs the call on tokio (feature `tokio`). Use a
    /// [`TokioClock`](crate::asynchronous::TokioClock) in the policy so that tokio's paused
    /// test time drives the delays and the latencies alike.
    ///
    /// # Errors
    ///
    /// A [`HedgeError`] with the fatal error, or the last copy's error when every copy failed.
    #[cfg(feature = "tokio")]
    pub async fn run_async(self) -> Result<Hedged<T>, HedgeError<E>> {
        self.run_async_with(&TokioSleep).await
    }

    /// Runs the call, timing hedges with `sleeper`.
    ///
    /// # Errors
    ///
    /// As [`run_async`](HedgeCall::run_async).
    pub async fn run_async_with<S: Sleeper + ?Sized>(
        mut self,
        sleeper: &S,
    ) -> Result<Hedged<T>, HedgeError<E>> {
        let mut op = self.op;
        fly(
            self.policy,
            Always(&mut op),
            &self.classify,
            &mut self.on_hedge,
            self.idempotent,
            sleeper,
        )
        .await
    }
}

/// Where a hedged call's copies come from: the caller's operation (every copy can be made),
/// or the tower layer's replay of a request (a body too long to keep is sent once).
pub(crate) trait Copies<Fut> {
    /// Whether another copy can be made.
    fn more(&self) -> bool;
    /// Makes copy `copy.number`; called only after [`more`](Self::more) said yes.
    fn make(&mut self, copy: HedgeCopy) -> Fut;
}

/// The caller's operation: every copy can be made.
struct Always<'a, Op>(&'a mut Op);

impl<Op: FnMut(HedgeCopy) -> Fut, Fut> Copies<Fut> for Always<'_, Op> {
    #[inline]
    fn more(&self) -> bool {
        true
    }
    #[inline]
    fn make(&mut self, copy: HedgeCopy) -> Fut {
        (self.0)(copy)
    }
}

/// Runs a hedged call whose copies come from `copies`: the delay, the budget, the classifier,
/// the hook. The first copy must be makeable.
pub(crate) async fn fly<C, M, Fut, T, E, K, H, S>(
    policy: &HedgePolicy<C>,
    mut copies_from: M,
    classify: &K,
    on_hedge: &mut H,
    idempotent: bool,
    sleeper: &S,
) -> Result<Hedged<T>, HedgeError<E>>
where
    C: Clock,
    M: Copies<Fut>,
    Fut: Future<Output = Result<T, E>>,
    K: Classify<E>,
    H: OnHedge,
    S: Sleeper + ?Sized,
{
    debug_assert!(copies_from.more(), "the first copy can always be made");
    let clock = policy.clock();
    let copies = if idempotent { policy.max_copies() } else { 1 };
    let start = clock.now();
    let delay = policy.delay_at(start);
    // A hedged call inside a retry loop on the same budget is one of that loop's attempts:
    // the loop deposited for it and records its outcome, once, whatever the copies did (gRPC
    // throttling would otherwise lose a token per failed copy and one more for the attempt).
    // On its own, the hedge deposits and records each copy's outcome.
    let outcomes = policy
        .budget()
        .filter(|budget| !crate::deposit::is_charged(*budget));
    if let Some(budget) = outcomes {
        budget.on_request();
    }
    let (s1, s2, s3, s4, s5) = (
        pin!(None::<Fut>),
        pin!(None::<Fut>),
        pin!(None::<Fut>),
        pin!(None::<Fut>),
        pin!(None::<Fut>),
    );
    let mut flight = Flight {
        slots: [s1, s2, s3, s4, s5],
        started: [Duration::ZERO; MAX_COPIES as usize],
        timer: pin!(None::<S::Sleep>),
        arm: false,
        sent: 0,
        outstanding: 0,
    };
    // Sends copy number `flight.sent + 1` unless the copies or the budget are spent.
    let mut send = |flight: &mut Flight<'_, Fut, S::Sleep>, cause: Option<HedgeCause>| {
        if flight.sent >= copies {
            return;
        }
        let now = match cause {
            None => start,
            Some(cause) => {
                if !copies_from.more() {
                    // The request cannot be sent again: no more hedges.
                    flight.timer.set(None);
                    flight.arm = false;
                    return;
                }
                if let Some(budget) = policy.budget()
                    && !budget.try_retry()
                {
                    flight.timer.set(None);
                    flight.arm = false;
                    return;
                }
                let now = clock.now();
                on_hedge.on_hedge(&HedgeEvent {
                    copy: flight.sent + 1,
                    after: now.saturating_sub(start),
                    cause,
                });
                now
            }
        };
        let i = flight.sent as usize;
        flight.slots[i].set(Some(copies_from.make(HedgeCopy {
            number: flight.sent + 1,
        })));
        flight.started[i] = now;
        flight.sent += 1;
        flight.outstanding += 1;
        flight.timer.set(None);
        flight.arm = flight.sent < copies;
    };
    crate::deposit::charged_sync(policy.budget(), || send(&mut flight, None));
    let flights = std::future::poll_fn(move |cx| {
        loop {
            let sent_before = flight.sent;
            for i in 0..flight.sent as usize {
                let Some(copy) = flight.slots[i].as_mut().as_pin_mut() else {
                    continue;
                };
                let Poll::Ready(result) = copy.poll(cx) else {
                    continue;
                };
                flight.slots[i].set(None);
                flight.outstanding -= 1;
                let error = match result {
                    Ok(value) => {
                        if let Some(budget) = outcomes {
                            budget.on_success();
                        }
                        if let Some(h) = policy.histogram() {
                            let now = clock.now();
                            h.record(now, now.saturating_sub(flight.started[i]));
                        }
                        return Poll::Ready(Ok(Hedged {
                            value,
                            copy: i as u32 + 1,
                            copies_sent: flight.sent,
                        }));
                    }
                    Err(error) => error,
                };
                let verdict = classify.classify(&error);
                if !verdict.is_transient() {
                    if let Some(budget) = outcomes {
                        budget.on_success();
                    }
                    return Poll::Ready(Err(HedgeError {
                        error,
                        reason: HedgeStop::Fatal,
                        copies_sent: flight.sent,
                    }));
                }
                if let Some(budget) = outcomes {
                    budget.on_failure();
                }
                send(&mut flight, Some(HedgeCause::NonFatalError));
                if flight.outstanding == 0 {
                    return Poll::Ready(Err(HedgeError {
                        error,
                        reason: HedgeStop::AllFailed,
                        copies_sent: flight.sent,
                    }));
                }
            }
            if flight.sent > sent_before {
                continue; // a copy sent after a non-fatal error: poll it
            }
            if flight.arm {
                flight.arm = false;
                flight.timer.set(Some(sleeper.sleep(delay)));
            }
            let fired = flight
                .timer
                .as_mut()
                .as_pin_mut()
                .is_some_and(|t| t.poll(cx).is_ready());
            if !fired {
                return Poll::Pending;
            }
            flight.timer.set(None);
            send(&mut flight, Some(HedgeCause::Delay));
            // Loop: poll the copy just sent, and its timer.
        }
    });
    // The copies run inside this call: a retry loop within one deposits no more.
    crate::deposit::charged(policy.budget(), flights).await
}
