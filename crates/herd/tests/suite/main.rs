//! The library's integration tests: one module per area, all in one test binary. Each test
//! binary links the whole dependency tree (tokio, hyper, axum, tonic, reqwest), and
//! `cargo test` runs the binaries one after another, so one binary builds faster and keeps
//! every core busy with the tests of all areas at once. One area:
//! `cargo test -p herd --test suite layer::`. Three stay binaries of their own:
//! tests/no_alloc.rs counts allocations with a global allocator, and tests/loom.rs and
//! tests/loom_throttle.rs run only under `--cfg loom` (.ci/run).
#[path = "../../../herd-sim/tests/support/chance.rs"]
mod chance;
#[path = "../support/mod.rs"]
mod support;

mod async_loop;
mod blocking;
mod concurrency;
mod dropped_probe;
mod error_classes;
mod grpc;
mod hedge;
mod hedge_bodies;
mod idempotency;
mod layer;
mod layer_stacks;
mod observability;
mod readme;
mod reqwest;
mod retry_props;
mod rules_props;
mod shared_budget;
mod stalled_body;
mod throttle;
