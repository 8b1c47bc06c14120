//! The calendar of waiting cohorts: for each future step, the cohorts due then, merged by
//! state.
//!
//! Two clients due at the same step in the same state (failure count as filed, memory word,
//! first step) are indistinguishable to the model, so they are one count here. Merging on
//! insertion keeps the calendar's size at (occupied steps × distinct states), independent of
//! the number of clients.
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// A cohort's state, everything that decides its future besides the step it is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct State {
    /// Failures so far, as filed (see `Laws::file_failures`).
    pub(crate) failures: u32,
    /// The rule's memory word (0 for rules without memory).
    pub(crate) memory: u64,
    /// The step of the first attempt, under a deadline (0 otherwise).
    pub(crate) first: u32,
}

/// A small multiplicative hasher: states are three machine words, and iteration order never
/// matters (cohorts are sorted before any draw), so neither DoS resistance nor stability is
/// needed, only speed and determinism.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StateHasher(u64);

impl Hasher for StateHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Bucket = HashMap<State, u64, BuildHasherDefault<StateHasher>>;

#[derive(Debug, Default)]
pub(crate) struct CohortCalendar {
    due: BTreeMap<u64, Bucket>,
    /// Drained buckets kept with their capacity, so that filing a new step allocates nothing
    /// (at most [`SPARE_BUCKETS`]; their order of iteration never matters, see [`StateHasher`]).
    spare: Vec<Bucket>,
    cohorts: u64,
    clients: u64,
}

/// The most drained buckets kept for reuse.
const SPARE_BUCKETS: usize = 64;

impl CohortCalendar {
    /// Files `count` clients in `state` to knock at `step`.
    pub(crate) fn add(&mut self, step: u64, state: State, count: u64) {
        if count == 0 {
            return;
        }
        let bucket = match self.due.entry(step) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(self.spare.pop().unwrap_or_default())
            }
        };
        let slot = bucket.entry(state).or_insert(0);
        if *slot == 0 {
            self.cohorts += 1;
        }
        *slot += count;
        self.clients += count;
    }

    /// The earliest step with a cohort due.
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.due.keys().next().copied()
    }

    /// Removes the cohorts due at `step` and appends them to `out`.
    pub(crate) fn take(&mut self, step: u64, out: &mut Vec<(State, u64)>) {
        if let Some(mut bucket) = self.due.remove(&step) {
            self.cohorts -= bucket.len() as u64;
            for (state, count) in bucket.drain() {
                self.clients -= count;
                out.push((state, count));
            }
            if self.spare.len() < SPARE_BUCKETS {
                self.spare.push(bucket);
            }
        }
    }

    /// Clients waiting.
    pub(crate) fn clients(&self) -> u64 {
        self.clients
    }

    /// Cohorts waiting (distinct (step, state) pairs).
    pub(crate) fn cohorts(&self) -> u64 {
        self.cohorts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_step_same_state_merges() {
        let mut cal = CohortCalendar::default();
        let a = State {
            failures: 1,
            memory: 0,
            first: 0,
        };
        let b = State {
            failures: 2,
            memory: 0,
            first: 0,
        };
        cal.add(5, a, 10);
        cal.add(5, a, 5);
        cal.add(5, b, 1);
        cal.add(3, b, 0);
        cal.add(9, a, 7);
        assert_eq!((cal.cohorts(), cal.clients()), (3, 23));
        assert_eq!(cal.next_due(), Some(5));
        let mut out = Vec::new();
        cal.take(5, &mut out);
        out.sort_unstable();
        assert_eq!(out, vec![(a, 15), (b, 1)]);
        assert_eq!(
            (cal.cohorts(), cal.clients(), cal.next_due()),
            (1, 7, Some(9))
        );
    }
}
