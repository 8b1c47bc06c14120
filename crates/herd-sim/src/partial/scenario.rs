//! The partial-failure scenario as written in TOML (`model = "partial-failure"`).
use serde::{Deserialize, Serialize};

use crate::throttle::ThrottleTable;

/// A partial-failure scenario. Every field is optional; the defaults are the experiment of
/// Marc Brooker's "Fixing retries with token buckets and circuit breakers" (2022): 100
/// clients at 10 calls a second each for 10 s, a 10 ms mean network hop, and his four
/// strategies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PartialScenario {
    /// `"partial-failure"` (optional when the scenario is read by this model directly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The first seed.
    pub seed: u64,
    /// Calls start in `(0, horizon_s]`; every call started runs to its end.
    pub horizon_s: f64,
    /// The chance that the server fails an attempt, whatever the load: in `[0, 1]`.
    pub failure_rate: f64,
    /// The clients.
    pub clients: PartialClients,
    /// The network.
    pub network: PartialNetwork,
    /// The strategies compared, in order.
    pub strategies: Vec<Strategy>,
}

/// `[clients]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PartialClients {
    /// Clients, each with its own Poisson stream of calls and its own retry state.
    pub count: u64,
    /// Calls a second of all clients together, split evenly: each client starts calls as a
    /// Poisson process of `calls_per_s / count` a second.
    pub calls_per_s: f64,
}

/// `[network]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PartialNetwork {
    /// Mean of one hop's exponential delay, in milliseconds (0: no delay).
    pub mean_ms: f64,
}

/// `[[strategies]]`: how a client retries. At most one of `token_bucket`, `breaker` and
/// `throttle`; none of them: retries limited by `max_attempts` only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Strategy {
    /// The name the results carry.
    pub name: String,
    /// Attempts per call, the first included (1: no retries; 0: no limit, only with a
    /// `token_bucket`, whose tokens bound the retries).
    #[serde(default = "four")]
    pub max_attempts: u32,
    /// The pause before a call's first retry, in milliseconds, doubled for each further retry
    /// of the call (Brooker's `base_backoff`; 0 by default, as in his figures).
    #[serde(default)]
    pub backoff_ms: f64,
    /// Whose state the gate is: each client's own (`"client"`, the default, as in Brooker's
    /// code and in a real client library) or one for all clients (`"shared"`).
    #[serde(default)]
    pub scope: Scope,
    /// Brooker's token bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_bucket: Option<TokenBucketTable>,
    /// Brooker's breaker of retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerTable>,
    /// A throttle or budget a real system ships (`[retry.throttle]`'s table, the library's
    /// types).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<ThrottleTable>,
}

fn four() -> u32 {
    4
}

/// Whose state a strategy's gate is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Each client its own.
    #[default]
    Client,
    /// One for all clients.
    Shared,
}

/// `token_bucket`: Brooker's adaptive retries (`retry_sim/retry_strategy.py`,
/// `AdaptiveRetryStrategy`): the bucket starts full at `size`; a call adds `per_call`
/// (capped at `size`); a retry is allowed when the bucket holds *more than* one token, and
/// takes one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokenBucketTable {
    /// Tokens the bucket holds at most, and starts with.
    pub size: f64,
    /// Tokens a call adds.
    pub per_call: f64,
    /// When a call adds them: at its start (`"call-start"`, his code) or when it succeeds
    /// (`"success"`, his essay).
    pub deposit: Deposit,
}

/// When a call adds its tokens to Brooker's bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Deposit {
    /// When the call starts (`AdaptiveRetryStrategy.start`, called by `Call.start`).
    #[default]
    CallStart,
    /// When the call succeeds (the essay: "If it succeeds, it drops part of a token into a
    /// limited-size token bucket").
    Success,
}

impl Default for TokenBucketTable {
    fn default() -> Self {
        Self {
            size: 5.0,
            per_call: 0.1,
            deposit: Deposit::CallStart,
        }
    }
}

/// `breaker`: Brooker's breaker of retries (`CircuitBreakerRetryStrategy`): it counts calls
/// (at their start) and failed attempts over the whole run and allows a retry only while
/// `failures / calls` is at most `max_failure_ratio`; first attempts always go.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BreakerTable {
    /// The ratio of failed attempts to calls above which retries stop.
    pub max_failure_ratio: f64,
}

impl Default for BreakerTable {
    fn default() -> Self {
        Self {
            max_failure_ratio: 0.1,
        }
    }
}

impl Strategy {
    /// A strategy of `max_attempts` attempts and no gate.
    #[must_use]
    pub fn attempts(name: &str, max_attempts: u32) -> Self {
        Self {
            name: name.to_owned(),
            max_attempts,
            backoff_ms: 0.0,
            scope: Scope::Client,
            token_bucket: None,
            breaker: None,
            throttle: None,
        }
    }

    /// Brooker's four, as his `run_sims` names them: `no_retries`, `three_retries`,
    /// `adaptive_10pct` (the token bucket, no attempt limit) and `breaker_10pct` (three
    /// retries under the breaker).
    #[must_use]
    pub fn brookers() -> Vec<Self> {
        vec![
            Self::attempts("no_retries", 1),
            Self::attempts("three_retries", 4),
            Self {
                token_bucket: Some(TokenBucketTable::default()),
                ..Self::attempts("adaptive_10pct", 0)
            },
            Self {
                breaker: Some(BreakerTable::default()),
                ..Self::attempts("breaker_10pct", 4)
            },
        ]
    }
}

impl Default for PartialScenario {
    fn default() -> Self {
        Self {
            model: None,
            seed: 1,
            horizon_s: 10.0,
            failure_rate: 0.1,
            clients: PartialClients {
                count: 100,
                calls_per_s: 1000.0,
            },
            network: PartialNetwork { mean_ms: 10.0 },
            strategies: Strategy::brookers(),
        }
    }
}

impl Default for PartialClients {
    fn default() -> Self {
        PartialScenario::default().clients
    }
}

impl Default for PartialNetwork {
    fn default() -> Self {
        PartialScenario::default().network
    }
}
