//! A sliding window of ten atomic counters, shared by the retry budget and the breaker.
//!
//! Time is cut into slots of `window / 10`; a counter belongs to the slot of the time it was
//! updated, and counts while it is among the last ten. Adding to the current slot is one
//! atomic load and one atomic add. Moving to a new slot takes a lock (as tower's budget does):
//! under it the slots time has left behind are cleared *first*, and the new generation is
//! published *after*, so no thread can add to a slot that is about to be cleared. (The
//! lock-free version this replaces published first and cleared after, and lost the additions
//! other threads made in between.) A thread still holding the old generation adds to the old
//! slot, which is only cleared when time jumped a whole window, that is, when its addition has
//! expired anyway. Every operation costs O(1) (ten slots at most) whatever the window's
//! length. A clock that steps back keeps using the newest slot.
//!
//! Counters are plain `u64` words updated with wrapping arithmetic, so a user can store signed
//! amounts (the budget) or counts (the breaker).

use std::time::Duration;

use crate::clock::saturating_nanos;
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering, lock};

pub(crate) const SLOTS: usize = 10;

pub(crate) struct Ring {
    slots: [AtomicU64; SLOTS],
    /// The generation (`now / slot_nanos`) of the current slot; written only under `advance`.
    generation: AtomicU64,
    slot_nanos: u64,
    advance: Mutex<()>,
}

/// Proof that the caller holds the ring's lock: no slot changes generation meanwhile.
pub(crate) struct Locked<'a> {
    ring: &'a Ring,
    _guard: MutexGuard<'a, ()>,
}

impl Ring {
    pub(crate) fn new(window: Duration, now: Duration) -> Self {
        let slot_nanos = (saturating_nanos(window) / SLOTS as u64).max(1);
        Self {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            generation: AtomicU64::new(saturating_nanos(now) / slot_nanos),
            slot_nanos,
            advance: Mutex::new(()),
        }
    }

    /// Adds `amount` (wrapping) to the slot of time `now`.
    #[inline]
    pub(crate) fn add(&self, now: Duration, amount: u64) {
        let slot = self.slot(now);
        self.slots[slot].fetch_add(amount, Ordering::Relaxed);
    }

    /// The sum of the live slots (wrapping), after expiring old ones.
    #[inline]
    pub(crate) fn sum(&self, now: Duration) -> u64 {
        self.slot(now);
        self.words().fold(0, u64::wrapping_add)
    }

    fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().map(|s| s.load(Ordering::Relaxed))
    }

    /// Zeroes every slot.
    pub(crate) fn clear(&self) {
        for slot in &self.slots {
            slot.store(0, Ordering::Relaxed);
        }
    }

    /// Takes the lock (for a check-then-act that must not race with another one).
    pub(crate) fn lock(&self, now: Duration) -> Locked<'_> {
        let locked = Locked {
            ring: self,
            _guard: lock(&self.advance),
        };
        self.advance_locked(self.generation_of(now));
        locked
    }

    fn generation_of(&self, now: Duration) -> u64 {
        saturating_nanos(now) / self.slot_nanos
    }

    /// The index of the slot for time `now`, expiring the slots time has left behind.
    #[inline]
    fn slot(&self, now: Duration) -> usize {
        let target = self.generation_of(now);
        let current = self.generation.load(Ordering::Acquire);
        if target <= current {
            return (current % SLOTS as u64) as usize;
        }
        let _guard = lock(&self.advance);
        self.advance_locked(target)
    }

    /// With the lock held: clears the slots between the current generation and `target`,
    /// then publishes `target`. Returns the current slot.
    fn advance_locked(&self, target: u64) -> usize {
        let current = self.generation.load(Ordering::Acquire);
        if target <= current {
            return (current % SLOTS as u64) as usize;
        }
        let skipped = (target - current).min(SLOTS as u64);
        for back in 0..skipped {
            self.slots[((target - back) % SLOTS as u64) as usize].store(0, Ordering::Relaxed);
        }
        self.generation.store(target, Ordering::Release);
        (target % SLOTS as u64) as usize
    }
}

impl Locked<'_> {
    /// The sum of the live slots (wrapping). Other threads may still add meanwhile.
    pub(crate) fn sum(&self) -> u64 {
        self.ring.words().fold(0, u64::wrapping_add)
    }

    /// Adds `amount` (wrapping) to the current slot.
    pub(crate) fn add(&self, amount: u64) {
        let slot = (self.ring.generation.load(Ordering::Acquire) % SLOTS as u64) as usize;
        self.ring.slots[slot].fetch_add(amount, Ordering::Relaxed);
    }
}
