//! What happens to a service when its backend fails, with these retry settings: three faults
//! on steady open-loop traffic, run with each hop's own retry loop in time.
//!
//! # Why
//!
//! A storm of clients that all fail together through a long outage outlasts every real
//! policy's retries (Envoy and Istio give up within a quarter of a second), so it says the
//! same of every configuration. A service owner asks something else: *my backend browns
//! out, or is overloaded, or goes down for a while: how much more load does it get, how many
//! of my users' requests still succeed, and does it recover when the fault ends?* This module
//! answers that for a policy, or for the policies of every hop of a call path run together.
//!
//! # The runs
//!
//! New requests arrive as a Poisson process at `rps` (half the backend's capacity unless
//! said otherwise), for `before_s` of normal traffic, the fault, and `after_s` more. The
//! faults ([`Fault`]):
//! - **brownout**: each attempt the backend starts fails with probability `brownout` (0.3),
//!   whatever the load, for `brownout_s` (60 s): the partial-failure model's server;
//! - **overload**: the backend's capacity drops to `overload` (0.8) of the offered load for
//!   `overload_s` (30 s): its queue fills, refusals cost work, per-try and whole-call
//!   timeouts fire on answers that come too late (work the backend still does), and retries
//!   compete with new requests, the metastable model's mechanisms;
//! - **outage**: the backend refuses everything for `outage_s`, by default twice the path's
//!   whole retry window (the longest a call can take when every attempt fails), at least a
//!   second.
//!
//! Each hop runs its retry loop as the library does ([`run`](self) has the events): the
//! translation's rule drawn by the library's own code, its attempts, per-try and whole-call
//! timeouts, and its throttle as the library's type (the partial-failure model's gates). The
//! failing backend answers with the system's "unavailable" answer (see [`FailureStatus`]),
//! so a policy that does not retry it shows it; a hop that gives up passes the failure up
//! unchanged (Envoy returns the upstream's last answer), or, with `gives_up_as_500`, as a
//! 500 that nobody retries. Every run is deterministic from its seed.
//!
//! # Examples
//!
//! ```
//! use herd_sim::check::whatif::{self, Fault, WhatIfOptions};
//! use herd_sim::check::{self, Input};
//! use herd_sim::{Cancel, Limits};
//!
//! // Istio's defaults: three attempts on `unavailable`, among others.
//! let vs = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: b}\nspec:\n  hosts: [b]\n  http:\n  - route:\n    - destination: {host: b}\n";
//! let t = &check::check(&[Input::new("vs.yaml", vs)])?.configs[0];
//! let mut options = WhatIfOptions::default();
//! options.brownout_s = 10.0;
//! options.after_s = 5.0;
//! let run = whatif::run_fault(&[t], Fault::Brownout, &options, &Limits::default(), &Cancel::new())?;
//! // 1 + p + p² attempts per request, 1 − p³ of them served (p = 0.3).
//! assert!((run.figures.amplification - 1.39).abs() < 5.0 * run.figures.amplification_se);
//! assert!((run.figures.goodput - 0.973).abs() < 5.0 * run.figures.goodput_se);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
use serde::Serialize;

use crate::check::Translation;
use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::watch::{Cancel, Watch};

mod answer;
mod faults;
mod figures;
mod fixes;
mod hop;
mod run;
mod slots;

pub use answer::FailureStatus;
pub use faults::{Fault, MAX_REQUESTS, WhatIfOptions};
pub use figures::Figures;
pub use fixes::{Fix, FixChange, fix};

use answer::Answer;
use hop::Hop;
use run::{BIN_NS, Plan};

/// The shortest default outage, in seconds.
const MIN_OUTAGE_S: f64 = 1.0;
/// A refusal's round trip (the backend, or its sidecar, answers at once), at most.
const REFUSE_NS: u64 = 1_000_000;

/// One fault's run of a policy or call path.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FaultRun {
    /// The fault.
    pub fault: Fault,
    /// When it started, seconds from the run's start.
    pub start_s: f64,
    /// How long it lasted, in seconds.
    pub fault_s: f64,
    /// The figures over the requests that arrived while it lasted.
    pub figures: Figures,
    /// Attempts per second at the backend, per 100 ms from the run's start.
    pub load: Vec<f64>,
    /// What the run could not express, and what the reader should know.
    pub notes: Vec<String>,
}

/// The longest a call of `hops` (caller first) takes when every attempt fails, in
/// nanoseconds, an attempt at the backend taking `latency_ns`.
fn window_ns(hops: &[Hop], latency_ns: u64) -> u64 {
    hops.iter()
        .rev()
        .fold(latency_ns, |below, hop| hop.window_ns(below))
}

