//! Reading a storm scenario: parse the text, apply a command line's overrides, and check the
//! result by building its [`Plan`] (where every check lives), so that a bad file is reported
//! with the field and the line. `scenario.rs` holds the types alone; this file builds on them
//! and on the plan.

use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::located::{locate, toml_error};
use crate::storm::plan::Plan;
use crate::storm::scenario::Scenario;

impl Scenario {
    /// Parses a scenario file, applies `edit` (a command line's overrides; `|_| {}` for
    /// none), then checks the result against `limits` ([`Limits::default`], the machine's;
    /// [`Limits::interactive`], a web page's). An override can make a file valid (`pauses`
    /// continuous for times that are not whole steps), and an error still names the field's
    /// line, also for a scenario too large for `limits`. This is the one way a storm scenario
    /// is read from text.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field (and the line) for a TOML syntax error, an unknown
    /// field, a value of the wrong type, or a value out of range, contradicting another or
    /// too large for `limits`.
    ///
    /// # Examples
    ///
    /// ```
    /// use herd_sim::{Limits, Pauses, Scenario};
    ///
    /// let text = "[retry]\nbase_ms = 150\n"; // not a whole number of 100 ms steps
    /// assert!(Scenario::from_toml_str(text, &Limits::default(), |_| {}).is_err());
    /// let s = Scenario::from_toml_str(text, &Limits::default(), |s| {
    ///     s.pauses = Pauses::Continuous;
    /// })?;
    /// assert_eq!(s.retry.base_ms, 150.0);
    ///
    /// let text = "[clients]\ncount = 1000000\n";
    /// let err = Scenario::from_toml_str(text, &Limits::interactive(), |_| {}).unwrap_err();
    /// assert!(err.is_at(Scenario::CLIENTS_COUNT));
    /// assert_eq!(err.line(), Some(2));
    /// # Ok::<(), herd_sim::ScenarioError>(())
    /// ```
    pub fn from_toml_str(
        text: &str,
        limits: &Limits,
        edit: impl FnOnce(&mut Scenario),
    ) -> Result<Self, ScenarioError> {
        let mut scenario: Scenario = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        edit(&mut scenario);
        scenario.validate(limits).map_err(|e| locate(text, e))?;
        Ok(scenario)
    }

    /// Checks every value, and that a run fits in `limits`.
    ///
    /// # Errors
    ///
    /// The first problem found, naming the field.
    pub fn validate(&self, limits: &Limits) -> Result<(), ScenarioError> {
        Plan::new(self, limits).map(|_| ())
    }

    /// Total clients over a run: the burst plus the open-loop arrivals before the horizon.
    ///
    /// Meaningful for a valid scenario; see [`Scenario::validate`].
    #[must_use]
    pub fn total_clients(&self) -> u64 {
        match Plan::new(self, &Limits::unlimited()) {
            Ok(plan) => plan.total_clients(),
            Err(_) => self.clients.count,
        }
    }
}
