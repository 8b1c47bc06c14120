//! How a caller follows one run: a flag that asks it to stop, and a callback told how far it
//! has got.
//!
//! The flag is set by whoever started the run (a server whose client left, a wall-clock limit,
//! Ctrl-C) and read by the engine every few thousand events. A run is bounded before it
//! starts (its work estimate); the flag bounds it in wall-clock time too, so that a server can
//! give a slot back as soon as nobody waits for the answer.
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

/// Units of work (attempts, events) between two looks at a watch: a few milliseconds at most.
pub(crate) const LOOK_EVERY: u64 = 1 << 16;

/// What a caller hands a model's run to follow it: a [`Cancel`] flag that stops it, and a
/// callback told the share of the run done so far. Each model has one run method taking a
/// watch ([`Simulation::run`](crate::Simulation::run),
/// [`LatencyModel::run`](crate::latency::LatencyModel::run), …); [`Watch::none`] follows
/// nothing, and the run is the same, bit for bit, whatever watches it.
///
/// # Examples
///
/// ```
/// use herd::RuleName;
/// use herd_sim::{Cancel, Limits, Scenario, Simulation, Watch};
///
/// let sim = Simulation::new(&Scenario::default(), &Limits::default())?;
/// let plain = sim.run(RuleName::Full, 1, Watch::none())?;
///
/// let mut shares = Vec::new();
/// let mut note = |done: f64| shares.push(done);
/// let cancel = Cancel::new();
/// let watched = sim.run(RuleName::Full, 1, Watch::until(&cancel).progress(&mut note))?;
/// assert_eq!(plain, watched);
/// assert_eq!(shares.last(), Some(&1.0));
///
/// cancel.cancel();
/// let err = sim.run(RuleName::Full, 1, Watch::until(&cancel)).unwrap_err();
/// assert!(err.is_cancelled());
/// # Ok::<(), herd_sim::ScenarioError>(())
/// ```
#[derive(Default)]
pub struct Watch<'a> {
    cancel: Option<&'a Cancel>,
    progress: Option<&'a mut dyn FnMut(f64)>,
}

impl std::fmt::Debug for Watch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl<'a> Watch<'a> {
    /// Follows nothing: the run goes to its end.
    #[must_use]
    pub fn none() -> Self {
        Self::default()
    }

    /// Stops the run, with an error for which
    /// [`ScenarioError::is_cancelled`](crate::ScenarioError::is_cancelled) holds, once
    /// `cancel` is set.
    #[must_use]
    pub fn until(cancel: &'a Cancel) -> Self {
        Self {
            cancel: Some(cancel),
            progress: None,
        }
    }

    /// Also calls `progress` now and then with the share of the run done so far (in
    /// `[0, 1]`, never decreasing), and with 1.0 when it ends.
    #[must_use]
    pub fn progress(mut self, progress: &'a mut dyn FnMut(f64)) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Whether the run should stop now.
    pub(crate) fn stopped(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }

    /// An error when the run should stop now.
    pub(crate) fn check(&self) -> Result<(), crate::ScenarioError> {
        if self.stopped() {
            Err(crate::ScenarioError::cancelled())
        } else {
            Ok(())
        }
    }

    /// Tells the caller the share done.
    pub(crate) fn report(&mut self, done: f64) {
        if let Some(progress) = self.progress.as_mut() {
            progress(done);
        }
    }
}
