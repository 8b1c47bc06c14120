#![doc = include_str!("../README.md")]
//! # How herd is built
//!
//! When a server stumbles, every client that saw an error comes back. If they all come back
//! at the same moment, a recovering server meets the whole herd at once and stumbles again.
//! herd gives a client the pieces to come back *well*, split the way tower splits them:
//! **decide** (whether to retry), **schedule** (when), **wrap** (the loop around a call).
//!
//! Schedule:
//! - [`rule`]: exponential backoff with full, equal and decorrelated jitter, gRPC's and
//!   Polly's rules, validated at construction, never overflowing.
//! - [`rng`]: a documented, portable generator so a seeded schedule is the same everywhere
//!   (the storm simulator draws its pauses with exactly this code).
//!
//! Decide:
//! - [`policy`]: the attempt limit, one total deadline over attempts *and* pauses, server
//!   delays, idempotency; one state machine every loop drives.
//! - [`classify`]: which errors are transient (HTTP statuses, `io::ErrorKind`, your closure).
//! - [`retry_after`]: `Retry-After` in both RFC 9110 forms and gRPC pushback, never panicking.
//! - [`server_delay`]: what a server delay leads to (a wait never earlier than asked, or a
//!   stop), one pure function shared with the simulator.
//! - [`budget`]: retry budgets shared by many calls (ratio form and gRPC throttling), exact
//!   under contention.
//! - [`throttle`]: the throttles and budgets real systems ship, each as its owner defines
//!   it: Google SRE adaptive throttling, the AWS SDKs' retry quota and adaptive rate limiter,
//!   Envoy's retry budget, `max_retries` and admission control, Linkerd's budget.
//! - [`breaker`]: a circuit breaker with a sliding window and jittered cool-down, whose
//!   outcomes are tied to the permits they were admitted under.
//! - [`idempotency`]: one OS-seeded key per logical call; non-idempotent calls retried only
//!   when the error proves the request was not processed, or the server deduplicates.
//! - [`clock`]: injected time, with a fake clock whose clones share time.
//!
//! Wrap:
//! - [`call`] and [`blocking`]: the blocking loop; [`asynchronous`]: the async loop (tokio
//!   behind the default `tokio` feature, any runtime through a small `Sleeper` trait).
//! - `layer` (feature `tower`): a tower layer for HTTP and gRPC clients (bodies that are not
//!   `Clone`, your classifier, hooks, gRPC trailers), and herd as a `tower::retry::Policy`.
//! - `middleware` (feature `reqwest`): the same for `reqwest-middleware` clients.
//! - [`outcome`]: the value and attempts, or the last error, attempts, time and
//!   [`StopReason`]; hooks on each retry and on giving up.
//!
//! Guides: [choosing a rule](guide::choosing_a_rule),
//! [retrying safely](guide::retrying_safely) and
//! [the tower layer in real stacks](guide::layer_in_real_stacks).
//!
//! # More examples
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
//!
//! A blocking call with a deadline, retrying only transient I/O errors:
//!
//! ```
//! use std::{io, time::Duration};
//! use herd::{Rule, RetryPolicy, classify};
//!
//! // (`immediate` so this example does not sleep; see the guide for choosing a real rule)
//! let policy = RetryPolicy::builder(Rule::immediate())
//!     .max_attempts(3)
//!     .deadline(Duration::from_secs(1))
//!     .build()?;
//! let read = policy
//!     .call(|attempt| if attempt.number == 1 { Err(io::ErrorKind::Interrupted.into()) } else { Ok(7) })
//!     .classify(classify::io_error)
//!     .run()?;
//! assert_eq!((read.value, read.attempts), (7, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

pub mod asynchronous;
pub mod blocking;
pub mod breaker;
pub mod budget;
pub mod call;
pub mod classify;
pub mod clock;
mod deposit;
pub mod guide {
    //! Guides: longer explanations, with examples that are compiled and run as doctests.

    pub mod choosing_a_rule {
        #![doc = include_str!("../docs/choosing-a-rule.md")]
    }

    pub mod retrying_safely {
        #![doc = include_str!("../docs/retrying-safely.md")]
    }

