//! The calendar of waiting cohorts: for each future step, the cohorts due then, merged by
//! state.
//!
//! Two clients due at the same step in the same state (failure count as filed, memory word,
//! first step) are indistinguishable to the model, so they are one count. The cohorts wait in
//! the agent engine's ring of buckets (`crate::storm::calendar`), one vector of `(state, count)` per
//! step, appended to without a lookup; a bucket about to reallocate is first sorted and its
//! equal states merged, so it holds at most about twice its distinct states, and the calendar's
//! size stays at (occupied steps × distinct states), independent of the number of clients. A
//! drained bucket's vector is handed back for the next step to fill.
use crate::storm::calendar::Calendar;

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

impl State {
    /// The state as one integer that orders as the state does (failures, then memory, then
    /// first step): one comparison instead of three, for the sorts that merge cohorts.
    #[inline]
    pub(crate) fn key(&self) -> u128 {
        (u128::from(self.failures) << 96) | (u128::from(self.memory) << 32) | u128::from(self.first)
    }
}

#[derive(Debug)]
pub(crate) struct CohortCalendar {
    due: Calendar<(State, u64)>,
    clients: u64,
}

/// Sorts cohorts by state and merges equal states (adding their counts), so that draws
/// happen in a fixed order and a bucket holds each state once.
pub(crate) fn merge_sorted(due: &mut Vec<(State, u64)>) {
    due.sort_unstable_by_key(|(s, _)| s.key());
    due.dedup_by(|later, earlier| {
        if later.0 == earlier.0 {
            earlier.1 += later.1;
            true
        } else {
            false
        }
    });
}

impl CohortCalendar {
    /// A calendar for waits of at most `max_wait` steps (longer ones still work).
    pub(crate) fn new(max_wait: u64) -> Self {
        Self {
            due: Calendar::new(max_wait),
            clients: 0,
        }
    }

    /// Files `count` clients in `state` to knock at `step` (after the current step).
    #[inline]
    pub(crate) fn add(&mut self, step: u64, state: State, count: u64) {
        if count == 0 {
            return;
        }
        self.due.push_compacting(step, (state, count), merge_sorted);
        self.clients += count;
    }

    /// The earliest step with a cohort due.
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.due.next_due()
    }

    /// Moves to `step` and puts the cohorts due then in `out` (cleared first), in no
    /// particular order and not yet merged.
    pub(crate) fn take(&mut self, step: u64, out: &mut Vec<(State, u64)>) {
        self.due.take_into(step, out);
        self.clients -= out.iter().map(|(_, n)| n).sum::<u64>();
    }

    /// Clients waiting.
    pub(crate) fn clients(&self) -> u64 {
        self.clients
    }

    /// Cohorts waiting (distinct (step, state) pairs), exactly when there are more than
    /// `max`; otherwise a number at most `max` (the entries, some perhaps not yet merged).
    pub(crate) fn cohorts_past(&mut self, max: u64) -> u64 {
        if self.due.len() > max {
            self.due.compact_all(merge_sorted);
        }
        self.due.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_step_same_state_merges() {
        let mut cal = CohortCalendar::new(100);
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
        assert_eq!(cal.clients(), 23);
        // Past 3 cohorts the count is exact: the two a's at step 5 are one.
        assert_eq!(cal.cohorts_past(2), 3);
        assert_eq!(cal.next_due(), Some(5));
        let mut out = Vec::new();
        cal.take(5, &mut out);
        merge_sorted(&mut out);
        assert_eq!(out, vec![(a, 15), (b, 1)]);
        assert_eq!(
            (cal.cohorts_past(0), cal.clients(), cal.next_due()),
            (1, 7, Some(9))
        );
    }

    /// A bucket filled with a few states many times over stays about as small as its
    /// distinct states, and keeps every count.
    #[test]
    fn a_full_bucket_merges_its_states() {
        let mut cal = CohortCalendar::new(10);
        let state = |failures| State {
            failures,
            memory: 0,
            first: 0,
        };
        for i in 0..10_000u64 {
            cal.add(7, state((i % 5) as u32), i + 1);
        }
        assert!(
            cal.cohorts_past(u64::MAX) <= 16,
            "{}",
            cal.cohorts_past(u64::MAX)
        );
        assert_eq!(cal.cohorts_past(4), 5);
        let mut out = Vec::new();
        cal.take(7, &mut out);
        merge_sorted(&mut out);
        let want: Vec<_> = (0..5u64)
            .map(|r| {
                let sum = (0..10_000u64).filter(|i| i % 5 == r).map(|i| i + 1).sum();
                (state(r as u32), sum)
            })
            .collect();
        assert_eq!(out, want);
        assert_eq!(cal.clients(), 0);
    }
}
