//! The library's throttles, built once from a checked [`ThrottleSpec`] on a run's
//! [`FakeClock`]: the one constructor the storm's engine, the partial-failure model's gates
//! and the hedges' budgets share.
use std::sync::Arc;

use herd::budget::{Budget, GrpcThrottle, RetryBudget};
use herd::clock::FakeClock;
use herd::throttle::{
    AdmissionControl, AwsRateLimiter, AwsRetryQuota, EnvoyRetryLimit, SreThrottle,
};

use super::ThrottleSpec;

/// One of the library's throttles, as the simulator runs it: the library's own type, on a
/// clock the caller moves.
pub(crate) enum LibraryThrottle {
    Sre(SreThrottle<FakeClock>),
    Aws(AwsRetryQuota),
    AwsAdaptive(AwsRateLimiter<FakeClock>),
    Envoy(EnvoyRetryLimit),
    Admission(AdmissionControl<FakeClock>),
    Grpc(GrpcThrottle),
    Ratio(RetryBudget<FakeClock>),
}

impl LibraryThrottle {
    /// The throttle `spec` describes, on `clock` (settings already checked by
    /// [`ThrottleTable::check`](super::ThrottleTable::check), so building cannot fail).
    pub(crate) fn new(spec: &ThrottleSpec, clock: &FakeClock) -> Self {
        let checked = "checked by ThrottleTable::check";
        match spec {
            ThrottleSpec::Sre(c) => Self::Sre(SreThrottle::new(*c, clock.clone()).expect(checked)),
            ThrottleSpec::Aws(c) => Self::Aws(AwsRetryQuota::new(*c).expect(checked)),
            ThrottleSpec::AwsAdaptive => Self::AwsAdaptive(AwsRateLimiter::new(clock.clone())),
            ThrottleSpec::Envoy(c) => Self::Envoy(EnvoyRetryLimit::new(*c).expect(checked)),
            ThrottleSpec::Admission(c) => {
                Self::Admission(AdmissionControl::new(*c, clock.clone()).expect(checked))
            }
            ThrottleSpec::Grpc(c) => Self::Grpc(GrpcThrottle::new(*c).expect(checked)),
            ThrottleSpec::Ratio(c) => {
                Self::Ratio(RetryBudget::new(*c, clock.clone()).expect(checked))
            }
        }
    }

    /// The throttle as a [`Budget`], as a Rust client plugs it into a hedge or a retry
    /// policy, and Envoy's limit itself (a handle on the same counts), whose active requests
    /// the caller counts.
    pub(crate) fn into_budget(self) -> (Arc<dyn Budget>, Option<EnvoyRetryLimit>) {
        match self {
            Self::Sre(t) => (Arc::new(t), None),
            Self::Aws(t) => (Arc::new(t), None),
            Self::AwsAdaptive(t) => (Arc::new(t), None),
            Self::Envoy(limit) => (Arc::new(limit.clone()), Some(limit)),
            Self::Admission(t) => (Arc::new(t), None),
            Self::Grpc(t) => (Arc::new(t), None),
            Self::Ratio(t) => (Arc::new(t), None),
        }
    }
}
