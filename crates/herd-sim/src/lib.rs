//! The retry-storm simulator. See SPEC §4.
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]
#[doc = include_str!("../../../docs/amplify.md")]
pub mod graph;
