//! The `herd` command's integration tests: one module per area, all in one test binary.
//! Each test binary links the whole dependency tree, and `cargo test` runs the binaries one
//! after another, so one binary builds faster and keeps every core busy with the tests of all
//! areas at once (most of them wait on a `herd` process). One area:
//! `cargo test -p herd-cli --test suite sweep::`. tests/toy_model.rs stays a binary of its
//! own: it needs the `toy-model` feature.
#[path = "../support/mod.rs"]
mod support;

mod amplify;
mod amplify_random;
mod check;
mod check_sarif;
mod check_whatif;
mod check_whatif_corpus;
mod conformance;
mod contention;
mod conventions;
mod doc_figures;
mod go_port;
mod hedge;
mod hostile_input;
mod json_fields;
mod lab_hedge;
mod lab_storm_limits;
mod metastable;
mod partial_failure;
mod python_port;
mod rules;
mod serve_and_lab_storm;
mod storm;
mod storm_cohort;
mod storm_throttle;
mod sweep;
