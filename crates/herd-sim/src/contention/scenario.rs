//! The contention scenario as written in TOML (`model = "contention"`).
use herd::RuleName;
use serde::{Deserialize, Serialize};

use super::Contention;
use crate::error::ScenarioError;
use crate::fields;
use crate::limits::Limits;

/// A contention scenario (`model = "contention"`). Every field is optional; the defaults are
/// the article's: 100 clients, delays N(10 ms, 2 ms), `base` 5 ms, `cap` 2 s, its five rules,
/// and results averaged over 100 seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContentionScenario {
    /// `"contention"` (optional when the scenario is read by this model directly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The first seed; a point averages seeds `seed .. seed + runs`.
    pub seed: u64,
    /// Runs (seeds) averaged per rule and client count.
    pub runs: u32,
    /// The clients.
    pub clients: ContentionClients,
    /// The network.
    pub network: Network,
    /// The rules to compare and their parameters.
    pub retry: ContentionRetry,
}

/// `[clients]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContentionClients {
    /// Clients, each updating the row once.
    pub count: u64,
}

/// `[network]`: the delay of one hop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Network {
    /// Mean delay of one hop, in milliseconds.
    pub delay_mean_ms: f64,
    /// Standard deviation of the delay, in milliseconds.
    pub delay_sd_ms: f64,
}

/// `[retry]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContentionRetry {
    /// The rules to compare (`immediate` is the article's "no backoff").
    #[serde(with = "crate::rule_serde::list")]
    pub rules: Vec<RuleName>,
    /// `base` of the exponential family, in milliseconds.
    pub base_ms: f64,
    /// `cap`, the largest pause, in milliseconds.
    pub cap_ms: f64,
    /// The pause of `constant`, in milliseconds.
    pub pause_ms: f64,
    /// Whose conventions the rules and delays follow: herd's (the default) or those of the
    /// simulator published with the article (`"brooker-2015"`).
    #[serde(skip_serializing_if = "Convention::is_herd")]
    pub convention: Convention,
}

/// Whose conventions a contention run follows (`retry.convention`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Convention {
    /// herd's: the exponential family's first pause is `base` (`base · 2^(k−1)` after the
    /// k-th rejection), and a negative delay is truncated to 0.
    #[default]
    #[serde(rename = "herd")]
    Herd,
    /// The article's simulator (`aws-samples/aws-arch-backoff-simulator`,
    /// `src/backoff_simulator.py`): `Backoff.expo(n)` is `min(cap, 2^n · base)` with `n` the
    /// rejections so far, so `exponential`, `equal` and `full` pause `min(cap, base · 2^k)`
    /// after the k-th rejection (the first is 2 · base), while `ExpoBackoffDecorr` starts
    /// from `base` as herd's `decorrelated` does; `Net.delay` is `abs(normalvariate(mean,
    /// sd))`, folding a negative draw.
    #[serde(rename = "brooker-2015")]
    Brooker2015,
}

impl Convention {
    fn is_herd(&self) -> bool {
        *self == Convention::Herd
    }
}

impl Default for ContentionScenario {
    fn default() -> Self {
        Self {
            model: None,
            seed: 1,
            runs: 100,
            clients: ContentionClients { count: 100 },
            network: Network {
                delay_mean_ms: 10.0,
                delay_sd_ms: 2.0,
            },
            retry: ContentionRetry::default(),
        }
    }
}

impl Default for ContentionClients {
    fn default() -> Self {
        ContentionScenario::default().clients
    }
}

impl Default for Network {
    fn default() -> Self {
        ContentionScenario::default().network
    }
}

impl Default for ContentionRetry {
    fn default() -> Self {
        Self {
            rules: vec![
                RuleName::Immediate,
                RuleName::Exponential,
                RuleName::Equal,
                RuleName::Full,
                RuleName::Decorrelated,
            ],
            base_ms: 5.0,
            cap_ms: 2000.0,
            pause_ms: 10.0,
            convention: Convention::Herd,
        }
    }
}

impl ContentionScenario {
    /// Parses a scenario file (`model = "contention"` may be present) and checks it.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field and the line.
    pub fn from_toml_str(text: &str) -> Result<Self, ScenarioError> {
        fields::parse(text, |s: &Self| {
            Contention::new(s, &Limits::default()).map(|_| ())
        })
    }
}
