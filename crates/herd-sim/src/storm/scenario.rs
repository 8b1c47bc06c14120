//! Scenario files: what the user writes, every field optional, unknown fields rejected.
//!
//! A [`Scenario`] is plain data as read from TOML (or built in code). It is checked once, when a
//! [`Simulation`](crate::Simulation) is built from it; [`Scenario::from_toml_str`] parses *and*
//! checks, so a bad file is reported with the field and the line.
//!
//! The default scenario (docs/model.md): 2000 clients in a burst at t = 0, an outage over
//! [0 s, 10 s), step = window = 100 ms, capacity 50 per window, refusal cost 0, base 100 ms,
//! cap 20 s, constant pause 1 s, horizon 3600 s, seed 1, the six classic rules, pauses in
//! whole steps (`pauses = "steps"`).
//!
//! # Examples
//!
//! ```
//! use herd_sim::{Limits, Scenario};
//!
//! let read = |text| Scenario::from_toml_str(text, &Limits::default(), |_| {});
//! let scenario = read("[server]\nrefusal_cost = 0.1\n")?;
//! assert_eq!(scenario.server.refusal_cost, 0.1);
//! assert_eq!(scenario.clients.count, 2000); // everything else is the default
//!
//! let err = read("[server]\nrefusal_cost = 1.5\n").unwrap_err();
//! assert_eq!(err.to_string(), "server.refusal_cost (line 2): must be at least 0 and below 1, got 1.5");
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
use herd::{RuleName, RuleParams};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Field;

/// A storm scenario: the clients, the server and the retry rules to compare.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    /// Seed of the world's generator (every random draw of a run comes from it).
    pub seed: u64,
    /// How long to simulate, in seconds.
    pub horizon_s: f64,
    /// The time step in milliseconds; every pause is a whole number of steps, at least one.
    pub step_ms: f64,
    /// The server's accounting window in milliseconds, a multiple of `step_ms`.
    pub window_ms: f64,
    /// How the rules draw their pauses: in whole steps (the default) or in nanoseconds,
    /// rounded up to whole steps (docs/model.md, "Pauses in whole steps or continuous").
    pub pauses: Pauses,
    /// The clients.
    pub clients: Clients,
    /// The server.
    pub server: Server,
    /// The retry rules and their parameters.
    pub retry: Retry,
}

/// `pauses`: the unit in which the rules draw their pauses (docs/model.md).
///
/// Written `"steps"` or `"continuous"` in a scenario; anything else is an error naming
/// `pauses`.
///
/// # Examples
///
/// ```
/// use herd_sim::{Limits, Pauses, Scenario};
///
/// let read = |text| Scenario::from_toml_str(text, &Limits::default(), |_| {});
/// assert_eq!(Scenario::default().pauses, Pauses::Steps);
/// let s = read("pauses = \"continuous\"\n")?;
/// assert_eq!(s.pauses, Pauses::Continuous);
/// let err = read("pauses = \"ticks\"\n").unwrap_err();
/// assert_eq!(err.field_name(), Some("pauses"));
/// # Ok::<(), herd_sim::ScenarioError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pauses {
    /// The rule runs with `base`, `cap` and `pause` in whole steps (one unit, one step), so
    /// its integer draws are whole steps; at least one step.
    #[default]
    Steps,
    /// The rule runs in nanoseconds; each pause is rounded up to whole steps, at least one.
    Continuous,
}

impl Pauses {
    /// Both modes, the default first.
    pub const ALL: [Pauses; 2] = [Pauses::Steps, Pauses::Continuous];

    /// The name as written in scenarios and on the command line.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Pauses::Steps => "steps",
            Pauses::Continuous => "continuous",
        }
    }
}

// Parsed from `steps` or `continuous` (any case); anything else is an error naming `pauses`.
crate::error::named_by_word!(Pauses, "pauses", |s| format!(
    "expected \"steps\" or \"continuous\", got \"{s}\""
));

impl Serialize for Pauses {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Pauses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<Pauses>()
            .map_err(|e| serde::de::Error::custom(e.message()))
    }
}

