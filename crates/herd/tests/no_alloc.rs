//! Drawing pauses never touches the heap: a counting global allocator proves it.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use herd::rng::{SplitMix64, ThreadRng};
use herd::{RuleName, RuleParams, RuleState};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
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
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut rng = SplitMix64::new(1);
    let mut total = std::time::Duration::ZERO;
    for rule in &rules {
        let mut state = RuleState::default();
        for _ in 0..1000 {
            total += rule.pause(&mut state, &mut rng);
        }
        for pause in rule.schedule(ThreadRng).take(100) {
            total += pause;
        }
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert!(total > std::time::Duration::ZERO);
    assert_eq!(after - before, 0, "drawing pauses allocated");
}
