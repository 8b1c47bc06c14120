//! The records in which waiting clients travel through the calendar.
//!
//! A client's retry state moves with it from bucket to bucket instead of living in
//! per-client arrays: the engine reads each step's clients as a stream, and a client that
//! was served or gave up takes no memory at all. A run uses the smallest record that holds
//! what its rule and scenario need, chosen once per run (the engine is generic over it).
use std::marker::PhantomData;

use herd::rng::SplitMix64;
use herd::{Rule, RuleName, RuleState};

/// A waiting client as the calendar holds it: its retry state travels with it, so a served
/// or given-up client takes no memory and a knocking one is read as a stream. Records are
/// as small as the run allows: 4 bytes (the failure count) for rules without memory or
/// whose memory the engine replays from the count, or count and word in 16 bits each, 8 with
/// a memory word below 2^32, 12 with a whole word, plus 4 for the first step under a deadline and 4 for the id when tracing.
pub(crate) trait Record: Copy + Default {
    /// A client making its first attempt at step `first`: the fresh state, with the id or
    /// the step when the record keeps them (a bare record keeps neither: its default).
    #[inline]
    fn new(_id: u32, _first: u32) -> Self {
        Self::default()
    }
    /// The client's id (only traced records know it; others say 0).
    #[inline]
    fn id(&self) -> u32 {
        0
    }
    fn state(&self) -> RuleState;
    fn set_state(&mut self, state: RuleState);
    /// The step of the first attempt (only records kept under a deadline know it; others
    /// say 0).
    #[inline]
    fn first(&self) -> u32 {
        0
    }
}

/// The failure count alone, for rules without memory.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Plain {
    failures: u32,
}

impl Record for Plain {
    #[inline]
    fn state(&self) -> RuleState {
        RuleState::from_parts(self.failures, 0)
    }
    #[inline]
    fn set_state(&mut self, state: RuleState) {
        self.failures = state.failures();
    }
}

/// With the rule's memory word (`decorrelated`, `grpc`, `decorrelated-v2`), packed to 12 bytes.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, packed(4))]
pub(crate) struct Remembering {
    failures: u32,
    memory: u64,
}

impl Record for Remembering {
    #[inline]
    fn state(&self) -> RuleState {
        RuleState::from_parts(self.failures, self.memory)
    }
    #[inline]
    fn set_state(&mut self, state: RuleState) {
        self.failures = state.failures();
        self.memory = state.memory();
    }
}

/// With the rule's memory word in 32 bits, 8 bytes in all: for the rules whose word is at
/// most their longest pause (`decorrelated`'s previous pause, `grpc`'s current backoff) when
/// that is below 2^32 (`decorrelated` in whole steps). A smaller record is fewer bytes
/// written to the calendar per attempt, and fewer bytes copied and faulted in as its
/// buckets grow: the most of such a storm's time.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Narrow {
    failures: u32,
    memory: u32,
}

impl Record for Narrow {
    #[inline]
    fn state(&self) -> RuleState {
        RuleState::from_parts(self.failures, u64::from(self.memory))
    }
    #[inline]
    fn set_state(&mut self, state: RuleState) {
        self.failures = state.failures();
        // The engine picks this record only for words below 2^32 (`Layout::of`).
        debug_assert!(u32::try_from(state.memory()).is_ok());
        self.memory = state.memory() as u32;
    }
}

/// The failure count and the memory word in 16 bits each, 4 bytes in all, like [`Plain`]:
/// for [`Narrow`]'s rules when their longest pause is below 2^16 (`decorrelated` in whole
/// steps, the default scenario's 200) and the run gives up after at most 2^16 − 1
/// attempts or never. The count saturates at 2^16 − 1, which changes nothing such a run
/// reads from it: the rules ask only whether it is 0, the throttle too, and a limit of
/// attempts at most 2^16 − 1 is reached at that count already.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Short {
    failures: u16,
    memory: u16,
}

impl Short {
    /// The largest word and the largest limit of attempts it serves.
    pub(crate) const MOST: u64 = u16::MAX as u64;
}

impl Record for Short {
    #[inline]
    fn state(&self) -> RuleState {
        RuleState::from_parts(u32::from(self.failures), u64::from(self.memory))
    }
    #[inline]
    fn set_state(&mut self, state: RuleState) {
        self.failures = u16::try_from(state.failures()).unwrap_or(u16::MAX);
        // The engine picks this record only for words below 2^16 (`Layout::of`).
        debug_assert!(u16::try_from(state.memory()).is_ok());
        self.memory = state.memory() as u16;
    }
}

/// Which of a client's two numbers a [`With`] keeps beside its inner record.
pub(crate) trait Kept: Copy + Default {
    /// The client's id (for traces); otherwise the step of its first attempt (for deadlines).
    const ID: bool;
}

/// [`With`] keeps the step of the first attempt.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FirstStep;

impl Kept for FirstStep {
    const ID: bool = false;
}

/// [`With`] keeps the client's id.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ClientId;

impl Kept for ClientId {
    const ID: bool = true;
}

/// A record plus one more number, the one `K` names; the other comes from the inner record.
/// Packed, so the inner record is copied out (and back) rather than borrowed.
#[derive(Clone, Copy, Debug, Default)]
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

