//! A flag that asks a running simulation to stop: set by whoever started it (a server whose
//! client left, a wall-clock limit, shutdown), read by the engine every few thousand events.
//!
//! A run is bounded before it starts (its work estimate); the flag bounds it in wall-clock
//! time too, so that a server can give a slot back as soon as nobody waits for the answer.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared stop flag; clones share it.
///
/// # Examples
///
/// ```
/// use herd_sim::Cancel;
///
/// let cancel = Cancel::new();
/// let seen_by_the_run = cancel.clone();
/// assert!(!seen_by_the_run.is_cancelled());
/// cancel.cancel();
/// assert!(seen_by_the_run.is_cancelled());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag not yet set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every run holding a clone to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was asked for.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A run stopped by its [`Cancel`] before it finished: it has no result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the run was cancelled")
    }
}

impl std::error::Error for Cancelled {}
