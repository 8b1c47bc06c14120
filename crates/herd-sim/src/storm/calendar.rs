//! The calendar of waiting clients: who knocks at which step.
//!
//! Clients wait in buckets keyed by the step of their next attempt, so the engine touches a
//! client only when it knocks: the cost of a run is O(attempts + steps), never
//! O(clients × steps). Pauses are capped, so all but the longest waits fall within a ring of
//! `size` buckets ahead of the current step. Each bucket is a vector of client *records* (the
//! client's id and retry state travel with it), read front to back when its step comes: a
//! stream, with no random access into per-client arrays, and no memory at all for clients
//! that were served or gave up. A drained vector goes back to the bucket it was drained
//! from ([`Calendar::take_recycling`]), so that a bucket filling up again finds its
//! capacity there instead of growing from nothing (every growth copied the bucket, and
//! fresh pages cost a fault and a zeroing each: together a fifth of a `decorrelated` storm);
//! a vector more than four times a bucket's share of the waiting clients is freed instead,
//! so memory stays within a small multiple of the records of waiting clients.
//! An occupancy bitmap lets the engine jump over empty steps 64 at a time; waits beyond the
//! ring (huge caps with fine steps) go to an ordered map.
use std::collections::BTreeMap;

/// The largest ring; longer waits go to the heap.
const MAX_RING: u64 = 1 << 20;

#[derive(Debug)]
pub(crate) struct Calendar<T> {
    buckets: Vec<Vec<T>>,
    /// One bit per bucket: set when the bucket is not empty.
    occupied: Vec<u64>,
    mask: u64,
    /// The current step; every client in the ring is due in `now..now + size`.
    now: u64,
    far: BTreeMap<u64, Vec<T>>,
    len: u64,
}

impl<T: Copy> Calendar<T> {
    /// A calendar for waits of at most `max_wait` steps (longer ones still work, via the heap).
    pub(crate) fn new(max_wait: u64) -> Self {
        let size = max_wait
            .saturating_add(1)
            .clamp(64, MAX_RING)
            .next_power_of_two();
        Self {
            buckets: (0..size).map(|_| Vec::new()).collect(),
            occupied: vec![0; (size / 64) as usize],
            mask: size - 1,
            now: 0,
            far: BTreeMap::new(),
            len: 0,
        }
    }

    /// Clients waiting.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Schedules `client` at `step` (after the current step).
    ///
    /// Always inlined: called, a 12-byte record went through the stack, stored as its
    /// fields and loaded as words, a load the store buffer cannot forward (the engine's
    /// hottest instruction for `decorrelated` and `grpc`).
    #[inline(always)]
    pub(crate) fn push(&mut self, step: u64, client: T) {
        debug_assert!(step > self.now);
        self.len += 1;
        if step - self.now > self.mask {
            self.far.entry(step).or_default().push(client);
            return;
        }
        let slot = (step & self.mask) as usize;
        let bucket = &mut self.buckets[slot];
        if bucket.is_empty() {
            self.occupied[slot / 64] |= 1 << (slot % 64);
        }
        bucket.push(client);
    }

    /// Schedules `item` at `step` (after the current step), first letting `compact` shrink
    /// its bucket when the bucket is full (its vector would reallocate): the cohort calendar
    /// merges equal states there, so that a bucket holds at most about twice its distinct
    /// states without a lookup per item. `compact` may only merge items (never add any).
    #[inline]
    pub(crate) fn push_compacting(
        &mut self,
        step: u64,
        item: T,
        compact: impl FnOnce(&mut Vec<T>),
    ) {
        debug_assert!(step > self.now);
        let bucket = if step - self.now > self.mask {
            self.far.entry(step).or_default()
        } else {
            let slot = (step & self.mask) as usize;
            let bucket = &mut self.buckets[slot];
            if bucket.is_empty() {
                self.occupied[slot / 64] |= 1 << (slot % 64);
            }
            bucket
        };
        if bucket.len() == bucket.capacity() && bucket.len() >= 8 {
            let before = bucket.len();
            compact(bucket);
            self.len -= (before - bucket.len()) as u64;
            // Grow unless half was merged away: compactions are then at least half a
            // capacity of pushes apart.
            if bucket.len() * 2 > bucket.capacity() {
                bucket.reserve(bucket.capacity());
            }
        }
        bucket.push(item);
        self.len += 1;
    }