/// Where a client's retry state comes from: its record alone ([`InRecord`]), or its failure
/// count and a table of the memory word per count ([`Replayed`]). The engine is generic over
/// it, so a run whose record holds everything pays nothing for the table.
pub(crate) trait Memory {
    /// The state of `client` before its next failure.
    fn state<R: Record>(&self, client: &R) -> RuleState;
}

/// The record holds the whole state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InRecord;

impl Memory for InRecord {
    #[inline(always)]
    fn state<R: Record>(&self, client: &R) -> RuleState {
        client.state()
    }
}

/// The memory word as a function of the failure count, for a rule whose word does not depend
/// on its draws: `grpc`'s current backoff is `min(cap, base · multiplier^k)` as the rule's
/// own arithmetic rounds it, the same for every client after `k` failures. Such a client
/// travels as its failure count alone ([`Plain`], 4 bytes instead of 12).
#[derive(Clone, Debug)]
pub(crate) struct Replayed {
    /// `words[k]`: the word after `k` failures (`words[0]` is the fresh state's 0). The last
    /// entry is a fixed point of the rule's update, the word for every larger count.
    words: Vec<u64>,
}

impl Replayed {
    /// The longest table built; a rule still changing its word after as many failures
    /// keeps the word in its record.
    const MOST: usize = 4096;

    /// The table of `rule`, when its word is a function of the failure count alone and
    /// settles within [`Replayed::MOST`] failures.
    pub(crate) fn of(rule: &Rule) -> Option<Self> {
        // The only rule whose word ignores its draws (the word is set before the draw is
        // used, from the previous word alone); `grpc_words_ignore_draws` below checks it.
        if rule.name() != RuleName::Grpc {
            return None;
        }
        let mut state = RuleState::default();
        let mut rng = SplitMix64::new(0);
        let mut words = vec![0];
        while words.len() < Self::MOST {
            let _ = rule.pause_nanos(&mut state, &mut rng);
            let word = state.memory();
            // From the first failure on, the next word is a function of this one: once
            // it repeats, it stays.
            let settled = words.len() >= 2 && words.last() == Some(&word);
            if settled {
                return Some(Self { words });
            }
            words.push(word);
        }
        None
    }
}

impl Replayed {
    /// The word after each failure count; the last is the word for every larger count.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }
}

impl Memory for &Replayed {
    #[inline(always)]
    fn state<R: Record>(&self, client: &R) -> RuleState {
        let failures = client.state().failures();
        // The last word serves every larger count. Looked up without a path that panics,
        // so that the lookup costs nothing when the pauser never reads the word
        // (`GrpcSteps`): a bounds check would stay even then.
        let word = match self.words.get(failures as usize) {
            Some(&word) => word,
            None => self.words.last().copied().unwrap_or_default(),
        };
        RuleState::from_parts(failures, word)
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
        assert_eq!(size_of::<Narrow>(), 8);
        assert_eq!(size_of::<Short>(), 4);
        assert_eq!(size_of::<Deadlined<Narrow>>(), 12);
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
        check::<Narrow>();
        check::<Short>();
        check::<Deadlined<Plain>>();
        check::<Identified<Deadlined<Remembering>>>();
        let r = Identified::<Deadlined<Remembering>>::new(7, 3);
        assert_eq!((r.id(), r.first()), (7, 3));
        assert_eq!(Remembering::new(0, 0).state().memory(), 0);
        let mut narrow = Narrow::new(0, 0);
        narrow.set_state(RuleState::from_parts(2, u64::from(u32::MAX)));
        assert_eq!(narrow.state().memory(), u64::from(u32::MAX));
        let mut short = Short::new(0, 0);
        short.set_state(RuleState::from_parts(70_000, Short::MOST));
        assert_eq!(short.state(), RuleState::from_parts(65_535, Short::MOST));
    }

    #[test]
    fn grpc_words_ignore_draws_and_replay_exactly() {
        use herd::rng::Rng;
        use std::time::Duration;
        let rules = [
            Rule::grpc(Duration::from_secs(1), 1.6, 0.2, Duration::from_secs(120)).unwrap(),
            Rule::grpc(Duration::from_nanos(1), 1.0, 0.5, Duration::from_nanos(1)).unwrap(),
            Rule::grpc(Duration::from_nanos(3), 1.01, 1.0, Duration::from_secs(5))
                .unwrap()
                .spread_below_cap(0.5)
                .unwrap(),
        ];
        for rule in rules {
            let table = Replayed::of(&rule).expect("grpc's word settles");
            // Two generators, different draws: the same words, and the table's.
            let (mut a, mut b) = (RuleState::default(), RuleState::default());
            let (mut ra, mut rb) = (SplitMix64::new(1), SplitMix64::new(2));
            let mut plain = Plain::new(0, 0);
            for _ in 0..2000 {
                assert_eq!((&table).state(&plain), a);
                let _ = rule.pause_nanos(&mut a, &mut ra);
                let _ = rule.pause_nanos(&mut b, &mut rb);
                let _ = rb.next_u64();
                assert_eq!(a, b);
                plain.set_state(a);
            }
        }
        let full = Rule::full(Duration::from_secs(1), Duration::from_secs(2)).unwrap();
        assert!(Replayed::of(&full).is_none());
        // A word that grows for longer than the table is kept in the record.
        let slow = Rule::grpc(
            Duration::from_millis(1),
            1.001,
            0.2,
            Duration::from_secs(100),
        );
        assert!(Replayed::of(&slow.unwrap()).is_none());
    }
}
