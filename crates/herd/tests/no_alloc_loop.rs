//! The blocking loop's success path allocates nothing: a counting global allocator watches a
//! call that succeeds on its first attempt (with a deadline, a budget and a breaker).
//!
//! The allocator needs `unsafe` (it is the test harness, not the library, which forbids it).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herd::Rule;
use herd::breaker::{BreakerConfig, CircuitBreaker};
use herd::budget::{BudgetConfig, RetryBudget};
use herd::clock::SystemClock;
use herd::policy::RetryPolicy;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
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
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let mut total = 0;
    for i in 0..1000 {
        total += policy
            .call(|a| Ok::<_, ()>(a.number + i))
            .run()
            .unwrap()
            .value;
    }
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(after - before, 0);
    assert!(total > 0);
}