/// The outage's length for `path` under `options`: as set, or twice the path's whole retry
/// window and at least a second.
///
/// # Errors
///
/// A policy whose backoff the library refuses.
pub fn outage_s(path: &[&Translation], options: &WhatIfOptions) -> Result<f64, ScenarioError> {
    if let Some(s) = options.outage_s {
        return Ok(s);
    }
    let hops = path
        .iter()
        .map(|t| Hop::of(t))
        .collect::<Result<Vec<_>, _>>()?;
    let latency_ns = (options.latency_ms * 1e6).round() as u64;
    Ok((2.0 * window_ns(&hops, latency_ns) as f64 / 1e9).max(MIN_OUTAGE_S))
}

/// Runs `fault` on `path`, the policies of a call path, caller first (one policy: a path of
/// one hop), under `options`, stopped once `cancel` is set.
///
/// # Errors
///
/// An option out of range, naming it (`rps`, `brownout`, …); an empty path; a policy whose
/// backoff the library refuses; a run beyond `limits`; [`ScenarioError::is_cancelled`] when
/// the flag stopped it.
pub fn run_fault(
    path: &[&Translation],
    fault: Fault,
    options: &WhatIfOptions,
    limits: &Limits,
    cancel: &Cancel,
) -> Result<FaultRun, ScenarioError> {
    let (plan, hops, fault_s) = prepare(path, fault, options, limits)?;
    let trace = run::run(&plan, &hops, options.seed, &mut Watch::until(cancel))?;
    let figures = figures::of(&trace, &plan, options.capacity_rps);
    let load = trace
        .series
        .iter()
        .map(|&n| n as f64 * 1e9 / BIN_NS as f64)
        .collect();
    Ok(FaultRun {
        fault,
        start_s: options.before_s,
        fault_s,
        figures,
        load,
        notes: notes(path, &hops, options),
    })
}

/// The plan of `fault` on `path`, its hops, and the fault's length in seconds.
fn prepare(
    path: &[&Translation],
    fault: Fault,
    options: &WhatIfOptions,
    limits: &Limits,
) -> Result<(Plan, Vec<Hop>, f64), ScenarioError> {
    options.check()?;
    if path.is_empty() {
        return Err(ScenarioError::field("policy", "no policy to run"));
    }
    let hops = path
        .iter()
        .map(|t| Hop::of(t))
        .collect::<Result<Vec<_>, _>>()?;
    let fault_s = match fault {
        Fault::Brownout => options.brownout_s,
        Fault::Overload => options.overload_s,
        Fault::Outage => outage_s(path, options)?,
    };
    let ns = |s: f64| (s * 1e9).round() as u64;
    let start_ns = ns(options.before_s);
    let end_ns = start_ns + ns(fault_s);
    let rps = options.offered_rps();
    let latency_ns = ns(options.latency_ms / 1e3);
    let plan = Plan {
        fault,
        start_ns,
        end_ns,
        horizon_ns: end_ns + ns(options.after_s),
        gap_mean_ns: 1e9 / rps,
        service_ns: 1e9 / options.capacity_rps,
        overload_service_ns: 1e9 / (options.overload * rps),
        brownout: options.brownout,
        latency_ns,
        refuse_ns: REFUSE_NS.min(latency_ns),
        refusal_cost: options.refusal_cost,
        queue_limit: options.queue_limit as usize,
        failure: options.failure_status,
        gives_up_as_500: options.gives_up_as_500,
        max_run_attempts: limits.max_run_attempts,
    };
    Ok((plan, hops, fault_s))
}

/// Runs the three faults on `path`, in [`Fault::ALL`]'s order.
///
/// # Errors
///
/// As [`run_fault`].
pub fn run_faults(
    path: &[&Translation],
    options: &WhatIfOptions,
    limits: &Limits,
    cancel: &Cancel,
) -> Result<Vec<FaultRun>, ScenarioError> {
    Fault::ALL
        .into_iter()
        .map(|f| run_fault(path, f, options, limits, cancel))
        .collect()
}

/// One fault, the path as set beside its fix.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FaultComparison {
    /// The fault.
    pub fault: Fault,
    /// When it started, seconds from the run's start.
    pub start_s: f64,
    /// How long it lasted, in seconds (the same for both: the as-set path's outage).
    pub fault_s: f64,
    /// The figures as set.
    pub as_set: Figures,
    /// The figures with the fix (the same as `as_set` when there is no fix).
    pub fix: Figures,
    /// Attempts per second at the backend per 100 ms, as set and with the fix.
    #[serde(skip)]
    pub load: [Vec<f64>; 2],
    /// What the run could not express, and what the reader should know.
    pub notes: Vec<String>,
    /// Why the fix's figures are the same as set in this fault; `None` when they differ.
    pub same_because: Option<String>,
}

