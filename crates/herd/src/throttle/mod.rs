//! The throttles and retry budgets that real systems ship, each as its owner defines it.
//!
//! # Why several, and why exactly theirs?
//!
//! A service owner does not run "a retry budget": they run Envoy's, Linkerd's, gRPC's, the
//! AWS SDKs' or Google's, and these differ in *what they count* and *when they refuse*:
//!
//! | system | counts | refuses | state |
//! |---|---|---|---|
//! | Google SRE adaptive throttling ([`SreThrottle`]) | requests and accepts over a sliding history | any request, first attempts too, at random with `(requests − K·accepts)/(requests + padding)` | a window of bins |
//! | AWS SDK standard mode ([`AwsRetryQuota`]) | tokens: a retry costs, a success refills | a retry whose cost the quota cannot pay | one counter |
//! | AWS SDK adaptive mode ([`AwsRateLimiter`]) | the measured send rate; throttling errors | nothing: it *delays* any request, first attempts too, after the first throttle | a CUBIC-driven token bucket |
//! | Envoy retry budget and `max_retries` ([`EnvoyRetryLimit`]) | retries *in flight* against active requests | a retry over `budget_percent` of active requests (at least `min_retry_concurrency`), or over `max_retries` | two counters |
//! | Envoy admission control ([`AdmissionControl`]) | requests and successes over a window | any request, at random with `(n − s/sr_threshold)/(n + 1)`, capped | per-second history |
//! | Linkerd ([`LinkerdRetryBudget`]) | a ratio of requests plus a reserve per second | a retry over the balance | herd's ratio [`RetryBudget`](crate::budget::RetryBudget) |
//!
//! Concurrency (Envoy) and rate (Linkerd, Finagle, tower) are the two models the Gateway API's
//! retry-budget proposal (GEP-3388) could not choose between; the adaptive throttles (SRE,
//! admission control, AWS adaptive) also gate *first* attempts, which a retry budget never
//! does. herd offers each one exactly, with every default taken from its owner's source and
//! cited beside the constant, and their published test vectors ported as tests.
//!
//! # One interface, and where each goes beyond it
//!
//! Each type is a cheap `Clone` handle onto shared state, safe to use from many threads, with
//! its own API named after its owner's (what the system's code calls it), and each implements
//! [`Budget`](crate::budget::Budget) so a [`RetryPolicy`](crate::policy::RetryPolicy) can
//! consult it. The `Budget` trait speaks of one shared stream of events (a request, a success,
//! a failure, "may I retry?"); where a system needs more than that stream carries, the type's
//! `Budget` docs say what the trait cannot express and which method of the type does it
//! exactly:
//!
//! - first-attempt gating (SRE, admission control, AWS adaptive): call the type's `admit` /
//!   `acquire` before a call's first attempt;
//! - holding a retry until it ends (Envoy) or returning a successful retry's cost (AWS
//!   standard): [`Budget::try_retry_permit`](crate::budget::Budget::try_retry_permit) hands
//!   out a [`RetryPermit`](crate::budget::RetryPermit) that releases on drop;
//! - the error kind (AWS: timeout, throttling or other transient error): the type's own
//!   `acquire(kind)`.
//!
//! Time always comes from an injected [`Clock`](crate::clock::Clock); the random draws of
//! the probabilistic throttles come from a seeded [`SplitMix64`]
//! held by the throttle (or from a generator the caller passes), never from a global source.
//!
//! The guide [`throttles`](crate::guide::throttles) maps every field of every system onto
//! these types.

mod aws_adaptive;
mod aws_standard;
mod envoy;
mod envoy_admission;
mod linkerd;
mod sre;

use std::fmt;

pub use aws_adaptive::{AwsRateLimiter, AwsRequestKind};
pub use aws_standard::{AwsBackoff, AwsErrorKind, AwsRetryQuota, AwsRetryQuotaConfig};
pub use envoy::{
    EnvoyActiveRequest, EnvoyRetryBudgetConfig, EnvoyRetryLimit, EnvoyRetryLimitConfig,
};
pub use envoy_admission::{AdmissionControl, AdmissionControlConfig};
pub use linkerd::LinkerdRetryBudget;
pub use sre::{RequestCounting, SreThrottle, SreThrottleConfig};

use crate::rng::{Rng, SplitMix64, ThreadRng};

/// Why a throttle could not be built: the field, the value given and what it must be.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InvalidThrottle {
    /// The setting, named as in its owner's configuration (snake case).
    pub field: &'static str,
    /// The value given (durations in seconds).
    pub value: f64,
    /// What the value must be.
    pub expected: &'static str,
}

impl fmt::Display for InvalidThrottle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} must be {}, got {}",
            self.field, self.expected, self.value
        )
    }
}

impl std::error::Error for InvalidThrottle {}

/// `Ok` when `ok`, else the error naming `field`.
pub(crate) fn check(
    ok: bool,
    field: &'static str,
    value: f64,
    expected: &'static str,
) -> Result<(), InvalidThrottle> {
    if ok {
        Ok(())
    } else {
        Err(InvalidThrottle {
            field,
            value,
            expected,
        })
    }
}

/// The generator a probabilistic throttle draws from: the configured seed's stream, or, with
/// no seed, a seed drawn once from the thread's generator (so that a fleet of processes does
/// not reject in lock step).
pub(crate) fn generator(seed: Option<u64>) -> SplitMix64 {
    SplitMix64::new(seed.unwrap_or_else(|| ThreadRng.next_u64()))
}