    /// Lets `compact` shrink every bucket (as in [`Calendar::push_compacting`]).
    pub(crate) fn compact_all(&mut self, mut compact: impl FnMut(&mut Vec<T>)) {
        for bucket in self.buckets.iter_mut().chain(self.far.values_mut()) {
            let before = bucket.len();
            compact(bucket);
            self.len -= (before - bucket.len()) as u64;
        }
    }

    /// The earliest step at or after the current one with someone due.
    pub(crate) fn next_due(&self) -> Option<u64> {
        let far = self.far.first_key_value().map(|(s, _)| *s);
        let ring = self.next_in_ring();
        match (ring, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn next_in_ring(&self) -> Option<u64> {
        let size = self.mask + 1;
        let words = self.occupied.len();
        let start = (self.now & self.mask) as usize;
        let (w0, b0) = (start / 64, start % 64);
        // The first word from the current bit on, then whole words, wrapping once.
        let first = self.occupied[w0] & (u64::MAX << b0);
        if first != 0 {
            let slot = (w0 * 64) as u64 + u64::from(first.trailing_zeros());
            return Some(self.now + (slot + size - start as u64) % size);
        }
        for i in 1..=words {
            let w = (w0 + i) % words;
            let mut bits = self.occupied[w];
            if w == w0 {
                bits &= !(u64::MAX << b0);
            }
            if bits != 0 {
                let slot = (w * 64) as u64 + u64::from(bits.trailing_zeros());
                return Some(self.now + (slot + size - start as u64) % size);
            }
        }
        None
    }

    /// Moves the current step to `step` (never past a waiting client) and swaps the items due
    /// then into `out` (cleared first), whose vector the emptied bucket keeps for reuse.
    pub(crate) fn take_into(&mut self, step: u64, out: &mut Vec<T>) {
        debug_assert!(step >= self.now);
        debug_assert!(self.next_due().is_none_or(|d| d >= step));
        self.now = step;
        let slot = (step & self.mask) as usize;
        out.clear();
        std::mem::swap(&mut self.buckets[slot], out);
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        if let Some(far) = self.far.remove(&step) {
            out.extend(far);
        }
        self.len -= out.len() as u64;
    }

    /// [`take_into`](Self::take_into), except that `out`'s vector is freed rather than handed
    /// to the emptied bucket when it could hold more than four times a bucket's share of the
    /// clients waiting (and more than a page): a vector that once held a burst does not
    /// stay with a bucket that keeps small.
    pub(crate) fn take_recycling(&mut self, step: u64, out: &mut Vec<T>) {
        let share = self.len / (self.mask + 1);
        let most = (4 * share).max((4096 / std::mem::size_of::<T>().max(1)) as u64);
        if out.capacity() as u64 > most {
            *out = Vec::new();
        }
        self.take_into(step, out);
    }

    /// Moves the current step to `step` (never past a waiting client) and hands over the
    /// clients due then.
    #[cfg(test)]
    pub(crate) fn take(&mut self, step: u64) -> Vec<T> {
        debug_assert!(step >= self.now);
        debug_assert!(self.next_due().is_none_or(|d| d >= step));
        self.now = step;
        let slot = (step & self.mask) as usize;
        let mut due = std::mem::take(&mut self.buckets[slot]);
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        if let Some(far) = self.far.remove(&step) {
            due.extend(far);
        }
        self.len -= due.len() as u64;
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_come_back_at_their_step_in_order_of_steps() {
        let mut cal = Calendar::<u32>::new(10);
        cal.push(3, 0);
        cal.push(1, 1);
        cal.push(3, 2);
        cal.push(1000, 3); // beyond the ring: the heap
        cal.push(70, 4);
        assert_eq!(cal.len(), 5);
        let mut seen = Vec::new();
        while let Some(step) = cal.next_due() {
            let mut out = cal.take(step);
            out.sort_unstable();
            seen.push((step, out));
        }
        assert_eq!(
            seen,
            vec![
                (1, vec![1]),
                (3, vec![0, 2]),
                (70, vec![4]),
                (1000, vec![3])
            ]
        );
        assert_eq!(cal.len(), 0);
    }

    #[test]
    fn the_ring_wraps() {
        let mut cal = Calendar::<u32>::new(63);
        for step in (0..1000).step_by(37) {
            cal.push(step + 37, 0);
            cal.push(step + 50, 1);
            assert_eq!(cal.next_due(), Some(step + 37));
            let out = cal.take(step + 37);
            assert_eq!(out, vec![0]);
            assert_eq!(cal.next_due(), Some(step + 50));
            let out = cal.take(step + 50);
            assert_eq!(out, vec![1]);
        }
    }
}
