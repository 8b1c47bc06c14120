//! The three faults and the traffic they meet, checked at the edge: every field out of range
//! is refused with its name (the CLI's flag of the same name).
use std::fmt;

use super::answer::FailureStatus;
use crate::error::ScenarioError;

/// What goes wrong with the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Fault {
    /// A share of attempts fails whatever the load (`brownout` of them, for `brownout_s`).
    Brownout,
    /// The backend's capacity drops below the offered load (to `overload` of it) for
    /// `overload_s`.
    Overload,
    /// The backend refuses everything for `outage_s` (by default twice the policy's whole
    /// retry window, at least a second), then recovers.
    Outage,
}

impl Fault {
    /// The three, in report order.
    pub const ALL: [Fault; 3] = [Fault::Brownout, Fault::Overload, Fault::Outage];

    /// The name as written on the command line and in JSON.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Fault::Brownout => "brownout",
            Fault::Overload => "overload",
            Fault::Outage => "outage",
        }
    }

    /// The fault named `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The traffic, the backend and the faults of a what-if run. Field names are the CLI's flags
/// (`capacity_rps` is `--capacity-rps`), and errors name them so.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WhatIfOptions {
    /// The backend's capacity in normal times, attempts answered per second.
    pub capacity_rps: f64,
    /// New requests per second (open loop, Poisson); `None`: half the capacity.
    pub rps: Option<f64>,
    /// The brownout's share of failing attempts, in `[0, 1]`.
    pub brownout: f64,
    /// How long the brownout lasts, in seconds.
    pub brownout_s: f64,
    /// The overload's capacity as a share of the offered load, in `(0, 1]`.
    pub overload: f64,
    /// How long the overload lasts, in seconds.
    pub overload_s: f64,
    /// How long the outage lasts; `None`: twice the policy's whole retry window, at least 1 s.
    pub outage_s: Option<f64>,
    /// Normal traffic before the fault, in seconds (what "normal" goodput is measured on).
    pub before_s: f64,
    /// Traffic after the fault, in seconds, to see whether it recovers.
    pub after_s: f64,
    /// An answer's time at an idle backend, in milliseconds.
    pub latency_ms: f64,
    /// The work a refusal costs, as a share of an answer's, in `[0, 1)`.
    pub refusal_cost: f64,
    /// Attempts the backend queues before it refuses (Envoy's default `max_pending_requests`,
    /// 1024: `api/envoy/config/cluster/v3/circuit_breaker.proto`).
    pub queue_limit: u32,
    /// What the failing backend answers.
    pub failure_status: FailureStatus,
    /// A hop that gives up answers a 500 nobody retries, instead of passing the failure up.
    pub gives_up_as_500: bool,
    /// The seed of every run.
    pub seed: u64,
}

impl Default for WhatIfOptions {
    fn default() -> Self {
        Self {
            capacity_rps: 1000.0,
            rps: None,
            brownout: 0.3,
            brownout_s: 60.0,
            overload: 0.8,
            overload_s: 30.0,
            outage_s: None,
            before_s: 10.0,
            after_s: 60.0,
            latency_ms: 10.0,
            refusal_cost: 0.1,
            queue_limit: 1024,
            failure_status: FailureStatus::Unavailable,
            gives_up_as_500: false,
            seed: 1,
        }
    }
}

/// The most requests one run may start (rps × its length).
pub const MAX_REQUESTS: f64 = 2e7;

fn in_range(field: &str, v: f64, lo: f64, hi: f64, what: &str) -> Result<f64, ScenarioError> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(ScenarioError::field(
            field,
            format!("must be {what}, got {v}"),
        ))
    }
}

impl WhatIfOptions {
    /// The offered load, new requests per second.
    #[must_use]
    pub fn offered_rps(&self) -> f64 {
        self.rps.unwrap_or(self.capacity_rps / 2.0)
    }

    /// Checks every field, naming the first out of range.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field (`rps`, `brownout`, …) and the range.
    pub fn check(&self) -> Result<(), ScenarioError> {
        in_range(
            "capacity_rps",
            self.capacity_rps,
            1e-3,
            1e7,
            "a rate above 0 and at most 10^7 a second",
        )?;
        if self.capacity_rps <= 0.0 {
            return Err(ScenarioError::field(
                "capacity_rps",
                format!("must be above 0, got {}", self.capacity_rps),
            ));
        }
        if let Some(rps) = self.rps {
            in_range(
                "rps",
                rps,
                1e-3,
                1e7,
                "a rate above 0 and at most 10^7 a second",
            )?;
        }
        in_range(
            "brownout",
            self.brownout,
            0.0,
            1.0,
            "a share between 0 and 1",
        )?;
        in_range(
            "overload",
            self.overload,
            1e-3,
            1.0,
            "a share above 0 and at most 1",
        )?;
        for (field, v) in [
            ("brownout_s", self.brownout_s),
            ("overload_s", self.overload_s),
            ("after_s", self.after_s),
        ] {
            in_range(
                field,
                v,
                1e-3,
                86_400.0,
                "a number of seconds above 0, at most 86400",
            )?;
        }
        in_range(
            "before_s",
            self.before_s,
            0.0,
            86_400.0,
            "a number of seconds from 0 to 86400",
        )?;
        if let Some(o) = self.outage_s {
            in_range(
                "outage_s",
                o,
                1e-3,
                86_400.0,
                "a number of seconds above 0, at most 86400",
            )?;
        }
        in_range(
            "latency_ms",
            self.latency_ms,
            0.0,
            60_000.0,
            "milliseconds from 0 to 60000",
        )?;
        if !(self.refusal_cost.is_finite() && (0.0..1.0).contains(&self.refusal_cost)) {
            return Err(ScenarioError::field(
                "refusal_cost",
                format!("must be at least 0 and below 1, got {}", self.refusal_cost),
            ));
        }
        if self.queue_limit == 0 {
            return Err(ScenarioError::field("queue_limit", "must be at least 1"));
        }
        let longest = self
            .brownout_s
            .max(self.overload_s)
            .max(self.outage_s.unwrap_or(0.0));
        let requests = self.offered_rps() * (self.before_s + longest + self.after_s);
        if requests > MAX_REQUESTS {
            return Err(ScenarioError::field(
                "rps",
                format!(
                    "{} requests a second over a run of {} s is about {requests:.0} requests; at most {MAX_REQUESTS:e}",
                    self.offered_rps(),
                    self.before_s + longest + self.after_s
                ),
            ));
        }
        Ok(())
    }
}
