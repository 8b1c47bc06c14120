//! The calendar of waiting clients: who knocks at which step.
//!
//! Clients wait in buckets keyed by the step of their next attempt, so the engine touches a
//! client only when it knocks: the cost of a run is O(attempts + steps), never
//! O(clients × steps). Pauses are capped, so all but the longest waits fall within a ring of
//! `size` buckets ahead of the current step; each bucket is an intrusive singly linked list
//! threaded through one `u32` per client, which keeps memory at four bytes per client whatever
//! the shape of the storm. An occupancy bitmap lets the engine jump over empty steps 64 at a
//! time; waits beyond the ring (huge caps with fine steps) go to a binary heap.
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// "No client": the end of a bucket's list.
pub(crate) const NONE: u32 = u32::MAX;
/// The largest ring; longer waits go to the heap.
const MAX_RING: u64 = 1 << 20;

#[derive(Debug)]
pub(crate) struct Calendar {
    /// First client of each bucket, `NONE` when empty.
    heads: Vec<u32>,
    /// One bit per bucket: set when the bucket is not empty.
    occupied: Vec<u64>,
    mask: u64,
    /// The current step; every client in the ring is due in `now..now + size`.
    now: u64,
    far: BinaryHeap<Reverse<(u64, u32)>>,
    len: u64,
}

impl Calendar {
    /// A calendar for waits of at most `max_wait` steps (longer ones still work, via the heap).
    pub(crate) fn new(max_wait: u64) -> Self {
        let size = max_wait
            .saturating_add(1)
            .clamp(64, MAX_RING)
            .next_power_of_two();
        Self {
            heads: vec![NONE; size as usize],
            occupied: vec![0; (size / 64) as usize],
            mask: size - 1,
            now: 0,
            far: BinaryHeap::new(),
            len: 0,
        }
    }

    /// Clients waiting.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Schedules `client` at `step` (after the current step). `links` holds the lists.
    #[inline]
    pub(crate) fn push(&mut self, step: u64, client: u32, links: &mut [u32]) {
        debug_assert!(step >= self.now);
        self.len += 1;
        if step - self.now > self.mask {
            self.far.push(Reverse((step, client)));
            return;
        }
        let slot = (step & self.mask) as usize;
        links[client as usize] = self.heads[slot];
        self.heads[slot] = client;
        self.occupied[slot / 64] |= 1 << (slot % 64);
    }

    /// The earliest step at or after the current one with someone due.
    pub(crate) fn next_due(&self) -> Option<u64> {
        let far = self.far.peek().map(|Reverse((s, _))| *s);
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

    /// Moves the current step to `step` (never backwards past a waiting client) and appends
    /// the clients due then to `out`.
    pub(crate) fn take(&mut self, step: u64, out: &mut Vec<u32>, links: &[u32]) {
        debug_assert!(step >= self.now);
        debug_assert!(self.next_due().is_none_or(|d| d >= step));
        self.now = step;
        let slot = (step & self.mask) as usize;
        let mut client = self.heads[slot];
        let before = out.len();
        while client != NONE {
            out.push(client);
            client = links[client as usize];
        }
        self.heads[slot] = NONE;
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        while let Some(&Reverse((s, c))) = self.far.peek() {
            if s != step {
                break;
            }
            self.far.pop();
            out.push(c);
        }
        self.len -= (out.len() - before) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_come_back_at_their_step_in_order_of_steps() {
        let mut cal = Calendar::new(10);
        let mut links = vec![NONE; 8];
        cal.push(3, 0, &mut links);
        cal.push(1, 1, &mut links);
        cal.push(3, 2, &mut links);
        cal.push(1000, 3, &mut links); // beyond the ring: the heap
        cal.push(70, 4, &mut links);
        assert_eq!(cal.len(), 5);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        while let Some(step) = cal.next_due() {
            out.clear();
            cal.take(step, &mut out, &links);
            out.sort_unstable();
            seen.push((step, out.clone()));
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
        let mut cal = Calendar::new(63);
        let mut links = vec![NONE; 2];
        let mut out = Vec::new();
        for step in (0..1000).step_by(37) {
            cal.push(step + 37, 0, &mut links);
            cal.push(step + 50, 1, &mut links);
            out.clear();
            assert_eq!(cal.next_due(), Some(step + 37));
            cal.take(step + 37, &mut out, &links);
            assert_eq!(out, vec![0]);
            assert_eq!(cal.next_due(), Some(step + 50));
            out.clear();
            cal.take(step + 50, &mut out, &links);
            assert_eq!(out, vec![1]);
        }
    }
}
