//! A translation as the library's own types: the [`RetryPolicy`] a service runs, the
//! throttle its calls share, the hedging policy, and what is retried.
//!
//! A [`Translation`] says in herd's terms what a system does; this module builds the very
//! objects that do it, so a Rust service can run exactly the retries its gRPC service config
//! or Envoy route describes (tonic reads no service config). Each piece is built as the
//! library's constructors validate it, so a value the library refuses is a [`BuildError`],
//! never a silent clamp.
//!
//! | translation | library |
//! |---|---|
//! | `max_attempts` | [`PolicyBuilder::max_attempts`] (`u32::MAX` when a budget alone bounds them) |
//! | `backoff` (`rule`, `base`, `cap`, `multiplier`, `jitter`) | [`Rule`] of the same name |
//! | `per_try_timeout` | [`PolicyBuilder::attempt_timeout`] (async loops and the layer) |
//! | `timeout` | [`PolicyBuilder::deadline`] |
//! | throttle `grpc` | [`GrpcThrottle`] |
//! | throttle `envoy-budget`, `envoy-max-retries` | [`EnvoyRetryLimit`] |
//! | throttle `aws-standard`, `aws-standard-2026` | [`AwsRetryQuota`] |
//! | throttle `aws-adaptive` | [`AwsRetryQuota`] and [`AwsRateLimiter`] |
//! | throttle `ratio` (Linkerd) | [`LinkerdRetryBudget`] → [`RetryBudget`] |
//! | `hedging` | [`HedgePolicy`] with a fixed delay |
//! | `retry_on` | [`Retryable`]: gRPC status codes and HTTP statuses |
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::RuleName;
//! use herd_config::Input;
//!
//! let text = r#"{"methodConfig": [{"name": [{"service": "echo.Echo"}],
//!   "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
//!   "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
//!   "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#;
//! let report = herd_config::read(&[Input::new("svc.json", text)])?;
//! let t = &report.configs[0];
//! let policy = t.retry_policy()?.build()?;
//! assert_eq!(policy.max_attempts(), 4);
//! assert_eq!(policy.rule().name(), RuleName::GrpcRetry);
//! assert!(t.retryable().unwrap().grpc_status(14)); // UNAVAILABLE
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
use std::fmt;
use std::time::Duration;

use herd::budget::{Budget, GrpcThrottle, GrpcThrottleConfig, InvalidBudget, RetryBudget};
use herd::classify::Verdict;
use herd::clock::{Clock, SystemClock};
use herd::hedge::{HedgeBuilder, HedgeDelay, HedgePolicy};
use herd::policy::{InvalidPolicy, PolicyBuilder, RetryPolicy};
use herd::rule::InvalidRule;
use herd::throttle::{
    AwsRateLimiter, AwsRetryQuota, AwsRetryQuotaConfig, EnvoyRetryBudgetConfig, EnvoyRetryLimit,
    EnvoyRetryLimitConfig, InvalidThrottle, LinkerdRetryBudget,
};
use herd::{Rule, RuleName};

use crate::{System, Throttle, Translation};

