//! # herd-sim — what retries do to the systems they call
//!
//! The simulation models behind the `herd` command and the page, and the checker of real
//! retry configurations. Every pause is drawn by [`herd::Rule::pause`], the very code a
//! production client runs, and every random draw comes from one [`herd::rng::SplitMix64`]
//! seeded by the run's seed, so a run is reproducible bit for bit on any machine. Each run is
//! bounded before it starts: a scenario is checked against [`Limits`] and refused, naming the
//! field, when it would take too long or too much memory.
//!
//! # One model interface
//!
//! Every model implements [`model::Model`]: it checks a scenario tree (TOML), lists what a
//! sweep may vary, names the variants it compares (retry rules, or policies of its own), runs
//! one variant with one seed and reports a comparison. [`registry::MODELS`] lists them, and
//! `herd storm`, [`sweep`] and the page reach every model through it, never by its name.
//!
//! # The models
//!
//! | module | the model | `model =` |
//! |---|---|---|
//! | [`storm`] | the retry storm (`docs/model.md`): clients that fail together, a server with outages, a work budget per window, refusals that cost work, `Retry-After`, give-ups and retry budgets; an agent engine that follows every client and a [`cohort`] engine ([`Engine::Cohort`]) that moves clients in counts | `storm` (the default) |
//! | [`metastable`] | a server that stays overloaded after the trigger is gone, kept there by its retries (Bronson et al. 2021) | `metastable` |
//! | [`contention`] | N clients each updating one row once with optimistic concurrency, retrying their conflicts (Brooker 2015) | `contention` |
//! | [`latency`] | request latency with hedging policies (the `herd hedge` model) | `latency` |
//! | [`partial`] | a server that fails a fixed share of attempts whatever its load, and retry strategies (token buckets, breakers) that turn it into more or less extra work (Brooker 2022) | `partial-failure` |
//! | [`graph`] | a service graph's retry amplification, exact and by Monte Carlo (`herd amplify`; a graph file, not a scenario model) | |
//!
//! A `toy` model (feature `toy-model`) is the smallest model, for the interface's tests.
//!
//! # The checker
//!
//! [`check`] reads real retry configurations (a gRPC service config, Envoy and Istio routes,
//! Linkerd, AWS shared config, Resilience4j) as their owners' code defines them, translates
//! each policy into herd's terms, reports findings with the file, line and fix, and runs the
//! translated policies in a storm (`herd check`).
//!
//! # Where to start reading
//!
//! - `model/mod.rs` for the interface, then `registry.rs` for the list of models.
//! - `storm/mod.rs` for the reference model: `scenario.rs` (the file's types), `read.rs`
//!   (reading and checking one), `plan.rs` (the checked scenario in steps), `engine.rs` (the
//!   agent engine) and `metrics.rs` (what a run reports).
//! - `docs/architecture.md` for how the crates fit together and how to add a model;
//!   `docs/model.md` for every model's definition and metrics.
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