/// `[clients]`: who calls, when, and when they give up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Clients {
    /// Clients in the burst.
    pub count: u64,
    /// The time of the burst's first attempt, in seconds.
    pub start_s: f64,
    /// Open-loop new requests per second on top of the burst, from `start_s` on (0 = none);
    /// counted exactly as the decimal written, so at most nine digits after the point.
    pub arrivals_per_s: f64,
    /// Give up after this many attempts (0 = no limit).
    pub max_attempts: u32,
    /// Give up this long after the first attempt, in seconds (0 = never).
    pub deadline_s: f64,
    /// The longest `Retry-After` a client honours, in seconds (0 = any): a longer one makes it
    /// give up, as herd's `max_server_delay` does.
    pub max_server_delay_s: f64,
    /// `[clients.latency]`: how long each retry takes to reach the server (none by default).
    pub latency: Latency,
}

/// `[clients.latency]`: a random delay added to every retry, the network's noise.
///
/// A retry reaches the server after its wait plus a delay drawn for that attempt, rounded to
/// the nearest step (docs/model.md, "Latency of an attempt"). Zero mean and zero `sd_ms`, the
/// default, is no latency at all; `sd_ms = 0` is a constant delay and draws nothing.
///
/// # Examples
///
/// ```
/// use herd_sim::{LatencyDistribution, Limits, Scenario};
///
/// let read = |text| Scenario::from_toml_str(text, &Limits::default(), |_| {});
/// let s = read("[clients.latency]\ndistribution = \"lognormal\"\nmean_ms = 50\nsd_ms = 30\n")?;
/// assert_eq!(s.clients.latency.distribution, LatencyDistribution::Lognormal);
///
/// let err = read("[clients.latency]\nsd_ms = -1\n").unwrap_err();
/// assert_eq!(err.field_name(), Some("clients.latency.sd_ms"));
/// # Ok::<(), herd_sim::ScenarioError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Latency {
    /// The delay's law: `normal` (truncated at 0) or `lognormal`.
    pub distribution: LatencyDistribution,
    /// The mean delay, in milliseconds (of the untruncated normal; of the lognormal).
    pub mean_ms: f64,
    /// The delay's standard deviation, in milliseconds (0: every retry delayed by the mean).
    pub sd_ms: f64,
}

/// The law of a retry's latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LatencyDistribution {
    /// `max(0, X)`, X normal with the given mean and standard deviation.
    #[default]
    Normal,
    /// Log-normal with the given mean and standard deviation (of the delay, not its log).
    Lognormal,
}

/// `[server]`: what the server can do and when it is down.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Server {
    /// Answers per window.
    pub capacity: u64,
    /// A refusal's share of an answer's work, `0 <= r < 1`.
    pub refusal_cost: f64,
    /// A step with more arrivals than this serves none of them (0 = off).
    pub collapse_above: u64,
    /// `[start_s, end_s)` intervals in which every attempt fails.
    #[serde(deserialize_with = "crate::fields::outage_pairs")]
    pub outages: Vec<[f64; 2]>,
    /// After an outage, capacity ramps linearly from 0 over this many seconds (0 = at once).
    pub warmup_s: f64,
    /// Refusals carry this `Retry-After` in seconds (0 = none); clients honour it as herd does
    /// (`herd::server_delay::decide`: the larger of it and the pause, plus up to 10 %).
    pub retry_after_s: f64,
    /// A failed attempt is known only this long after it was sent, in seconds.
    pub timeout_s: f64,
}