/// Why a translation cannot become the library's types: the library refused a value, or the
/// translation describes something the library has no type for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BuildError {
    /// The backoff's parameters, as [`Rule`]'s constructors refuse them.
    Rule(InvalidRule),
    /// The attempts or timeouts, as [`PolicyBuilder::build`] refuses them.
    Policy(InvalidPolicy),
    /// A ratio budget's or gRPC throttle's parameters.
    Budget(InvalidBudget),
    /// A system throttle's parameters.
    Throttle(InvalidThrottle),
    /// A rule this crate does not know how to build.
    UnknownRule(RuleName),
    /// A throttle kind the library has no type for, or one missing a parameter.
    UnknownThrottle(String),
    /// The translation hedges instead of retrying: build [`Translation::hedge_policy`].
    Hedges,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Rule(e) => write!(f, "backoff: {e}"),
            BuildError::Policy(e) => write!(f, "policy: {e}"),
            BuildError::Budget(e) => write!(f, "budget: {e}"),
            BuildError::Throttle(e) => write!(f, "throttle: {e}"),
            BuildError::UnknownRule(r) => write!(f, "no library rule for `{r}`"),
            BuildError::UnknownThrottle(k) => write!(f, "no library throttle for `{k}`"),
            BuildError::Hedges => {
                f.write_str("the policy hedges instead of retrying: build its hedge policy instead")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// `From` each library error a build can meet into the [`BuildError`] variant that wraps it,
/// so that the builders' `?` names the piece that refused.
macro_rules! build_error_from {
    ($($variant:ident($error:ty)),* $(,)?) => {$(
        impl From<$error> for BuildError {
            fn from(e: $error) -> Self {
                BuildError::$variant(e)
            }
        }
    )*};
}

build_error_from!(
    Rule(InvalidRule),
    Policy(InvalidPolicy),
    Budget(InvalidBudget),
    Throttle(InvalidThrottle),
);

/// A translation's throttle as the library's type: a cheap `Clone` handle onto shared
/// state, so every call of the policy (and its clones) draws on one bucket, as the system's
/// own client or proxy does.
#[derive(Clone)]
#[non_exhaustive]
pub enum LibraryThrottle<C: Clock = SystemClock> {
    /// gRPC `retryThrottling`, one per channel.
    Grpc(GrpcThrottle),
    /// Envoy's `retry_budget` or `max_retries`, one per cluster (Istio's
    /// `connectionPool.http.maxRetries` is the latter).
    Envoy(EnvoyRetryLimit),
    /// The AWS SDKs' standard-mode retry quota, one per client.
    AwsStandard(AwsRetryQuota),
    /// The AWS SDKs' adaptive mode: the standard quota, and the rate limiter that delays
    /// every request after a throttling error (call its `acquire` before each attempt: the
    /// policy's budget slot holds the quota).
    AwsAdaptive(AwsRetryQuota, AwsRateLimiter<C>),
    /// Linkerd's ratio budget (`retryBudget`).
    Linkerd(RetryBudget<C>),
}

impl<C: Clock> fmt::Debug for LibraryThrottle<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LibraryThrottle::Grpc(_) => "LibraryThrottle::Grpc",
            LibraryThrottle::Envoy(_) => "LibraryThrottle::Envoy",
            LibraryThrottle::AwsStandard(_) => "LibraryThrottle::AwsStandard",
            LibraryThrottle::AwsAdaptive(..) => "LibraryThrottle::AwsAdaptive",
            LibraryThrottle::Linkerd(_) => "LibraryThrottle::Linkerd",
        })
    }
}

impl<C: Clock> LibraryThrottle<C> {
    /// `builder` with this throttle as its budget: a retry policy's, or a hedge policy's,
    /// whose copies spend from it too (gRPC proposal A6: hedged copies draw on
    /// `retryThrottling` as retries do).
    fn attach<B: Budgeted>(self, builder: B) -> B {
        match self {
            LibraryThrottle::Grpc(t) => builder.budget(t),
            LibraryThrottle::Envoy(t) => builder.budget(t),
            LibraryThrottle::AwsStandard(t) | LibraryThrottle::AwsAdaptive(t, _) => {
                builder.budget(t)
            }
            LibraryThrottle::Linkerd(t) => builder.budget(t),
        }
    }
}

/// A builder that takes a shared [`Budget`]: the retry policy's and the hedge policy's.
trait Budgeted {
    fn budget(self, budget: impl Budget + 'static) -> Self;
}

impl<C: Clock> Budgeted for PolicyBuilder<C> {
    fn budget(self, budget: impl Budget + 'static) -> Self {
        PolicyBuilder::budget(self, budget)
    }
}

impl<C: Clock> Budgeted for HedgeBuilder<C> {
    fn budget(self, budget: impl Budget + 'static) -> Self {
        HedgeBuilder::budget(self, budget)
    }
}

/// What a translation retries, as a classifier of the answers a client sees: gRPC status
/// codes and HTTP statuses. Transport failures (a reset, a refused connection) are left to
/// the library's own classification ([`herd::classify`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retryable {
    /// Bit `n` set: gRPC status code `n` is retried.
    grpc: u32,
    /// Inclusive ranges of retried HTTP statuses.
    http: Vec<(u16, u16)>,
}

/// gRPC status codes by number (grpc/grpc `doc/statuscodes.md`), in Envoy's and Linkerd's
/// lower-case, hyphenated spelling.
const GRPC_CODES: [&str; 17] = [
    "ok",
    "cancelled",
    "unknown",
    "invalid-argument",
    "deadline-exceeded",
    "not-found",
    "already-exists",
    "permission-denied",
    "resource-exhausted",
    "failed-precondition",
    "aborted",
    "out-of-range",
    "unimplemented",
    "internal",
    "unavailable",
    "data-loss",
    "unauthenticated",
];

