//! herd's policy as a [`tower::retry::Policy`], for any request type.
//!
//! tower's `Retry` middleware retries any `Service<Req>`; what it asks of a policy is whether
//! to retry a result, after which pause, and how to copy a request. [`HerdPolicy`] answers with
//! herd's rule, attempt limit, deadline, budget and breaker, and your classifier. Use it for
//! requests that are not HTTP (a database query, a message to publish); for HTTP and gRPC the
//! [`RetryLayer`](super::RetryLayer) does more (attempt timeouts, `Retry-After`, released
//! connections, bodies that are not `Clone`).
//!
//! tower's `Retry` clones its policy once per call, and [`HerdPolicy`]'s `Clone` starts a new
//! logical call (its attempt count, its deadline, a request recorded with the budget): keep
//! one `HerdPolicy` in the `Retry` service, and clone the service, not the policy, for
//! concurrent use. tower's `Retry` has no attempt timeout: put a `tower::timeout` layer inside
//! it if attempts can hang.
//!
//! # The breaker does not gate the first attempt
//!
//! tower's `Retry` sends the first attempt before it asks the policy anything, so a breaker in
//! the [`RetryPolicy`] cannot refuse it: an open breaker stops *retries* (and records each
//! first attempt's outcome), but every call still reaches the dependency once. When the
//! breaker must shed the first attempt too, drive the call with herd instead of tower's
//! `Retry`: the [`RetryLayer`](super::RetryLayer) for HTTP and gRPC, or
//! [`RetryPolicy::call`]`(…).run_async()` for any other request (both ask the breaker before
//! every attempt and answer [`StopReason::Breaker`](crate::StopReason::Breaker) at once).
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, policy::RetryPolicy, asynchronous::TokioClock, classify::Verdict};
//! use herd::layer::tower_policy::HerdPolicy;
//! use tower::{Service, ServiceExt, retry::RetryLayer, Layer};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = RetryPolicy::builder(Rule::exponential(Duration::from_millis(10), Duration::from_secs(1))?)
//!     .max_attempts(3)
//!     .clock(TokioClock::new())
//!     .build()?;
//! // `Err("busy")` is worth another attempt; anything else is final.
//! let herd = HerdPolicy::new(policy, |result: &Result<u32, &'static str>| match result {
//!     Ok(_) => None,
//!     Err("busy") => Some(Verdict::transient()),
//!     Err(_) => Some(Verdict::permanent()),
//! });
//! let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
//! let seen = calls.clone();
//! let mut svc = RetryLayer::new(herd).layer(tower::service_fn(move |n: u32| {
//!     let call = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
//!     async move { if call == 0 { Err("busy") } else { Ok(n * 2) } }
//! }));
//! assert_eq!(svc.ready().await?.call(21).await?, 42);
//! # Ok(())
//! # }
//! ```

use std::fmt;

use crate::asynchronous::{Sleeper, TokioClock, TokioSleep};
use crate::classify::Verdict;
use crate::clock::Clock;
use crate::policy::{CallState, Decision, RetryPolicy};
use crate::rng::ThreadRng;

/// A [`tower::retry::Policy`] driven by a herd [`RetryPolicy`] and a classifier `K` over the
/// result (`None` = success, or the failure's [`Verdict`]). See the
/// [module documentation](self).
///
/// **An open breaker does not stop the first attempt**: tower's `Retry` sends it before
/// asking the policy. Use [`RetryLayer`](super::RetryLayer) or
/// [`RetryPolicy::call`]`(…).run_async()` when the breaker must shed every attempt (see
/// [the module docs](self#the-breaker-does-not-gate-the-first-attempt)).
pub struct HerdPolicy<K, C: Clock = TokioClock, S = TokioSleep> {
    policy: RetryPolicy<C>,
    classify: std::sync::Arc<K>,
    sleeper: S,
    state: CallState,
}

impl<K, C: Clock> HerdPolicy<K, C, TokioSleep> {
    /// A policy retrying by `policy`, the results `classify` calls failures, sleeping on tokio.
    pub fn new(policy: RetryPolicy<C>, classify: K) -> Self {
        let state = policy.begin_with_key(crate::idempotency::IdempotencyKey::generate());
        Self {
            policy,
            classify: std::sync::Arc::new(classify),
            sleeper: TokioSleep,
            state,
        }
    }
}

impl<K, C: Clock, S> HerdPolicy<K, C, S> {
    /// Sleep with another runtime's (or a test's) [`Sleeper`].
    pub fn sleeper<S2>(self, sleeper: S2) -> HerdPolicy<K, C, S2> {
        HerdPolicy {
            policy: self.policy,
            classify: self.classify,
            sleeper,
            state: self.state,
        }
    }

    /// Attempts started in this policy's call so far.
    #[must_use]
    pub fn attempts(&self) -> u32 {
        self.state.attempts()
    }
}

impl<K, C: Clock, S: Clone> Clone for HerdPolicy<K, C, S> {
    /// A policy for a new logical call (tower's `Retry` clones its policy once per call).
    fn clone(&self) -> Self {
        Self {
            policy: self.policy.clone(),
            classify: std::sync::Arc::clone(&self.classify),
            sleeper: self.sleeper.clone(),
            state: self
                .policy
                .begin_with_key(crate::idempotency::IdempotencyKey::generate()),
        }
    }
}

impl<K, C: Clock, S> fmt::Debug for HerdPolicy<K, C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HerdPolicy")
            .field("policy", &self.policy)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl<Req, Res, E, K, C, S> tower::retry::Policy<Req, Res, E> for HerdPolicy<K, C, S>
where
    Req: Clone,
    K: Fn(&Result<Res, E>) -> Option<Verdict>,
    C: Clock,
    S: Sleeper,
{
    type Future = S::Sleep;

    fn retry(&mut self, _: &mut Req, result: &mut Result<Res, E>) -> Option<S::Sleep> {
        if self.state.attempts() == 0 {
            // The first attempt, admitted by tower before asking us.
            let _ = self.policy.before_attempt(&mut self.state);
        }
        let Some(verdict) = (self.classify)(result) else {
            self.policy.on_success(&self.state);
            return None;
        };
        match self
            .policy
            .on_failure(&mut self.state, verdict, &mut ThreadRng)
        {
            Decision::Stop(_) => None,
            Decision::Retry { pause, .. } => {
                self.policy.before_attempt(&mut self.state).ok()?;
                Some(self.sleeper.sleep(pause))
            }
        }
    }

    fn clone_request(&mut self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}
