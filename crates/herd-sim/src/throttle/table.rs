//! `[retry.throttle]` as written, and its check: a known kind, only that kind's settings,
//! each in range (the library's own checks, named by the scenario's field).
use std::time::Duration;

use herd::budget::{BudgetConfig, GrpcThrottle, GrpcThrottleConfig, RetryBudget};
use herd::clock::FakeClock;
use herd::throttle::{
    AdmissionControl, AdmissionControlConfig, AwsRetryQuota, AwsRetryQuotaConfig,
    EnvoyRetryBudgetConfig, EnvoyRetryLimit, EnvoyRetryLimitConfig, SreThrottle, SreThrottleConfig,
};
use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;

/// `[retry.throttle]` as written: a `kind` and that kind's settings (absent: its system's
/// default).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThrottleTable {
    /// The system: `sre-adaptive`, `grpc-adaptive`, `aws-standard`, `aws-standard-2026`,
    /// `aws-adaptive`, `envoy-budget`, `envoy-max-retries`, `envoy-admission`, `grpc` or
    /// `ratio`.
    pub kind: String,
    /// SRE: K, the multiplier of accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<f64>,
    /// SRE: added to the denominator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding: Option<f64>,
    /// SRE: history that counts, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_s: Option<f64>,
    /// SRE: bins the history is kept in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<u32>,
    /// AWS: tokens in the quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
    /// AWS: cost of a retry after a transient error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_cost: Option<u32>,
    /// AWS: tokens a first-attempt success adds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_retry_increment: Option<u32>,
    /// Envoy: retries in flight as a percentage of active requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_percent: Option<f64>,
    /// Envoy: retries in flight allowed whatever the traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_retry_concurrency: Option<u32>,
    /// Envoy: retries in flight without a budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Envoy admission control: history that counts, in whole seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_window_s: Option<f64>,
    /// Envoy admission control: success rate in percent below which it rejects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sr_threshold: Option<f64>,
    /// Envoy admission control: the curve's steepness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggression: Option<f64>,
    /// Envoy admission control: requests per second below which it never rejects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rps_threshold: Option<u32>,
    /// Envoy admission control: the highest rejection probability, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rejection_probability: Option<f64>,
    /// gRPC: bucket size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<f64>,
    /// gRPC: tokens a success earns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ratio: Option<f64>,
    /// Ratio: retries allowed per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_ratio: Option<f64>,
    /// Ratio: retries per second of reserve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_retries_per_second: Option<u32>,
    /// Ratio: how long a request's deposit counts, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_s: Option<f64>,
}

/// The kinds, as `kind` names them.
pub const KINDS: [&str; 10] = [
    "sre-adaptive",
    "grpc-adaptive",
    "aws-standard",
    "aws-standard-2026",
    "aws-adaptive",
    "envoy-budget",
    "envoy-max-retries",
    "envoy-admission",
    "grpc",
    "ratio",
];

/// A checked `[retry.throttle]`: the library's settings, ready to build one throttle per run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ThrottleSpec {
    Sre(SreThrottleConfig),
    Aws(AwsRetryQuotaConfig),
    AwsAdaptive,
    Envoy(EnvoyRetryLimitConfig),
    Admission(AdmissionControlConfig),
    Grpc(GrpcThrottleConfig),
    Ratio(BudgetConfig),
}