impl Retryable {
    /// Whether gRPC status `code` is retried.
    #[must_use]
    pub fn grpc_status(&self, code: u8) -> bool {
        code < 32 && self.grpc & (1 << code) != 0
    }

    /// Whether HTTP status `status` is retried.
    #[must_use]
    pub fn http_status(&self, status: u16) -> bool {
        self.http
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&status))
    }

    /// The retried gRPC status codes, ascending (for the `GrpcCodes` of the library's tower
    /// layer in gRPC mode).
    #[must_use]
    pub fn grpc_codes(&self) -> Vec<u8> {
        (0..32u8).filter(|&c| self.grpc_status(c)).collect()
    }

    /// The library's verdict on a gRPC status: transient when retried, permanent otherwise.
    #[must_use]
    pub fn grpc_verdict(&self, code: u8) -> Verdict {
        if self.grpc_status(code) {
            Verdict::transient()
        } else {
            Verdict::permanent()
        }
    }

    /// The library's verdict on an HTTP status: transient when retried, permanent otherwise.
    #[must_use]
    pub fn http_verdict(&self, status: u16) -> Verdict {
        if self.http_status(status) {
            Verdict::transient()
        } else {
            Verdict::permanent()
        }
    }

    fn add_grpc_name(&mut self, name: &str) -> bool {
        let lower = name.to_ascii_lowercase().replace('_', "-");
        match GRPC_CODES.iter().position(|c| *c == lower) {
            Some(i) => {
                self.grpc |= 1 << i;
                true
            }
            None => false,
        }
    }

    fn add_http(&mut self, lo: u16, hi: u16) {
        self.http.push((lo, hi));
    }

    /// An Envoy `retry_on` condition (Istio's `retryOn` uses the same words). Envoy:
    /// `source/common/router/retry_state_impl.cc` (`5xx` is any 5xx; `gateway-error` is 502,
    /// 503 and 504; `retriable-4xx` is 409; the gRPC conditions name one status each);
    /// `envoy/config/route/v3/route_components.proto` and the router docs list them.
    fn add_envoy_condition(&mut self, condition: &str) {
        match condition {
            "5xx" => self.add_http(500, 599),
            "gateway-error" => self.add_http(502, 504),
            "retriable-4xx" => self.add_http(409, 409),
            c => {
                self.add_grpc_name(c);
            }
        }
    }

    /// A status or range as Linkerd's `retry.linkerd.io/http` writes it (`5xx`, `429`,
    /// `500-504`, `gateway-error`), or a gRPC status name from `retry.linkerd.io/grpc`.
    fn add_linkerd_condition(&mut self, condition: &str) {
        let c = condition.trim();
        if let Some(d) = c.strip_suffix("xx").and_then(|d| d.parse::<u16>().ok()) {
            self.add_http(d * 100, d * 100 + 99);
        } else if let Some((lo, hi)) = c
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?)))
        {
            self.add_http(lo, hi);
        } else if let Ok(s) = c.parse::<u16>() {
            self.add_http(s, s);
        } else if c == "gateway-error" {
            self.add_http(502, 504);
        } else {
            self.add_grpc_name(c);
        }
    }
}

/// botocore `retries/standard.py`, `TransientRetryableChecker._TRANSIENT_STATUS_CODES`: the
/// HTTP statuses every AWS SDK in standard and adaptive mode retries (throttling and
/// transient error *codes* come in the body, which a status cannot show).
const AWS_TRANSIENT_STATUSES: [u16; 4] = [500, 502, 503, 504];

impl Translation {
    /// The backoff as the library's [`Rule`].
    ///
    /// # Errors
    ///
    /// [`BuildError::Rule`] when the library refuses the parameters (a zero base, a cap
    /// below the base); [`BuildError::UnknownRule`] for a rule this crate cannot build.
    pub fn rule(&self) -> Result<Rule, BuildError> {
        let b = &self.backoff;
        Ok(match b.rule {
            RuleName::Immediate => Rule::immediate(),
            RuleName::Constant => Rule::constant(b.base)?,
            RuleName::Exponential => Rule::exponential(b.base, b.cap)?,
            RuleName::Full => Rule::full(b.base, b.cap)?,
            RuleName::Equal => Rule::equal(b.base, b.cap)?,
            RuleName::Decorrelated => Rule::decorrelated(b.base, b.cap)?,
            RuleName::DecorrelatedV2 => Rule::decorrelated_v2(b.base, b.cap)?,
            RuleName::Grpc => Rule::grpc(b.base, b.multiplier, b.jitter, b.cap)?,
            RuleName::GrpcRetry => Rule::grpc_retry(b.base, b.multiplier, b.jitter, b.cap)?,
            RuleName::Randomized => Rule::randomized(b.base, b.multiplier, b.jitter, b.cap)?,
            other => return Err(BuildError::UnknownRule(other)),
        })
    }

