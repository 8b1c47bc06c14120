//! A sliding window of ten atomic counters, shared by the retry budget and the breaker.
//!
//! Time is cut into slots of `window / 10`; a counter belongs to the slot of the time it was
//! updated, and counts while it is among the last ten. Expiry is lock-free: the thread that
//! moves the current generation forward (one compare-and-swap) clears the slots time has left
//! behind. Every operation costs O(1) (ten slots at most) whatever the window's length. A
//! clock that steps back keeps using the newest slot.
//!
//! Counters are plain `u64` words updated with wrapping arithmetic, so a user can store signed
//! amounts (the budget) or two packed 32-bit counts (the breaker).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::saturating_nanos;

pub(crate) const SLOTS: usize = 10;

pub(crate) struct Ring {
    slots: [AtomicU64; SLOTS],
    /// The generation (`now / slot_nanos`) of the current slot.
    generation: AtomicU64,
    slot_nanos: u64,
}

impl Ring {
    pub(crate) fn new(window: Duration, now: Duration) -> Self {
        let slot_nanos = (saturating_nanos(window) / SLOTS as u64).max(1);
        Self {
            slots: Default::default(),
            generation: AtomicU64::new(saturating_nanos(now) / slot_nanos),
            slot_nanos,
        }
    }

    /// Adds `amount` (wrapping) to the slot of time `now`.
    #[inline]
    pub(crate) fn add(&self, now: Duration, amount: u64) {
        self.add_at(self.slot(now), amount);
    }

    /// Adds `amount` (wrapping) to a slot returned by [`slot`](Ring::slot).
    #[inline]
    pub(crate) fn add_at(&self, slot: usize, amount: u64) {
        self.slots[slot].fetch_add(amount, Ordering::Relaxed);
    }

    /// The slots' words as they are (call [`slot`](Ring::slot) first to expire old ones).
    #[inline]
    pub(crate) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().map(|s| s.load(Ordering::Relaxed))
    }

    /// Zeroes every slot.
    pub(crate) fn clear(&self) {
        for slot in &self.slots {
            slot.store(0, Ordering::Relaxed);
        }
    }

    /// The index of the slot for time `now`, expiring the slots time has left behind.
    #[inline]
    pub(crate) fn slot(&self, now: Duration) -> usize {
        let now = saturating_nanos(now) / self.slot_nanos;
        let mut current = self.generation.load(Ordering::Acquire);
        loop {
            if now <= current {
                return (current % SLOTS as u64) as usize;
            }
            match self.generation.compare_exchange_weak(
                current,
                now,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    let skipped = (now - current).min(SLOTS as u64);
                    for back in 0..skipped {
                        self.slots[((now - back) % SLOTS as u64) as usize]
                            .store(0, Ordering::Relaxed);
                    }
                    return (now % SLOTS as u64) as usize;
                }
                Err(seen) => current = seen,
            }
        }
    }
}
