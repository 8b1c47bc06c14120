//! Model checks of the shared counters (window ring, budgets, breaker, the hedging
//! histogram) with `loom`: every interleaving of the small cases.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p herd --test loom --release`. Under
//! `cfg(loom)` the crate's `sync` shim swaps std's atomics and Mutex for loom's, so these
//! check the very code the crate ships. (The fake clock's own atomic stays std's: it is set
//! before the threads start and only read by them.)
#![cfg(loom)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use herd::breaker::{BreakerOutcome, BreakerState, CircuitBreaker};
use herd::budget::RetryBudget;
use herd::clock::FakeClock;
use herd::hedge::LatencyHistogram;
use loom::sync::Arc;
use loom::thread;

mod support;

use support::{breaker, budget};

type FakeBudget = RetryBudget<FakeClock>;

/// Every interleaving of two threads on one budget (100 %, so a deposit is one retry) on a
/// fake clock: `setup` runs alone first, then `there` on a clone in a spawned thread races
/// `here`, and `check` sees the budget and what each returned.
fn race_on_budget<H: 'static, T: Send + 'static>(
    setup: fn(&FakeClock, &FakeBudget),
    here: fn(&FakeBudget) -> H,
    there: fn(&FakeBudget) -> T,
    check: fn(&FakeBudget, H, T),
) {
    loom::model(move || {
        let clock = FakeClock::new();
        let budget = budget(&clock, 100.0);
        setup(&clock, &budget);
        let other = budget.clone();
        let t = thread::spawn(move || there(&other));
        let h = here(&budget);
        let t = t.join().unwrap();
        check(&budget, h, t);
    });
}

/// The ring's lost update: two threads add while the window moves to a new slot. None of the
/// deposits may be lost in any interleaving.
#[test]
fn ring_deposits_across_a_slot_boundary_are_never_lost() {
    race_on_budget(
        // The next slot: the first add moves the window.
        |clock, _| clock.set(Duration::from_secs(1)),
        FakeBudget::deposit,
        FakeBudget::deposit,
        |budget, (), ()| assert_eq!(budget.available(), 2.0),
    );
}

/// A slot cleared by a jump in time never swallows a deposit made at the new time.
#[test]
fn ring_expiry_and_a_deposit_at_the_new_time() {
    race_on_budget(
        |clock, budget| {
            budget.deposit(); // at 0 s
            clock.set(Duration::from_secs(11)); // the first deposit has expired
        },
        FakeBudget::available, // moves the window too
        FakeBudget::deposit,
        |budget, seen, ()| {
            assert!(seen == 0.0 || seen == 1.0, "{seen}");
            assert_eq!(budget.available(), 1.0);
        },
    );
}

/// Two threads race for the last retry: exactly one gets it.
#[test]
fn budget_last_retry_goes_to_exactly_one_thread() {
    race_on_budget(
        |_, budget| budget.deposit(),
        FakeBudget::withdraw,
        FakeBudget::withdraw,
        |budget, here, there| {
            assert!(here ^ there, "{here} {there}");
            assert_eq!(budget.available(), 0.0);
        },
    );
}

/// A deposit racing a withdrawal: the withdrawal sees the balance before or after it, and
/// the final balance is exact either way.
#[test]
fn budget_deposit_racing_a_withdrawal() {
    race_on_budget(
        |_, _| {},
        FakeBudget::withdraw,
        FakeBudget::deposit,
        |budget, took, ()| assert_eq!(budget.available(), if took { 0.0 } else { 1.0 }),
    );
}

/// Two closed-state failures race; together they reach `min_calls`, so the breaker must end
/// open whichever records first.
#[test]
fn breaker_racing_failures_trip_it_once() {
    loom::model(|| {
        let clock = FakeClock::new();
        let b = breaker(&clock, 2);
        let (p1, p2) = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
        let other = b.clone();
        let t = thread::spawn(move || other.record(p2, BreakerOutcome::Failure));
        b.record(p1, BreakerOutcome::Failure);
        t.join().unwrap();
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.try_acquire().is_none());
    });
}

/// Trips `b` (`min_calls` 1) with one failure and lets its cool-down pass: the next ask
/// finds it half-open.
fn trip_and_cool(clock: &FakeClock, b: &CircuitBreaker<FakeClock>) {
    let trip = b.try_acquire().unwrap();
    b.record(trip, BreakerOutcome::Failure);
    clock.set(Duration::from_secs(5));
}

/// Half-open with one probe: a late success from the closed state races the probe's
/// failure. The stale success never closes the breaker; the probe's failure reopens it.
#[test]
fn breaker_stale_success_cannot_close_a_half_open_breaker() {
    loom::model(|| {
        let clock = FakeClock::new();
        let b = breaker(&clock, 1);
        let stale = b.try_acquire().unwrap();
        trip_and_cool(&clock, &b);
        let probe = b.try_acquire().unwrap();
        let other = b.clone();
        let t = thread::spawn(move || other.record(stale, BreakerOutcome::Success));
        b.record(probe, BreakerOutcome::Failure);
        t.join().unwrap();
        assert_eq!(b.state(), BreakerState::Open);
    });
}