    /// The library's [`RetryPolicy`], as a builder on the system clock with this
    /// translation's attempts, rule, timeouts and throttle set: add what the file cannot say
    /// (idempotency, a breaker) and [`build`](PolicyBuilder::build).
    ///
    /// # Errors
    ///
    /// As [`retry_policy_with`](Self::retry_policy_with).
    pub fn retry_policy(&self) -> Result<PolicyBuilder<SystemClock>, BuildError> {
        self.retry_policy_with(SystemClock::new())
    }

    /// The library's [`RetryPolicy`] on `clock` (which also drives the throttle's time), as
    /// a builder with this translation's attempts, rule, timeouts and throttle set.
    ///
    /// Attempts are `max_attempts`, or `u32::MAX` when a budget alone bounds them (Linkerd's
    /// `ServiceProfile`); `per_try_timeout` is the attempt timeout, `timeout` the deadline
    /// over attempts and pauses. The throttle, when there is one, is a fresh one shared by
    /// every call of the built policy and its clones.
    ///
    /// # Errors
    ///
    /// [`BuildError::Hedges`] for a hedging translation; the rule's and the throttle's
    /// errors as [`rule`](Self::rule) and [`throttle`](Self::throttle) give them.
    pub fn retry_policy_with<C: Clock>(&self, clock: C) -> Result<PolicyBuilder<C>, BuildError> {
        if self.hedging.is_some() {
            return Err(BuildError::Hedges);
        }
        let mut builder = RetryPolicy::builder(self.rule()?)
            .clock(clock.clone())
            .max_attempts(self.max_attempts.unwrap_or(u32::MAX));
        if let Some(d) = self.per_try_timeout {
            builder = builder.attempt_timeout(d);
        }
        if let Some(d) = self.timeout {
            builder = builder.deadline(d);
        }
        if let Some(throttle) = self.throttle_with(clock)? {
            builder = throttle.attach(builder);
        }
        Ok(builder)
    }

    /// The library's throttle for this translation, on the system clock; `None` when the
    /// system has none.
    ///
    /// # Errors
    ///
    /// As [`throttle_with`](Self::throttle_with).
    pub fn throttle(&self) -> Result<Option<LibraryThrottle>, BuildError> {
        self.throttle_with(SystemClock::new())
    }

    /// The library's throttle for this translation, timed by `clock`; `None` when the system
    /// has none.
    ///
    /// # Errors
    ///
    /// [`BuildError::Budget`] or [`BuildError::Throttle`] when the library refuses a
    /// parameter; [`BuildError::UnknownThrottle`] for a kind it has no type for.
    pub fn throttle_with<C: Clock>(
        &self,
        clock: C,
    ) -> Result<Option<LibraryThrottle<C>>, BuildError> {
        self.throttle
            .as_ref()
            .map(|t| library_throttle(t, clock))
            .transpose()
    }

    /// gRPC's hedging as the library's [`HedgePolicy`]: a fixed delay between copies and as
    /// many copies as `maxAttempts`, drawing on the throttle; `None` when the policy retries
    /// instead.
    ///
    /// # Errors
    ///
    /// The throttle's errors, as [`throttle_with`](Self::throttle_with).
    pub fn hedge_policy_with<C: Clock>(
        &self,
        clock: C,
    ) -> Result<Option<HedgeBuilder<C>>, BuildError> {
        let Some(h) = self.hedging else {
            return Ok(None);
        };
        let mut builder = HedgePolicy::builder(HedgeDelay::fixed(h.delay))
            .clock(clock.clone())
            .max_copies(h.max_attempts);
        if let Some(throttle) = self.throttle_with(clock)? {
            builder = throttle.attach(builder);
        }
        Ok(Some(builder))
    }

    /// [`hedge_policy_with`](Self::hedge_policy_with) on the system clock.
    ///
    /// # Errors
    ///
    /// As [`hedge_policy_with`](Self::hedge_policy_with).
    pub fn hedge_policy(&self) -> Result<Option<HedgeBuilder<SystemClock>>, BuildError> {
        self.hedge_policy_with(SystemClock::new())
    }

