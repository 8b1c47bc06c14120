//! # herd-sim — what a retry rule does to a recovering server
//!
//! The retry-storm simulator of `docs/model.md`: clients, a server with outages, a work budget per
//! window, refusals that cost work, collapse, warm-up, `Retry-After`, timeouts, give-ups and
//! retry budgets. Every pause is drawn by [`herd::Rule::pause`], the very code a production
//! client runs, and every random draw comes from one [`herd::rng::SplitMix64`] seeded by the
//! run's seed, so a run is reproducible bit for bit on any machine.
//!
//! The engine tracks every client exactly and costs O(attempts + steps): waiting clients sit
//! in a calendar keyed by the step at which they next knock, carrying their retry state with
//! them (4 bytes for rules without memory, 12 with it), and time jumps over empty steps.
//! `docs/model.md` defines the order of events within a step, the server's accounting and
//! every rounding; `docs/storm.md` shows how to run it.
//!
//! A second engine, [`cohort`] ([`Engine::Cohort`]), runs the same model with clients that
//! share a state moved as one count, so its cost does not grow with the number of clients
//! (10^9 in milliseconds); it is exact in distribution rather than draw for draw.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::{Limits, Scenario, Simulation, Watch};
//!
//! // The default storm scenario (docs/model.md): 2000 clients, an outage over the first 10 s.
//! let sim = Simulation::new(&Scenario::default(), &Limits::default())?;
//! let result = sim.run(RuleName::Immediate, 1, Watch::none())?;
//! assert_eq!(result.half_served_s, Some(12.0));
//! assert_eq!(result.all_served_s, Some(13.9));
//! assert_eq!(result.requests_per_client, 120.5);
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

mod budget;
pub mod check;
pub mod contention;
mod error;
mod fields;
pub mod figure;
pub mod latency;
mod limits;
mod located;
pub mod metastable;
pub mod model;
mod near_mode;
pub mod partial;
pub mod refusal;
pub mod registry;
mod rule_serde;
mod sample;
pub mod storm;
pub mod sweep;
mod throttle;
#[cfg(feature = "toy-model")]
mod toy;
mod watch;
mod ziggurat;

/// The [`Model`](model::Model) methods that a model keeping its checked scenario writes the
/// same way: `check` reads `$scenario` from the tree (no keys of its own) and builds it with
/// `$model::new`, `sweepable` writes the scenario back, and `rules` and `seed` are the
/// scenario's.
macro_rules! model_of_scenario {
    ($model:ident, $scenario:ty) => {
        fn check(
            tree: &toml::Value,
            limits: &$crate::limits::Limits,
        ) -> Result<Self, $crate::error::ScenarioError> {
            let scenario: $scenario = $crate::model::from_tree(tree, &[])?;
            $model::new(&scenario, limits)
        }

        fn sweepable(&self) -> Result<toml::Value, $crate::error::ScenarioError> {
            // A throttle's settings all written out, so that a sweep can set any of them.
            $crate::throttle::fill_tree($crate::model::to_tree(self.scenario(), Self::NAME)?)
        }

        fn rules(&self) -> Vec<herd::RuleName> {
            $model::rules(self)
        }

        fn seed(&self) -> u64 {
            self.scenario().seed
        }
    };
}
pub(crate) use model_of_scenario;

/// The [`Model`](model::Model) methods of a model that compares named variants of its own
/// (the latency model's policies, the partial-failure model's strategies), not retry rules:
/// `check` reads `$scenario` and builds it with `$new(&scenario, limits)`, `sweepable` writes
/// the scenario back, `rules` is empty, and `variants` are the names `self.$names()` lists.
macro_rules! model_of_named_variants {
    ($new:path, $scenario:ty, $names:ident) => {
        fn check(
            tree: &toml::Value,
            limits: &$crate::limits::Limits,
        ) -> Result<Self, $crate::error::ScenarioError> {
            let scenario: $scenario = $crate::model::from_tree(tree, &[])?;
            $new(&scenario, limits)
        }

        fn sweepable(&self) -> Result<toml::Value, $crate::error::ScenarioError> {
            $crate::model::to_tree(self.scenario(), Self::NAME)
        }

        /// None: the model compares variants of its own, see [`Model::variants`].
        fn rules(&self) -> Vec<herd::RuleName> {
            Vec::new()
        }

        fn seed(&self) -> u64 {
            self.scenario().seed
        }

        fn variants(&self) -> Vec<$crate::model::Variant> {
            self.$names()
                .into_iter()
                .map(|name| $crate::model::Variant::Named(name.to_owned()))
                .collect()
        }
    };
}
pub(crate) use model_of_named_variants;

/// The storm guide, `docs/storm.md`: every choice the model leaves open (compiled and tested
/// with the crate's docs).
#[doc = include_str!("../../../docs/storm.md")]
pub mod guide {}

pub use error::{Field, ScenarioError, shorten_values};
pub use limits::Limits;
pub use storm::cohort;
pub use storm::{
    Clients, Engine, GiveUp, Latency, LatencyDistribution, MAX_TRACE_CLIENTS, MAX_TRACE_EVENTS,
    Outcome, Pauses, Retry, RunResult, Scenario, Series, Server, Simulation, Timetable, Trace,
    TraceEvent,
};
pub use throttle::{KINDS as THROTTLE_KINDS, ThrottleTable};
pub use watch::{Cancel, Watch};

#[doc = include_str!("../../../docs/amplify.md")]
pub mod graph;
