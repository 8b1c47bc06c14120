//! Real HTTP services on loopback for the lab and the interactive page.
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

pub mod chain;
