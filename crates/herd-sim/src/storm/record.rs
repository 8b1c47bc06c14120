//! The records in which waiting clients travel through the calendar.
//!
//! A client's retry state moves with it from bucket to bucket instead of living in
//! per-client arrays: the engine reads each step's clients as a stream, and a client that
//! was served or gave up takes no memory at all. A run uses the smallest record that holds
//! what its rule and scenario need, chosen once per run (the engine is generic over it).
use std::marker::PhantomData;

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

/// Which of a client's two numbers a [`With`] keeps beside its inner record.
pub(crate) trait Kept: Copy {
    /// The client's id (for traces); otherwise the step of its first attempt (for deadlines).
    const ID: bool;
}

/// [`With`] keeps the step of the first attempt.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FirstStep;

impl Kept for FirstStep {
    const ID: bool = false;
}

/// [`With`] keeps the client's id.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClientId;

impl Kept for ClientId {
    const ID: bool = true;
}

/// A record plus one more number, the one `K` names; the other comes from the inner record.
/// Packed, so the inner record is copied out (and back) rather than borrowed.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub(crate) struct With<R, K> {
    inner: R,
    kept: u32,
    which: PhantomData<K>,
}

/// A record plus the step of the first attempt, under a deadline.
pub(crate) type Deadlined<R> = With<R, FirstStep>;

/// A record plus the client's id, for traces.
pub(crate) type Identified<R> = With<R, ClientId>;

impl<R: Record, K: Kept> Record for With<R, K> {
    #[inline]
    fn new(id: u32, first: u32) -> Self {
        Self {
            inner: R::new(id, first),
            kept: if K::ID { id } else { first },
            which: PhantomData,
        }
    }
    #[inline]
    fn id(&self) -> u32 {
        let inner = self.inner;
        if K::ID { self.kept } else { inner.id() }
    }
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
    #[inline]
    fn first(&self) -> u32 {
        let inner = self.inner;
        if K::ID { inner.first() } else { self.kept }
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
