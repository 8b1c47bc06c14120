//! # herd — retries that break up the thundering herd
//!
//! When a server stumbles, every client that saw an error comes back. If they all come back
//! at the same moment, a recovering server meets the whole herd at once and stumbles again.
//! herd gives a client the pieces to come back *well*:
//!
//! - [`rule`]: when to retry. Exponential backoff with full, equal and decorrelated jitter,
//!   gRPC's and Polly's rules, validated at construction, never overflowing.
//! - [`rng`]: a documented, portable generator so a seeded schedule is the same everywhere
//!   (the storm simulator draws its pauses with exactly this code).
//!
//! The core has no runtime dependencies: no tokio, no clock, no global RNG.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, rng::SplitMix64};
//!
//! let rule = Rule::equal(Duration::from_millis(100), Duration::from_secs(20))?;
//! let pauses: Vec<Duration> = rule.schedule(SplitMix64::new(7)).take(3).collect();
//! // equal jitter keeps at least half of the exponential pause
//! assert!(pauses[2] >= Duration::from_millis(200) && pauses[2] <= Duration::from_millis(400));
//! # Ok::<(), herd::InvalidRule>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

pub mod asynchronous;
pub mod blocking;
pub mod breaker;
pub mod budget;
pub mod call;
pub mod classify;
pub mod clock;
pub mod idempotency;
#[cfg(feature = "tower")]
pub mod layer;
pub mod outcome;
pub mod policy;
pub mod retry_after;
pub mod rng;
pub mod rule;

/// Emits a `tracing` event for a retry (feature `tracing`).
#[doc(hidden)]
#[macro_export]
macro_rules! event_retry {
    ($attempt:expr, $pause:expr, $server_delay:expr) => {{
        #[cfg(feature = "tracing")]
        ::tracing::debug!(
            target: "herd",
            attempt = $attempt,
            pause_ms = $pause.as_secs_f64() * 1000.0,
            server_delay = $server_delay,
            "retrying"
        );
    }};
}

/// Emits a `tracing` event when a call gives up (feature `tracing`).
#[doc(hidden)]
#[macro_export]
macro_rules! event_give_up {
    ($attempts:expr, $elapsed:expr, $reason:expr) => {{
        #[cfg(feature = "tracing")]
        ::tracing::info!(
            target: "herd",
            attempts = $attempts,
            elapsed_ms = $elapsed.as_secs_f64() * 1000.0,
            reason = $reason.as_str(),
            "gave up"
        );
    }};
}

pub use outcome::{RetryError, StopReason, Success};
pub use policy::RetryPolicy;
pub use rule::{InvalidRule, Rule, RuleName, RuleParams, RuleState, Schedule};