/// Two threads ask a half-open breaker with one probe: exactly one is admitted.
#[test]
fn breaker_half_open_admits_exactly_its_probes() {
    loom::model(|| {
        let clock = FakeClock::new();
        let b = breaker(&clock, 1);
        trip_and_cool(&clock, &b);
        let other = b.clone();
        let t = thread::spawn(move || other.try_acquire().is_some());
        let here = b.try_acquire().is_some();
        let there = t.join().unwrap();
        assert!(here ^ there, "{here} {there}");
    });
}

/// Half-open with one probe: the probe's call is dropped (its permit given back) while
/// another thread asks. Whoever asks after both finds exactly one permit out, or none: the
/// given-back permit is never lost nor handed out twice.
#[test]
fn breaker_a_dropped_probe_racing_an_ask_leaves_one_permit() {
    loom::model(|| {
        let clock = FakeClock::new();
        let b = breaker(&clock, 1);
        trip_and_cool(&clock, &b);
        let probe = b.try_acquire().unwrap();
        let other = b.clone();
        let t = thread::spawn(move || other.try_acquire().is_some());
        b.record(probe, BreakerOutcome::Dropped);
        let there = t.join().unwrap();
        let later = b.try_acquire().is_some();
        assert!(there ^ later, "{there} {later}");
    });
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// Two threads record into the same bucket of one window while a third reads: no sample is
/// lost (one atomic add each), a reader never counts more than was recorded, and the
/// finished window holds exactly what was recorded. (Under loom the histogram has 4
/// buckets: 0, 1 and 2 µs exact.)
#[test]
fn histogram_concurrent_records_lose_nothing() {
    loom::model(|| {
        let h = Arc::new(LatencyHistogram::new(0.5, Duration::from_secs(1), 1));
        h.record(ms(10), us(1));
        let spawn_record = |at: Duration| {
            let h = h.clone();
            thread::spawn(move || h.record(at, us(2)))
        };
        let (a, b) = (spawn_record(ms(100)), spawn_record(ms(200)));
        let seen = h.current_count();
        assert!((1..=3).contains(&seen), "{seen}");
        assert_eq!(h.percentile(), None, "the window is not over");
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(h.current_count(), 3);
        h.roll(ms(1000));
        // The median of {1 µs, 2 µs, 2 µs} by nearest rank is 2 µs.
        assert_eq!(h.percentile(), Some(us(2)));
        assert_eq!(h.current_count(), 0);
    });
}

/// The window ends while another thread records with a time inside it: that sample lands
/// in exactly one window, the finished one or (counted one window late, as documented) the
/// next, never both and never neither. The finished window holds one sample before the race
/// and needs two to publish, so what was published tells which.
#[test]
fn histogram_rotation_racing_a_record_counts_the_sample_once() {
    static IN_FINISHED: AtomicBool = AtomicBool::new(false);
    static IN_NEXT: AtomicBool = AtomicBool::new(false);
    loom::model(|| {
        let h = Arc::new(LatencyHistogram::new(0.99, Duration::from_secs(1), 2));
        h.record(ms(100), us(1));
        let other = h.clone();
        let rotating = thread::spawn(move || other.record(ms(1500), us(2)));
        h.record(ms(900), us(2)); // a time in the finished window
        let read = h.percentile();
        assert!(read.is_none() || read == Some(us(2)), "{read:?}");
        rotating.join().unwrap();
        match h.percentile() {
            // The finished window was {1 µs, 2 µs}; the next holds the rotating thread's.
            Some(p) => {
                assert_eq!(p, us(2));
                assert_eq!(h.current_count(), 1);
                IN_FINISHED.store(true, Ordering::Relaxed);
            }
            // The finished window was {1 µs}, too few; the next holds both 2 µs samples.
            None => {
                assert_eq!(h.current_count(), 2);
                IN_NEXT.store(true, Ordering::Relaxed);
            }
        }
    });
    // Both outcomes happen: the model does explore the race.
    assert!(IN_FINISHED.load(Ordering::Relaxed) && IN_NEXT.load(Ordering::Relaxed));
}

/// Two threads both find the window over: exactly one rotation publishes it, and the other
/// does not clear the new window a second time (which would lose the first one's sample).
#[test]
fn histogram_racing_rotations_publish_once_and_lose_nothing() {
    loom::model(|| {
        let h = Arc::new(LatencyHistogram::new(0.5, Duration::from_secs(1), 1));
        h.record(ms(100), us(1));
        let other = h.clone();
        let t = thread::spawn(move || other.record(ms(1100), us(2)));
        h.record(ms(1200), us(2));
        let read = h.percentile();
        assert!(read.is_none() || read == Some(us(1)), "{read:?}");
        t.join().unwrap();
        assert_eq!(h.percentile(), Some(us(1)));
        assert_eq!(h.current_count(), 2);
    });
}