    /// What the policy retries, as gRPC status codes and HTTP statuses; `None` when the
    /// system's conditions are not statuses (Resilience4j's exception classes, a Linkerd
    /// `ServiceProfile`'s response classes).
    #[must_use]
    pub fn retryable(&self) -> Option<Retryable> {
        let mut r = Retryable::default();
        match self.system {
            System::Grpc => {
                for c in &self.retry_on {
                    r.add_grpc_name(c);
                }
            }
            System::Envoy => {
                // Envoy retries `retriable_status_codes` only under the
                // `retriable-status-codes` condition (retry_state_impl.cc).
                let listed = self.retry_on.iter().any(|c| c == "retriable-status-codes");
                for c in &self.retry_on {
                    match c.parse::<u16>() {
                        Ok(s) if listed => r.add_http(s, s),
                        Ok(_) => {}
                        Err(_) => r.add_envoy_condition(c),
                    }
                }
            }
            System::Istio => {
                // Istio turns a status in `retryOn` into Envoy's `retriable-status-codes`
                // (pilot/pkg/networking/core/route/retry/retry.go, `parseRetryOn`).
                for c in &self.retry_on {
                    match c.parse::<u16>() {
                        Ok(s) => r.add_http(s, s),
                        Err(_) => r.add_envoy_condition(c),
                    }
                }
            }
            System::Linkerd => {
                if self
                    .retry_on
                    .iter()
                    .any(|c| c.starts_with("responseClasses"))
                {
                    return None;
                }
                for c in &self.retry_on {
                    r.add_linkerd_condition(c);
                }
            }
            System::Aws => {
                for s in AWS_TRANSIENT_STATUSES {
                    r.add_http(s, s);
                }
            }
            System::Resilience4j => return None,
        }
        Some(r)
    }
}

/// The parameter `name` of `t`, or the error naming it.
fn param(t: &Throttle, name: &str) -> Result<f64, BuildError> {
    t.param(name)
        .ok_or_else(|| BuildError::UnknownThrottle(format!("{} without {name}", t.kind)))
}

/// A count parameter as the library's `u32`, saturating (Istio's default `maxRetries` is
/// `u32::MAX`).
fn count(t: &Throttle, name: &str) -> Result<u32, BuildError> {
    let v = param(t, name)?;
    Ok(if v.is_nan() || v <= 0.0 {
        0
    } else if v >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        v as u32
    })
}