    pub mod layer_in_real_stacks {
        #![doc = include_str!("../docs/layer-in-real-stacks.md")]
    }

    pub mod throttles {
        #![doc = include_str!("../docs/throttles.md")]
    }
}
pub mod hedge;
pub mod idempotency;
mod invalid_policy;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod layer;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod middleware;
pub mod outcome;
pub mod policy;
pub mod retry_after;
pub mod rng;
pub mod rule;
pub mod server_delay;
mod sync;
pub mod throttle;
mod window;

/// An item that is public with the `sim` feature and crate-private without it: the storm
/// simulator's and the `herd` command's helpers (rule tables, parsing of user input, the
/// server-delay decision, rebuilding a rule state), which the library itself uses but which
/// are not part of its public face. The simulator turns the feature on and so calls the very
/// code the library runs.
macro_rules! sim_pub {
    ($(#[$attr:meta])* pub $($item:tt)*) => {
        $(#[$attr])*
        #[cfg(feature = "sim")]
        #[cfg_attr(docsrs, doc(cfg(feature = "sim")))]
        pub $($item)*

        $(#[$attr])*
        #[cfg(not(feature = "sim"))]
        #[allow(dead_code)]
        pub(crate) $($item)*
    };
}
pub(crate) use sim_pub;

/// Builder methods that each set one plain setting, with the attributes (docs) written before
/// it. `$with` names the type's own method that applies a change to its settings.
macro_rules! settings {
    ($with:ident; $($(#[$attr:meta])* $field:ident: $ty:ty;)*) => {$(
        $(#[$attr])*
        pub fn $field(self, $field: $ty) -> Self {
            self.$with(|c| c.$field = $field)
        }
    )*};
}
pub(crate) use settings;

/// `Debug` for a handle onto shared state (a struct that holds only an `Arc`): its type name
/// and one figure read live through `$method`.
macro_rules! debug_handle {
    ($ty:ident $(<$clock:ident>)?, $field:literal, $method:ident) => {
        impl$(<$clock: $crate::clock::Clock>)? ::std::fmt::Debug for $ty$(<$clock>)? {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field($field, &self.$method())
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use debug_handle;

/// Emits a `tracing` event with target `herd` at `$level` (feature `tracing`): the message,
/// then the fields, of which the one between semicolons is a duration, given in
/// milliseconds. Without the feature the values are only borrowed, so that callers compile
/// the same either way.
macro_rules! event {
    ($level:ident, $message:literal, $($a:ident = $x:expr),*; $ms:ident = $d:expr; $($b:ident = $y:expr),*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::$level!(
            target: "herd",
            $($a = $x,)*
            $ms = $d.as_secs_f64() * 1000.0,
            $($b = $y,)*
            $message
        );
        #[cfg(not(feature = "tracing"))]
        let _ = ($(&$x,)* &$d, $(&$y,)*);
    }};
}
pub(crate) use event;

/// Emits a `tracing` event for a retry (feature `tracing`).
macro_rules! event_retry {
    ($attempt:expr, $pause:expr, $server_delay:expr) => {
        $crate::event!(debug, "retrying", attempt = $attempt; pause_ms = $pause; server_delay = $server_delay)
    };
}
pub(crate) use event_retry;

/// Emits a `tracing` event when a call gives up (feature `tracing`).
/// At DEBUG when the first attempt ended in a permanent answer (the caller's business, not
/// an operator's), else at INFO.
macro_rules! event_give_up {
    ($attempts:expr, $elapsed:expr, $reason:expr) => {
        if $attempts <= 1 && matches!($reason, $crate::StopReason::Permanent) {
            $crate::event!(debug, "gave up", attempts = $attempts; elapsed_ms = $elapsed; reason = $reason.as_str())
        } else {
            $crate::event!(info, "gave up", attempts = $attempts; elapsed_ms = $elapsed; reason = $reason.as_str())
        }
    };
}
pub(crate) use event_give_up;

pub use outcome::{RetryError, StopReason, Success};
pub use policy::RetryPolicy;
pub use rule::{InvalidRule, Rule, RuleName, RuleParams, RuleState, Schedule};