fn seconds(field: &str, s: f64) -> Result<Duration, ScenarioError> {
    if !s.is_finite() || !(0.0..=86_400.0).contains(&s) {
        return Err(ScenarioError::field(
            format!("retry.throttle.{field}"),
            format!("must be a number of seconds between 0 and 86400, got {s}"),
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

impl ThrottleTable {
    /// The settings given, by name.
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        let mut note = |name: &'static str, set: bool| {
            if set {
                given.push(name);
            }
        };
        note("k", self.k.is_some());
        note("padding", self.padding.is_some());
        note("history_s", self.history_s.is_some());
        note("bins", self.bins.is_some());
        note("capacity", self.capacity.is_some());
        note("retry_cost", self.retry_cost.is_some());
        note("no_retry_increment", self.no_retry_increment.is_some());
        note("budget_percent", self.budget_percent.is_some());
        note(
            "min_retry_concurrency",
            self.min_retry_concurrency.is_some(),
        );
        note("max_retries", self.max_retries.is_some());
        note("sampling_window_s", self.sampling_window_s.is_some());
        note("sr_threshold", self.sr_threshold.is_some());
        note("aggression", self.aggression.is_some());
        note("rps_threshold", self.rps_threshold.is_some());
        note(
            "max_rejection_probability",
            self.max_rejection_probability.is_some(),
        );
        note("max_tokens", self.max_tokens.is_some());
        note("token_ratio", self.token_ratio.is_some());
        note("retry_ratio", self.retry_ratio.is_some());
        note(
            "min_retries_per_second",
            self.min_retries_per_second.is_some(),
        );
        note("ttl_s", self.ttl_s.is_some());
        given
    }

    /// Checks the table: a known kind, only its settings, each in range.
    pub(crate) fn check(&self) -> Result<ThrottleSpec, ScenarioError> {
        let kind = self.kind.as_str();
        let allowed: &[&str] = match kind {
            "sre-adaptive" | "grpc-adaptive" => &["k", "padding", "history_s", "bins"],
            "aws-standard" | "aws-standard-2026" => {
                &["capacity", "retry_cost", "no_retry_increment"]
            }
            "aws-adaptive" => &[],
            "envoy-budget" => &["budget_percent", "min_retry_concurrency"],
            "envoy-max-retries" => &["max_retries"],
            "envoy-admission" => &[
                "sampling_window_s",
                "sr_threshold",
                "aggression",
                "rps_threshold",
                "max_rejection_probability",
            ],
            "grpc" => &["max_tokens", "token_ratio"],
            "ratio" => &["retry_ratio", "min_retries_per_second", "ttl_s"],
            _ => {
                return Err(ScenarioError::field(
                    "retry.throttle.kind",
                    format!("expected one of {}, got `{kind}`", KINDS.join(", ")),
                ));
            }
        };
        if let Some(field) = self.given().into_iter().find(|f| !allowed.contains(f)) {
            return Err(ScenarioError::field(
                format!("retry.throttle.{field}"),
                if allowed.is_empty() {
                    format!("is not a setting of {kind}, which has none")
                } else {
                    format!(
                        "is not a setting of {kind} (its settings: {})",
                        allowed.join(", ")
                    )
                },
            ));
        }
        let library = |e: herd::throttle::InvalidThrottle| {
            ScenarioError::field(format!("retry.throttle.{}", e.field), e.to_string())
        };
        let spec = match kind {
            "sre-adaptive" | "grpc-adaptive" => {
                let mut c = if kind == "sre-adaptive" {
                    SreThrottleConfig::book()
                } else {
                    SreThrottleConfig::grpc_rls()
                };
                c.k = self.k.unwrap_or(c.k);
                c.padding = self.padding.unwrap_or(c.padding);
                c.bins = self.bins.unwrap_or(c.bins);
                if let Some(h) = self.history_s {
                    c.history = seconds("history_s", h)?;
                }
                c.seed = Some(0);
                SreThrottle::new(c, FakeClock::new()).map_err(library)?;
                ThrottleSpec::Sre(c)
            }
            "aws-standard" | "aws-standard-2026" => {
                let mut c = if kind == "aws-standard" {
                    AwsRetryQuotaConfig::standard()
                } else {
                    AwsRetryQuotaConfig::standard_2026()
                };
                c.capacity = self.capacity.unwrap_or(c.capacity);
                c.retry_cost = self.retry_cost.unwrap_or(c.retry_cost);
                c.no_retry_increment = self.no_retry_increment.unwrap_or(c.no_retry_increment);
                AwsRetryQuota::new(c).map_err(library)?;
                ThrottleSpec::Aws(c)
            }
            "aws-adaptive" => ThrottleSpec::AwsAdaptive,
            "envoy-budget" => {
                let mut b = EnvoyRetryBudgetConfig::default();
                b.budget_percent = self.budget_percent.unwrap_or(b.budget_percent);
                b.min_retry_concurrency = self
                    .min_retry_concurrency
                    .unwrap_or(b.min_retry_concurrency);
                let c = EnvoyRetryLimitConfig::budget(b);
                EnvoyRetryLimit::new(c).map_err(library)?;
                ThrottleSpec::Envoy(c)
            }
            "envoy-max-retries" => {
                let c = EnvoyRetryLimitConfig::max_retries(self.max_retries.unwrap_or(3));
                ThrottleSpec::Envoy(c)
            }
            "envoy-admission" => {
                let mut c = AdmissionControlConfig::default();
                if let Some(w) = self.sampling_window_s {
                    c.sampling_window = seconds("sampling_window_s", w)?;
                }
                c.sr_threshold = self.sr_threshold.unwrap_or(c.sr_threshold);
                c.aggression = self.aggression.unwrap_or(c.aggression);
                c.rps_threshold = self.rps_threshold.unwrap_or(c.rps_threshold);
                c.max_rejection_probability = self
                    .max_rejection_probability
                    .unwrap_or(c.max_rejection_probability);
                c.seed = Some(0);
                AdmissionControl::new(c, FakeClock::new()).map_err(|e| {
                    // The library names `sampling_window`; the scenario says it in seconds.
                    let field = if e.field == "sampling_window" {
                        "sampling_window_s"
                    } else {
                        e.field
                    };
                    ScenarioError::field(format!("retry.throttle.{field}"), e.to_string())
                })?;
                ThrottleSpec::Admission(c)
            }
            "grpc" => {
                let mut c = GrpcThrottleConfig::default();
                c.max_tokens = self.max_tokens.unwrap_or(c.max_tokens);
                c.token_ratio = self.token_ratio.unwrap_or(c.token_ratio);
                GrpcThrottle::new(c).map_err(|e| budget_error(&e))?;
                ThrottleSpec::Grpc(c)
            }
            _ => {
                let mut linkerd = herd::throttle::LinkerdRetryBudget::default();
                linkerd.retry_ratio = self.retry_ratio.unwrap_or(linkerd.retry_ratio);
                linkerd.min_retries_per_second = self
                    .min_retries_per_second
                    .unwrap_or(linkerd.min_retries_per_second);
                if let Some(t) = self.ttl_s {
                    linkerd.ttl = seconds("ttl_s", t)?;
                }
                let c = linkerd.budget_config();
                RetryBudget::new(c, FakeClock::new()).map_err(|e| budget_error(&e))?;
                ThrottleSpec::Ratio(c)
            }
        };
        Ok(spec)
    }
}

impl ThrottleTable {
    /// The table with every setting of its kind written out (the given ones, the system's
    /// defaults for the rest), so that `herd sweep --set retry.throttle.k=…` finds the path.
    pub(crate) fn filled(&self) -> Result<Self, ScenarioError> {
        let mut t = Self {
            kind: self.kind.clone(),
            ..Self::default()
        };
        match self.check()? {
            ThrottleSpec::Sre(c) => {
                t.k = Some(c.k);
                t.padding = Some(c.padding);
                t.history_s = Some(c.history.as_secs_f64());
                t.bins = Some(c.bins);
            }
            ThrottleSpec::Aws(c) => {
                t.capacity = Some(c.capacity);
                t.retry_cost = Some(c.retry_cost);
                t.no_retry_increment = Some(c.no_retry_increment);
            }
            ThrottleSpec::AwsAdaptive => {}
            ThrottleSpec::Envoy(c) => match c.retry_budget {
                Some(b) => {
                    t.budget_percent = Some(b.budget_percent);
                    t.min_retry_concurrency = Some(b.min_retry_concurrency);
                }
                None => t.max_retries = Some(c.max_retries),
            },
            ThrottleSpec::Admission(c) => {
                t.sampling_window_s = Some(c.sampling_window.as_secs_f64());
                t.sr_threshold = Some(c.sr_threshold);
                t.aggression = Some(c.aggression);
                t.rps_threshold = Some(c.rps_threshold);
                t.max_rejection_probability = Some(c.max_rejection_probability);
            }
            ThrottleSpec::Grpc(c) => {
                t.max_tokens = Some(c.max_tokens);
                t.token_ratio = Some(c.token_ratio);
            }
            ThrottleSpec::Ratio(c) => {
                t.retry_ratio = Some(c.percent / 100.0);
                t.min_retries_per_second = Some(c.min_per_sec);
                t.ttl_s = Some(c.window.as_secs_f64());
            }
        }
        Ok(t)
    }
}

/// A scenario tree with its `[retry.throttle]` (if any) filled in by
/// [`ThrottleTable::filled`]: what every model's `sweepable` hands a sweep.
pub(crate) fn fill_tree(mut tree: toml::Value) -> Result<toml::Value, ScenarioError> {
    let Some(slot) = tree
        .get_mut("retry")
        .and_then(|r| r.as_table_mut())
        .and_then(|r| r.get_mut("throttle"))
    else {
        return Ok(tree);
    };
    let table: ThrottleTable = slot
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| ScenarioError::field("retry.throttle", e.to_string()))?;
    *slot = toml::Value::try_from(table.filled()?)
        .map_err(|e| ScenarioError::general(format!("cannot write the throttle as TOML: {e}")))?;
    Ok(tree)
}

/// A library budget error, named by the scenario's field.
fn budget_error(e: &herd::budget::InvalidBudget) -> ScenarioError {
    use herd::budget::InvalidBudget;
    let field = match e {
        InvalidBudget::Percent(_) => "retry_ratio",
        InvalidBudget::Window(_) => "ttl_s",
        InvalidBudget::MaxTokens(_) => "max_tokens",
        _ => "token_ratio",
    };
    ScenarioError::field(format!("retry.throttle.{field}"), e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<ThrottleSpec, ScenarioError> {
        let t: ThrottleTable =
            toml::from_str(text).map_err(|e| ScenarioError::general(e.to_string()))?;
        t.check()
    }

    #[test]
    fn every_kind_checks_with_its_defaults() {
        for kind in KINDS {
            assert!(table(&format!("kind = \"{kind}\"")).is_ok(), "{kind}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        let err = |text: &str| table(text).unwrap_err().to_string();
        assert!(err("kind = \"nope\"").starts_with("retry.throttle.kind"));
        let e = err("kind = \"aws-standard\"\nk = 2.0");
        assert!(
            e.starts_with("retry.throttle.k") && e.contains("aws-standard"),
            "{e}"
        );
        assert!(err("kind = \"sre-adaptive\"\nk = 0.5").starts_with("retry.throttle.k"));
        assert!(
            err("kind = \"envoy-budget\"\nbudget_percent = 200.0")
                .starts_with("retry.throttle.budget_percent")
        );
        assert!(
            err("kind = \"envoy-admission\"\nsampling_window_s = 0.5")
                .starts_with("retry.throttle.sampling_window_s")
        );
        assert!(err("kind = \"grpc\"\nmax_tokens = 0.0").starts_with("retry.throttle.max_tokens"));
        assert!(err("kind = \"ratio\"\nttl_s = -1.0").starts_with("retry.throttle.ttl_s"));
        assert!(err("kind = \"aws-adaptive\"\nk = 1.0").contains("which has none"));
    }

    #[test]
    fn settings_reach_the_library() {
        assert_eq!(
            table("kind = \"ratio\"\nretry_ratio = 0.1\nmin_retries_per_second = 0\nttl_s = 5.0")
                .unwrap(),
            ThrottleSpec::Ratio(
                BudgetConfig::default()
                    .percent(10.0)
                    .min_per_sec(0)
                    .window(Duration::from_secs(5))
            )
        );
        let ThrottleSpec::Aws(c) = table("kind = \"aws-standard-2026\"\ncapacity = 30").unwrap()
        else {
            panic!("aws");
        };
        assert_eq!((c.capacity, c.retry_cost), (30, 14));
    }
}
