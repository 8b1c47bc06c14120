//! herd-lab's integration tests: one module per area, all in one test binary. Each test
//! binary links the whole dependency tree, and `cargo test` runs the binaries one after
//! another, so one binary builds faster and keeps every core busy with the tests of all
//! areas at once. One area: `cargo test -p herd-lab --test suite serve_api::`.
#[path = "../../../herd-sim/tests/support/chance.rs"]
mod chance;
#[path = "../../../herd-sim/tests/support/graphs.rs"]
mod graphs;
#[path = "../support/mod.rs"]
mod support;

mod chain;
mod chain_random;
mod e2e_browser;
mod lab_storm;
mod serve_api;
mod serve_check;
mod serve_hygiene;
mod serve_limits;
mod serve_models;
mod serve_whatif;
