//! Real HTTP services on loopback for the lab and the interactive page.
//!
//! - [`chain`]: a service graph as real HTTP services (`herd lab chain`).
//! - [`serve`]: the interactive page (`herd serve`): one embedded page and a JSON API whose
//!   every number comes from `herd-sim` and `herd`.
//! - [`storm`]: the storm model on real sockets and timers (`herd lab storm`), measured
//!   beside the simulator's prediction.
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

pub mod chain;
pub mod serve;
pub mod storm;
