//! herd-sim's integration tests: one module per area, all in one test binary. Each test
//! binary links the whole dependency tree, and `cargo test` runs the binaries one after
//! another, so one binary builds faster and keeps every core busy with the tests of all
//! areas at once. One area: `cargo test -p herd-sim --test suite engine::`.
#[path = "../support/graphs.rs"]
mod graphs;
#[path = "../support/metastable.rs"]
mod metastable_scenes;
#[path = "../support/mod.rs"]
mod support;

mod check;
mod check_botocore;
mod check_grpc_go;
mod cohort;
mod cohort_agreement;
mod cohort_power;
mod cohort_throttle;
mod contention;
mod engine;
mod fuzz_scenarios;
mod graph;
mod graph_monte_carlo;
mod graph_throttle;
mod latency;
mod latency_pauses;
mod latency_throttle;
mod layout;
mod metastable;
mod metastable_mitigations;
mod metastable_props;
mod metastable_throttle;
mod noise;
mod partial;
mod pauses;
mod python_latency_reference;
mod python_reference;
mod reference;
mod refusal;
mod storm_figures;
mod sweep;
mod throttle;
mod validation;
