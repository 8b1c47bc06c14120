//! Slots for the event loop's calls and attempts, recycled once settled, so that a run's
//! memory follows the calls in flight and not the run's length.
//!
//! An event names its call or attempt by an [`Id`]: the slot and the life of it the event
//! was scheduled in. A slot released and taken again begins a new life, so an event left
//! over from an earlier one (a per-try timeout of an attempt long answered) is told apart
//! and dropped, as the loop dropped it when every slot was new.

/// A call's or attempt's slot, and which of its lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Id {
    pub(crate) slot: u32,
    life: u32,
}

/// Slots of `T`, each taken, used, released, and taken again.
pub(crate) struct Slots<T> {
    /// Each slot's life and what it holds.
    items: Vec<(u32, T)>,
    /// Slots free to take.
    free: Vec<u32>,
    /// Slots released in this event, free from the next ([`Slots::recycle`]).
    released: Vec<u32>,
}

impl<T> Slots<T> {
    pub(crate) fn new() -> Self {
        Self {
            items: Vec::new(),
            free: Vec::new(),
            released: Vec::new(),
        }
    }

    /// Puts `item` in a free slot, or a new one; `None` past 2³² slots at once.
    pub(crate) fn take(&mut self, item: T) -> Option<Id> {
        if let Some(slot) = self.free.pop() {
            let entry = &mut self.items[slot as usize];
            entry.1 = item;
            return Some(Id {
                slot,
                life: entry.0,
            });
        }
        let slot = u32::try_from(self.items.len()).ok()?;
        self.items.push((0, item));
        Some(Id { slot, life: 0 })
    }

    /// The present life of `slot`.
    pub(crate) fn id(&self, slot: u32) -> Id {
        Id {
            slot,
            life: self.items[slot as usize].0,
        }
    }

    /// Whether `id`'s life is the slot's present one.
    pub(crate) fn holds(&self, id: Id) -> bool {
        self.items[id.slot as usize].0 == id.life
    }

    /// `slot` is settled: free once the present event is over (until then its holder may
    /// still be read).
    pub(crate) fn release(&mut self, slot: u32) {
        debug_assert!(!self.released.contains(&slot), "slot {slot} released twice");
        self.released.push(slot);
    }

    /// Frees the slots released in the event just over, each to a new life.
    pub(crate) fn recycle(&mut self) {
        for slot in self.released.drain(..) {
            let entry = &mut self.items[slot as usize];
            entry.0 = entry.0.wrapping_add(1);
            self.free.push(slot);
        }
    }

    /// The most slots held at once.
    pub(crate) fn high_water(&self) -> usize {
        self.items.len()
    }
}

impl<T> std::ops::Index<u32> for Slots<T> {
    type Output = T;

    fn index(&self, slot: u32) -> &T {
        &self.items[slot as usize].1
    }
}

impl<T> std::ops::IndexMut<u32> for Slots<T> {
    fn index_mut(&mut self, slot: u32) -> &mut T {
        &mut self.items[slot as usize].1
    }
}