fn library_throttle<C: Clock>(t: &Throttle, clock: C) -> Result<LibraryThrottle<C>, BuildError> {
    Ok(match t.kind {
        "grpc" => LibraryThrottle::Grpc(GrpcThrottle::new(
            GrpcThrottleConfig::default()
                .max_tokens(param(t, "max_tokens")?)
                .token_ratio(param(t, "token_ratio")?),
        )?),
        "envoy-budget" => {
            let mut b = EnvoyRetryBudgetConfig::default();
            b.budget_percent = param(t, "budget_percent")?;
            b.min_retry_concurrency = count(t, "min_retry_concurrency")?;
            LibraryThrottle::Envoy(EnvoyRetryLimit::new(EnvoyRetryLimitConfig::budget(b))?)
        }
        "envoy-max-retries" => LibraryThrottle::Envoy(EnvoyRetryLimit::new(
            EnvoyRetryLimitConfig::max_retries(count(t, "max_retries")?),
        )?),
        "aws-standard" | "aws-standard-2026" | "aws-adaptive" => {
            // The 2026 quota has no timeout cost of its own: a timeout is a transient error.
            let classic = t.param("timeout_retry_cost").is_some();
            let mut q = if classic {
                AwsRetryQuotaConfig::standard()
            } else {
                AwsRetryQuotaConfig::standard_2026()
            };
            q.capacity = count(t, "initial_tokens")?;
            q.retry_cost = count(t, "retry_cost")?;
            q.timeout_retry_cost = if classic {
                count(t, "timeout_retry_cost")?
            } else {
                q.retry_cost
            };
            if t.param("throttling_retry_cost").is_some() {
                q.throttling_retry_cost = count(t, "throttling_retry_cost")?;
            }
            q.no_retry_increment = count(t, "success_reward")?;
            let quota = AwsRetryQuota::new(q)?;
            if t.kind == "aws-adaptive" {
                LibraryThrottle::AwsAdaptive(quota, AwsRateLimiter::new(clock))
            } else {
                LibraryThrottle::AwsStandard(quota)
            }
        }
        "ratio" => {
            let ttl = Duration::try_from_secs_f64(param(t, "ttl_s")?)
                .map_err(|_| BuildError::UnknownThrottle(format!("{} with ttl_s", t.kind)))?;
            let mut b = LinkerdRetryBudget::default();
            b.retry_ratio = param(t, "retry_ratio")?;
            b.min_retries_per_second = count(t, "min_retries_per_second")?;
            b.ttl = ttl;
            LibraryThrottle::Linkerd(b.build(clock)?)
        }
        other => return Err(BuildError::UnknownThrottle(other.to_owned())),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use herd::clock::FakeClock;
    use herd::rng::SplitMix64;

    use super::*;
    use crate::{Input, read};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The translations of one file, of the system given.
    fn translations(system: System, text: &str) -> Vec<Translation> {
        let mut input = Input::new("test", text);
        input.system = Some(system);
        read(&[input]).unwrap().configs
    }

    fn one(system: System, text: &str) -> Translation {
        let mut all = translations(system, text);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    /// The translation of an Envoy route configuration with one route, to `backend`, whose
    /// retry policy is `policy` (YAML that follows `retry_policy:` on its line).
    fn envoy_route(policy: &str) -> Translation {
        const ROUTE: &str = r#"
name: local_route
virtual_hosts:
- name: backend
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route:
      cluster: backend
      retry_policy: "#;
        one(System::Envoy, &format!("{ROUTE}{policy}\n"))
    }

    /// Every pause of the rule's first `n` retries, drawn from one seed.
    fn pauses(rule: &Rule, n: usize) -> Vec<Duration> {
        (*rule).schedule(SplitMix64::new(7)).take(n).collect()
    }

    #[test]
    fn grpc_retry_policy_throttle_and_codes() {
        let t = one(
            System::Grpc,
            r#"{"methodConfig": [{"name": [{"service": "echo.Echo"}], "timeout": "2s",
              "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
              "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", 4]}}],
              "retryThrottling": {"maxTokens": 6, "tokenRatio": 0.5}}"#,
        );
        let policy = t
            .retry_policy_with(FakeClock::new())
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(policy.max_attempts(), 4);
        assert_eq!(policy.deadline(), Some(Duration::from_secs(2)));
        assert_eq!(policy.rule().name(), RuleName::GrpcRetry);
        // gRFC A6: retry n waits min(1 s, 0.1 s · 2^(n−1)) · [0.8, 1.2).
        for (n, p) in pauses(policy.rule(), 6).into_iter().enumerate() {
            let c = ms(100 * (1u64 << n)).min(ms(1000));
            assert!(
                p >= c.mul_f64(0.8) && p < c.mul_f64(1.2),
                "retry {n}: {p:?}"
            );
        }
        let Some(LibraryThrottle::Grpc(throttle)) = t.throttle().unwrap() else {
            panic!("no gRPC throttle");
        };
        assert_eq!(throttle.tokens(), 6.0);
        let r = t.retryable().unwrap();
        assert_eq!(r.grpc_codes(), [4, 14]);
        assert!(r.grpc_verdict(14).is_transient());
        assert!(r.grpc_verdict(2).is_permanent());
        assert!(!r.http_status(503));
    }

    #[test]
    fn grpc_hedging_builds_a_hedge_policy_not_a_retry_policy() {
        let t = one(
            System::Grpc,
            r#"{"methodConfig": [{"name": [{"service": "echo.Echo"}],
              "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
              "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#,
        );
        assert!(matches!(t.retry_policy(), Err(BuildError::Hedges)));
        let hedge = t.hedge_policy().unwrap().unwrap().build().unwrap();
        assert_eq!(hedge.max_copies(), 3);
        assert_eq!(hedge.current_delay(), ms(50));
        assert_eq!(t.retryable().unwrap().grpc_codes(), [14]);
    }

    #[test]
    fn envoy_route_with_its_budget() {
        let t = envoy_route(
            r#"
        retry_on: gateway-error,unavailable,retriable-status-codes
        retriable_status_codes: [409]
        num_retries: 2
        per_try_timeout: 0.5s
        retry_back_off: {base_interval: 0.1s, max_interval: 1s}"#,
        );
        let policy = t.retry_policy().unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), 3);
        assert_eq!(policy.rule().name(), RuleName::Full);
        // Full jitter: retry n waits uniform [0, min(1 s, 0.1 s · 2^(n−1))].
        for (n, p) in pauses(policy.rule(), 8).into_iter().enumerate() {
            assert!(p <= ms(100 * (1u64 << n)).min(ms(1000)), "retry {n}: {p:?}");
        }
        let r = t.retryable().unwrap();
        assert!(r.http_status(502) && r.http_status(504) && r.http_status(409));
        assert!(!r.http_status(500));
        assert_eq!(r.grpc_codes(), [14]);
        // A route alone: Envoy's default circuit breaker, 3 retries in flight.
        let Some(LibraryThrottle::Envoy(limit)) = t.throttle().unwrap() else {
            panic!("no Envoy limit");
        };
        assert_eq!(limit.limit(), 3);
    }

    #[test]
    fn envoy_cluster_retry_budget() {
        let t = one(
            System::Envoy,
            r#"
static_resources:
  listeners:
  - name: ingress
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          route_config:
            virtual_hosts:
            - name: inventory
              domains: ["*"]
              routes:
              - match: {prefix: /}
                route:
                  cluster: inventory
                  timeout: 3s
                  retry_policy: {retry_on: reset, num_retries: 2, per_try_timeout: 1s}
  clusters:
  - name: inventory
    circuit_breakers:
      thresholds:
      - priority: DEFAULT
        retry_budget:
          budget_percent: {value: 25.0}
          min_retry_concurrency: 5
"#,
        );
        let policy = t.retry_policy().unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), 3);
        assert_eq!(policy.deadline(), Some(Duration::from_secs(3)));
        let Some(LibraryThrottle::Envoy(limit)) = t.throttle().unwrap() else {
            panic!("no Envoy budget");
        };
        // No active requests: the floor, min_retry_concurrency.
        assert_eq!(limit.limit(), 5);
        // 40 active requests: 25 % of them.
        let _active: Vec<_> = (0..40).map(|_| limit.start_request()).collect();
        assert_eq!(limit.limit(), 10);
        // `reset` is a transport failure: no status is retried.
        assert_eq!(t.retryable(), Some(Retryable::default()));
    }

    #[test]
    fn envoy_retriable_status_codes_need_their_condition() {
        let t = envoy_route("{retry_on: 5xx, retriable_status_codes: [409], num_retries: 1}");
        let r = t.retryable().unwrap();
        assert!(r.http_status(500) && r.http_status(599));
        assert!(!r.http_status(409));
    }

    #[test]
    fn istio_route_with_destination_rule_max_retries() {
        let all = translations(
            System::Istio,
            r#"
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ratings}
spec:
  hosts: [ratings]
  http:
  - route:
    - destination: {host: ratings}
    retries: {attempts: 3, perTryTimeout: 2s, retryOn: "503,connect-failure"}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: ratings}
