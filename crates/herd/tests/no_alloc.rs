//! Drawing pauses, deciding on server delays and a first-attempt success through the blocking
//! loop (its OS-seeded idempotency key included) never touch the heap:
//! a counting global allocator proves it.
//!
//! The allocator counts per thread, so the two tests (and the harness's own threads) cannot
//! see each other's allocations. It needs `unsafe`: it is the test harness, not the library,
//! which forbids it.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use herd::breaker::{BreakerConfig, CircuitBreaker};
use herd::budget::{BudgetConfig, RetryBudget};
use herd::clock::SystemClock;
use herd::policy::RetryPolicy;
use herd::rng::{SplitMix64, ThreadRng};
use herd::server_delay::{ServerDelay, ServerDelayLimits, ServerWait, decide};
use herd::{Rule, RuleName, RuleParams, RuleState};

thread_local! {
    // `const`: touching it never allocates, so the allocator may use it.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // During thread teardown the counter may be gone; such allocations are not ours.
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn drawing_pauses_allocates_nothing() {
    let params = RuleParams::default();
    let rules: Vec<_> = RuleName::ALL
        .iter()
        .map(|n| n.build(&params).unwrap())
        .collect();
    // Touch the thread-local generator once so its lazy initialisation is not counted.
    let _ = herd::rng::Rng::next_u64(&mut ThreadRng);
    let before = allocations();
    let mut rng = SplitMix64::new(1);
    let mut total = Duration::ZERO;
    for rule in &rules {
        let mut state = RuleState::default();
        for _ in 0..1000 {
            total += rule.pause(&mut state, &mut rng);
        }
        for pause in rule.schedule(ThreadRng).take(100) {
            total += pause;
        }
    }
    // The server-delay decision the loops and the simulator share.
    let limits = ServerDelayLimits::default();
    for ms in 0..1000u64 {
        for delay in [
            ServerDelay::RetryAfter(Duration::from_millis(ms)),
            ServerDelay::Pushback(Duration::from_millis(ms)),
        ] {
            if let ServerWait::Wait(w) = decide(
                Duration::from_millis(7),
                delay,
                Some(Duration::from_secs(1)),
                &limits,
                &mut rng,
            ) {
                total += w;
            }
        }
    }
    let after = allocations();
    assert!(total > Duration::ZERO);
    assert_eq!(after - before, 0, "drawing pauses allocated");
}

#[test]
fn first_attempt_success_does_not_allocate() {
    let clock = SystemClock::new();
    let policy = RetryPolicy::builder(
        Rule::full(Duration::from_millis(10), Duration::from_secs(1)).unwrap(),
    )
    .max_attempts(3)
    .deadline(Duration::from_secs(10))
    .budget(RetryBudget::new(BudgetConfig::default(), clock).unwrap())
    .breaker(CircuitBreaker::new(BreakerConfig::default(), clock).unwrap())
    .clock(clock)
    .build()
    .unwrap();
    // Warm up thread-locals (the thread RNG) outside the measured section.
    let _ = policy.call(|_| Ok::<_, ()>(1)).run();
    let before = allocations();
    let mut total = 0;
    for i in 0..1000 {
        total += policy
            .call(|a| Ok::<_, ()>(a.number + i))
            .run()
            .unwrap()
            .value;
    }
    let after = allocations();
    assert_eq!(after - before, 0, "the success path allocated");
    assert!(total > 0);
}

/// The zero counts above mean something only if the counter sees allocations at all.
#[test]
fn the_counter_sees_this_threads_allocations() {
    let before = allocations();
    let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(16));
    assert!(allocations() > before);
    drop(v);
}

/// A hedged call whose first copy answers in time: the copies live on the call's own future,
/// and recording the latency into the learned-delay histogram is one atomic add.
#[test]
fn a_hedged_call_answered_by_its_first_copy_does_not_allocate() {
    use herd::clock::FakeClock;
    use herd::hedge::{HedgeDelay, HedgePolicy};
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let clock = FakeClock::new();
    let policy = HedgePolicy::builder(HedgeDelay::percentile(
        0.95,
        Duration::from_millis(1),
        Duration::from_secs(1),
    ))
    .max_copies(5)
    .clock(clock.clone())
    .build()
    .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let before = allocations();
    for i in 0..1000u32 {
        let call = policy
            .hedge(|copy| std::future::ready(Ok::<_, ()>(copy.number + i)))
            .run_async_with(&clock);
        let mut call = std::pin::pin!(call);
        let Poll::Ready(Ok(answer)) = call.as_mut().poll(&mut cx) else {
            panic!("the first copy is ready at once");
        };
        assert_eq!((answer.value, answer.copies_sent), (1 + i, 1));
    }
    let after = allocations();
    assert_eq!(after - before, 0, "hedged calls allocated");
    assert_eq!(policy.histogram().unwrap().current_count(), 1000);
}
