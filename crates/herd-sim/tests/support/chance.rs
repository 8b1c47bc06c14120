//! How the statistical and property tests choose their seeds, in every crate (herd-lab and
//! herd include this file by its path): fixed, so that a run is reproducible and CI never
//! fails by chance; `HERD_TEST_SEED=<n>` moves every seed to explore others (`tools/stat-seeds`
//! runs twenty). Proptest's own `PROPTEST_RNG_SEED` still wins for the property tests, and no
//! test writes a regression file: a failure prints its seed and its shrunk case, which then
//! becomes a named regression test.
#![allow(dead_code)] // each test binary uses its own share of these

use proptest::test_runner::{Config, RngSeed};

/// The property tests' generator seed when `HERD_TEST_SEED` is not set.
const PROPTEST_SEED: u64 = 0x6865_7264; // "herd"

/// `HERD_TEST_SEED`, or 0.
pub fn offset() -> u64 {
    std::env::var("HERD_TEST_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// A test's seed `s`, moved by `HERD_TEST_SEED` in steps of 10⁷, so that the seed ranges a
/// test keeps apart (below 10⁷) stay apart.
pub fn seed(s: u64) -> u64 {
    s.wrapping_add(offset().wrapping_mul(10_000_000))
}

/// A proptest configuration with `cases` cases, a fixed generator seed (moved by
/// `HERD_TEST_SEED`, or `PROPTEST_RNG_SEED` when set) and no regression files.
pub fn proptest_config(cases: u32) -> Config {
    let mut config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(PROPTEST_SEED.wrapping_add(offset()));
    }
    config
}