spec:
  host: ratings
  trafficPolicy:
    connectionPool:
      http: {maxRetries: 7}
"#,
        );
        let t = all
            .iter()
            .find(|t| t.max_attempts == Some(4))
            .expect("the route's policy");
        let policy = t.retry_policy().unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), 4);
        assert_eq!(policy.rule().name(), RuleName::Full);
        let Some(LibraryThrottle::Envoy(limit)) = t.throttle().unwrap() else {
            panic!("no Envoy limit");
        };
        assert_eq!(limit.limit(), 7);
        let r = t.retryable().unwrap();
        assert!(r.http_status(503) && !r.http_status(500));
    }

    #[test]
    fn linkerd_service_profile_is_bounded_by_its_budget() {
        let all = translations(
            System::Linkerd,
            r#"
apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata: {name: webapp.default.svc.cluster.local, namespace: default}
spec:
  routes:
  - name: GET /books
    condition: {method: GET, pathRegex: /books}
    isRetryable: true
  retryBudget: {retryRatio: 0.25, minRetriesPerSecond: 4, ttl: 5s}
"#,
        );
        let t = all.iter().find(|t| t.retries()).expect("a retryable route");
        assert_eq!(t.max_attempts, None);
        let clock = FakeClock::new();
        let policy = t.retry_policy_with(clock.clone()).unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), u32::MAX);
        assert_eq!(policy.rule().name(), RuleName::Immediate);
        let Some(LibraryThrottle::Linkerd(budget)) = t.throttle_with(clock).unwrap() else {
            panic!("no Linkerd budget");
        };
        // No traffic yet: the reserve, 4 retries per second over 5 s.
        assert_eq!(budget.available(), 20.0);
        // Response classes are not statuses.
        assert_eq!(t.retryable(), None);
    }

    #[test]
    fn linkerd_annotations() {
        let t = one(
            System::Linkerd,
            r#"
apiVersion: v1
kind: Service
metadata:
  name: books
  annotations:
    retry.linkerd.io/http: 5xx,429
    retry.linkerd.io/grpc: unavailable,deadline-exceeded
    retry.linkerd.io/limit: "3"
    retry.linkerd.io/timeout: 300ms
    timeout.linkerd.io/request: 1s
"#,
        );
        let policy = t.retry_policy().unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), 4);
        assert_eq!(policy.deadline(), Some(Duration::from_secs(1)));
        let r = t.retryable().unwrap();
        assert!(r.http_status(429) && r.http_status(503) && !r.http_status(404));
        assert_eq!(r.grpc_codes(), [4, 14]);
    }

    #[test]
    fn aws_standard_and_adaptive() {
        let all = translations(
            System::Aws,
            "[profile prod]\nretry_mode = standard\nmax_attempts = 5\n\n\
             [profile batch]\nretry_mode = adaptive\n\n[profile old]\nretry_mode = legacy\n",
        );
        let [prod, batch, old] = &all[..] else {
            panic!("{all:?}");
        };
        let policy = prod.retry_policy().unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), 5);
        assert_eq!(policy.rule().name(), RuleName::Full);
        // botocore 1.44: full jitter from 50 ms, capped at 20 s; 14 tokens a retry, 5 after
        // throttling, no timeout cost of its own.
        assert_eq!(policy.rule().max_pause(), Duration::from_secs(20));
        let Some(LibraryThrottle::AwsStandard(quota)) = prod.throttle().unwrap() else {
            panic!("no quota");
        };
        assert_eq!(quota.available(), 500);
        assert_eq!(quota.config(), AwsRetryQuotaConfig::standard_2026());
        assert!(matches!(
            batch.throttle().unwrap(),
            Some(LibraryThrottle::AwsAdaptive(..))
        ));
        assert_eq!(
            batch
                .retry_policy()
                .unwrap()
                .build()
                .unwrap()
                .max_attempts(),
            3
        );
        assert!(old.throttle().unwrap().is_none());
        assert_eq!(
            old.retry_policy().unwrap().build().unwrap().max_attempts(),
            5
        );
        let r = prod.retryable().unwrap();
        assert!(r.http_status(503) && !r.http_status(501));
    }

    #[test]
    fn resilience4j_rules() {
        let all = translations(
            System::Resilience4j,
            r#"
resilience4j:
  retry:
    instances:
      plain:
        maxAttempts: 3
        waitDuration: 200ms
      growing:
        maxAttempts: 6
        waitDuration: 100ms
        enableExponentialBackoff: true
        exponentialBackoffMultiplier: 2
        exponentialMaxWaitDuration: 5s
"#,
        );
        let plain = all.iter().find(|t| t.name.contains("plain")).unwrap();
        let policy = plain.retry_policy().unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), 3);
        assert_eq!(policy.rule().name(), RuleName::Constant);
        assert_eq!(pauses(policy.rule(), 2), [ms(200), ms(200)]);
        let growing = all.iter().find(|t| t.name.contains("growing")).unwrap();
        let policy = growing.retry_policy().unwrap().build().unwrap();
        assert_eq!(policy.max_attempts(), 6);
        // ofExponentialBackoff with a maximum: 100, 200, 400, 800, 1600 ms.
        assert_eq!(
            pauses(policy.rule(), 5),
            [ms(100), ms(200), ms(400), ms(800), ms(1600)]
        );
        assert!(growing.throttle().unwrap().is_none());
        assert_eq!(growing.retryable(), None);
    }

    #[test]
    fn a_value_the_library_refuses_is_an_error() {
        let mut t = one(
            System::Grpc,
            r#"{"methodConfig": [{"name": [{"service": "s"}],
              "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "2s",
              "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
        );
        t.backoff.cap = ms(10);
        assert!(matches!(
            t.retry_policy(),
            Err(BuildError::Rule(InvalidRule::CapBelowBase { .. }))
        ));
        t.throttle = Some(Throttle {
            kind: "mystery",
            params: Vec::new(),
        });
        assert!(matches!(
            t.throttle(),
            Err(BuildError::UnknownThrottle(k)) if k == "mystery"
        ));
    }
}
