//! The records in which waiting clients travel through the calendar.
//!
//! A client's retry state moves with it from bucket to bucket instead of living in
//! per-client arrays: the engine reads each step's clients as a stream, and a client that
//! was served or gave up takes no memory at all. A run uses the smallest record that holds
//! what its rule and scenario need, chosen once per run (the engine is generic over it).
use herd::RuleState;

/// A waiting client as the calendar holds it: its retry state travels with it, so a served
/// or given-up client takes no memory and a knocking one is read as a stream. Records are
/// as small as the run allows: 4 bytes (the failure count) for rules without memory, 12 with
/// the memory word, plus 4 for the first step under a deadline and 4 for the id when tracing.
pub(crate) trait Record: Copy {
    /// A client making its first attempt at step `first`.
    fn new(id: u32, first: u32) -> Self;
    /// The client's id (only traced records know it; others say 0).
    fn id(&self) -> u32;
    fn state(&self) -> RuleState;
    fn set_state(&mut self, state: RuleState);
    /// The step of the first attempt (only records kept under a deadline know it).
    fn first(&self) -> u32;
}

/// The failure count alone, for rules without memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain {
    failures: u32,
}

impl Record for Plain {
    #[inline]
    fn new(_: u32, _: u32) -> Self {
        Self { failures: 0 }
    }
    #[inline]
    fn id(&self) -> u32 {
        0
    }
    #[inline]
    fn state(&self) -> RuleState {
        RuleState::from_parts(self.failures, 0)
    }
    #[inline]
    fn set_state(&mut self, state: RuleState) {
        self.failures = state.failures();
    }
    #[inline]
    fn first(&self) -> u32 {
        0
    }
}

/// With the rule's memory word (`decorrelated`, `grpc`, `decorrelated-v2`), packed to 12 bytes.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub(crate) struct Remembering {
    failures: u32,
    memory: u64,
}

impl Record for Remembering {
    #[inline]
    fn new(_: u32, _: u32) -> Self {
        Self {
            failures: 0,
            memory: 0,
        }
    }
    #[inline]
    fn id(&self) -> u32 {
        0
    }
    #[inline]
    fn state(&self) -> RuleState {
        RuleState::from_parts(self.failures, self.memory)
    }
    #[inline]
    fn set_state(&mut self, state: RuleState) {
        self.failures = state.failures();
        self.memory = state.memory();
    }
    #[inline]
    fn first(&self) -> u32 {
        0
    }
}

/// `state` and `set_state` for a wrapper whose rule state is its `inner` record's. The
/// wrappers are packed, so the inner record is copied out (and back) rather than borrowed.
macro_rules! rule_state_in_inner {
    () => {
        #[inline]
        fn state(&self) -> RuleState {
            let inner = self.inner;
            inner.state()
        }
        #[inline]
        fn set_state(&mut self, state: RuleState) {
            let mut inner = self.inner;
            inner.set_state(state);
            self.inner = inner;
        }
    };
}

/// A record plus the step of the first attempt, under a deadline.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub(crate) struct Deadlined<R> {
    inner: R,
    first: u32,
}

impl<R: Record> Record for Deadlined<R> {
    #[inline]
    fn new(id: u32, first: u32) -> Self {
        Self {
            inner: R::new(id, first),
            first,
        }
    }
    #[inline]
    fn id(&self) -> u32 {
        let inner = self.inner;
        inner.id()
    }
    rule_state_in_inner!();
    #[inline]
    fn first(&self) -> u32 {
        self.first
    }
}

/// A record plus the client's id, for traces.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub(crate) struct Identified<R> {
    inner: R,
    id: u32,
}

impl<R: Record> Record for Identified<R> {
    #[inline]
    fn new(id: u32, first: u32) -> Self {
        Self {
            inner: R::new(id, first),
            id,
        }
    }
    #[inline]
    fn id(&self) -> u32 {
        self.id
    }
    rule_state_in_inner!();
    #[inline]
    fn first(&self) -> u32 {
        let inner = self.inner;
        inner.first()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_as_small_as_promised() {
        use std::mem::size_of;
        assert_eq!(size_of::<Plain>(), 4);
        assert_eq!(size_of::<Remembering>(), 12);
        assert_eq!(size_of::<Deadlined<Remembering>>(), 16);
        assert_eq!(size_of::<Identified<Deadlined<Remembering>>>(), 20);
    }

    #[test]
    fn state_round_trips_through_every_record() {
        fn check<R: Record>() {
            let mut r = R::new(7, 3);
            r.set_state(RuleState::from_parts(5, 99));
            assert_eq!(r.state().failures(), 5);
        }
        check::<Plain>();
        check::<Remembering>();
        check::<Deadlined<Plain>>();
        check::<Identified<Deadlined<Remembering>>>();
        let r = Identified::<Deadlined<Remembering>>::new(7, 3);
        assert_eq!((r.id(), r.first()), (7, 3));
        assert_eq!(Remembering::new(0, 0).state().memory(), 0);
    }
}