/// `[retry]`: the rules to compare and their parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Retry {
    /// The rules to run, one result each.
    #[serde(with = "crate::rule_serde::list")]
    pub rules: Vec<RuleName>,
    /// `base` of the exponential family, in milliseconds.
    pub base_ms: f64,
    /// `cap`, the largest pause, in milliseconds.
    pub cap_ms: f64,
    /// The pause of `constant`, in milliseconds.
    pub pause_ms: f64,
    /// Growth per failure of `grpc` (at least 1), `grpc-retry` and `randomized` (above 0);
    /// the doubling rules always double.
    pub multiplier: f64,
    /// The ± jitter fraction of `grpc`, `grpc-retry` and `randomized`, in `[0, 1]`.
    pub jitter: f64,
    /// A retry budget shared by all clients, as a percentage of first attempts (0 = none).
    ///
    /// It is `herd::budget::RetryBudget` on simulated time: each first attempt deposits
    /// `budget_percent / 100` of a retry, deposits count for 10 s, there is no reserve; a
    /// retry the budget denies is a give-up (counted in `gave_up` and `denied_by_budget`).
    pub budget_percent: f64,
    /// `[retry.throttle]`: a throttle or budget a real system ships (`herd::throttle`),
    /// shared by all clients, instead of `budget_percent` (agent engine only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttle: Option<crate::throttle::ThrottleTable>,
}

impl Default for Scenario {
    fn default() -> Self {
        Self {
            seed: 1,
            horizon_s: 3600.0,
            step_ms: 100.0,
            window_ms: 100.0,
            pauses: Pauses::Steps,
            clients: Clients::default(),
            server: Server::default(),
            retry: Retry::default(),
        }
    }
}

impl Default for Clients {
    fn default() -> Self {
        Self {
            count: 2000,
            start_s: 0.0,
            arrivals_per_s: 0.0,
            max_attempts: 0,
            deadline_s: 0.0,
            max_server_delay_s: 0.0,
            latency: Latency::default(),
        }
    }
}

impl Default for Server {
    fn default() -> Self {
        Self {
            capacity: 50,
            refusal_cost: 0.0,
            collapse_above: 0,
            outages: vec![[0.0, 10.0]],
            warmup_s: 0.0,
            retry_after_s: 0.0,
            timeout_s: 0.0,
        }
    }
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            rules: RuleName::CLASSIC.to_vec(),
            base_ms: 100.0,
            cap_ms: 20_000.0,
            pause_ms: 1000.0,
            multiplier: RuleParams::default().multiplier,
            jitter: RuleParams::default().jitter,
            budget_percent: 0.0,
            throttle: None,
        }
    }
}

impl Scenario {
    /// `clients.count`: the clients of the burst (also named when a run would take too many
    /// attempts or too much memory).
    pub const CLIENTS_COUNT: Field = Field::new("clients.count");
    /// `server.refusal_cost`: the share of an answer a refusal costs.
    pub const REFUSAL_COST: Field = Field::new("server.refusal_cost");
    /// `server.outages`: the outages, `[start, end]` in seconds.
    pub const OUTAGES: Field = Field::new("server.outages");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_default() {
        assert_eq!(
            Scenario::from_toml_str("", &crate::Limits::default(), |_| {}).unwrap(),
            Scenario::default()
        );
    }

    #[test]
    fn unknown_field_is_rejected_with_its_line() {
        let err = Scenario::from_toml_str(
            "seed = 2\n[server]\ncapacityy = 3\n",
            &crate::Limits::default(),
            |_| {},
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("line 3: unknown field `capacityy`"),
            "{msg}"
        );
    }

    #[test]
    fn type_error_names_the_field() {
        let err = Scenario::from_toml_str(
            "[server]\ncapacity = -5\n",
            &crate::Limits::default(),
            |_| {},
        )
        .unwrap_err();
        assert_eq!(err.field_name(), Some("server.capacity"));
        assert_eq!(err.line(), Some(2));
        assert!(!err.to_string().contains('\n'));
    }

    #[test]
    fn unknown_rule_is_named() {
        let err = Scenario::from_toml_str(
            "[retry]\nrules = [\"full\", \"fancy\"]\n",
            &crate::Limits::default(),
            |_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown rule `fancy`"), "{err}");
        assert_eq!(err.line(), Some(2));
    }

    #[test]
    fn integers_are_accepted_for_seconds() {
        let s = Scenario::from_toml_str(
            "horizon_s = 60\n[server]\noutages = [[0, 5]]\n",
            &crate::Limits::default(),
            |_| {},
        )
        .unwrap();
        assert_eq!(s.horizon_s, 60.0);
        assert_eq!(s.server.outages, vec![[0.0, 5.0]]);
    }
}