/// A policy's (or call path's) three faults, as set beside its fix.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Comparison {
    /// The faults in [`Fault::ALL`]'s order.
    pub faults: Vec<FaultComparison>,
    /// The fix's changes in the system's own terms; empty when there is none.
    pub fix_changes: Vec<FixChange>,
    /// Why "fix" equals "as set", when it does.
    pub no_fix: Option<String>,
}

/// How `fix` compares with `set` in one fault: (better somewhere, worse somewhere), each
/// judged beyond two standard errors of the difference, or by recovery.
fn judged(set: &Figures, fix: &Figures) -> (bool, bool) {
    let se = |a: f64, b: f64| 2.0 * (a * a + b * b).sqrt();
    let g = fix.goodput - set.goodput;
    let g_se = se(set.goodput_se, fix.goodput_se);
    let a = fix.amplification - set.amplification;
    let a_se = se(set.amplification_se, fix.amplification_se);
    let recovery = |r: Option<f64>| r.unwrap_or(f64::INFINITY);
    let (rs, rf) = (recovery(set.recovered_s), recovery(fix.recovered_s));
    let better = g > g_se || a < -a_se || rf < rs || fix.peak_load < 0.9 * set.peak_load;
    let worse = g < -g_se || a > a_se || rf > rs;
    (better, worse)
}

/// Runs the three faults on `path` (caller first) as set and with its [`fix`], with the same
/// seed and the same outage. A fix that does worse in every fault is not proposed: `no_fix`
/// says so, and the fix's figures are the path's. Each fault whose figures are the same
/// both ways says why in `same_because`.
///
/// # Errors
///
/// As [`run_fault`].
pub fn compare(
    path: &[&Translation],
    options: &WhatIfOptions,
    limits: &Limits,
    cancel: &Cancel,
) -> Result<Comparison, ScenarioError> {
    let fix = fix(path);
    let fixed: Vec<&Translation> = fix.path.iter().collect();
    let mut same = options.clone();
    same.outage_s = Some(outage_s(path, options)?);
    let mut faults = Vec::new();
    for fault in Fault::ALL {
        let set = run_fault(path, fault, &same, limits, cancel)?;
        let fixed_run = if fix.changes.is_empty() {
            set.clone()
        } else {
            run_fault(&fixed, fault, &same, limits, cancel)?
        };
        let mut notes = set.notes;
        for n in fixed_run.notes {
            if !notes.contains(&n) {
                notes.push(format!("fix: {n}"));
            }
        }
        faults.push(FaultComparison {
            fault,
            start_s: set.start_s,
            fault_s: set.fault_s,
            as_set: set.figures,
            fix: fixed_run.figures,
            load: [set.load, fixed_run.load],
            notes,
            same_because: None,
        });
    }
    let mut comparison = Comparison {
        faults,
        fix_changes: fix.changes,
        no_fix: fix.none_because,
    };
    let worse_everywhere = !comparison.fix_changes.is_empty()
        && comparison.faults.iter().all(|f| {
            let (better, worse) = judged(&f.as_set, &f.fix);
            worse && !better
        });
    if worse_everywhere {
        let codes: Vec<&str> = comparison.fix_changes.iter().map(|c| c.code).collect();
        comparison.no_fix = Some(format!(
            "the fix for {} did worse in every fault: not proposed",
            codes.join(", ")
        ));
        comparison.fix_changes.clear();
        for f in &mut comparison.faults {
            f.fix = f.as_set.clone();
            f.load[1] = f.load[0].clone();
        }
    }
    for f in comparison.faults.iter_mut().filter(|f| f.as_set == f.fix) {
        f.same_because = Some(fixes::why_same(
            path,
            &comparison.fix_changes,
            comparison.no_fix.as_deref(),
            f.fault,
            &f.as_set,
            options.failure_status,
            options.latency_ms,
        ));
    }
    Ok(comparison)
}

fn notes(path: &[&Translation], hops: &[Hop], options: &WhatIfOptions) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let status = options.failure_status;
    for (t, hop) in path.iter().zip(hops) {
        for n in &hop.notes {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
        if !hop.retries(Answer::Failure(status)) && hop.max_attempts > 1 {
            // One policy is "it", as in `fixes::why_same`: the same semantics elsewhere
            // share its runs, and the text must not name whichever policy ran first.
            out.push(if path.len() > 1 {
                format!(
                    "{} does not retry {status}: its hop passes every such failure up at once",
                    t.name
                )
            } else {
                format!("it does not retry {status}: its users meet every such failure")
            });
        }
    }
    if path.len() > 1 {
        out.push(if options.gives_up_as_500 {
            "a hop that gives up answers a 500, which no hop above retries".to_owned()
        } else {
            format!(
                "a hop that gives up passes the failure up unchanged ({status}; Envoy returns the upstream's last answer)"
            )
        });
    }
    out
}

#[cfg(test)]
mod tests;
