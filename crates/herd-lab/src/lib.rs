//! Real HTTP services on loopback for the lab and the interactive page.
//!
//! - [`chain`]: a service graph as real HTTP services (`herd lab chain`).
//! - [`hedge`]: the latency model on real sockets, hedged by herd's own layer (`herd lab
//!   hedge`), measured beside the simulator's prediction.
//! - [`serve`]: the interactive page (`herd serve`): one embedded page and a JSON API whose
//!   every number comes from `herd-sim` and `herd`.
//! - [`storm`]: the storm model on real sockets and timers (`herd lab storm`), measured
//!   beside the simulator's prediction.
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

pub mod chain;
pub mod hedge;
pub mod judge;
pub mod serve;
mod server_thread;
pub mod storm;
mod time_scale;
